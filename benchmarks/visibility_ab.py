"""A/B latency of the lexical lane's owner and member statements (per-file
visibility, migration 0011), and of a previous checkout's statement.

Usage:
    .venv/bin/python benchmarks/visibility_ab.py --docs 20000 [--queries 300] [--rounds 3]
        [--old-src PATH]
    .venv/bin/python benchmarks/visibility_ab.py --smoke     # seconds, every path (CI)

Loads the synthetic library of ``benchmarks/lexical.py`` (single-file
assets, the overwhelming majority of a real library) once, gives a member
the right to read every asset, then runs every query through two
statements on the same connection, alternating A and B so that machine load
hits both alike:

* without ``--old-src`` (what ``--smoke`` runs): A = the owner's statement
  (``LEXICAL_LANE``, as the owner), B = the member's (``LEXICAL_LANE_MEMBER``,
  as that member: the readability test runs for every posting). A member
  who may read everything must get the owner's page and counts, row for row
  (but ``max_df``, a count of every posting readable or not, which only a
  viewer who sees everything is given).
  The owner's row runs the owner's statement twice: the pairing's noise floor;
* with ``--old-src`` (a checkout's ``src``, e.g. from before 0011): A = that
  checkout's ``LEXICAL_LANE`` with 0005's postings walk (recreated here
  under another name), B = this checkout's statement, for the owner and the
  member alike.

Statements return different columns over time (the verdict columns left
them for ``loupe.search.verdict``): rows are compared on the columns both
return, by name (:data:`COMPARED`: the page and the counts the verdict is
decided from), and the columns left out are printed. Prints p50/p95 in ms
per viewer and query class and the number of queries whose compared rows
differ; with ``--smoke`` a difference fails the run.
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from psycopg.rows import dict_row

import lexical as lx  # benchmarks/lexical.py

#: Columns compared between A and B when both return them: the page (rank,
#: asset, score, phrase bonus, band) and the counts of the verdict.
COMPARED = ("rank", "asset_id", "score", "bonus", "in_band", "candidates", "kept",
            "postings_read", "max_df", "all_read", "band", "unreached")

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


def compared(rows_a: list[dict], rows_b: list[dict],
             skip: tuple[str, ...] = ()) -> tuple[list, list, set[str]]:
    """The rows of A and B on the columns of :data:`COMPARED` both return
    (less ``skip``), and the columns either returns that are left out."""
    cols_a = set(rows_a[0]) if rows_a else set()
    cols_b = set(rows_b[0]) if rows_b else set()
    cols = [c for c in COMPARED if c in cols_a and c in cols_b and c not in skip]
    return ([tuple(r[c] for c in cols) for r in rows_a],
            [tuple(r[c] for c in cols) for r in rows_b], (cols_a | cols_b) - set(cols))


def statements(old_src: Path | None, conn) -> dict[str, tuple[str, str]]:
    """viewer → (A statement, B statement); see the module's docstring."""
    from loupe.lexical import queries as new

    if old_src is None:
        return {"owner": (new.LEXICAL_LANE, new.LEXICAL_LANE),
                "member": (new.LEXICAL_LANE, new.LEXICAL_LANE_MEMBER)}
    spec = importlib.util.spec_from_file_location(
        "old_lexical_queries", old_src / "loupe" / "lexical" / "queries.py")
    old = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(old)
    conn.execute(OLD_WALK)
    old_sql = old.LEXICAL_LANE.replace("loupe_term_postings_for(", "bench_old_term_postings_for(")
    return {"owner": (old_sql, new.LEXICAL_LANE), "member": (old_sql, new.LEXICAL_LANE_MEMBER)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--docs", type=int, default=20_000)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--old-src", type=Path, default=None,
                    help="a checkout's src: A = its lexical statement (default: A = the "
                         "owner's statement, B = the member's)")
    ap.add_argument("--smoke", action="store_true",
                    help="seconds: 1,000 documents, 20 queries, 1 round; fails on a difference")
    args = ap.parse_args()
    if args.smoke:
        args.docs, args.queries, args.rounds = 1000, 20, 1
    from loupe.lexical.search import QueryTerms, query_terms
    from loupe.search.facts import NO_FACTS

    tmp = Path(tempfile.mkdtemp(prefix="loupe-ab-"))
    docs, vocab, idents = lx.make_documents(args.docs)
    queries = lx.make_queries(vocab, idents, args.queries)
    lib, _, postings, _ = lx.load_loupe(docs, None, tmp / "home")
    conn = lib.conn
    stmts = statements(args.old_src, conn)
    # a member who may read every asset: the readability test runs per posting
    member = conn.execute("INSERT INTO principal (tenant_id, kind, name) VALUES (%s, 'user', "
                          "'bench') RETURNING id", (lib.tenant_id,)).fetchone()[0]
    conn.execute("UPDATE asset SET readers = ARRAY[%s]::bigint[]", (member,))
    conn.execute("VACUUM ANALYZE")
    print(f"documents: {len(docs):,}, postings: {postings:,}, queries: {len(queries)}")
    print("A: " + ("the owner's statement" if args.old_src is None else f"{args.old_src}'s")
          + "; B: this checkout's statement of each viewer")
    viewers = {"owner": {"see_all": True, "principals": []},
               "member": {"see_all": False, "principals": [member]}}
    times = {(v, ab, c): [] for v in viewers for ab in "AB" for c, _ in queries}
    mismatches, left_out = 0, set()
    cur = conn.cursor(row_factory=dict_row)
    for rnd in range(args.rounds + 1):
        for cls, text in queries:
            terms = query_terms(conn, text, "en")
            # (lang/terms for a pre-issue-12 --old-src; langs/qlangs/qterms for this one)
            base = {"tenant_id": lib.tenant_id, **QueryTerms.single("en", terms).params(),
                    "query": text,
                    "raw_cap": 3000, "keep_cap": 1000, "limit": 10, "offset": 0,
                    "fallback": False, "title_band": False, "title_band_cap": 5000,
                    **NO_FACTS.params()}   # (no machine facts named; ignored by an --old-src)
            for vname, vp in viewers.items():
                rows = {}
                for ab, stmt in zip("AB", stmts[vname]):
                    # A as the owner when it is the owner's statement (no --old-src)
                    params = {**base, **(viewers["owner"] if args.old_src is None and ab == "A"
                                         else vp)}
                    t0 = time.perf_counter()
                    rows[ab] = cur.execute(stmt, params).fetchall()
                    if rnd:  # the first pass warms up
                        times[(vname, ab, cls)].append((time.perf_counter() - t0) * 1000)
                # max_df counts every posting, readable or not: a statement
                # gives it to viewers who see everything only (0 otherwise)
                skip = ("max_df",) if args.old_src is None and vname == "member" else ()
                a, b, out = compared(rows["A"], rows["B"], skip)
                left_out |= out - set(skip)
                mismatches += a != b
    print(f"columns compared: {', '.join(c for c in COMPARED if c not in left_out)}"
          + ("; the member's without max_df (the owner's only)" if args.old_src is None else "")
          + f"; left out (returned by one side only): {', '.join(sorted(left_out)) or 'none'}")
    print(f"queries whose compared rows differ between A and B: {mismatches}")
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
    if args.smoke and mismatches:
        sys.exit(f"visibility_ab: {mismatches} queries differ between A and B")


if __name__ == "__main__":
    main()
