"""A symbolic link, FIFO or device under an image name is never followed or
opened by ingest: a link planted in a shared folder brought a private image, or a file
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


def test_a_swap_and_swap_back_during_the_reads_cannot_mix_two_files(lib: Library,
                                                                    tmp_path: Path):
    """The attacker swaps ``a.jpg`` for their own picture exactly while
    ExifTool reads the batch, and swaps the original back before the pixels
    are read: the path names the same file (device, inode, size, time) before
    and after. Before, a.jpg's bytes were stored with the planted file's
    title and DocumentID (the metadata was read by path); now every read goes
    through one descriptor opened with O_NOFOLLOW before the batch, so the
    metadata is a.jpg's own. The real ExifTool reads; only the swap is
    scripted, at the moment the reads happen."""
    from imaging import exiftool_write

    from loupe.ingest.exiftool_reader import ExifToolReader
    from loupe.ingest.pipeline import Ingester

    root = tmp_path / "library"
    a = make_image(root / "a.jpg", color=(10, 120, 30))
    exiftool_write(a, "-XMP-dc:Title=Harbour at dawn")
    evil = make_image(tmp_path / "evil.jpg", color=(250, 0, 0))
    exiftool_write(evil, "-XMP-dc:Title=Falcon takeover", "-XMP-xmpMM:DocumentID=xmp.did:x")
    held = tmp_path / "held.jpg"

    class SwappingReader(ExifToolReader):
        swaps = 0

        def read(self, paths, fds=None):
            if str(a) not in paths:
                return super().read(paths, fds) if fds else super().read(paths)
            os.rename(a, held)                       # swap...
            os.link(evil, a)
            try:
                return super().read(paths, fds) if fds else super().read(paths)
            finally:
                os.unlink(a)                         # ...and swap back
                os.rename(held, a)
                SwappingReader.swaps += 1

    with SwappingReader() as reader:
        summary = Ingester(lib.conn, lib.tenant_id, lib.home, exiftool=reader).ingest(root)
    assert SwappingReader.swaps == 1
    assert (summary.new_assets, summary.failed) == (1, 0)
    (hit,) = lib.search("harbour").hits
    assert lib.search("falcon").total == 0
    shown = lib.show(hit.asset_id)
    assert shown["files"][0]["metadata"]["title"] == {"x-default": "Harbour at dawn"}
    raw = lib.conn.execute("SELECT raw_metadata FROM asset_file").fetchone()[0]
    assert "XMP-xmpMM:DocumentID" not in raw["file"]
