"""Named SQL of the evaluation instrument (tables of migration 0006).

Everything is a bound parameter except the vector lane's model id, lane and
width, which :func:`variant_search` composes as literals through the
production lane's :func:`loupe.vector.queries.vector_cte` (so the statement
reaches the (model, lane) HNSW index exactly as a search does).
"""

from __future__ import annotations

from psycopg import sql

from ..vector.queries import vector_cte

# -- read-only role ---------------------------------------------------------------

READER_ROLE = "loupe_eval_reader"
#: Statements that make a fresh connection the instrument's: the SELECT-only
#: role of migration 0006, and every transaction read-only.
READ_ONLY_SESSION = [
    sql.SQL("SET ROLE {}").format(sql.Identifier(READER_ROLE)),
    sql.SQL("SET default_transaction_read_only = on"),
]

# -- query sets -------------------------------------------------------------------

UPSERT_QUERY_SET = """
INSERT INTO eval_query_set (tenant_id, name) VALUES (%(tenant_id)s, %(name)s)
ON CONFLICT (tenant_id, name) DO UPDATE SET name = EXCLUDED.name
RETURNING id
"""

# Replacing a set's queries keeps the ids of queries whose qid stays, so runs,
# pools and judgements made against them stay attached.
UPSERT_QUERY = """
INSERT INTO eval_query (set_id, qid, text, provenance, register, strata, truth)
VALUES (%(set_id)s, %(qid)s, %(text)s, %(provenance)s, %(register)s, %(strata)s, %(truth)s)
ON CONFLICT (set_id, qid) DO UPDATE
SET text = EXCLUDED.text, provenance = EXCLUDED.provenance, register = EXCLUDED.register,
    strata = EXCLUDED.strata, truth = EXCLUDED.truth
"""

QUERY_SET_ID = """
SELECT id FROM eval_query_set WHERE tenant_id = %(tenant_id)s AND name = %(name)s
"""

QUERY_SETS = """
SELECT s.name, count(q.id),
       count(q.id) FILTER (WHERE q.provenance = 'blind'),
       count(q.id) FILTER (WHERE q.provenance = 'caption-derived')
FROM eval_query_set s LEFT JOIN eval_query q ON q.set_id = s.id
WHERE s.tenant_id = %(tenant_id)s
GROUP BY s.id ORDER BY s.name
"""

QUERIES = """
SELECT id, qid, text, provenance, register, strata, truth
FROM eval_query WHERE set_id = %(set_id)s ORDER BY qid
"""

# Ground-truth references (relative path of a file, or content sha256) to the
# assets that hold them now: references survive a re-ingest, asset ids need not.
RESOLVE_PATHS = """
SELECT DISTINCT f.rel_path, f.asset_id
FROM asset_file f
WHERE f.tenant_id = %(tenant_id)s AND f.rel_path = ANY(%(paths)s)
"""

RESOLVE_SHA256 = """
SELECT encode(a.content_sha256, 'hex'), a.id
FROM asset a
WHERE a.tenant_id = %(tenant_id)s AND a.content_sha256 = ANY(%(hashes)s)
"""

ASSET_SHA256 = """
SELECT a.id, encode(a.content_sha256, 'hex')
FROM asset a WHERE a.tenant_id = %(tenant_id)s AND a.id = ANY(%(ids)s)
"""

# -- runs -------------------------------------------------------------------------

MODEL_BY_NAME = "SELECT id, dims FROM embedding_model WHERE name = %(name)s"

VARIANT_COUNT = """
SELECT count(*) FROM asset_vector
WHERE tenant_id = %(tenant_id)s AND model_id = %(model_id)s AND lane = %(lane)s
"""


def variant_search(model_id: int, lane: str, dims: int) -> sql.Composed:
    """The ``k`` nearest assets of one index variant (``image``, ``caption``,
    ``both``; V7, E4) to ``%(qv_variant)s``, through the production vector
    lane's CTE (``vec_cap`` = k, ``maxd_variant`` the distance cut-off).
    Only assets the viewer may read (``%(see_all)s``, ``%(principals)s``).
    Rows: ``(asset_id, distance, rank)``, rank 1-based by distance then id."""
    return sql.SQL("WITH ") + vector_cte("variant", model_id, lane, dims) + sql.SQL(
        "\nSELECT asset_id, dist, rank FROM vec_variant ORDER BY rank")


DELETE_RUN = "DELETE FROM eval_run WHERE tenant_id = %(tenant_id)s AND name = %(name)s"

INSERT_RUN = """
INSERT INTO eval_run (tenant_id, set_id, name, system, model, k)
VALUES (%(tenant_id)s, %(set_id)s, %(name)s, %(system)s, %(model)s, %(k)s)
RETURNING id
"""

INSERT_RUN_HIT = """
INSERT INTO eval_run_hit (run_id, query_id, rank, asset_id, score, distance)
VALUES (%(run_id)s, %(query_id)s, %(rank)s, %(asset_id)s, %(score)s, %(distance)s)
"""

RUN_BY_NAME = """
SELECT r.id, r.set_id, s.name, r.system, r.model, r.k
FROM eval_run r JOIN eval_query_set s ON s.id = r.set_id
WHERE r.tenant_id = %(tenant_id)s AND r.name = %(name)s
"""

RUNS = """
SELECT r.name, s.name, r.system, r.model, r.k, r.created_at,
       (SELECT count(DISTINCT query_id) FROM eval_run_hit h WHERE h.run_id = r.id)
FROM eval_run r JOIN eval_query_set s ON s.id = r.set_id
WHERE r.tenant_id = %(tenant_id)s ORDER BY r.id
"""

RUN_HITS = """
SELECT q.qid, h.rank, h.asset_id, h.score, h.distance
FROM eval_run_hit h JOIN eval_query q ON q.id = h.query_id
WHERE h.run_id = %(run_id)s ORDER BY q.qid, h.rank
"""

# -- pools and judgements ---------------------------------------------------------

INSERT_POOL = """
INSERT INTO eval_pool (tenant_id, set_id, name, depth, seed)
VALUES (%(tenant_id)s, %(set_id)s, %(name)s, %(depth)s, %(seed)s)
ON CONFLICT (tenant_id, name) DO NOTHING
"""

POOL_BY_NAME = """
SELECT id, set_id, depth, seed FROM eval_pool
WHERE tenant_id = %(tenant_id)s AND name = %(name)s
"""

POOL_RUNS = "SELECT run_id, round FROM eval_pool_run WHERE pool_id = %(pool_id)s"

INSERT_POOL_RUN = """
INSERT INTO eval_pool_run (pool_id, run_id, round) VALUES (%(pool_id)s, %(run_id)s, %(round)s)
"""

# The top ``depth`` of the given runs, one row per distinct (query, asset)
# not yet in the pool, in a fixed order (the caller shuffles, seeded).
NEW_POOL_PAIRS = """
SELECT DISTINCT h.query_id, h.asset_id
FROM eval_run_hit h
WHERE h.run_id = ANY(%(run_ids)s) AND h.rank <= %(depth)s
  AND NOT EXISTS (SELECT 1 FROM eval_pool_item i WHERE i.pool_id = %(pool_id)s
                  AND i.query_id = h.query_id AND i.asset_id = h.asset_id)
ORDER BY h.query_id, h.asset_id
"""

POOL_SIZE = """
SELECT count(*), coalesce(max(position), 0), coalesce(max(round), 0)
FROM eval_pool_item WHERE pool_id = %(pool_id)s
"""

INSERT_POOL_ITEM = """
INSERT INTO eval_pool_item (pool_id, query_id, asset_id, token, position, round)
VALUES (%(pool_id)s, %(query_id)s, %(asset_id)s, %(token)s, %(position)s, %(round)s)
"""

# The judging page shows a viewer only the pairs whose asset it may read
# (P1): every statement below takes the viewer's ``see_all`` and
# ``principals`` and passes them to ``loupe_can_read`` (migration 0005), so a
# hidden pair is skipped, is not counted in the progress, and its token
# answers like an unknown one.

# The condition that a pool item ``i`` (its asset ``a``) shows no hidden
# ground truth: its query's text is shown to a viewer only when the viewer
# may read what the query was written from: a truth by
# content hash, the whole asset (every file: coalesce(doc_readers, readers),
# 0011 — a caption-derived query paraphrases any of its files' metadata); a
# truth by path, that file (asset_file.readers), not merely another copy
# of its bytes (F1). Embargo and rights expiry hide as usual.
# A reference that names nothing any more (the file renamed, the bytes
# re-exported, the asset deleted) hides the query from all but a viewer who
# sees everything: what it was written from can no longer be checked, and
# failing open served a private picture's paraphrase.
HIDDEN_TRUTH_FREE = """(%(see_all)s OR NOT EXISTS (
        SELECT 1 FROM eval_query tq, jsonb_array_elements(tq.truth) t
        WHERE tq.id = i.query_id
          AND CASE WHEN t->>'path' IS NOT NULL THEN
                   -- no file at that path any more, or one the viewer may not read
                   NOT EXISTS (SELECT 1 FROM asset_file tf
                               WHERE tf.tenant_id = a.tenant_id AND tf.rel_path = t->>'path')
                   OR EXISTS (SELECT 1 FROM asset_file tf JOIN asset ta ON ta.id = tf.asset_id
                              WHERE tf.tenant_id = a.tenant_id AND tf.rel_path = t->>'path'
                                AND NOT loupe_can_read(tf.readers, ta.embargo_until,
                                                       ta.rights_expire_at, %(see_all)s,
                                                       %(principals)s::bigint[]))
               ELSE
                   -- no asset with those bytes any more, or one not read whole
                   NOT EXISTS (SELECT 1 FROM asset ta
                               WHERE ta.tenant_id = a.tenant_id
                                 AND ta.content_sha256 = decode(t->>'sha256', 'hex'))
                   OR EXISTS (SELECT 1 FROM asset ta
                              WHERE ta.tenant_id = a.tenant_id
                                AND ta.content_sha256 = decode(t->>'sha256', 'hex')
                                AND NOT loupe_can_read(coalesce(ta.doc_readers, ta.readers),
                                                       ta.embargo_until, ta.rights_expire_at,
                                                       %(see_all)s, %(principals)s::bigint[]))
               END))"""

# The next pair a judge has not judged, in pool order, with progress counts
# (both over the pairs the viewer may read).
NEXT_ITEM = """
WITH visible AS (
    SELECT i.id, i.query_id, i.position, i.token
    FROM eval_pool_item i JOIN asset a ON a.id = i.asset_id
    WHERE i.pool_id = %(pool_id)s
      AND loupe_can_read(a.readers, a.embargo_until, a.rights_expire_at,
                         %(see_all)s, %(principals)s::bigint[])
      AND """ + HIDDEN_TRUTH_FREE + """
)
SELECT v.token, q.text,
       (SELECT count(*) FROM visible) AS total,
       (SELECT count(*) FROM eval_judgement j JOIN visible x ON x.id = j.item_id
        WHERE j.judge = %(judge)s) AS done
FROM visible v JOIN eval_query q ON q.id = v.query_id
WHERE NOT EXISTS (SELECT 1 FROM eval_judgement j WHERE j.item_id = v.id AND j.judge = %(judge)s)
ORDER BY v.position
LIMIT 1
"""

# ``(total, done)`` pairs of a pool for one judge, over the pairs the viewer may read.
# (In NEXT_ITEM, PROGRESS and ITEM_BY_TOKEN a pair is the viewer's only when it
# may also read every asset its query's ground truth names, by content hash or
# by a file's path: a known-item query is written from its hidden picture, so
# its text describes that picture. A reference that names
# no asset any more hides the query too.)
PROGRESS = """
WITH visible AS (
    SELECT i.id
    FROM eval_pool_item i JOIN asset a ON a.id = i.asset_id
    WHERE i.pool_id = %(pool_id)s
      AND loupe_can_read(a.readers, a.embargo_until, a.rights_expire_at,
                         %(see_all)s, %(principals)s::bigint[])
      AND """ + HIDDEN_TRUTH_FREE + """
)
SELECT (SELECT count(*) FROM visible),
       (SELECT count(*) FROM eval_judgement j JOIN visible x ON x.id = j.item_id
        WHERE j.judge = %(judge)s)
"""

# One pair by its token, if the viewer may read its asset: item id, asset id,
# thumbnail (relative to the home) and the primary file's path.
ITEM_BY_TOKEN = """
SELECT i.id, i.asset_id, a.thumbnail,
       (SELECT path FROM asset_file WHERE asset_id = a.id ORDER BY rel_path, path LIMIT 1)
FROM eval_pool_item i JOIN asset a ON a.id = i.asset_id
WHERE i.pool_id = %(pool_id)s AND i.token = %(token)s
  AND loupe_can_read(a.readers, a.embargo_until, a.rights_expire_at,
                     %(see_all)s, %(principals)s::bigint[])
  AND """ + HIDDEN_TRUTH_FREE + """
"""

UPSERT_JUDGEMENT = """
INSERT INTO eval_judgement (item_id, judge, grade) VALUES (%(item_id)s, %(judge)s, %(grade)s)
ON CONFLICT (item_id, judge) DO UPDATE SET grade = EXCLUDED.grade, judged_at = now()
"""

# Every judgement of a pool: (qid, asset_id, judge, grade).
POOL_JUDGEMENTS = """
SELECT q.qid, i.asset_id, j.judge, j.grade
FROM eval_judgement j
JOIN eval_pool_item i ON i.id = j.item_id
JOIN eval_query q ON q.id = i.query_id
WHERE i.pool_id = %(pool_id)s
ORDER BY q.qid, i.asset_id, j.judge
"""

# Judged pairs of the query set across all its pools.
SET_JUDGEMENTS = """
SELECT q.qid, i.asset_id, j.judge, j.grade
FROM eval_judgement j
JOIN eval_pool_item i ON i.id = j.item_id
JOIN eval_pool p ON p.id = i.pool_id
JOIN eval_query q ON q.id = i.query_id
WHERE p.set_id = %(set_id)s
ORDER BY q.qid, i.asset_id, j.judge
"""

POOL_ITEMS = """
SELECT q.qid, i.asset_id, i.token, i.position, i.round
FROM eval_pool_item i JOIN eval_query q ON q.id = i.query_id
WHERE i.pool_id = %(pool_id)s ORDER BY i.position
"""

# -- the reference peer (loupe.eval.peer) ---------------------------------------------

#: The plain English fields a user would index in a general-purpose engine,
#: per asset the viewer may read, from its search document in ``%(lang)s``:
#: title, description, keywords, creator, folder (collection) words and
#: file-name words. Rows: ``(asset_id, title, description, keywords,
#: creator, collections, filename)``, by asset id.
PEER_DOCUMENTS = """
SELECT d.asset_id, d.title, d.description, d.keywords, d.creator, d.collections, d.filename
FROM search_document d
JOIN asset a ON a.id = d.asset_id
WHERE d.tenant_id = %(tenant_id)s AND d.lang = %(lang)s
  AND (%(see_all)s OR loupe_can_read(a.readers, a.embargo_until, a.rights_expire_at, false,
                                     %(principals)s::bigint[]))
ORDER BY d.asset_id
"""

# -- rows returned and verdicts per query (migration 0016; absent subjects) ----------

INSERT_RUN_QUERY = """
INSERT INTO eval_run_query (run_id, query_id, rows_returned, verdict, meaning_only)
VALUES (%(run_id)s, %(query_id)s, %(rows)s, %(verdict)s, %(meaning_only)s)
"""

#: Per query of a run: ``(qid, rows_returned, verdict, meaning_only)``.
RUN_QUERIES = """
SELECT q.qid, rq.rows_returned, rq.verdict, rq.meaning_only
FROM eval_run_query rq JOIN eval_query q ON q.id = rq.query_id
WHERE rq.run_id = %(run_id)s ORDER BY q.qid
"""
