"""Named SQL of scoped search.

A scope is a collection with its sub-collections. The scoped statement runs
the lexical lane unchanged (so the ranked rows, filtered to the scope, are
exactly page 1 of the unscoped order), then adds a **band**: scope members
that match the query but that the lane's caps left out, after every ranked
row (C2). How the band is found depends on the scope's size (C3):

* ``direct`` (up to DIRECT_MAX members): every member is scored with one
  primary-key probe per query term — exact, so the result is complete by
  construction;
* ``deep`` (up to DEEP_MAX members): each term's postings are read deeper,
  up to DEEP_CAP in impact order, and the members found there join the band;
  complete when every term's postings were read to the end;
* ``none`` (larger scopes): no band; the lane's own verdict applies.
"""

from __future__ import annotations

from psycopg import sql

from ..fusion.search import BANDED_PAGE, fused_ctes, lane_columns, rrf_join
from ..lexical.queries import LEXICAL_PAGE, best_bonus, lexical_ctes, posting_probe
from ..search.clause import AssetClause, ScopeProbe, and_clause

#: Members scored directly at most (lexical probes are exact and cheap up to here).
DIRECT_MAX = 2000
#: Members served by a deeper read at most, and how deep (postings per term).
DEEP_MAX = 50_000
DEEP_CAP = 45_000

# The scope is a set of collection ids (the collection and its
# sub-collections, SUB_COLLECTIONS, resolved first: with the ids as literal
# values the planner estimates each collection's size from its statistics
# and reads small ones through asset_file_collection_idx; inside one
# statement, an IN (recursive subquery) was planned as a sequential scan of
# every file on the 100k test library). Its members are the assets with a
# file in one of them or added to one by hand, that the viewer may read.

SUB_COLLECTIONS = """
WITH RECURSIVE sub AS (
    SELECT id FROM collection WHERE id = %(collection_id)s AND tenant_id = %(tenant_id)s
    UNION ALL
    SELECT c.id FROM collection c JOIN sub ON c.parent_id = sub.id
)
SELECT coalesce(array_agg(id), ARRAY[]::bigint[]) FROM sub
"""

# The members the viewer may read, up to DEEP_MAX + 1 of them (enough to
# choose the regime; beyond, the exact figure is not needed).
def readable_members(clause: "AssetClause | None" = None) -> str:
    """The scope's members the viewer may read (see above) that satisfy
    ``clause`` (:mod:`loupe.search.clause`), up to DEEP_MAX + 1.

    Contract: a subquery (asset_id); needs the parameters ``tenant_id``,
    ``collections``, ``see_all``, ``principals``, ``deep_max``.

    A clause that is itself the scope (a filter searched without collections:
    it has ``scope_members()``) gives its own set instead — the
    readable assets it accepts, up to DEEP_MAX + 1 — and needs no
    ``collections``."""
    if clause is not None and hasattr(clause, "scope_members"):
        return clause.scope_members()
    return """
    SELECT m.asset_id
    FROM (SELECT f.asset_id FROM asset_file f
          WHERE f.tenant_id = %(tenant_id)s AND f.collection_id = ANY (%(collections)s::bigint[])
            -- a member's file in the scope must be one it may read (0011)
            AND (%(see_all)s OR f.readers && %(principals)s::bigint[])
          UNION
          SELECT cm.asset_id FROM collection_member cm
          WHERE cm.collection_id = ANY (%(collections)s::bigint[])) m
    WHERE (%(see_all)s OR (SELECT loupe_can_read(a.readers, a.embargo_until, a.rights_expire_at,
                                                 false, %(principals)s::bigint[])
                           FROM asset a WHERE a.id = m.asset_id))""" + and_clause(clause, "m.asset_id") + """
    LIMIT %(deep_max)s + 1
"""


READABLE_MEMBERS = readable_members()


def in_scope(clause: "AssetClause | None" = None) -> str:
    """Whether a row ``k`` is in the scope: :data:`IN_SCOPE`, or ``true``
    when the clause is itself the scope (every row reaching ``k`` passed it
    where it entered the statement, :mod:`loupe.search.clause`)."""
    return "true" if clause is not None and hasattr(clause, "scope_members") else IN_SCOPE

# How many members the viewer may read (up to DEEP_MAX + 1).
SCOPE_SIZE = "SELECT count(*) FROM (" + READABLE_MEMBERS + ") x"

# Whether an asset (a row ``k`` of the statement) is in the scope: one
# probe of each membership index.
IN_SCOPE = """(
    EXISTS (SELECT 1 FROM asset_file f
            WHERE f.asset_id = k.asset_id AND f.collection_id = ANY (%(collections)s::bigint[])
              AND (%(see_all)s OR f.readers && %(principals)s::bigint[]))
    OR EXISTS (SELECT 1 FROM collection_member cm
               WHERE cm.asset_id = k.asset_id
                 AND cm.collection_id = ANY (%(collections)s::bigint[])))"""

# For a vector lane of written words (every lane but ``image``): a member
# matches an asset's text vector only when it may read every file of the
# asset (0011: the vector embeds the whole document's words).
WORDS_READABLE = """AND (%(see_all)s OR (SELECT loupe_can_read_doc(a.readers, a.doc_readers,
                                                         a.embargo_until, a.rights_expire_at,
                                                         %(principals)s::bigint[])
                                       FROM asset a WHERE a.id = {asset}))"""

# Whether the viewer may know collection c exists (a condition on alias c):
# every collection for the owner and admins; for a member, one holding an
# asset (in it or a sub-collection, by a file it may read or by hand) that it
# may read now — the rule of loupe.queries.COLLECTIONS. A hidden collection
# then resolves exactly like one that does not exist (same error, same
# bytes), so a scope cannot confirm a name.
COLLECTION_VISIBLE = """(%(see_all)s OR EXISTS (
    SELECT 1 FROM asset a
    WHERE a.id = ANY (loupe_collection_assets_for(c.id, %(principals)s::bigint[]))
      AND loupe_can_read(a.readers, a.embargo_until, a.rights_expire_at,
                         false, %(principals)s::bigint[])))"""


# Collections by their path relative to their source (as shown by loupe
# show / the folder tree): several when ingested roots share a folder name.
# Each with its full path (source root + path; hand-made ones have no root).
COLLECTION_BY_PATH = """
SELECT c.id, c.path, CASE WHEN s.id IS NULL THEN NULL
                          ELSE rtrim(s.root_path, '/') || '/' || c.path END
FROM collection c LEFT JOIN source s ON s.id = c.source_id
WHERE c.tenant_id = %(tenant_id)s AND c.path = %(path)s
  AND """ + COLLECTION_VISIBLE + """
ORDER BY c.id LIMIT 10
"""

# Collections the viewer may see whose path ends in the given one (its last
# segments: "animals" -> clipart/animals, tuxpaint/animals), to name in the
# message when no collection has that exact path. A LIKE
# pattern is not used: the path is the user's text (its % and _ stay literal).
COLLECTIONS_ENDING_IN = """
SELECT c.path
FROM collection c
WHERE c.tenant_id = %(tenant_id)s
  AND right(c.path, length(%(path)s) + 1) = '/' || %(path)s
  AND """ + COLLECTION_VISIBLE + """
ORDER BY c.path LIMIT 6
"""

# A collection by its id, in this tenant.
COLLECTION_BY_ID = """
SELECT c.id FROM collection c WHERE c.tenant_id = %(tenant_id)s AND c.id = %(id)s
  AND """ + COLLECTION_VISIBLE + """
"""

# A collection by its full path: its source's root folder, then its path
# (e.g. /photos/2024/travel for 'travel' ingested from /photos/2024).
# The root is matched as a prefix of the given path (sources are few).
COLLECTION_BY_FULL_PATH = """
SELECT c.id FROM source s
JOIN collection c ON c.source_id = s.id AND c.tenant_id = s.tenant_id
WHERE s.tenant_id = %(tenant_id)s
  AND left(%(full)s, length(rtrim(s.root_path, '/')) + 1) = rtrim(s.root_path, '/') || '/'
  AND c.path = substr(%(full)s, length(rtrim(s.root_path, '/')) + 2)
ORDER BY c.id
"""

# The scope's readable members as a relation (up to DEEP_MAX + 1 of them:
# enough to choose the regime, C3), and the regime, chosen inside the
# statement by their count: no second pass over the members for it.
def scope_cte(clause: "AssetClause | None" = None) -> str:
    """The ``scope`` and ``regime`` CTEs (see above).

    Contract: needs :func:`readable_members`' parameters and
    ``direct_max``; provides ``scope`` (asset_id) and ``regime`` (n, r)."""
    return """
scope AS MATERIALIZED (""" + readable_members(clause) + """),
regime AS MATERIALIZED (
    SELECT c.n, CASE WHEN c.n <= %(direct_max)s THEN 'direct'
                     WHEN c.n <= %(deep_max)s THEN 'deep'
                     ELSE 'none' END AS r
    FROM (SELECT count(*) AS n FROM scope) c
)"""


SCOPE_CTE = scope_cte()


def filter_head(clause: "AssetClause | None") -> tuple[str, "AssetClause | None"]:
    """For a clause that is itself the scope (a filter): the
    ``scope`` and ``regime`` CTEs to write *first* (so the set is
    materialised once, before any entry point reads it) and the clause the
    entry points then apply, a :class:`loupe.search.clause.ScopeProbe` (a
    hash probe of that set instead of the filter's test per posting or HNSW
    candidate). For any other clause: ``("", clause)`` (the statement
    defines ``scope`` after the lane, as before)."""
    if clause is None or not hasattr(clause, "scope_members"):
        return "", clause
    return scope_cte(clause) + ",", ScopeProbe(clause)

# The lexical band: members the lexical lane matches that are not in
# ``ranked`` (defined by the statement using it), by regime:
#   direct: every member not ranked, scored exactly by primary-key probes;
#   deep:   each term's first deep_cap asset ids in impact order, read from
#           the impact index alone, intersected with the scope's readable
#           members; only those members' postings are fetched and scored (a
#           member's other terms beyond the depth add nothing).
def lexical_band_ctes(member: bool = False) -> str:
    """The lexical band's CTEs (see above); ``member``: probes read only the
    documents a member may read (migration 0011)."""
    return """
band_direct AS (
    SELECT DISTINCT ON (x.asset_id) x.asset_id, x.score
    FROM (
        SELECT s.asset_id, q.lang,
               sum(loupe_bm25f_part(q.idf, p.tf, p.group_len, st.avglen, st.weights, st.b,
                                    st.k1)) AS score
        FROM scope s
        CROSS JOIN q
        JOIN st ON st.lang = q.lang
        CROSS JOIN LATERAL """ + posting_probe("q.term_id", "s.asset_id", member) + """ AS p
        WHERE (SELECT r FROM regime) = 'direct'
          AND NOT EXISTS (SELECT 1 FROM ranked r WHERE r.asset_id = s.asset_id)
        GROUP BY s.asset_id, q.lang
    ) x
    ORDER BY x.asset_id, x.score DESC
),
-- (materialized: the members are picked out of the ids before any posting
-- is fetched; unmaterialized, the planner fetched all ~125,000 postings of a
-- three-common-term query and joined the scope afterwards)
deep AS MATERIALIZED (
    SELECT q.term_id, q.lang, q.idf, w.asset_id""" + (", q.files" if member else "") + """
    FROM q
    CROSS JOIN LATERAL loupe_term_asset_ids(q.term_id, %(deep_cap)s) AS w
    JOIN scope s ON s.asset_id = w.asset_id
    WHERE (SELECT r FROM regime) = 'deep'
      AND NOT EXISTS (SELECT 1 FROM ranked r WHERE r.asset_id = w.asset_id)
),
band_deep AS (
    SELECT DISTINCT ON (x.asset_id) x.asset_id, x.score
    FROM (
        SELECT d.asset_id, d.lang,
               sum(loupe_bm25f_part(d.idf, p.tf, p.group_len, st.avglen, st.weights, st.b,
                                    st.k1)) AS score
        FROM deep d
        JOIN st ON st.lang = d.lang
        CROSS JOIN LATERAL """ + posting_probe("d.term_id", "d.asset_id", member, "d.files") + """ AS p
        GROUP BY d.asset_id, d.lang
    ) x
    ORDER BY x.asset_id, x.score DESC
),
lband AS (
    SELECT * FROM band_direct UNION ALL SELECT * FROM band_deep
)"""


LEXICAL_BAND_CTES = lexical_band_ctes(False)

# The counts a scoped verdict needs: readable members (up to DEEP_MAX + 1),
# ranked rows, band rows,
# and whether the deep read reached the end of every term's postings.
SCOPE_COUNTS = """
    SELECT (SELECT n FROM regime) AS members,
           (SELECT count(*) FROM ranked) AS ranked,
           (SELECT count(*) FROM band) AS band,
           (SELECT coalesce(bool_and(df <= %(deep_cap)s), true) FROM q) AS deep_all_read,
           (SELECT r FROM regime) AS regime"""

# The lexical lane inside a scope: the lane's kept rows that are members, in
# the unscoped order, then the band.
def scoped_lane(member: bool = False, clause: "AssetClause | None" = None) -> str:
    """The lexical lane inside a scope (see above); ``member``: for a viewer
    who does not see everything (migration 0011); ``clause``: a condition
    on assets (:mod:`loupe.search.clause`); a clause that is the scope (a
    filter) is materialised first and probed (:func:`filter_head`)."""
    head, entry = filter_head(clause)
    return "WITH " + head + lexical_ctes(member, entry) + ("" if head else "," + scope_cte(clause)) + """,
-- the lane's kept rows that are members, with their exact scores and phrase
-- bonus: the lane's ``final`` restricted to the scope, so the missing-term
-- probes and the bonus run for members only, not for all the kept rows
-- (the same set-wise anti-join as the lane's ``missing``: written as a
-- correlated subquery, it scanned ``raw`` once per member)
kept_in AS MATERIALIZED (
    SELECT k.asset_id, k.score, k.lang FROM kept k WHERE """ + in_scope(clause) + """
),
missing_in AS (
    SELECT k.asset_id,
           sum(loupe_bm25f_part(q.idf, p.tf, p.group_len, st.avglen, st.weights, st.b,
                                st.k1)) AS extra
    FROM kept_in k
    JOIN q ON q.lang = k.lang
    JOIN st ON st.lang = k.lang
    CROSS JOIN LATERAL """ + posting_probe("q.term_id", "k.asset_id", member) + """ AS p
    WHERE q.df > %(raw_cap)s
      AND NOT EXISTS (SELECT 1 FROM raw r WHERE r.term_id = q.term_id AND r.asset_id = k.asset_id)
    GROUP BY k.asset_id
),
ranked AS MATERIALIZED (
    SELECT k.asset_id, k.score + coalesce(m.extra, 0) AS score,
           """ + best_bonus("k", member) + """ AS bonus
    FROM kept_in k
    LEFT JOIN missing_in m ON m.asset_id = k.asset_id
    CROSS JOIN phrase ph
),""" + lexical_band_ctes(member) + """,
band AS (
    SELECT b.asset_id, b.score, """ + best_bonus("b", member) + """ AS bonus
    FROM lband b
    CROSS JOIN phrase ph
),
rows AS (
    SELECT asset_id, score, bonus, false AS in_band FROM ranked
    UNION ALL
    SELECT asset_id, score, bonus, true FROM band
),
""" + LEXICAL_PAGE + """,
scounts AS (""" + SCOPE_COUNTS + """
)
SELECT c.candidates, c.kept, c.postings_read, c.max_df, c.all_read,
       sc.members, sc.ranked, sc.band, sc.deep_all_read,
       p.rank, p.asset_id, p.score, p.bonus, p.in_band, sc.regime
FROM counts c
CROSS JOIN scounts sc
LEFT JOIN page p ON true
ORDER BY p.rank
"""


SCOPED_LANE = scoped_lane(False)
SCOPED_LANE_MEMBER = scoped_lane(True)


def scoped_fused_statement(lanes: list, member: bool = False,
                           clause: "AssetClause | None" = None) -> sql.Composed:
    """The fused statement inside a scope (C1–C4 with the vector lanes).

    Ranked rows: the unscoped fused rows (``fkept``, see
    :func:`loupe.fusion.search.fused_ctes`) that are members, in the unscoped
    order, so page 1 is what the unscoped result shows of the scope. Then
    the band, after every ranked row: members that the lexical band matches
    (by regime, as in SCOPED_LANE) and, in the direct regime (up to
    DIRECT_MAX members), members within a vector lane's threshold found by an
    exact scan over the members' vectors instead of the HNSW index. Band rows
    are ordered by phrase bonus ▸ RRF over their ranks within the band ▸
    asset id; the one-word rule keeps only band rows the words matched.

    ``lanes`` are :class:`loupe.fusion.search.VectorLane`; their names, model
    ids and widths are registry literals. ``clause``: a condition on
    assets (:mod:`loupe.search.clause`).
    """
    vbands, waiting = [], []
    for ln in lanes:
        cte = sql.Identifier(f"vband_{ln.name}")
        vec = sql.SQL("v.embedding::vector({d})").format(d=sql.Literal(ln.dims))
        qv = sql.SQL("{q}::vector({d})").format(q=sql.Placeholder(f"qv_{ln.name}"),
                                                 d=sql.Literal(ln.dims))
        vbands.append(sql.SQL(""",
{cte} AS MATERIALIZED (
    SELECT x.asset_id, x.dist, row_number() OVER (ORDER BY x.dist, x.asset_id) AS rank
    FROM (SELECT s.asset_id, {vec} <=> {qv} AS dist
          FROM scope s
          -- one primary-key probe per member (LATERAL ... OFFSET 0): as a
          -- join, the planner read every vector of the library (a sequential
          -- scan of asset_vector, 2.1 s of the 3.0 s of a filtered search on
          -- the 100k benchmark library)
          CROSS JOIN LATERAL (SELECT v0.embedding FROM asset_vector v0
                              WHERE v0.asset_id = s.asset_id AND v0.model_id = {model}
                                AND v0.lane = {lane} OFFSET 0) v
          WHERE (SELECT r FROM regime) = 'direct'
            AND NOT EXISTS (SELECT 1 FROM ranked r WHERE r.asset_id = s.asset_id)
            {words_test}) x
    WHERE x.dist <= {maxd}
)""").format(cte=cte, vec=vec, qv=qv, model=sql.Literal(ln.model_id), lane=sql.Literal(ln.lane),
             maxd=sql.Placeholder(f"maxd_{ln.name}"),
             words_test=sql.SQL(WORDS_READABLE.format(asset="s.asset_id")
                                if ln.lane != "image" else "")))
        waiting.append(sql.SQL("""
           + (SELECT count(*) FROM scope s
              WHERE (SELECT r FROM regime) = 'direct'
                AND NOT EXISTS (SELECT 1 FROM asset_vector v WHERE v.asset_id = s.asset_id
                                AND v.model_id = {model} AND v.lane = {lane}))""").format(
            model=sql.Literal(ln.model_id), lane=sql.Literal(ln.lane)))
    key, joins, band_cols, rrf = rrf_join("lb", lanes, "vband_", "vb_")
    lanes_out = lane_columns(lanes, "")
    # (the clause's text is joined, not formatted: braces in it stay as they are)
    head, entry = filter_head(clause)
    tail = sql.SQL("" if head else "," + scope_cte(clause)) + sql.SQL(""",
ranked AS MATERIALIZED (
    SELECT k.* FROM fkept k WHERE """ + in_scope(clause) + """
),""" + lexical_band_ctes(member) + """{vbands},
band_rows AS (
    SELECT {key} AS asset_id, lb.rank AS lex_rank, lb.score AS lex_score{band_cols},
           {rrf} AS rrf
    FROM (SELECT asset_id, score, row_number() OVER (ORDER BY score DESC, asset_id) AS rank
          FROM lband) lb{joins}
),
band AS (
    SELECT b.*, """ + best_bonus("b", member) + """ AS bonus
    FROM band_rows b
    CROSS JOIN phrase ph
    WHERE NOT %(one_word)s OR b.lex_rank IS NOT NULL
),
rows AS (
    SELECT asset_id, rrf, bonus, false AS in_band, lex_rank, lex_score{lanes_out} FROM ranked
    UNION ALL
    SELECT asset_id, rrf, bonus, true, lex_rank, lex_score{lanes_out} FROM band
),
""" + BANDED_PAGE + """,
scounts AS (""" + SCOPE_COUNTS + """,
           0{waiting} AS waiting
)
SELECT c.candidates, c.kept, c.postings_read, c.max_df, c.all_read,
       sc.members, sc.ranked, sc.band, sc.deep_all_read, sc.waiting,
       p.rank, p.asset_id, p.rrf, p.bonus, p.in_band, p.lex_rank, p.lex_score{page_out},
       sc.regime
FROM counts c
CROSS JOIN scounts sc
LEFT JOIN page p ON true
ORDER BY p.rank
""").format(vbands=sql.SQL("").join(vbands), key=key, band_cols=band_cols,
            rrf=rrf, joins=joins, lanes_out=lanes_out,
            waiting=sql.SQL("").join(waiting), page_out=lane_columns(lanes))
    return fused_ctes(lanes, member, entry, head) + tail
