"""Running a BM25 query over one tenant's search documents in one language."""

from __future__ import annotations

from dataclasses import dataclass

import psycopg

from ..document.languages import normalize_lang, ts_config
from .bm25 import B, K1

# The analyzer for queries is the documents' own: the language's
# text-search configuration. Each distinct lexeme is one query term.
ANALYZE_QUERY = """
SELECT coalesce(array_agg(u.lexeme ORDER BY u.lexeme), ARRAY[]::text[])
FROM unnest(to_tsvector(%(cfg)s::regconfig, %(query)s)) AS u
"""

# BM25 over the documents of one tenant and language.
#   stats:       N and avgdl of the corpus (kept exact by triggers).
#   query_terms: idf of each query term present in the corpus.
#   matched:     documents holding at least one query term (GIN index on
#                (tenant_id, lang, tsv)).
#   scored:      sum over matched terms of idf * saturated tf.
# The total is the exact number of matching documents: nothing is capped here.
BM25_SEARCH = """
WITH stats AS (
    SELECT s.n_docs, s.total_len::float8 / greatest(s.n_docs, 1) AS avgdl
    FROM corpus_stat s
    WHERE s.tenant_id = %(tenant_id)s AND s.lang = %(lang)s AND s.n_docs > 0
),
query_terms AS (
    SELECT t.term, loupe_bm25_idf(st.n_docs, t.df) AS idf
    FROM lexicon_term t CROSS JOIN stats st
    WHERE t.tenant_id = %(tenant_id)s AND t.lang = %(lang)s AND t.term = ANY (%(terms)s)
),
matched AS (
    SELECT d.asset_id, d.tsv, d.doc_len
    FROM search_document d
    WHERE d.tenant_id = %(tenant_id)s AND d.lang = %(lang)s
      AND d.tsv @@ loupe_any_lexeme(%(terms)s)
),
scored AS (
    SELECT m.asset_id,
           sum(qt.idf * loupe_bm25_tf(cardinality(u.positions), m.doc_len, st.avgdl,
                                      %(k1)s, %(b)s)) AS score
    FROM matched m
    CROSS JOIN stats st
    CROSS JOIN LATERAL unnest(m.tsv) AS u
    JOIN query_terms qt ON qt.term = u.lexeme
    GROUP BY m.asset_id
),
page AS (
    SELECT asset_id, score FROM scored
    ORDER BY score DESC, asset_id
    LIMIT %(limit)s OFFSET %(offset)s
)
SELECT t.total, p.asset_id, p.score
FROM (SELECT count(*) AS total FROM scored) AS t
LEFT JOIN page p ON true
ORDER BY p.score DESC, p.asset_id
"""


@dataclass(frozen=True)
class LexicalHit:
    """One ranked document: ``rank`` is 1-based over the whole result, ``score`` is BM25."""

    rank: int
    asset_id: int
    score: float


@dataclass(frozen=True)
class LexicalResult:
    """A page of BM25 results with the exact number of matching documents."""

    terms: list[str]
    total: int
    hits: list[LexicalHit]


def analyze_query(conn: psycopg.Connection, query: str, lang: str) -> list[str]:
    """Return the distinct lexemes the analyzer of ``lang`` emits for ``query``, sorted."""
    return list(conn.execute(ANALYZE_QUERY, {"cfg": ts_config(lang), "query": query}).fetchone()[0])


def bm25_search(conn: psycopg.Connection, tenant_id: int, query: str, lang: str, *,
                limit: int = 20, offset: int = 0, k1: float = K1, b: float = B) -> LexicalResult:
    """Rank the tenant's ``lang`` documents for ``query`` with BM25 (OR of the query terms).

    Ordering: score descending, then asset id ascending (deterministic).

    Raises:
        ValueError: ``limit`` < 1 or ``offset`` < 0.
    """
    if limit < 1 or offset < 0:
        raise ValueError("limit must be >= 1 and offset >= 0")
    lang = normalize_lang(lang)
    terms = analyze_query(conn, query, lang)
    if not terms:
        return LexicalResult(terms=[], total=0, hits=[])
    rows = conn.execute(BM25_SEARCH, {
        "tenant_id": tenant_id, "lang": lang, "terms": terms, "k1": k1, "b": b,
        "limit": limit, "offset": offset}).fetchall()
    total = rows[0][0] if rows else 0
    hits = [LexicalHit(rank=offset + i + 1, asset_id=r[1], score=float(r[2]))
            for i, r in enumerate(r for r in rows if r[1] is not None)]
    return LexicalResult(terms=terms, total=total, hits=hits)
