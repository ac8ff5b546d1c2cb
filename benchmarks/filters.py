"""Filtered search against the same search unfiltered, on the
synthetic library of benchmarks/scopes.py (100k assets, Zipfian vocabulary,
an image lane of random unit vectors with its HNSW index).

Usage:
    .venv/bin/python benchmarks/filters.py [--assets 100000] [--queries 60] [--dims 512]
                                           [--database-url URL]
    .venv/bin/python benchmarks/filters.py --smoke   # seconds: tiny sizes, every path (CI)

Metadata for the filters (set in SQL on the files and assets): 50 creators,
200 keywords, 10 countries, 20 capture years, a quarter of each displayed
orientation, a tenth PNG. Filters measured (owner):

* ``creator`` — one creator (2 % of the assets: the direct or deep regime);
* ``year+orientation`` — a capture year AND an orientation (1.25 %);
* ``country`` — one country (10 %);
* ``five`` — creator AND year range AND orientation AND NOT keyword AND format.

Timed (wall clock from Python, one query at a time, after a warm-up), each
against the same query unfiltered:

* lexical: the ``scoped`` statement with the compiled tree as its clause
  and scope (``loupe.search.statements.execute``, what the search pipeline
  runs) vs the library-wide ``lexical`` statement;
* hybrid: ``scoped_fused`` with the clause vs ``fused``, with the image
  lane (threshold 2: every neighbour counts).

Prints p50/p95 per filter and path, the filtered/unfiltered p95 ratio and
the verdicts of the filtered lexical searches.

The build is in two phases, each timed as it ends (wall clock, and CPU
seconds of this process and of its PostgreSQL backend, with the load
average): ``load`` (:func:`scopes.load`: assets, documents, lexical index,
files, vectors, HNSW) and ``metadata`` (the filter metadata: an UPDATE of
every file, which recomputes the stored filter values of migration 0026,
then of every asset, and ``VACUUM ANALYZE``). With ``--home`` each phase
leaves a marker in the folder (``bench-filters-loaded``, then
``bench-filters-built``), so a run stopped during the metadata phase (a
long one: about an hour at 1M assets) resumes there instead of loading again.
"""

from __future__ import annotations

import argparse
import atexit
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE))

import scopes as bench_scopes  # noqa: E402  (its synthetic library)
from loupe import Library  # noqa: E402
from loupe.access import OWNER  # noqa: E402
from loupe.filters import search as fs  # noqa: E402
from loupe.fusion.search import VectorLane  # noqa: E402
from loupe.lexical.search import QueryTerms  # noqa: E402
from loupe.search import statements as st  # noqa: E402
from loupe.search import verdict as vd  # noqa: E402

FILTERS = {
    "creator": {"creator": "Creator 7"},
    "year+orientation": {"all": [{"captured": {"from": "2008-01-01", "to": "2009-01-01"}},
                                 {"orientation": "portrait"}]},
    "country": {"country": "country4"},
    "five": {"all": [{"creator": "Creator 7"}, {"captured": {"from": "2005-01-01"}},
                     {"orientation": "landscape"}, {"not": {"keyword": "kw3"}},
                     {"format": "jpg"}]},
}

METADATA = """
UPDATE asset_file SET
  metadata = jsonb_build_object(
      'creator', jsonb_build_array('Creator ' || (asset_id % 50)),
      'keywords', jsonb_build_array('kw' || (asset_id % 200)),
      'location', jsonb_build_array('City' || (asset_id % 100), 'Country' || (asset_id % 10)),
      'date_taken', (2000 + asset_id % 20) || ':06:15 12:00:00'),
  raw_metadata = jsonb_build_object('file', jsonb_build_object(
      'XMP-photoshop:Country', 'Country' || (asset_id % 10)))
"""
ASSETS = """
UPDATE asset SET
  width = (ARRAY[3, 4, 5, 30])[id % 4 + 1], height = (ARRAY[4, 3, 5, 10])[id % 4 + 1],
  media_type = CASE WHEN id % 10 = 0 THEN 'image/png' ELSE 'image/jpeg' END
"""


def pct(values: list[float], p: float) -> float:
    return float(np.percentile(values, p)) if values else float("nan")


def backend_cpu(conn) -> float:
    """CPU seconds (user + system) of the connection's PostgreSQL backend, read
    from /proc (the embedded server runs on this machine); NaN when it cannot be
    read (a remote --database-url, another OS)."""
    pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Phase:
    """Times one build phase: wall seconds, this process's CPU seconds and the
    PostgreSQL backend's, and the 1-minute load average at its start and end."""

    def __init__(self, conn, name: str):
        self.conn, self.name = conn, name
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        self.db, self.load = backend_cpu(conn), os.getloadavg()[0]
        print(f"{time.strftime('%H:%M:%S', time.gmtime())} UTC phase {name}: started "
              f"(load average {self.load:.1f})", flush=True)

    def done(self) -> None:
        print(f"{time.strftime('%H:%M:%S', time.gmtime())} UTC phase {self.name}: "
              f"{time.perf_counter() - self.wall:.0f} s wall, CPU {time.process_time() - self.cpu:.0f} s "
              f"python + {backend_cpu(self.conn) - self.db:.0f} s postgres backend, load average "
              f"{self.load:.1f} -> {os.getloadavg()[0]:.1f}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--assets", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--dims", type=int, default=512)
    ap.add_argument("--database-url")
    ap.add_argument("--home", type=Path,
                    help="keep the built library in this folder and reuse it when it is "
                         "already there (before/after runs on the same data)")
    ap.add_argument("--smoke", action="store_true",
                    help="seconds: 3,000 assets, 64-d, 6 queries (CI runs this)")
    args = ap.parse_args()
    if args.smoke:
        bench_scopes.smoke_bounds()
        args.assets, args.queries, args.dims = 3000, 6, 64
    rng = np.random.default_rng(11)
    if args.home is not None:
        home = args.home
    else:
        tmp = Path(tempfile.mkdtemp(prefix="loupe-bench-filters-"))
        atexit.register(shutil.rmtree, tmp, ignore_errors=True)
        home = tmp / "home"
    built = home / "bench-filters-built"
    loaded = home / "bench-filters-loaded"
    if args.home is not None and args.database_url is None and home.exists() \
            and any(home.iterdir()) and not (built.exists() or loaded.exists()):
        # a load stopped half-way left rows behind: loading again would fail on them
        sys.exit(f"{home} holds a library whose load phase did not finish (no "
                 f"{loaded.name} marker): remove the folder and run again")
    lib = Library.open(home, database_url=args.database_url, create=True)
    t0 = time.perf_counter()
    if built.exists():
        model_id = int(built.read_text().split()[0])
        print(f"library: reused {home} ({built.read_text().strip()})")
    else:
        if loaded.exists():
            model_id = int(loaded.read_text().split()[0])
            print(f"library: loaded before ({loaded.read_text().strip()}); resuming at the "
                  f"metadata phase", flush=True)
        else:
            phase = Phase(lib.conn, "load")
            model_id = bench_scopes.load(lib, args.assets, args.dims, rng)
            phase.done()
            if args.home is not None:
                loaded.write_text(f"{model_id} assets={args.assets} dims={args.dims}\n")
        phase = Phase(lib.conn, "metadata")
        with lib.conn.transaction():
            lib.conn.execute(METADATA)
            lib.conn.execute(ASSETS)
        lib.conn.execute("VACUUM ANALYZE")
        phase.done()
        print(f"library: {args.assets:,} assets, {args.dims}-d image vectors with HNSW, filter "
              f"metadata; built in {time.perf_counter() - t0:.0f} s", flush=True)
        if args.home is not None:
            built.write_text(f"{model_id} assets={args.assets} dims={args.dims}\n")

    qrng = np.random.default_rng(5)
    queries = []
    for i in range(args.queries):
        if i % 2 == 0:
            band = [(1, 20), (21, 500), (501, 5000)][i // 2 % 3]
            queries.append(f"w{int(qrng.integers(*band))}")
        else:
            queries.append(" ".join(f"w{int(qrng.integers(1, 500))}"
                                    for _ in range(int(qrng.integers(2, 4)))))
    vectors = qrng.standard_normal((args.queries, args.dims)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)

    print(f"{'filter':17} {'size':>7} {'path':22} {'p50 ms':>8} {'p95 ms':>8}   verdicts "
          f"(complete/truncated/unknown)")
    summary = []
    for fname, tree in FILTERS.items():
        filt = fs.prepare(lib.conn, lib.tenant_id, tree, viewer=OWNER)
        size = lib.search("", filters=tree, limit=1).total
        times: dict[str, list[float]] = {k: [] for k in ("lexical filtered", "lexical unfiltered",
                                                         "hybrid filtered", "hybrid unfiltered")}
        verdicts: list[str] = []
        for i, text in enumerate(queries[:4] + queries):
            warm = i < 4
            terms = lib.analyze(text, query=True)
            lane = VectorLane("image", "image", model_id, "bench", args.dims, 2.0,
                              vectors[i % len(vectors)])

            def params(lanes, clause):
                return st.parameters(tenant_id=lib.tenant_id,
                                     terms=QueryTerms.single("en", terms).params(), query=text,
                                     raw_cap=3000, keep_cap=1000, limit=20, offset=0,
                                     viewer=OWNER, lanes=lanes, clause=clause)
            runs = {
                "lexical filtered": (st.SCOPED, [], filt),
                "lexical unfiltered": (st.LEXICAL, [], None),
                "hybrid filtered": (st.SCOPED_FUSED, [lane], filt),
                "hybrid unfiltered": (st.FUSED, [lane], None),
            }
            for path, (kind, lanes, clause) in runs.items():
                t = time.perf_counter()
                out = st.execute(lib.conn, kind, lanes, params(lanes, clause), clause)
                ms = (time.perf_counter() - t) * 1000
                if not warm:
                    times[path].append(ms)
                    if path == "lexical filtered":
                        c = out.counts
                        verdicts.append(vd.decide(vd.Counts(
                            candidates=c["candidates"], all_read=bool(c["all_read"]),
                            keep_cap=1000, max_df=c["max_df"], title_band_unreached=0,
                            rows=c["ranked"] + c["band"], regime=c["regime"],
                            deep_all_read=bool(c["deep_all_read"]), waiting=0,
                            corrected=False, vector_lanes=0, word_lanes=False,
                            one_word=len(text.split()) <= 1)).verdict)
        v = verdicts
        for path, ts in times.items():
            counts = (f"{v.count('complete')}/{v.count('truncated')}/{v.count('unknown')}"
                      if path == "lexical filtered" else "")
            print(f"{fname:17} {size:7,} {path:22} {pct(ts, 50):8.1f} {pct(ts, 95):8.1f}   "
                  f"{counts}", flush=True)
        summary.append((fname, pct(times["lexical filtered"], 95),
                        pct(times["lexical unfiltered"], 95), pct(times["hybrid filtered"], 95),
                        pct(times["hybrid unfiltered"], 95)))
    print("\np95 filtered / unfiltered:")
    for fname, lf, lu, hf, hu in summary:
        print(f"  {fname:17} lexical {lf:7.1f} / {lu:7.1f} ms = {lf / lu:5.2f}x   "
              f"hybrid {hf:7.1f} / {hu:7.1f} ms = {hf / hu:5.2f}x")
    lib.close()


if __name__ == "__main__":
    main()
