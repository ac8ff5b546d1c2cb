"""Ingest by queued jobs: one inline ingest process against 1 and 2 worker
processes (``loupe.jobs``), on the same generated folder, in one run.

Usage:
    .venv/bin/python benchmarks/workers.py [--files N] [--database-url URL]
    .venv/bin/python benchmarks/workers.py --smoke     # seconds (CI)

Each mode ingests the folder into a fresh database of one server (the
embedded PostgreSQL unless a URL is given) and a fresh library home:
``inline`` is ``Library.ingest`` in this process (decoding on its own thread
pool); ``N worker(s)`` queues one job per file (``enqueue_ingest``, timed
too) and starts N worker processes that run until the queue is empty
(``run_worker(wait=False)``: start-up, ExifTool start and connection
included). Prints the seconds of each mode and its ratio to inline; every
mode is checked to hold one asset per file.
"""

from __future__ import annotations

import argparse
import atexit
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import psycopg
from PIL import Image
from psycopg.conninfo import make_conninfo

from loupe import Library
from loupe.db.server import embedded_uri, stop_embedded
from loupe.jobs.queue import enqueue_ingest

SRC = str(Path(__file__).resolve().parents[1] / "src")
WORKER = "import sys; from loupe.jobs.worker import run_worker; " \
         "run_worker(sys.argv[1], sys.argv[2], wait=False)"


def make_folder(folder: Path, n: int, size: tuple[int, int]) -> None:
    """``n`` JPEGs (gradients, each its own bytes) in three sub-folders."""
    w, h = size
    for i in range(n):
        img = Image.linear_gradient("L").resize((w, h)).convert("RGB")
        img.paste((i * 37 % 256, i * 11 % 256, 255 - i % 256),
                  (i % (w - 8), (i // w) % (h - 8), i % (w - 8) + 8, (i // w) % (h - 8) + 8))
        dest = folder / f"set{i % 3}" / f"p{i:04d}.jpg"
        dest.parent.mkdir(parents=True, exist_ok=True)
        img.save(dest, quality=90)


def run_mode(admin_url: str, folder: Path, work: Path, workers: int, n: int) -> tuple[float, float]:
    """One mode on a fresh database: (seconds in all, seconds of the enqueue)."""
    name = "bench_w_" + uuid.uuid4().hex[:10]
    with psycopg.connect(admin_url, autocommit=True) as c:
        c.execute(f"CREATE DATABASE {name}")
    url = make_conninfo(admin_url, dbname=name)
    home = work / name
    try:
        with Library.open(home, database_url=url, create=True) as lib:
            lib.init(languages=["en"])
            start = time.perf_counter()
            enqueue_s = 0.0
            if workers == 0:
                lib.ingest(folder)
            else:
                enqueue_ingest(lib.conn, lib.tenant_id, lib.home, folder)
                enqueue_s = time.perf_counter() - start
                env = {**os.environ, "PYTHONPATH": SRC}
                procs = [subprocess.Popen([sys.executable, "-c", WORKER, str(home), url],
                                          env=env, stdin=subprocess.DEVNULL)
                         for _ in range(workers)]
                for p in procs:
                    if p.wait(1800) != 0:
                        raise SystemExit(f"a worker exited with {p.returncode}")
            seconds = time.perf_counter() - start
            assets = lib.conn.execute("SELECT count(*) FROM asset").fetchone()[0]
            if assets != n:
                raise SystemExit(f"{assets} assets for {n} files")
        return seconds, enqueue_s
    finally:
        with psycopg.connect(admin_url, autocommit=True) as c:
            c.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        shutil.rmtree(home, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=120)
    ap.add_argument("--database-url")
    ap.add_argument("--smoke", action="store_true")
    args = ap.parse_args()
    n, size = (6, (64, 48)) if args.smoke else (args.files, (1600, 1200))
    work = Path(tempfile.mkdtemp(prefix="loupe-bench-workers-"))
    # registered before the server starts, so it runs after the server's own
    # exit hook (atexit runs last-in first-out), which touches its lock file
    atexit.register(shutil.rmtree, work, True)
    pgdata = work / "pg" / "pgdata"
    try:
        folder = work / "photos"
        make_folder(folder, n, size)
        admin = args.database_url or embedded_uri(pgdata)
        print(f"files: {n:,} JPEGs of {size[0]}x{size[1]}, cores: {os.cpu_count()}")
        base = None
        for workers in (0, 1, 2):
            seconds, enqueue_s = run_mode(admin, folder, work, workers, n)
            base = base or seconds
            label = "inline (1 process)" if workers == 0 else f"{workers} worker process(es)"
            extra = f" (enqueue {enqueue_s:.2f} s)" if workers else ""
            print(f"{label:24s} {seconds:7.2f} s  {n / seconds:6.1f} files/s  "
                  f"time ratio to inline {seconds / base:.2f}{extra}")
    finally:
        if not args.database_url and pgdata.exists():
            stop_embedded(pgdata, force=True)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
