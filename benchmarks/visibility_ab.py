"""A/B latency of the lexical lane before and after per-file visibility (migration 0011).

Usage:
    .venv/bin/python benchmarks/visibility_ab.py --docs 20000 [--queries 300] [--rounds 3]
        [--old-src PATH]

Loads the synthetic library of ``benchmarks/lexical.py`` (single-file
assets, the overwhelming majority of a real library) once, then runs every
query through two statements on the same connection, alternating A and B
so that machine load hits both alike:

* A: the lexical lane's statement as it was before 0011 (the text of
  ``loupe/lexical/queries.py`` under ``--old-src``, a checkout of the
  previous commit's ``src``) with 0005's postings walk (recreated here under
  another name);
* B: the statement of this checkout.

Both as the owner (sees everything) and as a member who may read every
asset (the readability test runs for every posting). Prints p50/p95 in ms
per viewer and query class, and checks A and B return the same rows.
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import lexical as lx  # benchmarks/lexical.py

OLD_WALK = """
CREATE OR REPLACE FUNCTION bench_old_term_postings_for(p_term bigint, p_cap integer,
    p_budget integer, p_see_all boolean, p_principals bigint[])
RETURNS TABLE (asset_id bigint, tf real[], group_len real[])
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET enable_bitmapscan = off SET enable_sort = off SET enable_seqscan = off
AS $$
    SELECT w.asset_id, w.tf, w.group_len
    FROM (SELECT p.asset_id, p.tf, p.group_len, p.impact
          FROM lexical_posting p
          WHERE p.term_id = p_term
          ORDER BY p.impact DESC, p.asset_id
          LIMIT greatest(p_budget, p_cap)) AS w
    WHERE p_see_all OR (SELECT loupe_can_read(a.readers, a.embargo_until, a.rights_expire_at,
                                              false, p_principals)
                        FROM asset a WHERE a.id = w.asset_id)
    ORDER BY w.impact DESC, w.asset_id
    LIMIT p_cap
$$
"""


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p * (len(values) - 1))))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--docs", type=int, default=20_000)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--old-src", required=True, type=Path)
    args = ap.parse_args()

    spec = importlib.util.spec_from_file_location(
        "old_lexical_queries", args.old_src / "loupe" / "lexical" / "queries.py")
    old = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(old)
    from loupe.lexical import queries as new
    from loupe.lexical.search import QueryTerms, query_terms

    old_sql = old.LEXICAL_LANE.replace("loupe_term_postings_for(", "bench_old_term_postings_for(")
    tmp = Path(tempfile.mkdtemp(prefix="loupe-ab-"))
    docs, vocab, idents = lx.make_documents(args.docs)
    queries = lx.make_queries(vocab, idents, args.queries)
    lib, _, postings, _ = lx.load_loupe(docs, None, tmp / "home")
    conn = lib.conn
    conn.execute(OLD_WALK)
    # a member who may read every asset: the readability test runs per posting
    member = conn.execute("INSERT INTO principal (tenant_id, kind, name) VALUES (%s, 'user', "
                          "'bench') RETURNING id", (lib.tenant_id,)).fetchone()[0]
    conn.execute("UPDATE asset SET readers = ARRAY[%s]::bigint[]", (member,))
    conn.execute("VACUUM ANALYZE")
    print(f"documents: {len(docs):,}, postings: {postings:,}, queries: {len(queries)}")
    viewers = {"owner": {"see_all": True, "principals": []},
               "member": {"see_all": False, "principals": [member]}}
    times = {(v, ab, c): [] for v in viewers for ab in "AB" for c, _ in queries}
    mismatches = 0
    for rnd in range(args.rounds + 1):
        for cls, text in queries:
            terms = query_terms(conn, text, "en")
            # (lang/terms for a pre-issue-12 --old-src; langs/qlangs/qterms for this one)
            base = {"tenant_id": lib.tenant_id, **QueryTerms.single("en", terms).params(),
                    "query": text,
                    "raw_cap": 3000, "keep_cap": 1000, "limit": 10, "offset": 0,
                    "fallback": False, "title_band": False, "title_band_cap": 5000}
            for vname, vp in viewers.items():
                rows = {}
                b_sql = new.LEXICAL_LANE if vp["see_all"] else new.LEXICAL_LANE_MEMBER
                for ab, stmt in (("A", old_sql), ("B", b_sql)):
                    t0 = time.perf_counter()
                    rows[ab] = conn.execute(stmt, {**base, **vp}).fetchall()
                    if rnd:  # round 0 warms up
                        times[(vname, ab, cls)].append((time.perf_counter() - t0) * 1000)
                mismatches += rows["A"] != rows["B"]
    print(f"rows differing between A and B: {mismatches}")
    print(f"{'viewer':8} {'class':12} {'A p50':>8} {'B p50':>8} {'A p95':>8} {'B p95':>8}")
    for vname in viewers:
        for cls in sorted({c for c, _ in queries}) + ["all"]:
            a = [t for (v, ab, c), ts in times.items() if v == vname and ab == "A"
                 and (c == cls or cls == "all") for t in ts]
            b = [t for (v, ab, c), ts in times.items() if v == vname and ab == "B"
                 and (c == cls or cls == "all") for t in ts]
            print(f"{vname:8} {cls:12} {statistics.median(a):8.2f} {statistics.median(b):8.2f} "
                  f"{pct(a, .95):8.2f} {pct(b, .95):8.2f}")
    lib.close()
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
