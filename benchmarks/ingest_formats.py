"""Ingest throughput of camera RAW (DNG) and video against JPEG in the same run.

Usage:
    .venv/bin/python benchmarks/ingest_formats.py [--files N] [--database-url URL]
    .venv/bin/python benchmarks/ingest_formats.py --smoke   # seconds (CI)

Writes N files of each kind into a fresh folder per kind, all of the same
picture size, then ingests each folder into one fresh library (embedded
PostgreSQL unless a URL is given), one run per kind, and prints files per
second and each kind's time per file as a ratio to JPEG's (the peer: the
format Loupe read before). JPEG runs first and again last (other bytes), so
the first run's start-up costs and a change of load during the run show;
the ratios are to the mean of the two. Kinds:

* ``jpeg``        a W x H JPEG (quality 90) of a smooth gradient;
* ``dng-preview`` a DNG of a W x H sensor with a W x H JPEG preview of one
                  colour, as cameras embed a full-size one (LibRaw hands it
                  over; nothing is demosaiced);
* ``dng-sensor``  a DNG of a W x H sensor and no preview (LibRaw demosaics
                  it at half size);
* ``mp4``         an H.264 MP4 of W x H frames, S seconds at 30 frames a
                  second (one poster frame decoded).

The files are written by tests/mediafiles.py (tifffile, PyAV).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from mediafiles import make_dng, make_video  # noqa: E402

from loupe import Library  # noqa: E402
from loupe.db.server import stop_embedded  # noqa: E402


def write_kind(kind: str, folder: Path, n: int, size: tuple[int, int], seconds: float) -> None:
    """``n`` files of ``kind`` (module docstring) of ``size`` in ``folder``."""
    folder.mkdir(parents=True)
    w, h = size
    for i in range(n):
        if kind in ("jpeg", "jpeg-again"):
            i += 1000 if kind == "jpeg-again" else 0
            yy, xx = np.mgrid[0:h, 0:w]
            a = np.stack([(xx + 7 * i) % 256, (yy + 3 * i) % 256,
                          (xx + yy) % 256], axis=-1).astype(np.uint8)
            Image.fromarray(a, "RGB").save(folder / f"p{i:03d}.jpg", quality=90)
        elif kind == "dng-preview":
            make_dng(folder / f"p{i:03d}.dng", size=size, preview=(w, h),
                     preview_rgb=(i * 9 % 256, 80, 160), model=f"Bench {i}", jpeg_preview=True)
        elif kind == "dng-sensor":
            make_dng(folder / f"p{i:03d}.dng", size=size, model=f"Bench {i}")
        elif kind == "mp4":
            make_video(folder / f"p{i:03d}.mp4", codec="libx264", size=size, fps=30,
                       frames=max(2, int(30 * seconds)) + i)
        else:  # pragma: no cover
            raise ValueError(kind)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--smoke", action="store_true", help="seconds: 2 small files a kind (CI)")
    ap.add_argument("--files", type=int, default=12, help="files of each kind")
    ap.add_argument("--width", type=int, default=3000)
    ap.add_argument("--height", type=int, default=2000)
    ap.add_argument("--seconds", type=float, default=3.0, help="length of each video")
    ap.add_argument("--database-url", default=None)
    args = ap.parse_args()
    if args.smoke:
        args.files, args.width, args.height, args.seconds = 2, 320, 240, 0.5
    size = (args.width, args.height)
    kinds = ("jpeg", "dng-preview", "dng-sensor", "mp4", "jpeg-again")
    tmp = Path(tempfile.mkdtemp(prefix="loupe-bench-formats-"))
    try:
        for kind in kinds:
            write_kind(kind, tmp / "files" / kind, args.files, size, args.seconds)
        mb = {k: sum(p.stat().st_size for p in (tmp / "files" / k).iterdir()) / 2**20
              for k in kinds}
        print(f"files: {args.files} a kind, {args.width}x{args.height}, videos "
              f"{args.seconds:g} s at 30 frames/s; cores: {os.cpu_count()}")
        times: dict[str, float] = {}
        with Library.open(tmp / "home", database_url=args.database_url, create=True) as lib:
            lib.init(languages=["en"])
            for kind in kinds:
                t0 = time.perf_counter()
                s = lib.ingest(tmp / "files" / kind)
                times[kind] = time.perf_counter() - t0
                types = sorted({r[0] for r in lib.conn.execute(
                    "SELECT a.media_type FROM asset a JOIN asset_file f ON f.asset_id = a.id "
                    "WHERE f.path LIKE %s", (str(tmp / "files" / kind) + "/%",))})
                print(f"{kind:12s} {s.new_assets} assets, {s.failed} failed, "
                      f"{mb[kind]:.1f} MiB, {times[kind]:.2f} s -> "
                      f"{s.new_assets / times[kind]:.2f} files/s  ({', '.join(types)})")
        jpeg = (times["jpeg"] + times["jpeg-again"]) / 2
        print("time per file as a ratio to JPEG's (same run, mean of its two runs):")
        for kind in kinds[1:-1]:
            print(f"  {kind:12s} {times[kind] / jpeg:.2f}")
    finally:
        if (tmp / "home" / "pgdata" / "postmaster.pid").exists():
            stop_embedded(tmp / "home" / "pgdata", force=True)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
