WITH r AS (SELECT DISTINCT unnest(%(ids)s::bigint[]) AS asset_id),
-- (each id probes the primary key / asset_file_asset_idx: LATERAL ... OFFSET
-- 0, because for a few thousand ids the planner chose a hash join over a
-- sequential scan of asset on the 100k test library)
ra AS MATERIALIZED (
    SELECT x.* FROM r CROSS JOIN LATERAL (
        SELECT a.id AS asset_id, a.media_type, a.width, a.height, a.orientation,
               a.rating_set, a.label_set,
               (%(see_all)s OR coalesce(a.doc_readers, a.readers) && %(principals)s::bigint[]) AS whole
        FROM asset a WHERE a.id = r.asset_id AND a.tenant_id = %(tenant_id)s OFFSET 0) x
),
rf AS MATERIALIZED (
    SELECT x.*, ra.whole AND ra.rating_set IS NOT NULL AS rating_replaced,
           ra.whole AND ra.label_set IS NOT NULL AS label_replaced
    FROM ra CROSS JOIN LATERAL (
        SELECT f.asset_id, f.facet_labels, f.country, f.captured, f.collection_id, f.rating
        FROM asset_file f WHERE f.asset_id = ra.asset_id AND (%(see_all)s OR f.readers && %(principals)s::bigint[]) OFFSET 0) x
),
vals AS (
    -- creators and keywords as written, from the file's stored facet labels
    -- ('field:value', migration 0026; the field has no colon)
    SELECT split_part(l, ':', 1) AS facet, lower(substr(l, strpos(l, ':') + 1)) AS k,
           substr(l, strpos(l, ':') + 1) AS label, rf.asset_id
    FROM rf CROSS JOIN LATERAL unnest(rf.facet_labels) l
    WHERE split_part(l, ':', 1) IN ('creator', 'keyword', 'camera', 'make', 'lens', 'city')
       OR (split_part(l, ':', 1) = 'label' AND NOT rf.label_replaced)
    UNION ALL
    -- a rating or label set in Loupe: only where the viewer reads every file
    SELECT 'label', lower(ra.label_set), ra.label_set, ra.asset_id
    FROM ra WHERE ra.whole AND ra.label_set IS NOT NULL
    UNION ALL
    SELECT 'rating', ra.rating_set::text, ra.rating_set::text, ra.asset_id
    FROM ra WHERE ra.whole AND ra.rating_set IS NOT NULL
    UNION ALL
    -- added in Loupe: only where the viewer reads every file (ra.whole)
    SELECT 'keyword', lower(k.keyword), k.keyword, k.asset_id
    FROM ra CROSS JOIN LATERAL (SELECT * FROM asset_keyword k0
                                WHERE k0.asset_id = ra.asset_id OFFSET 0) k
    WHERE ra.whole
    UNION ALL
    SELECT 'collection', c.id::text, c.path, rf.asset_id
    FROM rf JOIN collection c ON c.id = rf.collection_id
    UNION ALL
    SELECT 'collection', c.id::text, c.path, cm.asset_id
    FROM ra CROSS JOIN LATERAL (SELECT * FROM collection_member cm0
                                WHERE cm0.asset_id = ra.asset_id OFFSET 0) cm
    JOIN collection c ON c.id = cm.collection_id
    WHERE ra.whole
    UNION ALL
    SELECT 'format', ra.media_type, ra.media_type, ra.asset_id FROM ra
    UNION ALL
    SELECT 'orientation', o, o, ra.asset_id
    FROM ra CROSS JOIN LATERAL loupe_displayed_orientation(ra.width, ra.height,
                                                           ra.orientation) o
    WHERE o IS NOT NULL
    UNION ALL
    SELECT 'year', y, y, rf.asset_id
    FROM rf CROSS JOIN LATERAL
         (SELECT extract(year FROM rf.captured AT TIME ZONE 'UTC')::int::text) t(y)
    WHERE y IS NOT NULL
    UNION ALL
    SELECT 'country', lower(rf.country), rf.country, rf.asset_id
    FROM rf
    WHERE rf.country IS NOT NULL
    UNION ALL
    SELECT 'rating', rf.rating::text, rf.rating::text, rf.asset_id
    FROM rf
    WHERE rf.rating IS NOT NULL AND NOT rf.rating_replaced

    UNION ALL
    SELECT 'kind', m.kind, m.kind, m.asset_id
    FROM ra CROSS JOIN LATERAL (SELECT * FROM asset_machine m0
                                WHERE m0.asset_id = ra.asset_id OFFSET 0) m
    WHERE m.kind IS NOT NULL
    UNION ALL
    SELECT 'colour', c, c, m.asset_id
    FROM ra CROSS JOIN LATERAL (SELECT * FROM asset_machine m0
                                WHERE m0.asset_id = ra.asset_id OFFSET 0) m
    CROSS JOIN LATERAL unnest(m.colours) c
),
agg AS (
    SELECT facet, k, min(label) AS label, count(DISTINCT asset_id) AS n
    FROM vals GROUP BY facet, k
),
ranked AS (
    SELECT facet, k, label, n, row_number() OVER (PARTITION BY facet ORDER BY n DESC, k) AS pos
    FROM agg
)
SELECT facet, k, label, n FROM ranked WHERE pos <= %(top)s ORDER BY facet, pos
