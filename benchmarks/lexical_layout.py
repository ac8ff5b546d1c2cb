"""What a block layout of the postings would weigh, measured on the same
synthetic library as benchmarks/lexical.py, against today's one row per
(term, document).

Usage:
    .venv/bin/python benchmarks/lexical_layout.py --docs 10000 [--block 128]
    .venv/bin/python benchmarks/lexical_layout.py --smoke    # seconds: 2,000 documents (CI)

Loads the library as benchmarks/lexical.py does (``loupe_reindex_lexical``),
then builds, from ``lexical_posting``, a scratch table in the proposed
layout and reports bytes a posting for both (heap + TOAST + indexes):

* one row per (tenant, language, term, block of ``--block`` postings in
  asset order), keyed ``(tenant_id, lang, term_id, block_no)``: the
  block's first asset id, its largest impact, and three arrays — the gaps
  between consecutive asset ids (int4), a bit mask per posting of the
  field groups that hold the term (int2), and for those groups only the
  term frequency and the group's length, interleaved (float4). BM25F reads only the
  groups whose frequency is above zero (``loupe_bm25f_tf``), so those
  lengths are all a score needs: no probe of the document per posting.
* variant ``lengths once per document``: the same without the lengths,
  which a score would then read from ``search_document.group_len``.

It then proves the first variant loses nothing: every posting is rebuilt
from its block and scored with ``loupe_bm25f_part`` against the row it
came from (largest absolute difference printed; it must be 0). The layout
is measured here only: the search does not read it.
"""

from __future__ import annotations

import argparse
import atexit
import importlib.util
import shutil
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).parent
_spec = importlib.util.spec_from_file_location("lexical_bench", HERE / "lexical.py")
lexical_bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(lexical_bench)

# the postings in asset order per term, numbered into blocks
POSTINGS = """
CREATE TABLE bench_p AS
SELECT t.tenant_id, t.lang, p.term_id, p.asset_id, p.impact, p.tf, p.group_len,
       (row_number() OVER w - 1) / %(block)s AS block_no,
       (p.asset_id - lag(p.asset_id, 1, 0::bigint) OVER w)::int4 AS gap,
       (SELECT coalesce(sum(1 << (i - 1)), 0) FROM generate_subscripts(p.tf, 1) i
        WHERE p.tf[i] > 0)::int2 AS mask
FROM lexical_posting p JOIN lexicon_term t ON t.id = p.term_id
WINDOW w AS (PARTITION BY p.term_id ORDER BY p.asset_id)
"""
BUILD = """
CREATE TABLE bench_block AS
SELECT b.tenant_id, b.lang, b.term_id, b.block_no, b.first_asset, b.max_impact, b.gaps,
       b.masks, v.vals
FROM (SELECT tenant_id, lang, term_id, block_no, min(asset_id) AS first_asset,
             max(impact) AS max_impact, array_agg(gap ORDER BY asset_id) AS gaps,
             array_agg(mask ORDER BY asset_id) AS masks
      FROM bench_p GROUP BY tenant_id, lang, term_id, block_no) b
JOIN (SELECT term_id, block_no,
             array_agg(CASE k WHEN 1 THEN tf[i] ELSE group_len[i] END
                       ORDER BY asset_id, i, k) AS vals
      FROM bench_p, generate_subscripts(tf, 1) i, generate_series(1, 2) k WHERE tf[i] > 0
      GROUP BY term_id, block_no) v USING (term_id, block_no)
"""
# every posting rebuilt from its block (asset id from the running sum of the
# gaps; each group's frequency and length at its place among the block's
# values), scored with the same function as its row
EXACT = """
WITH st AS (
    SELECT loupe_avglen(s.group_len, s.n_docs) AS avglen, ls.k1, ls.weights, ls.b
    FROM corpus_stat s JOIN lexical_setting ls ON ls.tenant_id = s.tenant_id LIMIT 1),
post AS (
    SELECT b.term_id, b.block_no, u.mask,
           b.first_asset - b.gaps[1] + sum(u.gap) OVER w AS asset_id,
           coalesce(sum(bit_count(u.mask::int::bit(16))) OVER w - bit_count(u.mask::int::bit(16)),
                    0) AS before
    FROM bench_block b, unnest(b.gaps, b.masks) WITH ORDINALITY u(gap, mask, o)
    WINDOW w AS (PARTITION BY b.term_id, b.block_no ORDER BY u.o)),
rebuilt AS (
    SELECT p.term_id, p.asset_id,
           array_agg(CASE WHEN p.mask & (1 << (g - 1)) <> 0 THEN b.vals[2 * (p.before
                     + bit_count((p.mask & ((1 << (g - 1)) - 1))::int::bit(16))) + 1]
                     ELSE 0 END ORDER BY g)::real[] AS tf,
           array_agg(CASE WHEN p.mask & (1 << (g - 1)) <> 0 THEN b.vals[2 * (p.before
                     + bit_count((p.mask & ((1 << (g - 1)) - 1))::int::bit(16))) + 2]
                     ELSE 0 END ORDER BY g)::real[] AS len
    FROM post p
    JOIN bench_block b ON b.term_id = p.term_id AND b.block_no = p.block_no
    CROSS JOIN generate_series(1, 5) g
    GROUP BY p.term_id, p.asset_id)
SELECT max(abs(loupe_bm25f_part(1.0, r.tf, r.len, st.avglen, st.weights, st.b, st.k1)
               - loupe_bm25f_part(1.0, lp.tf, lp.group_len, st.avglen, st.weights, st.b,
                                  st.k1))), count(*)
FROM rebuilt r
JOIN lexical_posting lp ON lp.term_id = r.term_id AND lp.asset_id = r.asset_id
CROSS JOIN st
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--docs", type=int, default=10_000)
    ap.add_argument("--block", type=int, default=128)
    ap.add_argument("--database-url", default=None)
    ap.add_argument("--smoke", action="store_true", help="2,000 documents (CI runs this)")
    args = ap.parse_args()
    if args.smoke:
        args.docs = 2000
    tmp = Path(tempfile.mkdtemp(prefix="loupe-layout-"))
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)
    docs, _, _ = lexical_bench.make_documents(args.docs)
    lib, load_s, postings, _ = lexical_bench.load_loupe(docs, args.database_url, tmp / "home")
    del docs
    c = lib.conn
    heap, index = lexical_bench.posting_bytes(lib)
    print(f"{args.docs:,} documents, {postings:,} postings (loaded in {load_s:.1f} s)")
    print(f"rows (today)          : {(heap + index) / postings:6.1f} bytes a posting "
          f"(heap {heap / postings:.1f}, indexes {index / postings:.1f})")
    t0 = time.perf_counter()
    c.execute(POSTINGS, {"block": args.block})
    c.execute(BUILD)
    c.execute("CREATE TABLE bench_block_nolen AS SELECT tenant_id, lang, term_id, block_no,"
              " first_asset, max_impact, gaps, masks,"
              " (SELECT array_agg(v ORDER BY o) FROM unnest(vals) WITH ORDINALITY u(v, o)"
              "  WHERE o % 2 = 1) AS tfs FROM bench_block")
    for name in ("bench_block", "bench_block_nolen"):
        c.execute(f"ALTER TABLE {name} ADD PRIMARY KEY (tenant_id, lang, term_id, block_no)")
        c.execute(f"VACUUM ANALYZE {name}")
    build_s = time.perf_counter() - t0
    blocks = c.execute("SELECT count(*) FROM bench_block").fetchone()[0]
    for name, label in (("bench_block", "blocks, lengths kept"),
                        ("bench_block_nolen", "blocks, lengths once")):
        total, idx = c.execute("SELECT pg_total_relation_size(%(t)s), pg_indexes_size(%(t)s)",
                               {"t": name}).fetchone()
        print(f"{label:<22}: {total / postings:6.1f} bytes a posting (indexes "
              f"{idx / postings:.1f}); {blocks:,} blocks of {args.block}")
    # lengths once per document: what search_document.group_len holds per posting
    doc, ndocs = c.execute("SELECT avg(pg_column_size(group_len)), count(*)"
                           " FROM search_document").fetchone()
    print(f"(lengths once per document: {doc:.0f} bytes x {ndocs:,} documents = "
          f"{float(doc) * ndocs / postings:.1f} bytes a posting, stored today in "
          f"search_document)")
    print(f"block build from the rows: {build_s:.1f} s")
    worst, n = c.execute(EXACT).fetchone()
    print(f"BM25F of every posting rebuilt from its block vs its row: {n:,} postings "
          f"compared, largest difference {worst}")
    lib.close()


if __name__ == "__main__":
    main()
