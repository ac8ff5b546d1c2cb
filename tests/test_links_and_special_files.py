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


def test_an_original_swapped_for_a_link_after_ingest_is_never_served(lib: Library, tmp_path: Path):
    """The original of an asset is served only while a file of it still holds
    its bytes: a file replaced after ingest by a link (to a private or system
    file) or by other bytes is not followed; the answer is 'not found'."""
    root = tmp_path / "library"
    img = make_image(root / "shared" / "a.jpg", color=(1, 2, 3))
    secret = tmp_path / "secret.txt"
    secret.write_text("root:secret-hash\n")
    lib.ingest(root)
    assert lib.original(1) == img
    with lib.open_original(1)[0] as fh:
        assert fh.read() == img.read_bytes()
    kept = img.read_bytes()
    img.unlink()
    os.symlink(secret, img)                      # the same path, now a link
    try:
        lib.original(1)
        raise AssertionError("a link was served")
    except Exception as exc:  # noqa: BLE001
        assert type(exc).__name__ == "AssetNotFound"
    img.unlink()
    img.write_bytes(kept[:-10] + b"0123456789")  # other bytes at the same path
    try:
        lib.open_original(1)
        raise AssertionError("other bytes were served")
    except Exception as exc:  # noqa: BLE001
        assert type(exc).__name__ == "AssetNotFound"
    img.write_bytes(kept)                        # the asset's bytes again
    with lib.open_original(1)[0] as fh:
        assert fh.read() == kept
