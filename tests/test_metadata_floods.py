"""Metadata floods beyond JPEG's segments are refused before ExifTool reads
them: a GIF's comment extensions, a TIFF's IFD chain and
a deep XMP packet in a JPEG's APP1 segment. Real files written by Pillow,
the real ingest and ExifTool; the normal file of each kind still ingests
with its metadata."""

from __future__ import annotations

import io
import struct
import time
from pathlib import Path

from PIL import Image

from loupe import Library

# loupe.ingest.structcheck's bounds, written out so the tests run on older code
MAX_GIF_EXTENSIONS = 1_000
MAX_IFDS = 1_000
MAX_IFD_ENTRIES = 30_000
MAX_DEPTH = 64                  # loupe.ingest.xmpcheck.MAX_DEPTH

XMP_TITLE = ('<?xpacket begin="" id="W5M0MpCehiHzreSzNTczkc9d"?>'
             '<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF '
             'xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description '
             'rdf:about="" xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title><rdf:Alt>'
             '<rdf:li xml:lang="x-default">{title}</rdf:li></rdf:Alt></dc:title>'
             '</rdf:Description></rdf:RDF></x:xmpmeta><?xpacket end="w"?>')


def gif(colour: tuple[int, int, int], comment: bytes = b"") -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (32, 24), colour).save(buf, "GIF", comment=comment)
    return buf.getvalue()


def _gif_blocks_at(data: bytes) -> int:
    """Offset of a GIF's first block (after the screen and global colour table)."""
    flags = data[10]
    return 13 + (3 * (2 << (flags & 7)) if flags & 0x80 else 0)


def gif_comment_flood(count: int, colour: tuple[int, int, int]) -> bytes:
    """A 32x24 GIF with ``count`` one-byte comment extensions (``21 FE 01 x
    00``, 5 bytes each) before its first frame."""
    data = gif(colour)
    at = _gif_blocks_at(data)
    return data[:at] + b"\x21\xfe\x01x\x00" * count + data[at:]


def gif_with_xmp(colour: tuple[int, int, int], packet: bytes) -> bytes:
    """A GIF with an "XMP DataXMP" application extension (the packet raw, then
    ExifTool's 258-byte "magic trailer" of sub-block lengths)."""
    data = gif(colour)
    at = _gif_blocks_at(data)
    block = b"\x21\xff\x0bXMP DataXMP" + packet + bytes([1, *range(255, -1, -1)]) + b"\x00"
    return data[:at] + block + data[at:]


def tiff(colour: tuple[int, int, int], tags: dict[int, str] | None = None) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (32, 24), colour).save(buf, "TIFF", tiffinfo=tags or {})
    return buf.getvalue()


def tiff_ifd_chain(count: int, colour: tuple[int, int, int], entries: int = 1) -> bytes:
    """A little-endian TIFF whose first IFD links to ``count`` more IFDs of
    ``entries`` entries each (an ASCII Software tag, ``"abc"``, inline)."""
    data = bytearray(tiff(colour))
    ifd0 = struct.unpack("<I", data[4:8])[0]
    n = struct.unpack("<H", data[ifd0:ifd0 + 2])[0]
    link = ifd0 + 2 + 12 * n
    start = len(data) + (len(data) & 1)
    data += b"\x00" * (start - len(data))
    size = 2 + 12 * entries + 4
    struct.pack_into("<I", data, link, start)
    for i in range(count):
        here = start + i * size
        nxt = here + size if i + 1 < count else 0
        data += struct.pack("<H", entries) + struct.pack("<HHI4s", 305, 2, 4, b"abc\x00") * entries
        data += struct.pack("<I", nxt)
    return bytes(data)


def deep_packet(depth: int) -> bytes:
    """An XMP packet with an undefined ``&nbsp;`` and then ``depth`` nested
    elements (the hostile file measured: 66 KB at 1,800 deep)."""
    body = "<a>" * depth + "</a>" * depth
    return (XMP_TITLE.format(title="deep&nbsp;" + body)).encode()


def jpeg(colour: tuple[int, int, int], xmp: bytes | None = None) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (32, 24), colour).save(buf, "JPEG")
    data = buf.getvalue()
    if xmp is None:
        return data
    payload = b"http://ns.adobe.com/xap/1.0/\x00" + xmp
    assert len(payload) + 2 <= 0xFFFF
    return data[:2] + b"\xff\xe1" + struct.pack(">H", len(payload) + 2) + payload + data[2:]


def _failures(lib: Library) -> list[tuple[str, str, str]]:
    return sorted((Path(f["path"]).name, f["kind"], f["reason"]) for f in lib.failures())


def _raw(lib: Library) -> dict[str, dict]:
    """Each ingested file's raw metadata (ExifTool's answer as stored), by name."""
    return {Path(p).name: r["file"] for p, r in lib.conn.execute(
        "SELECT path, raw_metadata FROM asset_file").fetchall()}


def _titles(lib: Library) -> dict[str, str | None]:
    return {name: raw.get("XMP-dc:Title") for name, raw in _raw(lib).items()}


def test_a_gif_comment_flood_is_refused_before_exiftool(lib: Library, photos: Path):
    """100,000 comment extensions (500 KB) kept ExifTool busy 13.5 s. More
    than 1,000 metadata extensions are refused; 1,000 are read."""
    flood = gif_comment_flood(100_000, (200, 30, 30))
    assert len(flood) > 500_000
    (photos / "flood.gif").write_bytes(flood)
    (photos / "edge.gif").write_bytes(gif_comment_flood(MAX_GIF_EXTENSIONS, (30, 200, 30)))
    (photos / "over.gif").write_bytes(gif_comment_flood(MAX_GIF_EXTENSIONS + 1, (30, 30, 200)))
    (photos / "normal.gif").write_bytes(gif((90, 90, 9), comment=b"a harbour at dusk"))
    started = time.monotonic()
    summary = lib.ingest(photos)
    took = time.monotonic() - started
    assert (summary.new_assets, summary.failed) == (2, 2)
    reason = (f"a GIF of more than {MAX_GIF_EXTENSIONS:,} metadata extension blocks (comment, "
              "plain text, application) (Loupe's bound, checked before ExifTool reads them): "
              "not read")
    assert _failures(lib) == [("flood.gif", "metadata", reason), ("over.gif", "metadata", reason)]
    raw = _raw(lib)
    assert raw["normal.gif"]["File:Comment"] == "a harbour at dusk"
    assert took < 10, took


def test_a_deep_xmp_packet_in_a_gif_is_refused(lib: Library, photos: Path):
    (photos / "deep.gif").write_bytes(gif_with_xmp((1, 2, 3), deep_packet(1_800)))
    (photos / "titled.gif").write_bytes(
        gif_with_xmp((3, 2, 1), XMP_TITLE.format(title="Lighthouse keeper").encode()))
    summary = lib.ingest(photos)
    assert (summary.new_assets, summary.failed) == (1, 1)
    assert _failures(lib) == [(
        "deep.gif", "metadata",
        f"a GIF whose XMP packet: its elements nest more than {MAX_DEPTH} levels deep "
        "(Loupe's bound, checked before ExifTool reads them): not read")]
    assert _titles(lib) == {"titled.gif": "Lighthouse keeper"}


def test_a_tiff_ifd_chain_is_refused_before_exiftool(lib: Library, photos: Path):
    """A 1.8 MB chain of one-entry IFDs kept ExifTool busy 32 s. More than
    1,000 IFDs are refused, 1,000 read; more than 30,000 entries (IFD0
    and one of 30,000) refused."""
    chain = tiff_ifd_chain(100_000, (200, 30, 30))
    assert len(chain) > 1_800_000
    (photos / "chain.tif").write_bytes(chain)
    (photos / "edge.tif").write_bytes(tiff_ifd_chain(MAX_IFDS - 1, (30, 200, 30)))
    (photos / "over.tif").write_bytes(tiff_ifd_chain(MAX_IFDS, (30, 30, 200)))
    (photos / "wide.tif").write_bytes(tiff_ifd_chain(1, (9, 9, 9), entries=MAX_IFD_ENTRIES))
    (photos / "normal.tif").write_bytes(tiff((90, 90, 9), {270: "Harbour at dusk", 305: "Loupe test"}))
    started = time.monotonic()
    summary = lib.ingest(photos)
    took = time.monotonic() - started
    assert (summary.new_assets, summary.failed) == (2, 3)
    ifds = (f"a TIFF of more than {MAX_IFDS:,} image file directories (IFDs) (Loupe's bound, "
            "checked before ExifTool reads them): not read")
    assert _failures(lib) == [
        ("chain.tif", "metadata", ifds), ("over.tif", "metadata", ifds),
        ("wide.tif", "metadata",
         f"a TIFF of more than {MAX_IFD_ENTRIES:,} IFD entries (Loupe's bound, checked before "
         "ExifTool reads them): not read")]
    raw = _raw(lib)
    assert raw["normal.tif"]["IFD0:ImageDescription"] == "Harbour at dusk"
    assert raw["normal.tif"]["IFD0:Software"] == "Loupe test"
    assert took < 10, took


def test_a_looping_ifd_chain_ends_the_walk(tmp_path: Path):
    """A chain whose last IFD links back to the first is walked once (as
    ExifTool reads it: a directory already read is not read again)."""
    import os

    from loupe.ingest.structcheck import metadata_structure_problem

    data = bytearray(tiff_ifd_chain(3, (1, 1, 1)))
    first = struct.unpack("<I", data[4:8])[0]
    struct.pack_into("<I", data, len(data) - 4, first)        # last IFD -> IFD0
    path = tmp_path / "loop.tif"
    path.write_bytes(bytes(data))
    fd = os.open(path, os.O_RDONLY)
    try:
        started = time.monotonic()
        assert metadata_structure_problem(fd) is None
        assert time.monotonic() - started < 1
    finally:
        os.close(fd)


def test_a_deep_xmp_packet_in_a_jpeg_is_refused_before_exiftool(lib: Library, photos: Path):
    """A 66 KB APP1 XMP packet nested 1,800 deep after an undefined
    ``&nbsp;`` kept ExifTool busy 10.8 s. A packet deeper than the sidecar
    bound (64) is refused; a normal XMP-bearing JPEG keeps its title."""
    packet = deep_packet(1_800)
    assert len(packet) > 12_000
    (photos / "deep.jpg").write_bytes(jpeg((200, 30, 30), packet))
    (photos / "edge.jpg").write_bytes(jpeg((30, 200, 30), deep_packet(MAX_DEPTH - 6)))
    (photos / "titled.jpg").write_bytes(
        jpeg((30, 30, 200), XMP_TITLE.format(title="Harbour at dusk").encode()))
    started = time.monotonic()
    summary = lib.ingest(photos)
    took = time.monotonic() - started
    assert (summary.new_assets, summary.failed) == (2, 1)
    assert _failures(lib) == [(
        "deep.jpg", "metadata",
        f"a JPEG whose XMP packet: its elements nest more than {MAX_DEPTH} levels deep "
        "(Loupe's bound, checked before ExifTool reads them): not read")]
    assert _titles(lib)["titled.jpg"] == "Harbour at dusk"
    assert took < 10, took


def test_hostile_offsets_neither_raise_nor_hang(tmp_path: Path):
    """A BigTIFF whose first IFD is past 2**63 (``os.pread`` raises
    OverflowError there), one past the end of the file, and a truncated
    GIF: the walk answers None (the decoder names what is wrong)."""
    import os

    from loupe.ingest.structcheck import metadata_structure_problem

    files = {"far.tif": b"II+\x00\x08\x00\x00\x00" + struct.pack("<Q", 2**63 + 5),
             "past.tif": b"II+\x00\x08\x00\x00\x00" + struct.pack("<Q", 2**40),
             "cut.gif": gif_comment_flood(10, (1, 1, 1))[:40]}
    answers = {}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
        fd = os.open(tmp_path / name, os.O_RDONLY)
        try:
            answers[name] = metadata_structure_problem(fd)
        finally:
            os.close(fd)
    assert answers == {"far.tif": None, "past.tif": None, "cut.gif": None}


def test_a_members_upload_of_a_flood_is_refused_with_its_reason(tmp_path, db_url, home):
    """The same bounds on a member's upload: the reply names the file and the
    bound, and the normal file of the same request is stored."""
    from fastapi.testclient import TestClient

    from loupe.web.app import create_app

    with Library.open(home, database_url=db_url) as owner:
        owner.create_user("bob", "bob-password")
    with TestClient(create_app(home, database_url=db_url, pool_size=2)) as client:
        tok = client.post("/api/tokens", json={"name": "bob", "password": "bob-password"})
        bob = {"Authorization": f"Bearer {tok.json()['token']}"}
        started = time.monotonic()
        r = client.post("/api/upload", headers=bob, files=[
            ("files", ("flood.gif", gif_comment_flood(100_000, (5, 6, 7)), "image/gif")),
            ("files", ("chain.tif", tiff_ifd_chain(100_000, (7, 6, 5)), "image/tiff")),
            ("files", ("fine.gif", gif((9, 9, 9), comment=b"fine"), "image/gif"))])
        assert time.monotonic() - started < 10
        assert r.status_code == 200, r.text
        out = {k: v for k, v in r.json().items() if k != "folder"}
    assert out == {"files_seen": 3, "stored": 1, "failed": 2, "failures": [
        {"file": "chain.tif",
         "reason": f"a TIFF of more than {MAX_IFDS:,} image file directories (IFDs) (Loupe's "
                   "bound, checked before ExifTool reads them): not read"},
        {"file": "flood.gif",
         "reason": f"a GIF of more than {MAX_GIF_EXTENSIONS:,} metadata extension blocks "
                   "(comment, plain text, application) (Loupe's bound, checked before "
                   "ExifTool reads them): not read"}]}
