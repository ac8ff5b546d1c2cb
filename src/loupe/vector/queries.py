"""Named SQL of the vector lanes.

Vectors of every model share one dimensionless column; each (model, lane)
has its own partial HNSW index on the column cast to the model's width. A
statement reaches that index only if it names the same model, lane and
width as literals, so those three (integers and a lane name from a fixed
set, never user input) are composed into the statement with
``psycopg.sql.Literal``; everything else is a bound parameter.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from psycopg import sql

from ..search.clause import and_clause

if TYPE_CHECKING:
    from ..search.clause import AssetClause

LANES = ("image", "text", "caption", "both")

#: HNSW graph parameters (pgvector's m, ef_construction). m 16 is pgvector's
#: default; ef_construction 128 (default 64) lifted recall@10 on clustered
#: 512-d vectors from 0.80 to 0.94 at ef_search 200 (benchmarks/vector.py).
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 128
#: Candidates the HNSW search keeps (pgvector's hnsw.ef_search, default 40,
#: which would also cap a scan at 40 rows, under the vector lane's 200). Set
#: per connection by Library.open, overridable with LOUPE_HNSW_EF_SEARCH
#: (pgvector allows 1..1000). Low-rank clustered 512-d vectors: recall@10
#: 1.000 at 100k and 0.982 at 1M with 400 (0.924 at 1M with 200); lane p95
#: 16 ms at 1M. Isotropic clusters (a worst case): 0.859 at 100k with 400
#: (benchmarks/RESULTS.md).
HNSW_EF_SEARCH = 400

# A model row by name, created with the folder's fingerprint; an existing
# row keeps its own (the content its stored vectors were computed with:
# loupe.vector.identity compares the two).
REGISTER_MODEL = """
INSERT INTO embedding_model (name, kind, dims, content_sha256)
VALUES (%(name)s, %(kind)s, %(dims)s, %(content)s)
ON CONFLICT (name) DO UPDATE SET kind = EXCLUDED.kind
RETURNING id, dims, content_sha256
"""

# The content a model row's vectors belong to, locked while it is checked.
MODEL_CONTENT = """
SELECT content_sha256, dims FROM embedding_model WHERE id = %(model_id)s FOR UPDATE
"""

# A model row now stands for other content: its vectors (every tenant's, of
# every lane: they all came from the previous content) go.
DELETE_MODEL_VECTORS = "DELETE FROM asset_vector WHERE model_id = %(model_id)s"

SET_MODEL_CONTENT = """
UPDATE embedding_model SET content_sha256 = %(content)s, dims = %(dims)s, kind = %(kind)s
WHERE id = %(model_id)s
"""

# The lanes (of every tenant) that a model serves.
MODEL_LANES = "SELECT DISTINCT lane FROM lane_model WHERE model_id = %(model_id)s"

SET_LANE_MODEL = """
INSERT INTO lane_model (tenant_id, lane, model_id) VALUES (%(tenant_id)s, %(lane)s, %(model_id)s)
ON CONFLICT (tenant_id, lane) DO UPDATE SET model_id = EXCLUDED.model_id
"""

LANE_MODELS = """
SELECT lm.lane, m.id, m.name, m.kind, m.dims,
       coalesce(vs.n_vectors, 0) AS n_vectors,
       coalesce((SELECT n_assets FROM asset_stat WHERE tenant_id = lm.tenant_id), 0) AS n_assets,
       m.content_sha256
FROM lane_model lm
JOIN embedding_model m ON m.id = lm.model_id
LEFT JOIN vector_stat vs ON vs.tenant_id = lm.tenant_id AND vs.model_id = m.id AND vs.lane = lm.lane
WHERE lm.tenant_id = %(tenant_id)s
ORDER BY lm.lane
"""

# Whether an asset the viewer may read in this lane has no vector of (model,
# lane) yet: what a viewer who does not see everything is told, instead of a
# test on the tenant-wide counts of LANE_MODELS, which told a member when
# private files were ingested and when they were embedded. Readable as the lane reads: the image lane an asset with a readable
# file, a lane of written words the whole document (0011). Run only when
# LANE_MODELS says the tenant has assets waiting.
def viewer_waiting(lane: str) -> str:
    """The statement: one row, one boolean. Parameters ``tenant_id``,
    ``model_id``, ``lane``, ``see_all``, ``principals``."""
    readers = "a.readers" if lane == "image" else "coalesce(a.doc_readers, a.readers)"
    return f"""
SELECT EXISTS (
    SELECT 1 FROM asset a
    WHERE a.tenant_id = %(tenant_id)s
      AND loupe_can_read({readers}, a.embargo_until, a.rights_expire_at,
                         %(see_all)s, %(principals)s::bigint[])
      AND NOT EXISTS (SELECT 1 FROM asset_vector v
                      WHERE v.asset_id = a.id AND v.model_id = %(model_id)s
                        AND v.lane = %(lane)s))
"""


# Assets without a vector of (model, lane), with the file to read pixels from.
PENDING_IMAGES = """
SELECT a.id, f.path
FROM asset a
CROSS JOIN LATERAL (SELECT path FROM asset_file WHERE asset_id = a.id
                    ORDER BY rel_path, path LIMIT 1) f
WHERE a.tenant_id = %(tenant_id)s
  AND NOT EXISTS (SELECT 1 FROM asset_vector v
                  WHERE v.asset_id = a.id AND v.model_id = %(model_id)s AND v.lane = %(lane)s)
ORDER BY a.id
LIMIT %(batch)s
"""

# Documents (in the embedding language) and the hash of the text last
# embedded, for assets whose text vector is missing or may be stale; the
# machine words last (the caller decides whether they are embedded).
TEXT_DOCUMENTS = """
SELECT d.asset_id, d.title, d.description, d.keywords, d.vocabulary, d.collections,
       d.location, d.people, d.creator, d.ocr, v.source_hash, d.machine
FROM search_document d
LEFT JOIN asset_vector v ON v.asset_id = d.asset_id AND v.model_id = %(model_id)s
                        AND v.lane = %(lane)s
WHERE d.tenant_id = %(tenant_id)s AND d.lang = %(lang)s AND d.asset_id > %(after)s
ORDER BY d.asset_id
LIMIT %(batch)s
"""

UPSERT_VECTOR = """
INSERT INTO asset_vector (asset_id, tenant_id, model_id, lane, embedding, source_hash)
VALUES (%(asset_id)s, %(tenant_id)s, %(model_id)s, %(lane)s, %(embedding)s, %(source_hash)s)
ON CONFLICT (asset_id, model_id, lane) DO UPDATE
SET embedding = EXCLUDED.embedding, source_hash = EXCLUDED.source_hash, created_at = now()
"""


def hnsw_index(model_id: int, lane: str, dims: int) -> sql.Composed:
    """CREATE INDEX for the (model, lane) partial HNSW index (cosine distance)."""
    assert lane in LANES and isinstance(model_id, int) and isinstance(dims, int)
    return sql.SQL(
        "CREATE INDEX IF NOT EXISTS {name} ON asset_vector USING hnsw "
        "((embedding::vector({dims})) vector_cosine_ops) "
        "WITH (m = {m}, ef_construction = {efc}) "
        "WHERE model_id = {model} AND lane = {lane}"
    ).format(name=sql.Identifier(f"asset_vector_hnsw_{model_id}_{lane}"),
             dims=sql.Literal(dims), model=sql.Literal(model_id), lane=sql.Literal(lane),
             m=sql.Literal(HNSW_M), efc=sql.Literal(HNSW_EF_CONSTRUCTION))


def drop_hnsw_index(model_id: int, lane: str) -> sql.Composed:
    """DROP INDEX for the (model, lane) partial HNSW index (a model whose
    width changed needs it built again on the new width)."""
    assert lane in LANES and isinstance(model_id, int)
    return sql.SQL("DROP INDEX IF EXISTS {name}").format(
        name=sql.Identifier(f"asset_vector_hnsw_{model_id}_{lane}"))


def hnsw_session(ef_search: int = HNSW_EF_SEARCH) -> list[sql.Composed]:
    """Session settings for vector lanes: ef_search, and iterative scans so a
    filtered HNSW scan (tenant) keeps going until its LIMIT is met (pgvector 0.8)."""
    return [sql.SQL("SET hnsw.ef_search = {}").format(sql.Literal(int(ef_search))),
            sql.SQL("SET hnsw.iterative_scan = relaxed_order")]


#: A tenant's (model, lane) with at most this many vectors is searched by an
#: exact scan of its vectors instead of the HNSW walk. The walk
#: is approximate, and it degrades where many vectors are identical (texts
#: that repeat, as a series of pictures with the same title and keywords
#: does): at 7,631 real text vectors, 3,751 of them in identical groups, it
#: returned 0.857 of the exact top 10 at any ef_search or iterative-scan mode
#: (docs/evaluation.md, "Why the HNSW walk misses"). At 10,000 vectors of
#: 384 dims the exact scan cost what the walk did for the owner (p50 14 vs
#: 15 ms under load 12–20) and 2.4x for a member (49 vs 20 ms); at 50,000
#: 3x and 6x (benchmarks/RESULTS.md, "Exact scan or HNSW walk").
EXACT_MAX = 10_000

# The tenant's vector count of one (model, lane), kept by migration 0003's
# triggers; the one-time test that picks a lane's exact scan or its walk.
_FEW = """(SELECT coalesce(max(n_vectors), 0) FROM vector_stat
                WHERE tenant_id = %(tenant_id)s AND model_id = {model} AND lane = {lane})
               <= {exact_max}"""

# Whether the viewer may read the asset of vector v: the owner reads every
# one; a member's test is a primary-key probe of the asset (P1).
_READABLE = """(%(see_all)s OR (SELECT loupe_can_read({readers}, a.embargo_until,
                                       a.rights_expire_at, false,
                                       %(principals)s::bigint[])
                 FROM asset a WHERE a.id = v.asset_id))"""

# Exact scan of the scope's members (a filter's direct regime): a
# primary-key probe per member (as a join: a sequential scan of every
# vector, see loupe.scopes.queries.scoped_fused_statement).
_MEMBERS_EXACT = """
        (SELECT v.asset_id, v.embedding::vector({dims}) <=> {qv}::vector({dims}) AS dist
         FROM scope s
         CROSS JOIN LATERAL (SELECT v0.asset_id, v0.embedding FROM asset_vector v0
                             WHERE v0.asset_id = s.asset_id AND v0.model_id = {model}
                               AND v0.lane = {lane} OFFSET 0) v
         WHERE (SELECT r FROM regime) = 'direct'
           AND {readable}
         ORDER BY 2, 1
         LIMIT %(vec_cap)s)"""

# Exact scan of the tenant's vectors of (model, lane): every distance, the
# nearest vec_cap kept. The distances are computed under an OFFSET 0 fence
# and sorted outside it, so the planner cannot serve the order from the HNSW
# index (an index scan plus an incremental sort would be the walk again).
_LANE_EXACT = """
        (SELECT e.asset_id, e.dist
         FROM (SELECT v.asset_id, v.embedding::vector({dims}) <=> {qv}::vector({dims}) AS dist
               FROM asset_vector v
               WHERE v.model_id = {model} AND v.lane = {lane} AND v.tenant_id = %(tenant_id)s
                 AND {gate}{few}
                 AND {readable}{clause}
               OFFSET 0) e
         ORDER BY e.dist, e.asset_id
         LIMIT %(vec_cap)s)"""

# The HNSW walk: the nearest vec_cap by the index; with pgvector's iterative
# scan the walk goes on past vectors the viewer may not read (or that fail
# the clause) until the LIMIT is met.
_LANE_WALK = """
        (SELECT v.asset_id, v.embedding::vector({dims}) <=> {qv}::vector({dims}) AS dist
         FROM asset_vector v
         WHERE v.model_id = {model} AND v.lane = {lane} AND v.tenant_id = %(tenant_id)s
           AND {gate}NOT {few}
           AND {readable}{clause}
         ORDER BY v.embedding::vector({dims}) <=> {qv}::vector({dims})
         LIMIT %(vec_cap)s)"""


def vector_cte(name: str, model_id: int, lane: str, dims: int,
               clause: "AssetClause | None" = None, exact_scope: bool = False,
               exact_max: int = EXACT_MAX) -> sql.Composed:
    """One vector lane as a common table expression named ``vec_<name>``.

    Up to ``%(vec_cap)s`` nearest vectors of the model and lane by cosine
    distance to ``%(qv_<name>)s``, of the tenant, kept only within
    ``%(maxd_<name>)s`` (the model's threshold for the query's length, V4),
    ranked by distance then asset id. Only vectors of assets the viewer may
    read (``%(see_all)s``, ``%(principals)s``; P1) are scanned.
    ``clause``: a condition on assets tested the same way, inside the scan
    (:mod:`loupe.search.clause`).

    Which scan, decided once per statement by the tenant's count
    of vectors in the lane (``vector_stat``): at most ``exact_max`` (default
    :data:`EXACT_MAX`), an **exact** scan of them (every distance computed,
    the nearest kept: what brute force returns, ties by asset id); above it,
    the **HNSW walk** (pgvector's approximate search; with the iterative scan
    it goes on past hidden vectors until the LIMIT is met).

    With ``exact_scope`` (a filter that is the statement's scope:
    the CTEs ``scope`` and ``regime`` come first): in the ``direct`` regime
    (at most DIRECT_MAX members) the lane is an exact scan of the members'
    vectors — a few thousand distances, where a walk would visit
    ~vec_cap / selectivity tuples (and pgvector's iterative scan stops at
    ``hnsw.max_scan_tuples``, so a walk could come back short); otherwise
    the lane's scan as above, with ``clause`` (then a hash probe of
    ``scope``). The branches not taken are skipped by their one-time filters.

    Contract: needs the parameters ``tenant_id``, ``see_all``,
    ``principals``, ``vec_cap``, ``qv_<name>``, ``maxd_<name>``; provides
    the CTE ``vec_<name>`` (asset_id, dist, rank).
    """
    assert name.isidentifier() and lane in LANES and isinstance(exact_max, int)
    gate = "(SELECT r FROM regime) <> 'direct'\n           AND " if exact_scope else ""
    branches = ([_MEMBERS_EXACT] if exact_scope else []) + [
        _LANE_EXACT.replace("{gate}", gate.replace("\n           ", "\n                 ")),
        _LANE_WALK.replace("{gate}", gate)]
    walk = "\n        UNION ALL".join(branches)
    return sql.SQL("""
{cte} AS MATERIALIZED (
    SELECT x.asset_id, x.dist, row_number() OVER (ORDER BY x.dist, x.asset_id) AS rank
    FROM (""" + walk + """
    ) AS x
    WHERE x.dist <= {maxd}
)""").format(cte=sql.Identifier(f"vec_{name}"), dims=sql.Literal(dims),
             model=sql.Literal(model_id), lane=sql.Literal(lane),
             qv=sql.Placeholder(f"qv_{name}"), maxd=sql.Placeholder(f"maxd_{name}"),
             few=sql.SQL(_FEW).format(model=sql.Literal(model_id), lane=sql.Literal(lane),
                                      exact_max=sql.Literal(exact_max)),
             readable=sql.SQL(_READABLE).format(
                 # a lane of written words embeds the whole document: a member
                 # matches it only when it may read every file (0011)
                 readers=sql.SQL("a.readers" if lane == "image"
                                 else "coalesce(a.doc_readers, a.readers)")),
             clause=sql.SQL(and_clause(clause, "v.asset_id")))
