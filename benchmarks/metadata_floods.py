"""Metadata floods beyond JPEG (docs/security.md "Metadata
floods beyond JPEG"): what ExifTool spends on each hostile file, what the
structure walk spends refusing it, and which files of a real library the
bounds would refuse.

1. ``--survey DIR...``: every JPEG, PNG, WebP, GIF and TIFF under the folders
   is walked by :func:`loupe.ingest.structcheck.metadata_structure_problem`;
   printed: the files by container, each refusal (path and reason), and the
   CPU time of the survey. The bounds must refuse none of a real library.
2. ``--attack SCRATCH``: the hostile files of ``tests/test_metadata_floods.py``
   (its generators) and the files at each bound are written under SCRATCH;
   for each, ExifTool alone (``exiftool -j -G1``, as a child: wall, and
   user+sys from ``os.wait4``) and the walk in process (wall, and CPU from
   ``resource.getrusage``) are printed with the walk's answer.

    PYTHONPATH=src nice -n 10 python benchmarks/metadata_floods.py --survey /tmp/demo/library
    PYTHONPATH=src nice -n 10 python benchmarks/metadata_floods.py --attack /tmp/x-floods
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from loupe.ingest.structcheck import metadata_structure_problem

EXTENSIONS = {"jpg", "jpeg", "jpe", "png", "webp", "gif", "tif", "tiff"}


def _kind(head: bytes) -> str:
    if head[:3] == b"GIF":
        return "gif"
    if head in (b"II*\x00", b"MM\x00*", b"II+\x00", b"MM\x00+"):
        return "tiff"
    if head[:2] == b"\xff\xd8":
        return "jpeg"
    return "other"


def _walk(path: Path) -> tuple[str | None, float, float]:
    """The walk's answer, its wall and its CPU seconds."""
    fd = os.open(path, os.O_RDONLY)
    try:
        r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        why = metadata_structure_problem(fd)
        t1, r1 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
    finally:
        os.close(fd)
    return why, t1 - t0, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def survey(roots: list[str]) -> None:
    kinds, refused, started = Counter(), 0, time.process_time()
    for root in roots:
        for folder, _, names in os.walk(root):
            for name in names:
                if name.rsplit(".", 1)[-1].lower() not in EXTENSIONS:
                    continue
                path = Path(folder, name)
                with open(path, "rb") as fh:
                    kinds[_kind(fh.read(4))] += 1
                why, _, _ = _walk(path)
                if why:
                    refused += 1
                    print("REFUSED", path, why)
    print(f"{sum(kinds.values())} files {dict(kinds)}; refused {refused}; "
          f"{time.process_time() - started:.2f} s CPU")


def attack(scratch: Path) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    import test_metadata_floods as t

    scratch.mkdir(parents=True, exist_ok=True)
    files = {
        "flood.gif": t.gif_comment_flood(100_000, (1, 2, 3)),
        "edge.gif": t.gif_comment_flood(t.MAX_GIF_EXTENSIONS, (1, 2, 3)),
        "chain.tif": t.tiff_ifd_chain(100_000, (1, 2, 3)),
        "edge.tif": t.tiff_ifd_chain(t.MAX_IFDS - 1, (1, 2, 3)),
        "wide.tif": t.tiff_ifd_chain(1, (1, 2, 3), entries=t.MAX_IFD_ENTRIES),
        "wideedge.tif": t.tiff_ifd_chain(1, (1, 2, 3), entries=t.MAX_IFD_ENTRIES - 10),
        "deep.jpg": t.jpeg((1, 2, 3), t.deep_packet(1_800)),
        "edge.jpg": t.jpeg((1, 2, 3), t.deep_packet(t.MAX_DEPTH - 6)),
    }
    for name, data in files.items():
        path = scratch / name
        path.write_bytes(data)
        t0 = time.perf_counter()
        child = subprocess.Popen(["exiftool", "-j", "-G1", str(path)],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, _, use = os.wait4(child.pid, 0)
        wall = time.perf_counter() - t0
        why, wwall, wcpu = _walk(path)
        print(f"{name:13} {len(data):>9,} B  exiftool {wall:6.2f} s wall "
              f"{use.ru_utime + use.ru_stime:5.2f} s CPU  walk {wwall * 1000:7.1f} ms wall "
              f"{wcpu * 1000:6.1f} ms CPU  {why or 'read'}")
    print("load average", os.getloadavg())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--survey", nargs="+", metavar="DIR")
    ap.add_argument("--attack", type=Path, metavar="SCRATCH")
    args = ap.parse_args()
    if args.survey:
        survey(args.survey)
    if args.attack:
        attack(args.attack)


if __name__ == "__main__":
    main()
