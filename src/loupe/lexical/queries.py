"""Named SQL of the lexical lane. Parameterised; nothing is built from user input."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..search.clause import and_clause
from ..search.facts import facts_first

if TYPE_CHECKING:
    from ..search.clause import AssetClause

# Terms the analyzer emits for a text: the distinct lexemes, sorted (query
# form), or every position in order with its field group (document form).
ANALYZE_QUERY = """
SELECT coalesce(array_agg(u.lexeme ORDER BY u.lexeme), ARRAY[]::text[])
FROM unnest(loupe_analyze(%(cfg)s::regconfig, %(text)s)) AS u
"""
# How many of a text's words each language's analyzer drops as stop words
# (ts_debug: a stop word is a token its dictionary maps to no lexeme, '{}';
# blanks and punctuation map to NULL): one row (lang, stop words) per language.
STOP_WORDS_BY_LANGUAGE = """
SELECT l.lang,
       (SELECT count(*) FROM ts_debug(l.cfg::regconfig, %(text)s) AS d
        WHERE d.lexemes = '{}'::text[]) AS stop_words
FROM unnest(%(langs)s::text[], %(cfgs)s::text[]) WITH ORDINALITY AS l(lang, cfg, n)
ORDER BY l.n
"""
# Which of these terms the language's analyzer drops as stop words.
STOP_WORDS_AMONG = """
SELECT t FROM unnest(%(terms)s::text[]) AS t
WHERE EXISTS (SELECT 1 FROM ts_debug(%(cfg)s::regconfig, t) AS d WHERE d.lexemes = '{}'::text[])
"""
ANALYZE_DOCUMENT = """
SELECT u.lexeme
FROM unnest(loupe_analyze(%(cfg)s::regconfig, %(text)s)) AS u,
     unnest(u.positions) AS pos
ORDER BY pos, u.lexeme
"""

# The terms of several texts at once, one array per text in the order given
# (the parts of each hyphenated compound of a query: loupe.lexical.compounds).
ANALYZE_MANY = """
SELECT coalesce((SELECT array_agg(u.lexeme ORDER BY u.lexeme)
                 FROM unnest(loupe_analyze(%(cfg)s::regconfig, x.t)) AS u), ARRAY[]::text[])
FROM unnest(%(texts)s::text[]) WITH ORDINALITY AS x(t, n)
ORDER BY x.n
"""

# Typo tolerance (L2): for each query term absent from the tenant's lexicon,
# the most similar indexed term, if it is close: trigram similarity of at
# least 0.5 (pg_trgm; "chetah"/"cheetah" 0.67, "madrid"/"madra" 0.44) and at
# most 2 edits (fuzzystrmatch's Levenshtein distance), 1 edit for terms of
# 3-4 characters; terms over 64 characters are not corrected. Ties: similarity, then document frequency, then the term.
# The % operator (threshold 0.3) lets the trigram index find candidates.
# Only terms the viewer can reach count (P1): a term that only hidden assets
# hold (among its first 10,000 postings) is neither suggested nor treated as known;
# for a member, only the documents it may read (0011: the whole document of
# an asset whose every file it may read, else the file documents it may read).
# A lexicon term ``t`` the viewer may reach: one of its first 10,000
# postings is of an asset the viewer may read (as a whole document, or
# through a file document it may read: 0011).
_REACH = """(%(see_all)s OR EXISTS (SELECT 1 FROM loupe_term_postings_for(
                   t.id, 1, 10000, false, %(principals)s::bigint[]))
               OR (loupe_term_in_files(t.tenant_id, t.lang, t.term)
                   AND EXISTS (SELECT 1 FROM loupe_term_postings_merged(
                       t.id, 1, 10000, %(principals)s::bigint[]))))"""
SUGGEST_CORRECTIONS = """
SELECT q.term,
       (SELECT t.term FROM lexicon_term t
        WHERE t.tenant_id = %(tenant_id)s AND t.lang = %(lang)s AND t.term %% q.term
          AND similarity(t.term, q.term) >= 0.5
          AND levenshtein(t.term, q.term) <= CASE WHEN length(q.term) <= 4 THEN 1 ELSE 2 END
          AND """ + _REACH + """
        ORDER BY similarity(t.term, q.term) DESC, t.df DESC, t.term
        LIMIT 1)
FROM unnest(%(terms)s::text[]) AS q(term)
WHERE length(q.term) BETWEEN 3 AND 64
  AND NOT EXISTS (SELECT 1 FROM lexicon_term t
                  WHERE t.tenant_id = %(tenant_id)s AND t.lang = %(lang)s AND t.term = q.term
                    AND """ + _REACH + """)
"""


# Whether the viewer reaches any of the query's (language, term) pairs
# anywhere in the library (``_REACH``), whatever filter the search has: a
# one-word query under a filter falls back to meaning only when its word is
# in no document the viewer may read at all, as without a filter (V5;
# loupe.search.pipeline). One indexed lookup per pair.
TERMS_REACHED = """
SELECT EXISTS (
    SELECT 1
    FROM unnest(%(qlangs)s::text[], %(qterms)s::text[]) AS q(lang, term)
    JOIN lexicon_term t
      ON t.tenant_id = %(tenant_id)s AND t.lang = q.lang AND t.term = q.term
    WHERE """ + _REACH + """)
"""


# The same under a filter: a term is suggested only when one of
# its first 10,000 postings the viewer may read (as above) is of an asset in
# the filter's set, ``fm`` (its readable members, materialised once:
# loupe.filters.compile.Compiled.members_sql, at most FILTER_LIMIT of them),
# so a suggestion is always a word of an asset that passes the filter and
# that the viewer may read — never a word of a hidden asset or of one the
# filter leaves out. A typed term the viewer reaches anywhere in the library
# is known, as without a filter, and never corrected: "portrait" in a
# collection without portraits was "corrected" to "port".
# {members}: that SELECT (our code, bound parameters).
_REACH_IN = """(EXISTS (SELECT 1 FROM loupe_term_postings_for(
                    t.id, 10000, 10000, %(see_all)s, %(principals)s::bigint[]) x
                WHERE x.asset_id IN (SELECT asset_id FROM fm))
          OR (NOT %(see_all)s AND loupe_term_in_files(t.tenant_id, t.lang, t.term)
              AND EXISTS (SELECT 1 FROM loupe_term_postings_merged(
                  t.id, 10000, 10000, %(principals)s::bigint[]) x
                  WHERE x.asset_id IN (SELECT asset_id FROM fm))))"""
SUGGEST_CORRECTIONS_IN = """
WITH fm AS MATERIALIZED ({members})
SELECT q.term,
       (SELECT t.term FROM lexicon_term t
        WHERE t.tenant_id = %(tenant_id)s AND t.lang = %(lang)s AND t.term %% q.term
          AND similarity(t.term, q.term) >= 0.5
          AND levenshtein(t.term, q.term) <= CASE WHEN length(q.term) <= 4 THEN 1 ELSE 2 END
          AND """ + _REACH_IN + """
        ORDER BY similarity(t.term, q.term) DESC, t.df DESC, t.term
        LIMIT 1)
FROM unnest(%(terms)s::text[]) AS q(term)
WHERE length(q.term) BETWEEN 3 AND 64
  AND NOT EXISTS (SELECT 1 FROM lexicon_term t
                  WHERE t.tenant_id = %(tenant_id)s AND t.lang = %(lang)s AND t.term = q.term
                    AND """ + _REACH + """)
"""


def posting_probe(term: str, asset: str, member: bool = False, files: str = "q.files") -> str:
    """A LATERAL subquery giving ``tf, group_len`` of term ``term`` in asset
    ``asset`` (column references from a fixed set) as the viewer may read it.
    For a viewer who sees everything (``member`` false): the one primary-key
    probe of ``lexical_posting``, as before migration 0011. For a member: the
    same probe with the whole-document test (doc_readers) when no file
    document holds the term (``files``, a boolean column of the term's row),
    else ``loupe_member_posting`` (the whole document's posting when it may
    read every file, else the best of the file documents it may read)."""
    assert term in ("q.term_id", "d.term_id") and asset in ("k.asset_id", "s.asset_id",
                                                            "d.asset_id")
    assert files in ("q.files", "d.files")
    if not member:
        return f"""(
        SELECT p.tf, p.group_len FROM lexical_posting p
        WHERE p.term_id = {term} AND p.asset_id = {asset}
        LIMIT 1
    )"""
    return f"""(
        (SELECT p.tf, p.group_len FROM lexical_posting p JOIN asset a ON a.id = p.asset_id
         WHERE NOT {files} AND p.term_id = {term} AND p.asset_id = {asset}
           AND loupe_can_read_doc(a.readers, a.doc_readers, a.embargo_until,
                                  a.rights_expire_at, %(principals)s::bigint[])
         LIMIT 1)
        UNION ALL
        (SELECT mp.tf, mp.group_len
         FROM loupe_member_posting({term}, {asset}, %(principals)s::bigint[]) AS mp
         WHERE {files})
    )"""


def bonus_expr(asset: str, member: bool = False, lang: str = "d.lang") -> str:
    """The phrase bonus of asset ``asset`` as the viewer may see it, from its
    whole document of language ``lang`` (a column reference from a fixed
    set) joined or selected as ``d`` and the ``phrase`` CTE joined as ``ph``.
    For a viewer who sees everything: the whole document's. For a member
    (migration 0011): 0 when the whole document earns none (a file
    document's phrase forms are parts of the whole document's); the whole
    document's when the asset's files all have the same readers (every row
    reaching here is of an asset the member may read, so it may read them
    all); else ``loupe_member_bonus`` (the whole document's when the member
    may read every file, else the best of the file documents it may read)."""
    assert asset in ("k.asset_id", "b.asset_id", "f.asset_id", "d.asset_id", "d0.asset_id")
    assert lang in ("d.lang", "k.lang")
    whole = "loupe_phrase_bonus(ph.qn, d.phrase_title, d.phrase_text)"
    if not member:
        return whole
    return f"""CASE WHEN {whole} = 0 THEN 0
                WHEN (SELECT a.doc_readers IS NULL FROM asset a WHERE a.id = {asset})
                THEN {whole}
                ELSE loupe_member_bonus({asset}, {lang}, ph.qn, %(principals)s::bigint[])
           END"""


# The lexical lane (L1, L3, F3, C4), as common table expressions that the
# lexical-only statement below and the fused statement (loupe.fusion) share.
# It searches the documents of the languages %(langs)s (one, or every
# library language for a search without a language), each language with its
# own query terms (%(qlangs)s / %(qterms)s: parallel arrays of (language,
# term) pairs, the query analysed by each language's analyzer) and its own
# corpus statistics.
#   st:      corpus statistics and the tenant's BM25F settings, per language.
#   q:       the query terms present in the lexicon, with language, df and idf,
#            and the compound group of the term with its size (%(qgroups)s,
#            %(qneed)s: 0 and 1 for a plain term; loupe.lexical.compounds).
#   raw:     for each term, at most raw_cap postings in impact order (best
#            first, loupe_term_postings_for walks lexical_posting_impact_idx)
#            that the viewer may read (P1: see_all, principals), scored
#            exactly. Unreadable postings are skipped inside the walk, so
#            they take no slot of the cap; the walk reads at most 10 x raw_cap
#            postings (a member who can read little of a long list).
#            For a member (lexical_ctes(member=True), migration 0011) the
#            test is per document: the whole document only when it may read
#            every file of the asset, else the file documents it may read
#            (file documents exist per language like whole documents),
#            merged per asset for the terms file documents hold (q.files,
#            per term and language).
#   cand_l:  every (asset, language) document reached, with the sum of its
#            known contributions; the parts of a compound count only when
#            the raw lists reached every term of their group;
#   cand:    one row per asset: its best document (highest score, then the
#            language's code), so a result counts and ranks assets, not
#            documents.
#   kept:    the best keep_cap of them.
#   missing: for a term whose postings were not all read, the contribution
#            of that term to a kept asset's document its raw list did not
#            reach (index probe on the primary key), so kept scores are exact
#            (not for a compound's parts: they count from raw only, so with a
#            part over the raw cap a kept score can be low; the verdict is then
#            "truncated" anyway).
#   final:   exact score + phrase bonus of that best document (2: its title
#            holds the literal query, 1: the document does), ordered bonus ▸
#            score ▸ asset id.
# The counts are the completeness inputs (C4): a term was read to its end
# when its df is within the raw cap, or within the read budget and its walk
# stopped short of the cap;
# assets reached against the keep cap. max_df (a lower bound of the total)
# counts every posting, readable or not, so it is only used for viewers who
# see everything: for the others a hidden asset must not move a total. It is
# taken over plain terms only (group 0): a compound's part alone matches
# nothing, so its df bounds nothing ("mango_ripe_kesar" said 17 results,
# complete, for the 1 asset that holds all three parts).
RAW_OWNER = """
    SELECT q.term_id, q.lang, q.grp, q.need, p.asset_id,
           loupe_bm25f_part(q.idf, p.tf, p.group_len, st.avglen, st.weights, st.b, st.k1) AS part
    FROM q
    JOIN st ON st.lang = q.lang
    CROSS JOIN LATERAL loupe_term_postings_for(q.term_id, %(raw_cap)s, %(raw_cap)s * 10,
                                               %(see_all)s, %(principals)s::bigint[]) AS p"""
# A member's walk: 0005's walk (whole documents it may read) for terms no
# file document holds, the merged walk (whole and file documents) for the
# others (migration 0011).
RAW_MEMBER = RAW_OWNER + """
    WHERE NOT q.files
    UNION ALL
    SELECT q.term_id, q.lang, q.grp, q.need, p.asset_id,
           loupe_bm25f_part(q.idf, p.tf, p.group_len, st.avglen, st.weights, st.b, st.k1) AS part
    FROM q
    JOIN st ON st.lang = q.lang
    CROSS JOIN LATERAL loupe_term_postings_merged(q.term_id, %(raw_cap)s, %(raw_cap)s * 10,
                                                  %(principals)s::bigint[]) AS p
    WHERE q.files"""


def lexical_ctes(member: bool = False, clause: "AssetClause | None" = None) -> str:
    """The lexical lane's CTEs (see above) for a viewer who sees everything,
    or with ``member`` for one who does not (migration 0011: the walk merges
    the file documents it may read for terms they hold, probes and the phrase
    bonus read only documents it may read). ``clause``: a condition every
    candidate satisfies (:mod:`loupe.search.clause`; ``max_df`` is then 0).

    Contract: needs the parameters ``tenant_id``, ``langs``, ``qlangs``,
    ``qterms``, ``raw_cap``, ``keep_cap``, ``query``, ``see_all``,
    ``principals``; provides the CTEs ``st``, ``q``, ``raw``, ``cand_l``,
    ``cand``, ``kept``, ``missing``, ``phrase``, ``final`` and ``counts``
    (one row: candidates, kept, postings_read, max_df, all_read)."""
    return """
st AS (
    SELECT s.lang, s.n_docs,
           loupe_avglen(s.group_len, s.n_docs) AS avglen,  -- five groups (0019)
           ls.k1, ls.weights, ls.b
    FROM corpus_stat s JOIN lexical_setting ls ON ls.tenant_id = s.tenant_id
    WHERE s.tenant_id = %(tenant_id)s AND s.lang = ANY (%(langs)s::text[]) AND s.n_docs > 0
),
q AS MATERIALIZED (
    SELECT t.id AS term_id, t.lang, x.grp, x.need, t.df,
           loupe_bm25_idf(st.n_docs, t.df) AS idf""" + (""",
           loupe_term_in_files(t.tenant_id, t.lang, t.term) AS files""" if member else "") + """
    FROM unnest(%(qlangs)s::text[], %(qterms)s::text[], %(qgroups)s::int[],
                %(qneed)s::int[]) AS x(lang, term, grp, need)
    JOIN st ON st.lang = x.lang
    JOIN lexicon_term t ON t.tenant_id = %(tenant_id)s AND t.lang = x.lang AND t.term = x.term
),
raw AS MATERIALIZED (""" + (RAW_MEMBER if member else RAW_OWNER) + """
),
cand_l AS MATERIALIZED (
    -- the parts of a hyphenated compound (grp > 0) count only together
    -- (loupe.lexical.compounds: every term of the group in the document)
    SELECT asset_id, lang, sum(score) AS score
    FROM (SELECT asset_id, lang, grp, sum(part) AS score, count(*) AS hits, min(need) AS need
          FROM raw""" + and_clause(clause, "raw.asset_id", "WHERE") + """
          GROUP BY asset_id, lang, grp) AS g
    WHERE g.grp = 0 OR g.hits >= g.need
    GROUP BY asset_id, lang
),
cand AS MATERIALIZED (
    -- one language: its rows as they are (no sort); several: the best per asset
    SELECT asset_id, score, lang FROM cand_l WHERE cardinality(%(langs)s::text[]) = 1
    UNION ALL
    (SELECT DISTINCT ON (asset_id) asset_id, score, lang
     FROM cand_l WHERE cardinality(%(langs)s::text[]) > 1
     ORDER BY asset_id, score DESC, lang)
),
kept AS MATERIALIZED (
    SELECT asset_id, score, lang FROM cand ORDER BY score DESC, asset_id LIMIT %(keep_cap)s
),
missing AS (
    SELECT k.asset_id,
           sum(loupe_bm25f_part(q.idf, p.tf, p.group_len, st.avglen, st.weights, st.b,
                                st.k1)) AS extra
    FROM kept k
    JOIN q ON q.lang = k.lang
    JOIN st ON st.lang = k.lang
    -- one primary-key probe per (kept asset, truncated term); written as a
    -- LATERAL ... LIMIT 1 so the planner cannot turn it into a scan of all
    -- the term's postings (N4: a common term has tens of thousands)
    CROSS JOIN LATERAL """ + posting_probe("q.term_id", "k.asset_id", member) + """ AS p
    WHERE q.df > %(raw_cap)s AND q.grp = 0  -- (a compound's parts: from raw only)
      AND NOT EXISTS (SELECT 1 FROM raw r WHERE r.term_id = q.term_id AND r.asset_id = k.asset_id)
    GROUP BY k.asset_id
),
phrase AS (
    SELECT loupe_phrase_norm(%(query)s) AS qn
),
final AS (
    -- (the bonus is a scalar subquery, one primary-key probe per kept row: as
    -- a join on k.lang, the generic plan of a prepared statement re-ran the
    -- ``missing`` aggregate once per kept row, 2 s for a common-term query)
    SELECT k.asset_id,
           k.score + coalesce(m.extra, 0) AS score,
           (SELECT """ + bonus_expr("k.asset_id", member, "k.lang") + """
            FROM search_document d
            WHERE d.asset_id = k.asset_id AND d.lang = k.lang
              AND d.tenant_id = %(tenant_id)s) AS bonus
    FROM kept k
    LEFT JOIN missing m ON m.asset_id = k.asset_id
    CROSS JOIN phrase ph
),
counts AS (
    SELECT (SELECT count(*) FROM cand) AS candidates,
           (SELECT count(*) FROM kept) AS kept,
           (SELECT count(*) FROM raw) AS postings_read,
           (SELECT CASE WHEN %(see_all)s""" + (" AND false" if clause else "") + """
                        THEN coalesce(max(df) FILTER (WHERE grp = 0), 0) ELSE 0 END
            FROM q) AS max_df,
           (SELECT coalesce(bool_and(q.df <= %(raw_cap)s
                                     OR (q.df <= %(raw_cap)s * 10
                                         AND (SELECT count(*) FROM raw r
                                              WHERE r.term_id = q.term_id) < %(raw_cap)s)),
                             true)
            FROM q) AS all_read
)
"""


def best_bonus(row: str, member: bool = False) -> str:
    """The phrase bonus (L3) of the asset of ``row`` (a CTE alias from a
    fixed set), the best over its documents in the searched languages
    (``%(langs)s``), 0 when it has none: a scalar subquery for a statement
    that has the ``phrase`` CTE joined as ``ph``. ``member``: each
    language's bonus as a member may see it (:func:`bonus_expr`, 0011)."""
    assert row in ("k", "f", "b", "d0")
    return ("(SELECT coalesce(max(" + bonus_expr(row + ".asset_id", member, "d.lang") + "), 0)"
            " FROM search_document d WHERE d.asset_id = " + row + ".asset_id"
            " AND d.tenant_id = %(tenant_id)s AND d.lang = ANY (%(langs)s::text[]))")


LEXICAL_CTES = lexical_ctes(False)
LEXICAL_CTES_MEMBER = lexical_ctes(True)


#: Most rows the title band adds (C2); a band that reaches it says so.
TITLE_BAND_CAP = 5000


TBAND_COUNTS = """
tcounts AS (
    SELECT (SELECT count(*) FROM tband) AS band,
           (SELECT count(*) FROM tband t
            WHERE NOT EXISTS (SELECT 1 FROM cand c WHERE c.asset_id = t.asset_id)) AS unreached
)"""


def title_band_cte(shown: str, member: bool = False, clause: "AssetClause | None" = None) -> str:
    """The title band (C2, optional): assets with a document whose title holds
    every query term of its language (tsvector weight A, the title group;
    tested on every document of the tenant and languages: no index serves it
    since migration 0002 dropped the GIN index on ``tsv``) that are not among
    the ``shown`` rows (a CTE name from a fixed set: ``final`` or ``fkept``),
    readable by the viewer, at most
    ``title_band_cap`` of them by asset id. Empty unless ``%(title_band)s``.
    With ``member`` (migration 0011): a whole document only when the member
    may read every file of its asset, and the file documents (of each
    searched language) it may read. ``clause``: a condition every band row
    satisfies (:mod:`loupe.search.clause`).

    Contract: needs the CTEs ``phrase`` and ``shown``, the parameters
    ``title_band``, ``title_band_cap``, ``qlangs``, ``qterms``, ``langs``,
    ``tenant_id``, ``see_all``, ``principals``; provides ``tq``, ``tband``
    (asset_id, bonus) and ``tcounts`` (one row: band, unreached; needs ``cand``)."""
    assert shown in ("final", "fkept")
    if not member:
        return """
tq AS (
    SELECT x.lang, string_agg(quote_literal(x.term) || ':A', ' & ')::tsquery AS tq
    FROM unnest(%(qlangs)s::text[], %(qterms)s::text[]) AS x(lang, term)
    GROUP BY x.lang
),
tband AS MATERIALIZED (
    SELECT DISTINCT ON (d.asset_id) d.asset_id,
           loupe_phrase_bonus(ph.qn, d.phrase_title, d.phrase_text) AS bonus
    FROM search_document d
    JOIN tq ON tq.lang = d.lang
    CROSS JOIN phrase ph
    WHERE %(title_band)s AND d.tenant_id = %(tenant_id)s AND d.lang = ANY (%(langs)s::text[])
      AND d.tsv @@ tq.tq
      AND NOT EXISTS (SELECT 1 FROM """ + shown + """ s WHERE s.asset_id = d.asset_id)
      AND (%(see_all)s OR (SELECT loupe_can_read(a.readers, a.embargo_until,
                                                 a.rights_expire_at, false,
                                                 %(principals)s::bigint[])
                           FROM asset a WHERE a.id = d.asset_id))""" + and_clause(clause, "d.asset_id") + """
    ORDER BY d.asset_id, bonus DESC
    LIMIT %(title_band_cap)s
),""" + TBAND_COUNTS
    return """
tq AS (
    SELECT x.lang, string_agg(quote_literal(x.term) || ':A', ' & ')::tsquery AS tq
    FROM unnest(%(qlangs)s::text[], %(qterms)s::text[]) AS x(lang, term)
    GROUP BY x.lang
),
tband AS MATERIALIZED (
    SELECT t.asset_id, max(t.bonus) AS bonus
    FROM (
        SELECT d.asset_id, """ + bonus_expr("d.asset_id", True, "d.lang") + """ AS bonus
        FROM search_document d
        JOIN tq ON tq.lang = d.lang
        CROSS JOIN phrase ph
        WHERE %(title_band)s AND d.tenant_id = %(tenant_id)s AND d.lang = ANY (%(langs)s::text[])
          AND d.tsv @@ tq.tq
          AND NOT EXISTS (SELECT 1 FROM """ + shown + """ s WHERE s.asset_id = d.asset_id)
          AND (%(see_all)s OR (SELECT loupe_can_read_doc(a.readers, a.doc_readers,
                                                         a.embargo_until, a.rights_expire_at,
                                                         %(principals)s::bigint[])
                               FROM asset a WHERE a.id = d.asset_id))""" + and_clause(clause, "d.asset_id") + """
        UNION ALL
        -- the file documents it may read (0011)
        SELECT x.asset_id, loupe_member_bonus(x.asset_id, tq.lang, ph.qn,
                                              %(principals)s::bigint[])
        FROM tq
        CROSS JOIN phrase ph
        CROSS JOIN LATERAL loupe_member_title_files(%(tenant_id)s, tq.lang, tq.tq,
                                                    %(principals)s::bigint[]) AS x
        WHERE %(title_band)s
          AND NOT EXISTS (SELECT 1 FROM """ + shown + """ s WHERE s.asset_id = x.asset_id)""" + and_clause(clause, "x.asset_id") + """
    ) t
    GROUP BY t.asset_id
    ORDER BY t.asset_id
    LIMIT %(title_band_cap)s
),""" + TBAND_COUNTS


# The lexical lane alone: a page of the kept list, then the title band when
# asked for (after every ranked row: page 1 is unchanged), and the counts
# the verdict is decided from (loupe.search.verdict: the band's assets the
# walk had not reached, ``unreached``, join the total).
def lexical_lane(member: bool = False, clause: "AssetClause | None" = None) -> str:
    """The lexical-only statement (see above); ``member``: for a viewer who
    does not see everything (see :func:`lexical_ctes`); ``clause``: a
    condition on assets (:mod:`loupe.search.clause`)."""
    return ("WITH " + lexical_ctes(member, clause) + "," + title_band_cte("final", member, clause)
            + LANE_TAIL)


#: A page of ``rows`` (ranked rows, then band rows: ``in_band``) scored by
#: BM25F, ordered by phrase bonus ▸ the machine facts the query names
#: (:mod:`loupe.search.facts`) ▸ score ▸ asset id; the lexical lane's and a
#: scope's lexical statement alike (the fused statements: ``BANDED_PAGE``).
LEXICAL_PAGE = """page AS (
    SELECT asset_id, score, bonus, in_band,
           row_number() OVER (ORDER BY in_band, bonus DESC, facts DESC, score DESC, asset_id)
           AS rank
    FROM (SELECT r0.*, """ + facts_first("r0.asset_id") + """ AS facts FROM rows r0) r
    ORDER BY in_band, bonus DESC, facts DESC, score DESC, asset_id
    LIMIT %(limit)s OFFSET %(offset)s
)"""


LANE_TAIL = """,
rows AS (
    SELECT asset_id, score, bonus, false AS in_band FROM final
    UNION ALL
    SELECT asset_id, NULL::float8, bonus, true FROM tband
),
""" + LEXICAL_PAGE + """
SELECT c.candidates, c.kept, c.postings_read, c.max_df, c.all_read,
       p.rank, p.asset_id, p.score, p.bonus, tc.band, tc.unreached, p.in_band
FROM counts c
CROSS JOIN tcounts tc
LEFT JOIN page p ON true
ORDER BY p.rank
"""


LEXICAL_LANE = lexical_lane(False)
LEXICAL_LANE_MEMBER = lexical_lane(True)
