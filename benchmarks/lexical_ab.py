"""The lexical lane of two checkouts, query by query in one process, on one
library: what a change to the lane's code did, under the same load.

Usage:
    .venv/bin/python benchmarks/lexical_ab.py --before /path/to/other/checkout/src \\
        --docs 10000 [--queries 300]

Builds the synthetic library of benchmarks/lexical.py (same documents, same
queries) with this checkout's code, then opens it a second time with the
``loupe`` package found under ``--before`` (copied to a temporary folder as
the package ``loupe_before``, so both live in one interpreter; it must
migrate the database to the same schema). Each query runs through
``lexical_search`` on both connections, alternately first, after a warm-up
pass of both; the first runs are timed apart (each query's first time on a
connection). On a busy machine the two columns share whatever load there is,
which separate runs do not. Also checks that both return the same assets.
"""

from __future__ import annotations

import argparse
import atexit
import importlib
import importlib.util
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).parent
_spec = importlib.util.spec_from_file_location("lexical_bench", HERE / "lexical.py")
lexical_bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(lexical_bench)


def load_before(src: Path, tmp: Path):
    """The ``loupe`` package under ``src``, imported as ``loupe_before``."""
    dest = tmp / "before"
    shutil.copytree(src / "loupe", dest / "loupe_before",
                    ignore=shutil.ignore_patterns("__pycache__"))
    sys.path.insert(0, str(dest))
    return importlib.import_module("loupe_before")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--before", type=Path, required=True,
                    help="a checkout's src folder (holding loupe/) to compare against")
    ap.add_argument("--docs", type=int, default=10_000)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--smoke", action="store_true", help="2,000 documents, 30 queries")
    args = ap.parse_args()
    if args.smoke:
        args.docs, args.queries = 2000, 30
    tmp = Path(tempfile.mkdtemp(prefix="loupe-ab-"))
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)
    docs, vocab, idents = lexical_bench.make_documents(args.docs)
    queries = lexical_bench.make_queries(vocab, idents, args.queries)
    after_lib, load_s, postings, _ = lexical_bench.load_loupe(docs, None, tmp / "home")
    del docs
    before = load_before(args.before, tmp)
    before_search = importlib.import_module("loupe_before.lexical").lexical_search
    from loupe.lexical import lexical_search as after_search

    before_lib = before.Library.open(tmp / "home")
    sides = {"before": (before_lib, before_search), "after": (after_lib, after_search)}
    print(f"{args.docs:,} documents, {postings:,} postings (loaded in {load_s:.1f} s); "
          f"{len(queries)} queries; before: {args.before}")

    def run(side: str, text: str) -> tuple[float, list[int]]:
        lib, search = sides[side]
        t = time.perf_counter()
        res = search(lib.conn, lib.tenant_id, text, "en", limit=10)
        return (time.perf_counter() - t) * 1000, [h.asset_id for h in res.hits]

    first: dict[str, list[float]] = {"before": [], "after": []}
    for i, (_, text) in enumerate(queries):   # each query's first run, alternately first
        for side in (("before", "after") if i % 2 == 0 else ("after", "before")):
            first[side].append(run(side, text)[0])
    times: dict[str, dict[str, list[float]]] = {"before": {}, "after": {}}
    differ = 0
    for i, (cls, text) in enumerate(queries):
        got = {}
        for side in (("before", "after") if i % 2 == 0 else ("after", "before")):
            ms, got[side] = run(side, text)
            times[side].setdefault(cls, []).append(ms)
        differ += got["before"] != got["after"]
    pct = lexical_bench.pct
    print(f"\nlatency in ms (p50 / p95), repeated queries:")
    print(f"{'class':<12}{'before':>20}{'after':>20}{'p95 after/before':>20}")
    for cls in sorted({c for c, _ in queries}) + ["all"]:
        row = f"{cls:<12}"
        p95 = {}
        for side in ("before", "after"):
            vals = [v for c, vs in times[side].items() if cls in (c, "all") for v in vs]
            p95[side] = pct(vals, 95)
            row += f"{pct(vals, 50):>11.2f} /{p95[side]:>7.2f}"
        print(row + f"{p95['after'] / p95['before']:>20.2f}")
    print(f"{'first runs':<12}" + "".join(f"{pct(first[s], 50):>11.2f} /{pct(first[s], 95):>7.2f}"
                                          for s in ("before", "after")))
    print(f"\nqueries whose top 10 differ between before and after: {differ}")
    before_lib.close()
    after_lib.close()


if __name__ == "__main__":
    main()
