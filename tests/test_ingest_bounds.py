"""Bounds of the ingest, each held with a file of the hostile kind it bounds
(ExifTool's answers held one at a time, a process with over 1,023 open
descriptors, one slow file among its neighbours, a folder chain 1,200 deep,
decoded bytes of the pixel bound, raw profiles and malformed packets measured
before ExifTool): real files written by Pillow and real ExifTool, real
embedded PostgreSQL.
Bounds that would take minutes at full size are scaled down in a child
process, the ratio kept (as test_xmp_bounds does)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from PIL import Image

SRC = str(Path(__file__).resolve().parents[1] / "src")


def _child(code: str, timeout: float = 240) -> dict:
    """Run ``code`` in a fresh Python (this worktree's loupe); its last line of
    stdout is JSON."""
    env = {**os.environ, "PYTHONPATH": SRC}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _mie_jpegs(folder: Path, count: int, chars: int) -> list[str]:
    """A small JPEG with a zlib MIE trailer whose
    comment is ``chars`` characters, one of them past U+FFFF (so Python keeps
    the whole string at 4 bytes a character)."""
    text = folder / "big.txt"
    text.write_text("M" * (chars - 1) + "\U0001F600", encoding="utf-8")
    mie = folder / "t.mie"
    subprocess.run(["exiftool", "-q", "-z", "-o", str(mie), "-trailersignature=1",
                    f"-MIE-Doc:Comment<={text}"], check=True, capture_output=True)
    trailer = mie.read_bytes()
    paths = []
    for i in range(count):
        jpg = folder / f"e{i}.jpg"
        Image.new("RGB", (64, 48), (i * 20 % 256, 90, 160)).save(jpg, quality=90)
        jpg.write_bytes(jpg.read_bytes() + trailer)
        paths.append(str(jpg))
    return paths


def test_a_batch_of_answers_just_under_the_cap_is_not_all_held(tmp_path):
    """Each file's answer is cut as soon as its call is parsed, so a
    read of N files whose answers are each just under the cap holds about one
    answer, not N. Cap scaled from 32 MiB to 4 MiB; 8 files of 4 MiB - 64 KiB
    of text: before the fix the read held 8 x ~16 MiB (peak growth 175 MiB
    measured here), after it the peak is one call's (~50 MiB)."""
    cap = 4 << 20
    paths = _mie_jpegs(tmp_path, 8, cap - (64 << 10))
    result = _child(f"""
import json, resource
from loupe.ingest import exiftool_reader, metadata_bounds
exiftool_reader.ANSWER_MAX_BYTES = {cap}
paths = {paths!r}
with exiftool_reader.ExifToolReader() as r:
    r.read(paths[:1])                      # warm: ExifTool started, code loaded
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out = r.read(paths)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({{"growth_kib": peak - base,
                   "longest": max(len(v) for raw in out.values() for v in raw.values()
                                  if isinstance(v, str)),
                   "notes": [raw.get(getattr(metadata_bounds, "HOLD_NOTE", "-")) for raw in out.values()],
                   "errors": [raw.get("ExifTool:Error") for raw in out.values()]}}))
""")
    assert result["errors"] == [None] * 8
    assert result["longest"] <= 32 * 1024          # HOLD_VALUE_CHARS
    assert all(n and "a value of 4,128,768 characters cut to 32,768" in n
               for n in result["notes"]), result["notes"]
    assert result["growth_kib"] < 90 * 1024, result     # before: ~175 MiB


def test_metadata_is_read_when_the_process_holds_over_1023_descriptors(tmp_path):
    """A server holding 1,100 idle connections gave ExifTool's
    pipes descriptors past 1023, which select() refuses ("filedescriptor out
    of range"): every upload failed. With 1,100 descriptors held, a file's
    metadata is read."""
    jpg = tmp_path / "u3.jpg"
    Image.new("RGB", (40, 30), (10, 120, 200)).save(jpg)
    subprocess.run(["exiftool", "-q", "-overwrite_original", "-XMP-dc:Title=harbour crane",
                    str(jpg)], check=True)
    result = _child(f"""
import json, os, resource
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 4096)), hard))
held = [os.dup(0) for _ in range(1100)]
from loupe.ingest import exiftool_reader
with exiftool_reader.ExifToolReader() as r:
    fd = r._et._process.stdout.fileno()
    raw = r.read([{str(jpg)!r}])[{str(jpg)!r}]
print(json.dumps({{"fd": fd, "title": raw.get("XMP-dc:Title"), "error": raw.get("ExifTool:Error")}}))
""")
    assert result["fd"] > 1023, result
    assert (result["title"], result["error"]) == ("harbour crane", None)


def test_one_slow_file_does_not_fail_its_neighbours(lib, photos: Path, monkeypatch):
    """After a batch ran out of time, its files were retried in
    order, the slow one (named to sort first) spent what was left and every
    file after it failed "not read: ExifTool spent this batch's time budget",
    at every ingest. Bounds scaled from 30 s / 60 s to 4 s / 8 s (same ratio):
    now each file first gets its share of what is left, so the three
    neighbours are read and only the slow file fails."""
    from test_xmp_bounds import SLOW_LEVELS, deep_xmp

    from loupe.ingest import exiftool_reader
    monkeypatch.setattr(exiftool_reader, "READ_TIMEOUT_S", 4.0)
    monkeypatch.setattr(exiftool_reader, "READ_BUDGET_S", 8.0)
    # a WebP's XMP chunk is ExifTool's to parse (a JPEG's packet is measured before
    # ExifTool)
    Image.new("RGB", (16, 16), (1, 2, 3)).save(
        photos / "000-planted.webp", xmp=deep_xmp(SLOW_LEVELS, "deep embedded").encode())
    for i in range(3):
        Image.new("RGB", (50, 40), (40 * i, 90, 160)).save(photos / f"holiday{i}.jpg")
    for run in (1, 2):
        summary = lib.ingest(photos)
        assert (summary.new_assets, summary.failed) == ((3, 1) if run == 1 else (0, 1))
    [failure] = lib.failures()
    assert Path(failure["path"]).name == "000-planted.webp"
    assert failure["reason"].startswith("ExifTool could not read the metadata: ExifTool took "
                                        "more than "), failure["reason"]


def _remove_chain(top: Path) -> None:
    """Remove ``top/a/a/...`` without recursion: move the chain up one level
    at a time."""
    a = top / "a"
    while a.is_dir():
        for f in a.iterdir():
            if f.name != "a":
                f.unlink()
        if (a / "a").is_dir():
            os.rename(a / "a", top / "b")
            os.rmdir(a)
            os.rename(top / "b", a)
        else:
            os.rmdir(a)


def test_a_folder_chain_1200_deep_is_skipped_by_name_and_the_rest_ingested(
        lib, photos: Path):
    """A chain of 1,200 one-letter folders (2,400 bytes of
    path) made os.walk raise RecursionError: nothing of the root ingested, at
    every run. Now folders past 64 levels are not entered, the first of them
    is reported by name, and the rest is ingested."""
    Image.new("RGB", (30, 20), (200, 40, 40)).save(photos / "top.jpg")
    fd = os.open(photos, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for level in range(1, 1201):
            os.mkdir("a", dir_fd=fd)
            inner = os.open("a", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
            if level in (3, 1200):
                Image.new("RGB", (30, 20), (40, level % 200, 40)).save(
                    f"/proc/self/fd/{fd}/x{level}.jpg")
    finally:
        os.close(fd)
    try:
        summary = lib.ingest(photos)
    finally:
        _remove_chain(photos)   # pytest's own clean-up (shutil.rmtree) recurses per level too
    assert (summary.new_assets, summary.failed) == (2, 0)
    deepest = str(photos) + "/a" * 65
    assert [(w.path, w.kind, w.reason) for w in summary.warnings] == [(
        deepest, "walk",
        f"folder not walked: more than 64 levels below {photos} (Loupe's bound on folder "
        f"depth); its files are not ingested")]
    assert [f["path"] for f in lib.failures() if f["kind"] == "walk"] == [deepest]


def test_the_pixel_bound_counts_decoded_bytes(lib, photos: Path):
    """A 100 MP deflate TIFF of mode F (4 bytes a pixel, 730 KB)
    passed the 100 MP bound and grew the server by 1,240 MiB. Revised by
    Pillow stores RGB at 4 bytes a pixel too, not 3, and
    the growth came from the later stages' full-size copies, which are gone;
    every mode now costs at most what RGB costs (decoded + 2 bytes a pixel,
    measured in test_decode_memory), and the bound is what RGB of max_pixels
    takes. So a 3 MP mode-F TIFF beside a 3 MP RGB TIFF is ingested under a
    3 MP bound, and a 3 MP + 1 pixel one is refused by the pixel bound."""
    Image.new("F", (2000, 1500), 0.5).save(photos / "f3.tif", compression="tiff_adobe_deflate")
    Image.new("RGB", (2000, 1500), (20, 90, 200)).save(photos / "rgb3.tif",
                                                        compression="tiff_adobe_deflate")
    Image.new("F", (2001, 1500), 0.5).save(photos / "f3plus.tif",
                                           compression="tiff_adobe_deflate")
    summary = lib.ingest(photos, max_pixels=3_000_000)
    assert (summary.new_assets, summary.failed) == (2, 1)
    [failure] = summary.failures
    assert (Path(failure.path).name, failure.kind, failure.reason) == (
        "f3plus.tif", "too_large",
        "2001x1500 = 3,001,500 pixels exceeds the limit of 3,000,000 (decompression bomb guard)")


def _deep_packet(depth: int, before: str = "") -> bytes:
    inner = ("<rdf:Description rdf:about='' xmlns:dc='http://purl.org/dc/elements/1.1/'>"
             f"<dc:title>{before}" + "<rdf:Bag><rdf:li>" * depth + "deep"
             + "</rdf:li></rdf:Bag>" * depth + "</dc:title></rdf:Description>")
    return ("<?xpacket begin='' id='W5M0MpCehiHzreSzNTczkc9d'?><x:xmpmeta "
            "xmlns:x='adobe:ns:meta/'><rdf:RDF "
            "xmlns:rdf='http://www.w3.org/1999/02/22-rdf-syntax-ns#'>" + inner
            + "</rdf:RDF></x:xmpmeta><?xpacket end='w'?>").encode()


def _png_with_chunk(path: Path, kind: bytes, data: bytes) -> Path:
    import io
    import struct
    import zlib

    out = io.BytesIO()
    Image.new("RGB", (90, 70), (4, 5, 6)).save(out, "PNG")
    png = out.getvalue()
    chunk = (struct.pack(">I", len(data)) + kind + data
             + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    path.write_bytes(png[:-12] + chunk + png[-12:])
    return path


def test_raw_profile_and_malformed_packets_are_measured_before_exiftool(tmp_path):
    """ExifTool also reads XMP from ImageMagick's "Raw profile
    type xmp" / "APP1" text chunks (hex), which were not measured (a 1,973-byte
    PNG kept ExifTool busy past 45 s); and C2b: one undefined entity
    (``&nbsp;``) before the deep part switched the measurement off, for a
    PNG's packet and a sidecar alike. All are now refused by their depth."""
    import zlib

    from loupe.ingest.pngcheck import compressed_chunk_problem
    from loupe.ingest.xmpcheck import sidecar_shape_problem

    def raw_profile(kind: str, payload: bytes) -> bytes:
        h = payload.hex()
        return (f"\n{kind}\n{len(payload):8d}\n" + "\n".join(
            h[i:i + 72] for i in range(0, len(h), 72)) + "\n").encode()

    packet = _deep_packet(3000)
    files = {
        "rawxmpz.png": _png_with_chunk(tmp_path / "rawxmpz.png", b"zTXt", b"Raw profile type xmp"
                                       + b"\x00\x00" + zlib.compress(raw_profile("xmp", packet))),
        "rawapp1.png": _png_with_chunk(tmp_path / "rawapp1.png", b"tEXt", b"Raw profile type APP1"
                                       + b"\x00" + raw_profile("APP1", b"http://ns.adobe.com/xap/"
                                                               b"1.0/\x00" + packet)),
        "entemb.png": _png_with_chunk(tmp_path / "entemb.png", b"iTXt", b"XML:com.adobe.xmp"
                                      + b"\x00\x01\x00\x00\x00"
                                      + zlib.compress(_deep_packet(3000, "x&nbsp;y"))),
    }
    for name, path in files.items():
        fd = os.open(path, os.O_RDONLY)
        try:
            kind = {"rawxmpz.png": "zTXt", "rawapp1.png": "tEXt", "entemb.png": "iTXt"}[name]
            assert compressed_chunk_problem(fd) == (
                f"an XMP packet embedded in a {kind} chunk: its elements nest more than 64 "
                f"levels deep (Loupe's bound, applied before ExifTool)"), name
        finally:
            os.close(fd)
    sidecar = tmp_path / "ent.jpg.xmp"
    sidecar.write_bytes(_deep_packet(1200, "x&nbsp;y"))
    fd = os.open(sidecar, os.O_RDONLY)
    try:
        assert sidecar_shape_problem(fd, "ent.jpg.xmp") == (
            "XMP sidecar ent.jpg.xmp ignored: its elements nest more than 64 levels deep (the "
            "bound, checked before ExifTool reads it); the image is indexed from its own metadata")
    finally:
        os.close(fd)
    # a shallow packet, malformed or not, is still ExifTool's to read
    fine = _png_with_chunk(tmp_path / "fine.png", b"iTXt", b"XML:com.adobe.xmp\x00\x00\x00\x00\x00"
                           + _deep_packet(3, "x&nbsp;y"))
    fd = os.open(fine, os.O_RDONLY)
    try:
        assert compressed_chunk_problem(fd) is None
    finally:
        os.close(fd)
