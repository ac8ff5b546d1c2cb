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

from ..lexical.queries import LEXICAL_CTES

#: Members scored directly at most (lexical probes are exact and cheap up to here).
DIRECT_MAX = 2000
#: Members served by a deeper read at most, and how deep (postings per term).
DEEP_MAX = 50_000
DEEP_CAP = 45_000

# The scope's member assets that the viewer may read (P1): files in the
# collection or any sub-collection, and assets people added to them.
# Run on its own, before the scoped statement: with the collection ids as
# literal values the planner estimates each collection's size from its
# statistics and reads small ones through asset_file_collection_idx (inside
# one statement, an IN (recursive subquery) was planned as a sequential scan
# of every file on the 100k test library).
SUB_COLLECTIONS = """
WITH RECURSIVE sub AS (
    SELECT id FROM collection WHERE id = %(collection_id)s AND tenant_id = %(tenant_id)s
    UNION ALL
    SELECT c.id FROM collection c JOIN sub ON c.parent_id = sub.id
)
SELECT coalesce(array_agg(id), ARRAY[]::bigint[]) FROM sub
"""
SCOPE_MEMBERS = """
SELECT coalesce(array_agg(DISTINCT m.asset_id ORDER BY m.asset_id), ARRAY[]::bigint[])
FROM (SELECT f.asset_id FROM asset_file f
      WHERE f.tenant_id = %(tenant_id)s AND f.collection_id = ANY (%(collections)s::bigint[])
      UNION ALL
      SELECT cm.asset_id FROM collection_member cm
      WHERE cm.collection_id = ANY (%(collections)s::bigint[])) m
JOIN asset a ON a.id = m.asset_id
WHERE a.tenant_id = %(tenant_id)s
  AND loupe_can_read(a.readers, a.embargo_until, a.rights_expire_at,
                     %(see_all)s, %(principals)s::bigint[])
"""

# A collection by its path (as shown by loupe show / the folder tree).
COLLECTION_BY_PATH = """
SELECT id, path FROM collection WHERE tenant_id = %(tenant_id)s AND path = %(path)s
ORDER BY id LIMIT 2
"""

SCOPED_LANE = "WITH " + LEXICAL_CTES + """,
scope AS MATERIALIZED (
    SELECT unnest(%(members)s::bigint[]) AS asset_id
),
ranked AS MATERIALIZED (
    SELECT f.asset_id, f.score, f.bonus FROM final f JOIN scope s ON s.asset_id = f.asset_id
),
-- direct: every member not ranked, scored exactly by primary-key probes
band_direct AS (
    SELECT s.asset_id, sum(loupe_bm25f_part(q.idf, p.tf, p.group_len, st.avglen, st.weights, st.b,
                                st.k1)) AS score
    FROM scope s
    CROSS JOIN q
    CROSS JOIN st
    CROSS JOIN LATERAL (
        SELECT p.tf, p.group_len FROM lexical_posting p
        WHERE p.term_id = q.term_id AND p.asset_id = s.asset_id
        LIMIT 1
    ) AS p
    WHERE %(regime)s = 'direct'
      AND NOT EXISTS (SELECT 1 FROM ranked r WHERE r.asset_id = s.asset_id)
    GROUP BY s.asset_id
),
-- deep: each term's postings read to deep_cap; members found there, scored
-- from the postings read (a member's other terms beyond the depth add nothing)
deep AS MATERIALIZED (
    SELECT q.term_id, p.asset_id,
           loupe_bm25f_part(q.idf, p.tf, p.group_len, st.avglen, st.weights, st.b, st.k1) AS part
    FROM q
    CROSS JOIN st
    CROSS JOIN LATERAL loupe_term_postings_for(q.term_id, %(deep_cap)s, %(deep_cap)s,
                                               %(see_all)s, %(principals)s::bigint[]) AS p
    WHERE %(regime)s = 'deep'
),
band_deep AS (
    SELECT d.asset_id, sum(d.part) AS score
    FROM deep d JOIN scope s ON s.asset_id = d.asset_id
    WHERE NOT EXISTS (SELECT 1 FROM ranked r WHERE r.asset_id = d.asset_id)
    GROUP BY d.asset_id
),
band AS (
    SELECT b.asset_id, b.score,
           loupe_phrase_bonus(ph.qn, d.phrase_title, d.phrase_text) AS bonus
    FROM (SELECT * FROM band_direct UNION ALL SELECT * FROM band_deep) b
    CROSS JOIN phrase ph
    JOIN search_document d ON d.asset_id = b.asset_id AND d.lang = %(lang)s
                          AND d.tenant_id = %(tenant_id)s
),
rows AS (
    SELECT asset_id, score, bonus, false AS in_band FROM ranked
    UNION ALL
    SELECT asset_id, score, bonus, true FROM band
),
page AS (
    SELECT asset_id, score, bonus, in_band,
           row_number() OVER (ORDER BY in_band, bonus DESC, score DESC, asset_id) AS rank
    FROM rows
    ORDER BY in_band, bonus DESC, score DESC, asset_id
    LIMIT %(limit)s OFFSET %(offset)s
),
scounts AS (
    SELECT (SELECT count(*) FROM scope) AS members,
           (SELECT count(*) FROM ranked) AS ranked,
           (SELECT count(*) FROM band) AS band,
           (SELECT coalesce(bool_and(q.df <= %(deep_cap)s), true) FROM q) AS deep_all_read
)
SELECT c.candidates, c.kept, c.postings_read, c.max_df, c.all_read,
       sc.members, sc.ranked, sc.band, sc.deep_all_read,
       p.rank, p.asset_id, p.score, p.bonus, p.in_band
FROM counts c
CROSS JOIN scounts sc
LEFT JOIN page p ON true
ORDER BY p.rank
"""
