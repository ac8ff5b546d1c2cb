"""ExifTool's answer, its memory and its time are bounded: a zlib MIE trailer appended to a JPEG inflates 102 KB into 100 MiB
of JSON; TIFF/JPEG IFDs can point at one string many times; a timed-out
batch retried file by file must not spend the bound again for each call. Real
files (Pillow, ExifTool's own MIE writer), real ExifTool, real embedded
PostgreSQL."""

from __future__ import annotations

import resource
import shutil
import subprocess
import time
from pathlib import Path

from PIL import Image, PngImagePlugin

from loupe import Library
from loupe.ingest import exiftool_reader

from test_xmp_bounds import HEAD, SLOW_LEVELS, TAIL, deep_xmp


def mie_bomb(path: Path, work: Path, inflated: int) -> None:
    """A 100 x 80 JPEG followed by a MIE trailer whose one comment is
    ``inflated`` bytes of "M", zlib-compressed by ExifTool (``-z``)."""
    Image.new("RGB", (100, 80), (9, 90, 200)).save(work / "base.jpg", quality=90)
    (work / "big.txt").write_bytes(b"M" * inflated)
    subprocess.run(["exiftool", "-q", "-z", "-o", str(work / "tr.mie"), "-trailersignature=1",
                    f"-MIE-Doc:Comment<={work / 'big.txt'}"], check=True)
    path.write_bytes((work / "base.jpg").read_bytes() + (work / "tr.mie").read_bytes())
    (work / "big.txt").unlink()


def test_an_inflating_mie_trailer_is_stopped_at_the_answer_bound(
        lib: Library, photos: Path, tmp_path: Path):
    work = tmp_path / "work"
    work.mkdir()
    info = PngImagePlugin.PngInfo()
    info.add_itxt("XML:com.adobe.xmp", HEAD.format(title="quiet harbour") + TAIL)
    Image.new("RGB", (16, 16), (3, 2, 1)).save(photos / "fine.png", pnginfo=info)
    assert lib.ingest(photos).new_assets == 1       # warm: models, connections
    mie_bomb(photos / "bomb.jpg", work, 48 << 20)          # 48 MiB of text
    assert (photos / "bomb.jpg").stat().st_size < 100_000  # ~1000:1
    with Image.open(photos / "bomb.jpg") as im:            # an image Pillow decodes
        assert im.size == (100, 80)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    summary = lib.ingest(photos)
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert (summary.new_assets, summary.failed) == (0, 1)
    [failure] = lib.failures()
    assert Path(failure["path"]).name == "bomb.jpg" and failure["kind"] == "metadata"
    assert failure["reason"] == (
        "ExifTool could not read the metadata: ExifTool's answer for this file passed "
        "33,554,432 bytes (Loupe's bound on what ExifTool may print for one file, for example "
        "inflated or repeated metadata): stopped")
    # Loupe's peak memory never held the 48 MiB answer (before: read whole,
    # joined and decoded, then bounded: about 200 MiB)
    assert grown_kib < 48 << 10, grown_kib
    assert [h.title for h in lib.search("quiet harbour").hits] == ["quiet harbour"]


def test_the_exiftool_child_runs_under_an_address_space_bound():
    with exiftool_reader.ExifToolReader() as reader:
        reader.start()
        pid = reader._et._process.pid
        limits = Path(f"/proc/{pid}/limits").read_text()
        [line] = [ln for ln in limits.splitlines() if ln.startswith("Max address space")]
        assert line.split()[3:5] == [str(1 << 30), str(1 << 30)]
        # and it still reads an ordinary file
        assert reader.version


def test_a_batch_that_times_out_shares_one_time_budget(
        lib: Library, photos: Path, monkeypatch):
    """Four slow files (deep XMP embedded in WebPs; a JPEG's packet is refused
    before ExifTool): unbounded,
    (1 + 4) calls of up to 2 s each (10 s); now the batch and its retries share one
    budget (3 s here), and the files past it fail saying so."""
    monkeypatch.setattr(exiftool_reader, "READ_TIMEOUT_S", 2.0)
    monkeypatch.setattr(exiftool_reader, "READ_BUDGET_S", 3.0, raising=False)
    for i in range(4):
        Image.new("RGB", (16, 16), (i, 2, 3)).save(
            photos / f"slow{i}.webp", xmp=deep_xmp(SLOW_LEVELS, f"deep embedded {i}").encode())
    started = time.monotonic()
    summary = lib.ingest(photos)
    took = time.monotonic() - started
    assert summary.failed == 4
    assert took < 3.0 + 4.0, took        # the budget, plus process restarts and the rest
    reasons = sorted(f["reason"] for f in lib.failures())
    spent = ("ExifTool could not read the metadata: not read: ExifTool spent this batch's "
             "time budget (3 s, Loupe's bound) on other files of the same batch; ingest it again")
    # whether the last file finds the budget spent or gets a last sliver of it
    # depends on how long the restarts took; either way it says which bound stopped it
    assert all(r == spent or r.endswith("to read this file (the bound per call): stopped")
               or r.endswith("to read this file (what was left of the batch's time budget): "
                             "stopped")
               or r.endswith("to read this file (its share of what was left of the batch's "
                             "time budget): stopped") for r in reasons), reasons
