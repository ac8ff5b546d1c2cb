"""The lexical lane against Tantivy and SQLite FTS5 on the same synthetic library.

Usage:
    .venv/bin/python benchmarks/lexical.py --docs 100000 [--queries 300] [--database-url URL]
    .venv/bin/python benchmarks/lexical.py --smoke     # seconds: every section, tiny sizes (CI)

Builds a synthetic library of N search documents — a Zipfian vocabulary of
pseudo-words (word k drawn with probability ~ 1/k), realistic field lengths
(title 3–8 words, keywords 3–10, description 10–60), product identifiers in
5% of titles (``SS26-HERO-03``, ``4471-RD``) — and loads the same documents
into:

* Loupe: search documents in PostgreSQL, indexed by ``loupe_reindex_lexical``
  (the same code path as ``loupe settings`` re-indexing); queried through
  ``loupe.lexical.lexical_search`` (analysis + typo check + the lane's one
  statement), k1 1.2, b 0.75;
* Tantivy (PyPI ``tantivy``, in memory), ``en_stem`` tokenizer, BM25 k1 1.2,
  b 0.75, top 10;
* SQLite FTS5 with the porter tokenizer, ``ORDER BY bm25(docs)``, top 10.

All text goes into one field in every engine (Loupe: the description group,
where BM25F is plain BM25), so the rankings are comparable: the top-10
overlap with Tantivy is reported per query class. Queries: 1 word, 2–5
words, identifiers, rare terms and common terms, the same for every engine,
run once to warm up and then timed (wall clock, from Python, one at a time).
Prints p50/p95 per engine and class, the same over every query's first run
(the warm-up pass: Loupe has not yet analysed the query on its connection),
and the Loupe/Tantivy p95 ratio.
"""

from __future__ import annotations

import argparse
import atexit
import math
import os
import random
import re
import shutil
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

SYLLABLES = ["ka", "lo", "mu", "ra", "to", "pu", "za", "no", "ba", "go", "du", "ma", "so",
             "tu", "ha", "vo", "ku", "la", "po", "ru", "da", "fo", "nu", "sa", "jo", "wa"]


def make_vocabulary(n: int, rng: random.Random) -> list[str]:
    """n distinct pseudo-words of 2–4 syllables ending in a/o/u (stem-stable)."""
    words: set[str] = set()
    while len(words) < n:
        words.add("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words, key=lambda w: (len(w), w))


class Zipf:
    """Draw word ranks with probability proportional to 1/rank (s = 1)."""

    def __init__(self, n: int, rng: random.Random):
        self.rng = rng
        weights = [1.0 / k for k in range(1, n + 1)]
        total = sum(weights)
        acc = 0.0
        self.cdf = []
        for w in weights:
            acc += w / total
            self.cdf.append(acc)

    def draw(self) -> int:
        import bisect

        return min(bisect.bisect_left(self.cdf, self.rng.random()), len(self.cdf) - 1)


def make_documents(n_docs: int, seed: int = 7):
    rng = random.Random(seed)
    vocab = make_vocabulary(50_000, rng)
    zipf = Zipf(len(vocab), rng)
    idents = []
    docs = []
    for i in range(1, n_docs + 1):
        title = [vocab[zipf.draw()] for _ in range(rng.randint(3, 8))]
        if rng.random() < 0.05:
            ident = rng.choice([f"SS{rng.randint(20, 29)}-HERO-{rng.randint(1, 99):02d}",
                                f"{rng.randint(1000, 9999)}-{rng.choice(['RD', 'BL', 'GR', 'XL'])}"])
            title.append(ident)
            idents.append(ident)
        keywords = [vocab[zipf.draw()] for _ in range(rng.randint(3, 10))]
        desc = [vocab[zipf.draw()] for _ in range(rng.randint(10, 60))]
        docs.append((i, " ".join(title) + ". " + "; ".join(keywords) + ". " + " ".join(desc)))
    return docs, vocab, idents


def make_queries(vocab: list[str], idents: list[str], n: int, seed: int = 11):
    rng = random.Random(seed)
    per = max(1, n // 5)
    out = []
    for _ in range(per):
        out.append(("1 word", vocab[rng.randint(0, 2000)]))
        out.append(("2-5 words", " ".join(vocab[rng.randint(0, 5000)] for _ in range(rng.randint(2, 5)))))
        out.append(("identifier", rng.choice(idents)))
        out.append(("rare", vocab[rng.randint(20_000, 49_999)]))
        out.append(("common", " ".join(vocab[rng.randint(0, 20)] for _ in range(rng.randint(1, 3)))))
    return out


# --- engines ------------------------------------------------------------------

def load_loupe(docs, database_url: str | None, home: Path):
    from loupe import Library

    lib = Library.open(home, database_url=database_url, create=True)
    t0 = time.perf_counter()
    with lib.conn.transaction():
        lib.conn.execute("SELECT set_config('loupe.bulk', 'on', true)")
        lib.conn.execute("CREATE TEMP TABLE bench_docs (id bigint, body text) ON COMMIT DROP")
        with lib.conn.cursor().copy("COPY bench_docs (id, body) FROM STDIN") as copy:
            for doc_id, body in docs:
                copy.write_row((doc_id, body))
        lib.conn.execute("""
            INSERT INTO asset (id, tenant_id, content_sha256, byte_size, media_type, width, height)
            SELECT id, %(t)s, int8send(id), 1, 'image/jpeg', 1, 1 FROM bench_docs
        """, {"t": lib.tenant_id})
        lib.conn.execute("""
            INSERT INTO search_document (asset_id, tenant_id, lang, ts_config, description,
                                         phrase_text, tsv, doc_len)
            SELECT id, %(t)s, 'en', 'loupe_english', body, loupe_phrase_norm(body), x.tsv,
                   loupe_tsv_len(x.tsv)
            FROM bench_docs
            CROSS JOIN LATERAL (SELECT loupe_document_tsv('loupe_english', '', '', '', body,
                                                          '', '', '', '', '', '', '') AS tsv) x
        """, {"t": lib.tenant_id})
        n_postings = lib.conn.execute("SELECT loupe_reindex_lexical(%s, 'en')",
                                      (lib.tenant_id,)).fetchone()[0]
    lib.conn.execute("VACUUM ANALYZE")
    size = lib.conn.execute(
        "SELECT pg_total_relation_size('lexical_posting') + pg_total_relation_size('search_document')"
        " + pg_total_relation_size('lexicon_term')").fetchone()[0]
    return lib, time.perf_counter() - t0, n_postings, size


#: The tables that hold postings (one row per term and document, with its
#: indexes), as opposed to the documents and the lexicon.
POSTING_TABLES = ("lexical_posting", "file_posting")


def posting_bytes(lib) -> tuple[int, int]:
    """(heap bytes, index bytes) of the postings tables that exist."""
    heap = index = 0
    for name in POSTING_TABLES:
        row = lib.conn.execute("SELECT pg_table_size(to_regclass(%(t)s)),"
                               " pg_indexes_size(to_regclass(%(t)s))", {"t": name}).fetchone()
        heap, index = heap + (row[0] or 0), index + (row[1] or 0)
    return heap, index


def load_tantivy(docs):
    import tantivy

    sb = tantivy.SchemaBuilder()
    sb.add_integer_field("id", stored=True, indexed=True, fast=True)
    sb.add_text_field("body", stored=False, tokenizer_name="en_stem")
    schema = sb.build()
    index = tantivy.Index(schema)
    t0 = time.perf_counter()
    writer = index.writer(heap_size=512_000_000, num_threads=2)
    for doc_id, body in docs:
        writer.add_document(tantivy.Document(id=doc_id, body=body))
    writer.commit()
    writer.wait_merging_threads()
    index.reload()
    return index, time.perf_counter() - t0


def load_fts5(docs, path: Path):
    db = sqlite3.connect(str(path))
    t0 = time.perf_counter()
    db.execute("CREATE VIRTUAL TABLE docs USING fts5(body, tokenize='porter unicode61')")
    db.executemany("INSERT INTO docs (rowid, body) VALUES (?, ?)", docs)
    db.commit()
    return db, time.perf_counter() - t0


WORD = re.compile(r"[0-9A-Za-z]+")


def q_tantivy(index, searcher, text: str) -> list[int]:
    words = WORD.findall(text)
    if not words:
        return []
    query = index.parse_query(" ".join(words), ["body"])
    return [searcher.doc(addr)["id"][0] for _, addr in searcher.search(query, 10).hits]


def q_fts5(db, text: str) -> list[int]:
    words = WORD.findall(text)
    if not words:
        return []
    match = " OR ".join(f'"{w}"' for w in words)
    rows = db.execute("SELECT rowid FROM docs WHERE docs MATCH ? ORDER BY bm25(docs) LIMIT 10",
                      (match,)).fetchall()
    return [r[0] for r in rows]


def q_loupe(lib, text: str) -> list[int]:
    from loupe.lexical import lexical_search

    res = lexical_search(lib.conn, lib.tenant_id, text, "en", limit=10)
    return [h.asset_id for h in res.hits]


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    k = max(0, min(len(values) - 1, math.ceil(p / 100 * len(values)) - 1))
    return values[k]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--docs", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--database-url", default=None)
    ap.add_argument("--cap-sample", type=int, default=20,
                    help="queries per class for the cap-effect check (uncapped queries on "
                         "common terms read every posting: slow at 1M)")
    ap.add_argument("--smoke", action="store_true",
                    help="seconds: 2,000 documents, 30 queries, every section (CI runs this)")
    args = ap.parse_args()
    if args.smoke:
        args.docs, args.queries, args.cap_sample = 2000, 30, 3

    tmp = Path(tempfile.mkdtemp(prefix="loupe-lex-"))
    # registered before the embedded server's own exit handler, so it runs
    # after the server has stopped
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)
    t0 = time.perf_counter()
    docs, vocab, idents = make_documents(args.docs)
    queries = make_queries(vocab, idents, args.queries)
    print(f"documents: {len(docs):,} (generated in {time.perf_counter() - t0:.1f} s), "
          f"mean {statistics.mean(len(b) for _, b in docs):.0f} characters; "
          f"queries: {len(queries)}; cores: {os.cpu_count()}")

    lib, loupe_s, postings, size = load_loupe(docs, args.database_url, tmp / "home")
    print(f"loupe  : loaded + indexed in {loupe_s:.1f} s, {postings:,} postings, "
          f"{size / 2**20:,.0f} MiB on disk")
    heap, index = posting_bytes(lib)
    print(f"loupe  : postings {(heap + index) / 2**20:,.1f} MiB (heap {heap / 2**20:,.1f}, "
          f"indexes {index / 2**20:,.1f}): {(heap + index) / max(1, postings):.1f} bytes a "
          f"posting (heap {heap / max(1, postings):.1f})")
    index, tantivy_s = load_tantivy(docs)
    print(f"tantivy: indexed in {tantivy_s:.1f} s")
    db, fts_s = load_fts5(docs, tmp / "fts.db")
    print(f"fts5   : indexed in {fts_s:.1f} s")
    del docs

    searcher = index.searcher()
    engines = {
        "loupe": lambda t: q_loupe(lib, t),
        "tantivy": lambda t: q_tantivy(index, searcher, t),
        "fts5": lambda t: q_fts5(db, t),
    }
    timings: dict[str, dict[str, list[float]]] = {e: {} for e in engines}
    first: dict[str, list[float]] = {e: [] for e in engines}
    tops: dict[str, list[list[int]]] = {e: [] for e in engines}
    for name, fn in engines.items():
        for _, text in queries:  # warm-up pass, timed apart: each query's first run
            t = time.perf_counter()
            fn(text)
            first[name].append((time.perf_counter() - t) * 1000)
        for cls, text in queries:
            t = time.perf_counter()
            top = fn(text)
            timings[name].setdefault(cls, []).append((time.perf_counter() - t) * 1000)
            tops[name].append(top)

    classes = sorted({c for c, _ in queries})
    print(f"\nlatency in ms at {args.docs:,} documents (p50 / p95):")
    print(f"{'class':<12}" + "".join(f"{e:>20}" for e in engines) + f"{'top-10 overlap':>18}")
    for cls in classes + ["all"]:
        row = f"{cls:<12}"
        for e in engines:
            vals = [v for c, vs in timings[e].items() if cls in (c, "all") for v in vs]
            row += f"{pct(vals, 50):>11.2f} /{pct(vals, 95):>7.2f}"
        idx = [i for i, (c, _) in enumerate(queries) if cls in (c, "all")]
        overlaps = [len(set(tops["loupe"][i]) & set(tops["tantivy"][i])) / max(1, len(tops["tantivy"][i]))
                    for i in idx if tops["tantivy"][i]]
        row += f"{statistics.mean(overlaps) if overlaps else float('nan'):>18.2f}"
        print(row)
    # A query's first run: Loupe's connection has not yet analysed it (the
    # analysis is remembered per connection: loupe.lexical.memo) and every
    # engine's caches are cold; the table above is the repeated query.
    print(f"{'first runs':<12}" + "".join(f"{pct(first[e], 50):>11.2f} /{pct(first[e], 95):>7.2f}"
                                          for e in engines))
    # What the caps cost: the capped lane's top 10 against the same lane with
    # no cap (every posting read, every match kept), per class.
    from loupe.lexical import lexical_search

    print(f"\ncap effect: top-10 overlap of the capped lane with the uncapped lane "
          f"(first {args.cap_sample} queries of each class)")
    for cls in classes:
        idx = [i for i, (c, _) in enumerate(queries) if c == cls][:args.cap_sample]
        overlaps = []
        for i in idx:
            # no posting list is longer than the number of documents, so a cap of
            # N reads every posting and keeps every match (a larger cap would
            # overflow the statement's integers: 10 x raw_cap is the walk's budget)
            full = lexical_search(lib.conn, lib.tenant_id, queries[i][1], "en", limit=10,
                                  raw_cap=args.docs, keep_cap=args.docs)
            want = {h.asset_id for h in full.hits}
            if want:
                overlaps.append(len(want & set(tops["loupe"][i])) / len(want))
        print(f"{cls:<12}{statistics.mean(overlaps) if overlaps else float('nan'):>8.2f}")
    all_l = [v for vs in timings["loupe"].values() for v in vs]
    all_t = [v for vs in timings["tantivy"].values() for v in vs]
    all_f = [v for vs in timings["fts5"].values() for v in vs]
    print(f"\nLoupe/Tantivy p95 ratio: {pct(all_l, 95) / pct(all_t, 95):.1f}; "
          f"Loupe/FTS5 p95 ratio: {pct(all_l, 95) / pct(all_f, 95):.2f}")
    lib.close()


if __name__ == "__main__":
    main()
