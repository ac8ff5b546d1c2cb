"""Compressed PNG metadata is bounded before ExifTool inflates it (a 0.5 MB PNG whose one zTXt chunk inflated to 512 MiB
cost the ingest gigabytes). Real files written by Pillow, real ExifTool."""

from __future__ import annotations

from pathlib import Path

from PIL import Image, PngImagePlugin

from loupe import Library
from loupe.ingest.pngcheck import MAX_CHUNK


def png_with_text(path: Path, text: str, *, compressed: bool = True) -> Path:
    info = PngImagePlugin.PngInfo()
    info.add_text("Comment", text, zip=compressed)
    Image.new("RGB", (8, 8), (200, 30, 30)).save(path, pnginfo=info)
    return path


def test_a_png_whose_text_inflates_past_the_bound_is_refused_and_the_rest_ingested(
        lib: Library, photos: Path):
    bomb = png_with_text(photos / "bomb.png", "A" * (8 * MAX_CHUNK))
    assert bomb.stat().st_size < 64 * 1024          # small on disk
    png_with_text(photos / "fine.png", "harbour at dawn " * 100)
    summary = lib.ingest(photos)
    assert summary.new_assets == 1 and summary.failed == 1
    [failure] = lib.failures()
    assert failure["path"].endswith("bomb.png") and failure["kind"] == "metadata"
    assert "inflates past 1,048,576 bytes" in failure["reason"]
    assert [h.title or h.path.rsplit("/", 1)[-1] for h in lib.search("fine").hits] == ["fine.png"]


def _chunk(kind: bytes, data: bytes) -> bytes:
    import struct
    import zlib
    return struct.pack(">I", len(data)) + kind + data + struct.pack(
        ">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def _png(chunks: list[bytes], *, after_iend: bool = False, colour=(200, 30, 30)) -> bytes:
    import io
    buf = io.BytesIO()
    Image.new("RGB", (40, 30), colour).save(buf, "PNG")
    png = buf.getvalue()
    return png + b"".join(chunks) if after_iend else png[:-12] + b"".join(chunks) + png[-12:]


def test_four_png_chunk_tricks_are_refused_before_exiftool(
        lib: Library, photos: Path):
    """A bomb after IEND, in an iTXt whose compressed flag
    is 2, after a first zTXt that is not zlib, in a compressed eXIf chunk, or
    spread over many chunks each under Pillow's bound: each one is refused
    before ExifTool inflates it; a plain image beside them is ingested."""
    import struct
    import zlib

    big = zlib.compress(b"A" * (4 * MAX_CHUNK), 9)
    desc = b"B" * (4 * MAX_CHUNK)
    tiff = (b"MM\x00\x2a" + struct.pack(">I", 8) + struct.pack(">H", 1)
            + struct.pack(">HHII", 0x010E, 2, len(desc), 26) + struct.pack(">I", 0) + desc)
    one = zlib.compress(b"C" * (MAX_CHUNK - 10), 9)
    files = {
        "iend.png": _png([_chunk(b"zTXt", b"Comment\x00\x00" + big)], after_iend=True),
        "itxt2.png": _png([_chunk(b"iTXt", b"Comment\x00\x02\x00\x00\x00" + big)]),
        "zerr.png": _png([_chunk(b"zTXt", b"Title\x00\x00not zlib at all"),
                          _chunk(b"zTXt", b"Comment\x00\x00" + big)]),
        "exif0.png": _png([_chunk(b"eXIf", b"\x00" + struct.pack(">I", len(tiff))
                                  + zlib.compress(tiff, 9))]),
        "many.png": _png([_chunk(b"zTXt", b"Comment%d\x00\x00" % i + one) for i in range(10)]),
    }
    for name, data in files.items():
        (photos / name).write_bytes(data)
        assert len(data) < 64 * 1024, name
    png_with_text(photos / "fine.png", "harbour at dawn " * 100)
    summary = lib.ingest(photos)
    assert (summary.new_assets, summary.failed) == (1, 5)
    reasons = {Path(f["path"]).name: (f["kind"], f["reason"]) for f in lib.failures()}
    assert set(reasons) == set(files)
    for name in ("iend.png", "itxt2.png", "zerr.png", "exif0.png"):
        assert reasons[name] == ("metadata", f"a compressed {'eXIf' if name == 'exif0.png' else 'iTXt' if name == 'itxt2.png' else 'zTXt'} "
                                             "metadata chunk inflates past 1,048,576 bytes "
                                             "(Pillow's bound, applied before ExifTool): not read"), name
    assert reasons["many.png"] == ("metadata", "compressed metadata chunks inflate past "
                                               "8,388,608 bytes in all (Loupe's bound, applied "
                                               "before ExifTool): not read")


def test_a_document_named_like_an_image_never_reaches_exiftool(lib: Library, photos: Path,
                                                                monkeypatch):
    """A PDF named report.jpg whose metadata
    stream inflates to 32 MiB. ExifTool reads files by their magic bytes, so
    the ingest refuses what Pillow does not recognise as an image before
    ExifTool is handed it (recorded here by wrapping the real reader)."""
    import zlib

    from loupe.ingest.exiftool_reader import ExifToolReader

    xmp = (b'<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/'
           b'02/22-rdf-syntax-ns#"><rdf:Description xmlns:dc="http://purl.org/dc/elements/1.1/">'
           b'<dc:description>' + b"D" * (32 * 1024 * 1024) + b'</dc:description>'
           b'</rdf:Description></rdf:RDF></x:xmpmeta>')
    s = zlib.compress(xmp, 9)
    objs = [b"<< /Type /Catalog /Pages 3 0 R /Metadata 2 0 R >>",
            b"<< /Type /Metadata /Subtype /XML /Filter /FlateDecode /Length %d >>\nstream\n"
            % len(s) + s + b"\nendstream",
            b"<< /Type /Pages /Kids [] /Count 0 >>"]
    out, offs = b"%PDF-1.4\n", []
    for i, o in enumerate(objs, 1):
        offs.append(len(out))
        out += b"%d 0 obj\n" % i + o + b"\nendobj\n"
    xref = len(out)
    out += (b"xref\n0 4\n0000000000 65535 f \n" + b"".join(b"%010d 00000 n \n" % o for o in offs)
            + b"trailer\n<< /Size 4 /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % xref)
    (photos / "report.jpg").write_bytes(out)
    png_with_text(photos / "fine.png", "harbour at dawn")
    handed: list[str] = []
    real = ExifToolReader.read

    def read(self, paths, fds=None):
        paths = list(paths)
        handed.extend(paths)
        return real(self, paths, fds)

    monkeypatch.setattr(ExifToolReader, "read", read)
    summary = lib.ingest(photos)
    assert (summary.new_assets, summary.failed) == (1, 1)
    [failure] = lib.failures()
    assert (Path(failure["path"]).name, failure["kind"], failure["reason"]) == (
        "report.jpg", "not_image", "not an image: no image format recognised in its bytes")
    assert [Path(p).name for p in handed] == ["fine.png"]


def test_stored_raw_metadata_is_bounded_per_value_and_per_file(lib: Library, photos: Path):
    """What ExifTool answers is stored bounded (16 KiB a
    value, 64 KiB a file), with a warning naming the file and the bound, so no
    later filter or facet statement walks megabytes of one file's metadata."""
    info = PngImagePlugin.PngInfo()
    info.add_text("Comment", "x" * 300_000, zip=False)      # uncompressed: no inflation
    info.add_text("Title", "Lighthouse keeper", zip=False)
    Image.new("RGB", (8, 8), (1, 2, 3)).save(photos / "long.png", pnginfo=info)
    summary = lib.ingest(photos)
    assert (summary.new_assets, summary.failed) == (1, 0)
    raw = lib.conn.execute("SELECT raw_metadata FROM asset_file").fetchone()[0]
    assert raw["file"]["PNG:Comment"] == ("(a value of 300,000 characters, over Loupe's bound "
                                          "of 16,384: not kept)")
    assert raw["file"]["PNG:Title"] == "Lighthouse keeper"
    assert lib.conn.execute("SELECT length(raw_metadata::text) FROM asset_file"
                            ).fetchone()[0] < 20_000
    [warning] = [w for w in summary.warnings
                 if w.kind == "too_long" and "in the raw metadata" in w.reason]
    assert warning.reason == (f"{photos / 'long.png'}: 1 metadata value(s) over 16,384 "
                              "characters (or nested over 16 levels) not kept in the raw metadata")


def test_a_flood_of_chunks_is_refused_before_exiftool(lib: Library, photos: Path):
    """A million empty zTXt chunks kept ExifTool busy
    102 s. More than 1,000 text/metadata chunks (or 100,000 chunks of any
    kind) in one PNG is refused before ExifTool reads it."""
    import zlib

    empty = zlib.compress(b"", 9)
    (photos / "flood.png").write_bytes(
        _png([_chunk(b"zTXt", b"C\x00\x00" + empty) for _ in range(1_001)]))
    (photos / "some.png").write_bytes(
        _png([_chunk(b"zTXt", b"C\x00\x00" + empty) for _ in range(1_000)], colour=(1, 2, 3)))
    summary = lib.ingest(photos)
    assert (summary.new_assets, summary.failed) == (1, 1)
    [failure] = lib.failures()
    assert (Path(failure["path"]).name, failure["kind"], failure["reason"]) == (
        "flood.png", "metadata", "more than 1,000 text and metadata chunks (Loupe's bound, "
                                 "applied before ExifTool): not read")


def test_stored_raw_metadata_of_a_file_is_at_most_64_kib(lib: Library, photos: Path):
    """15 text chunks of 65,005 characters (a 4 KB PNG)
    stored 975 KB of raw metadata, 250 times the file, outside the upload
    quota. Now a value keeps at most 16,384 characters and a file's raw
    metadata at most 65,536 (JSON characters, each tag measured alone); the
    tags Loupe reads back (here the XMP country, written last) are kept
    first."""
    import json

    info = PngImagePlugin.PngInfo()
    for i in range(20):                                  # 20 x 10,000 characters, uncompressed
        info.add_text(f"Note{i:02d}", "n" * 10_000, zip=False)
    info.add_itxt("XML:com.adobe.xmp", (
        '<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF '
        'xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description '
        'rdf:about="" xmlns:photoshop="http://ns.adobe.com/photoshop/1.0/">'
        '<photoshop:Country>Iceland</photoshop:Country></rdf:Description></rdf:RDF>'
        '</x:xmpmeta>'))
    Image.new("RGB", (8, 8), (7, 8, 9)).save(photos / "notes.png", pnginfo=info)
    summary = lib.ingest(photos)
    assert (summary.new_assets, summary.failed) == (1, 0)
    raw = lib.conn.execute("SELECT raw_metadata FROM asset_file").fetchone()[0]["file"]
    notes = sorted(k for k in raw if k.startswith("PNG:Note"))
    # each note is 10,018 characters as JSON alone; the file's other tags
    # (type, size, dimensions, the country...) take the rest of the 65,536
    others = sum(len(json.dumps({k: v}, ensure_ascii=False)) for k, v in raw.items()
                 if not k.startswith("PNG:Note"))
    assert len(json.dumps({"PNG:Note00": "n" * 10_000})) == 10_018
    assert len(notes) == (65_536 - 2 - others) // 10_018 == 6
    assert notes == [f"PNG:Note{i:02d}" for i in range(6)]      # in ExifTool's order
    assert raw["XMP-photoshop:Country"] == "Iceland"
    assert len(json.dumps(raw, ensure_ascii=False)) <= 65_536
    [warning] = [w for w in summary.warnings if "past" in w.reason]
    assert warning.reason == (f"{photos / 'notes.png'}: 14 metadata tag(s) past 65,536 "
                              "characters of raw metadata not kept")
