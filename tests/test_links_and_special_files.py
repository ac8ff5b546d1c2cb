"""A symbolic link, FIFO or device under an image name is never followed or
opened by ingest (issue 11, found by the attack run after the first wave of
fixes): a link planted in a shared folder brought a private image, or a file
outside the library, into it; a FIFO named ``*.jpg`` hung the ingest."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from imaging import make_image, write_sidecar

from loupe import Library


def test_links_fifos_and_devices_fail_alone_and_leak_nothing(lib: Library, tmp_path: Path):
    root = tmp_path / "library"
    (root / "shared").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    make_image(root / "shared" / "ok.jpg", color=(10, 20, 30))
    secret = make_image(outside / "secret.jpg", color=(200, 10, 10))
    write_sidecar(secret, "-XMP-dc:Title=Falcon board plan")
    os.symlink(secret, root / "shared" / "peek.jpg")                 # a link to a file outside
    os.symlink("/dev/zero", root / "shared" / "zero.jpg")            # a link to a device
    os.mkfifo(root / "shared" / "pipe.jpg")                          # a FIFO
    other = tmp_path / "other.xmp"
    other.write_text('<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/'
                     '1999/02/22-rdf-syntax-ns#" xmlns:dc="http://purl.org/dc/elements/1.1/">'
                     '<rdf:Description rdf:about=""><dc:title><rdf:Alt><rdf:li xml:lang='
                     '"x-default">Outside sidecar words</rdf:li></rdf:Alt></dc:title>'
                     '</rdf:Description></rdf:RDF></x:xmpmeta>')
    os.symlink(other, root / "shared" / "ok.jpg.xmp")                # a linked sidecar

    done: list = []
    t = threading.Thread(target=lambda: done.append(lib.ingest(root)), daemon=True)
    t.start()
    t.join(120)
    assert done, "the ingest did not finish (a FIFO or device was opened)"
    summary = done[0]
    assert (summary.new_assets, summary.failed) == (1, 3)
    failed = sorted((Path(f["path"]).name, f["kind"]) for f in lib.failures()
                    if f["severity"] == "error")
    assert failed == [("peek.jpg", "not_regular"), ("pipe.jpg", "not_regular"),
                      ("zero.jpg", "not_regular")]
    assert lib.search("falcon").total == 0
    assert lib.search("outside").total == 0
    assert lib.stats()["assets"] == 1
