"""A progressive JPEG's scans are counted before anything decodes it (200
repeated 95-byte scans in a 270 KB upload cost 28.7 s of server CPU). Real files written by Pillow, the real ingest, the real web app."""

from __future__ import annotations

import io
import time
from pathlib import Path

from PIL import Image

from loupe import Library
MAX_SCANS = 100      # loupe.ingest.jpegcheck.MAX_SCANS, written out so the test runs on older code


def _scans(data: bytes) -> list[tuple[int, int]]:
    """(start, end) of each scan (SOS segment and its entropy-coded data)."""
    i, out = 2, []
    while i < len(data):
        m = data[i + 1]
        if m == 0xD9:
            break
        length = int.from_bytes(data[i + 2:i + 4], "big")
        if m == 0xDA:
            j = i + 2 + length
            while not (data[j] == 0xFF and data[j + 1] != 0x00 and not 0xD0 <= data[j + 1] <= 0xD7):
                j += 1
            out.append((i, j))
            i = j
        else:
            i += 2 + length
    return out


def progressive(side: int, extra: int, grey: int = 128) -> bytes:
    """A flat progressive JPEG whose last scan is repeated ``extra`` times
    (libjpeg decodes every repetition: "bogus progression" is a warning)."""
    buf = io.BytesIO()
    Image.new("L", (side, side), grey).save(buf, "JPEG", progressive=True, quality=90)
    data = buf.getvalue()
    start, end = _scans(data)[-1]
    return data[:end] + data[start:end] * extra + data[end:]


def test_a_jpeg_with_too_many_scans_is_refused_before_decoding(lib: Library, photos: Path):
    bomb = progressive(4000, 400)
    assert len(bomb) < 120_000
    (photos / "scans.jpg").write_bytes(bomb)
    (photos / "normal.jpg").write_bytes(progressive(64, 0, grey=90))   # 6 scans: fine
    started = time.monotonic()
    summary = lib.ingest(photos)
    took = time.monotonic() - started
    assert (summary.new_assets, summary.failed) == (1, 1)
    [failure] = lib.failures()
    assert (Path(failure["path"]).name, failure["kind"], failure["reason"]) == (
        "scans.jpg", "too_large",
        f"a JPEG of more than {MAX_SCANS} scans (Loupe's bound, checked before decoding: "
        "each scan decodes the whole picture again)")
    assert took < 20, took


def test_search_by_picture_refuses_it_too(tmp_path, db_url, home):
    from fastapi.testclient import TestClient

    from loupe.web import create_app

    with Library.open(home, database_url=db_url) as lib:
        lib.create_user("bob", "bob-password")
    with TestClient(create_app(home, database_url=db_url, pool_size=1)) as client:
        tok = client.post("/api/tokens", json={"name": "bob", "password": "bob-password"})
        h = {"Authorization": f"Bearer {tok.json()['token']}"}
        r = client.post("/api/similar", headers=h,
                        files={"file": ("s.jpg", progressive(4000, 400), "image/jpeg")})
        assert r.status_code == 413
        assert r.json()["detail"] == (f"s.jpg: a JPEG of more than {MAX_SCANS} scans (Loupe's "
                                      "bound, checked before decoding: each scan decodes the "
                                      "whole picture again)")
        r = client.post("/api/similar", headers=h,
                        files={"file": ("ok.jpg", progressive(64, 0), "image/jpeg")})
        assert r.status_code == 200, r.text


TRUNCATE_DURING_WALK = """
import os, sys
from loupe.ingest import jpegcheck
path = sys.argv[1]
walk = jpegcheck._walk
def truncating(*args):      # the file shrinks once the walk has it open
    os.truncate(path, 4096)
    return walk(*args)
jpegcheck._walk = truncating
fd = os.open(path, os.O_RDONLY)
print("answer", jpegcheck.scan_count_problem(fd))
"""


def test_a_jpeg_truncated_during_the_scan_walk_does_not_kill_the_process(tmp_path: Path):
    """The walk read a memory map, and a file truncated
    while it was mapped raised SIGBUS (``loupe ingest`` died, rc -7, no
    report). Now it reads blocks with pread: the short file just ends."""
    import os
    import subprocess
    import sys

    import numpy as np

    rng = np.random.default_rng(7)
    path = tmp_path / "shrinking.jpg"
    Image.fromarray(rng.integers(0, 256, (600, 600, 3), dtype=np.uint8)).save(
        path, "JPEG", progressive=True, quality=95)
    assert path.stat().st_size > 200_000
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    done = subprocess.run([sys.executable, "-c", TRUNCATE_DURING_WALK, str(path)],
                          capture_output=True, text=True, env=env, timeout=60)
    assert (done.returncode, done.stdout.strip()) == (0, "answer None"), (done.returncode,
                                                                         done.stderr[-500:])
    assert path.stat().st_size == 4096


MAX_METADATA_SEGMENTS = 1_000   # loupe.ingest.jpegcheck.MAX_METADATA_SEGMENTS, written out


def com_flood(count: int, colour: tuple[int, int, int]) -> bytes:
    """A 64x48 JPEG (Pillow writes one APP0 segment) with ``count`` empty COM
    segments (``FF FE 00 02``, 4 bytes each) right after its SOI."""
    buf = io.BytesIO()
    Image.new("RGB", (64, 48), colour).save(buf, "JPEG")
    data = buf.getvalue()
    return data[:2] + b"\xff\xfe\x00\x02" * count + data[2:]


def test_a_jpeg_segment_flood_is_refused_before_exiftool(lib: Library, photos: Path):
    """500,000 empty COM segments in a 2 MB JPEG kept
    ExifTool busy 20-43 s. More than 1,000 APPn/COM segments (the PNG chunk
    bound) are refused before ExifTool; a file at the bound is read."""
    flood = com_flood(5_000, (200, 30, 30))
    (photos / "flood.jpg").write_bytes(flood)
    # at the bound: the APP0 segment plus 999 COM segments = 1,000
    (photos / "edge.jpg").write_bytes(com_flood(MAX_METADATA_SEGMENTS - 1, (30, 200, 30)))
    (photos / "over.jpg").write_bytes(com_flood(MAX_METADATA_SEGMENTS, (30, 30, 200)))
    with Image.open(io.BytesIO(flood)) as im:       # Pillow reads it: only the count refuses it
        assert im.size == (64, 48)
    summary = lib.ingest(photos)
    assert (summary.new_assets, summary.failed) == (1, 2)
    reason = (f"a JPEG of more than {MAX_METADATA_SEGMENTS:,} metadata segments (APPn and "
              f"COM; Loupe's bound, checked before ExifTool reads them)")
    assert sorted((Path(f["path"]).name, f["kind"], f["reason"]) for f in lib.failures()) == [
        ("flood.jpg", "too_large", reason), ("over.jpg", "too_large", reason)]


MAX_SCAN_MEGAPIXELS = 2_000     # loupe.ingest.jpegcheck.MAX_SCAN_MEGAPIXELS, written out


def test_the_scan_bound_scales_with_the_pixels(lib: Library, photos: Path, tmp_path: Path):
    """100 scans (the flat bound) of a 100 MP frame cost
    19 s of server CPU per upload. Now scans x megapixels <= 2,000 too: a
    25 MP frame may have 80 scans (Pillow's greyscale script has 6, plus 74
    repeated), not 81. The walk reads the frame's size from its SOF segment."""
    import os

    from loupe.ingest.jpegcheck import scan_count_problem

    reason = (f"a JPEG of 25,000,000 pixels with more than 80 scans (at most "
              f"{MAX_SCAN_MEGAPIXELS:,} scans x megapixels, Loupe's bound, checked before "
              "decoding: each scan decodes the whole picture again)")
    answers = {}
    for extra in (74, 75):
        path = tmp_path / f"edge{extra}.jpg"
        path.write_bytes(progressive(5000, extra))
        assert len(_scans(path.read_bytes())) == 6 + extra
        fd = os.open(path, os.O_RDONLY)
        try:
            answers[6 + extra] = scan_count_problem(fd)
        finally:
            os.close(fd)
    assert answers == {80: None, 81: reason}
    # through the ingest: refused before decoding, with the same reason
    (photos / "wide.jpg").write_bytes(progressive(5000, 75))
    summary = lib.ingest(photos)
    assert (summary.new_assets, summary.failed) == (0, 1)
    [failure] = lib.failures()
    assert (Path(failure["path"]).name, failure["kind"], failure["reason"]) == (
        "wide.jpg", "too_large", reason)
