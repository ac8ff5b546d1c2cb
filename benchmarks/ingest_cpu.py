"""CPU seconds per asset of one first ingest: the figure a shared
machine can measure, where wall-clock throughput cannot.

Usage:
    PYTHONPATH=$PWD/src .venv/bin/python benchmarks/ingest_cpu.py FOLDER [--languages en,fr,de,es]
        [--repeat N] [--json] [--webp-method M]
    .venv/bin/python benchmarks/ingest_cpu.py --smoke    # seconds: benchmarks/ingest.py's folder

Each run ingests FOLDER into a fresh library home (embedded PostgreSQL) and
reports the CPU time (user + system, seconds) spent during the ingest alone,
split by process:

- ``python``: this process, every thread (``getrusage(RUSAGE_SELF)``);
- ``exiftool``: its child processes that ended during the ingest — the
  ingest's ExifTool (``getrusage(RUSAGE_CHILDREN)``);
- ``postgres``: the embedded server — the postmaster's own and reaped
  children's time (``/proc/PID/stat`` fields utime, stime, cutime, cstime)
  plus its live children's utime + stime: the ingest's backend, and the
  checkpointer, WAL writer and autovacuum work the ingest caused.

Time per asset divides by the ingest's new assets. CPU time is not free of
the machine's load (caches and frequency are shared) but far less bound to
it than wall time; the load average is printed beside it. The throughput
target (assets/s) is measured by ``benchmarks/ingest.py`` on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import tempfile
import time
from pathlib import Path

from loupe import Library
from loupe.db.server import stop_embedded

_TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str] | None:
    """Fields of ``/proc/PID/stat`` after the command name (field 3 is [0])."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return raw[raw.rindex(")") + 2:].split()


def postgres_cpu(pgdata: Path) -> float:
    """CPU seconds (user + system) of the PostgreSQL server running from
    ``pgdata``: the postmaster, its reaped children, its live children."""
    pid = int((pgdata / "postmaster.pid").read_text().split()[0])
    own = _stat(pid)
    if own is None:
        raise RuntimeError(f"no postmaster {pid} for {pgdata}")
    # fields 14..17 (1-based) are utime, stime, cutime, cstime: [11..14] here
    total = sum(int(x) for x in own[11:15])
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (st := _stat(int(entry))) is not None and int(st[1]) == pid:
            total += int(st[11]) + int(st[12])
    return total / _TICK


def _own_cpu() -> tuple[float, float]:
    me = resource.getrusage(resource.RUSAGE_SELF)
    ch = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, ch.ru_utime + ch.ru_stime


def one_run(folder: Path, languages: list[str]) -> dict:
    """Ingest ``folder`` into a fresh home; the CPU seconds of each process
    during the ingest, the wall seconds, the new assets and the load average."""
    tmp = Path(tempfile.mkdtemp(prefix="loupe-cpu-"))
    pgdata = tmp / "home" / "pgdata"
    try:
        with Library.open(tmp / "home", create=True) as lib:
            lib.init(languages=languages)
            py0, ch0 = _own_cpu()
            pg0 = postgres_cpu(pgdata)
            load0 = os.getloadavg()[0]
            t0 = time.perf_counter()
            summary = lib.ingest(folder)
            wall = time.perf_counter() - t0
            py1, ch1 = _own_cpu()
            pg1 = postgres_cpu(pgdata)
            load1 = os.getloadavg()[0]
        n = summary.new_assets
        out = {"assets": n, "failed": summary.failed, "wall_s": round(wall, 2),
               "python_s": round(py1 - py0, 2), "exiftool_s": round(ch1 - ch0, 2),
               "postgres_s": round(pg1 - pg0, 2), "load": [load0, load1]}
        out["total_s"] = round(out["python_s"] + out["exiftool_s"] + out["postgres_s"], 2)
        for k in ("python", "exiftool", "postgres", "total"):
            out[f"{k}_ms_per_asset"] = round(1000 * out[f"{k}_s"] / max(1, n), 1)
        return out
    finally:
        # stopped before its folder goes: the exit hook cannot stop a server
        # whose data folder is gone (it would outlive this process)
        if (pgdata / "postmaster.pid").exists():
            stop_embedded(pgdata, force=True)
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("folder", type=Path, nargs="?")
    ap.add_argument("--smoke", action="store_true",
                    help="seconds: the generated folder of benchmarks/ingest.py --smoke")
    ap.add_argument("--languages", default="en,fr,de,es")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--webp-method", type=int, default=None,
                    help="libwebp method of the thumbnails for this run (0-6; comparison only)")
    args = ap.parse_args()
    if args.webp_method is not None:
        from loupe.ingest import image
        image.THUMBNAIL_WEBP_METHOD = args.webp_method
    smoke_dir = None
    if args.smoke:
        import sys
        sys.path.insert(0, str(Path(__file__).parent))
        from ingest import smoke_library
        smoke_dir = Path(tempfile.mkdtemp(prefix="loupe-cpu-smoke-"))
        args.folder = smoke_library(smoke_dir)
    elif args.folder is None:
        ap.error("give a folder, or --smoke")
    try:
        for _ in range(args.repeat):
            _report(one_run(args.folder, args.languages.split(",")), args.json)
    finally:
        if smoke_dir is not None:
            shutil.rmtree(smoke_dir, ignore_errors=True)


def _report(r: dict, as_json: bool) -> None:
    """Print one run's figures (a JSON line with ``as_json``)."""
    if as_json:
        print(json.dumps(r), flush=True)
        return
    print(f"{r['assets']} assets, {r['failed']} failed, {r['wall_s']} s wall, load "
          f"{r['load'][0]:.2f}->{r['load'][1]:.2f}; CPU ms/asset: python "
          f"{r['python_ms_per_asset']}, exiftool {r['exiftool_ms_per_asset']}, postgres "
          f"{r['postgres_ms_per_asset']}, total {r['total_ms_per_asset']}", flush=True)


if __name__ == "__main__":
    main()
