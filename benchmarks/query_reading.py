"""What reading a query costs before its search: the language from stop words
and the machine facts it names (issues 14 and 15), against the search itself.

Usage:
    .venv/bin/python benchmarks/query_reading.py --home DEMO_HOME [--rounds 20]
    .venv/bin/python benchmarks/query_reading.py --smoke    # seconds: a tiny library (CI)

Each search without ``--lang`` first runs
:func:`loupe.lexical.search.query_languages` (one statement: ``ts_debug`` of
the query text in each library language; it reads no table, so its cost does
not grow with the library) and :func:`loupe.conversation.facts.query_facts` (the
conversation's sentence compiler, in Python). This times both, and the whole
:meth:`loupe.Library.search` of the same queries as the peer, in one process
over one connection (``--rounds`` passes over the queries; the first pass is
a warm-up and not counted), and prints each one's median and p95 in ms and
the two readings' share of the search's median.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

QUERIES = ["a red car on the street", "une photo de chat", "cut-out on white", "galaxies",
           "der Hund und die Katze im Garten", "black and white line drawing of a horse",
           "photo on white background", "madrid", "do we have a picture of a lighthouse?",
           "transparent background icon"]


def timings(fn, rounds: int) -> list[float]:
    """Milliseconds of ``fn(query)`` for every query, ``rounds`` passes after a warm-up."""
    for q in QUERIES:
        fn(q)
    out = []
    for _ in range(rounds):
        for q in QUERIES:
            t = time.perf_counter()
            fn(q)
            out.append((time.perf_counter() - t) * 1000)
    return out


def report(lib, rounds: int) -> None:
    from loupe.lexical.search import query_languages
    from loupe.conversation.facts import query_facts

    langs = lib.languages()
    rows = [("query_languages", timings(lambda q: query_languages(lib.conn, q, langs), rounds)),
            ("query_facts", timings(query_facts, rounds)),
            ("search (peer)", timings(lambda q: lib.search(q, limit=20), rounds))]
    assets = lib.conn.execute("SELECT count(*) FROM asset").fetchone()[0]
    print(f"library: {assets:,} assets, languages {'/'.join(langs)}; {len(QUERIES)} queries "
          f"x {rounds} rounds")
    peer = statistics.median(rows[-1][1])
    print(f"{'step':16s} {'median ms':>10s} {'p95 ms':>8s} {'share of search':>16s}")
    for name, ts in rows:
        med = statistics.median(ts)
        p95 = sorted(ts)[int(len(ts) * 0.95)]
        print(f"{name:16s} {med:10.2f} {p95:8.2f} {med / peer:16.1%}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--home", help="an existing library's home (default: a tiny temporary one)")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--smoke", action="store_true", help="a tiny library, 2 rounds (CI)")
    args = ap.parse_args()
    from loupe import Library

    if args.home and not args.smoke:
        with Library.open(Path(args.home)) as lib:
            report(lib, args.rounds)
        return
    with tempfile.TemporaryDirectory(prefix="loupe-qr-") as tmp:
        with Library.open(Path(tmp) / "home", create=True) as lib:
            lib.init(languages=["en", "fr", "de"])
            report(lib, 2 if args.smoke else args.rounds)
        Library.stop(Path(tmp) / "home")


if __name__ == "__main__":
    main()
