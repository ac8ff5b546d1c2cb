WITH m AS MATERIALIZED (
    SELECT x.asset_id
    FROM (SELECT DISTINCT d0.asset_id FROM (SELECT f.asset_id FROM asset_file f WHERE f.facet_tokens @> ARRAY[%(flt_0)s || lower(btrim(%(flt_1)s))] AND (%(see_all)s OR f.readers && %(principals)s::bigint[])) AS d0(asset_id)) d
    CROSS JOIN LATERAL (
        SELECT a.id AS asset_id
        FROM asset a
        WHERE a.id = d.asset_id
          AND a.tenant_id = %(tenant_id)s
          AND ((EXISTS (SELECT 1 FROM asset_file f WHERE f.asset_id = a.id AND (%(see_all)s OR f.readers && %(principals)s::bigint[]) AND f.facet_tokens @> ARRAY[%(flt_2)s || lower(btrim(%(flt_3)s))]) OR ((%(see_all)s OR coalesce(a.doc_readers, a.readers) && %(principals)s::bigint[]) AND EXISTS (SELECT 1 FROM asset_keyword k WHERE k.asset_id = a.id AND lower(k.keyword) = lower(btrim(%(flt_3)s))))) AND EXISTS (SELECT 1 FROM asset_file f WHERE f.asset_id = a.id AND (%(see_all)s OR f.readers && %(principals)s::bigint[]) AND f.facet_tokens @> ARRAY[%(flt_4)s || lower(btrim(%(flt_5)s))]) AND EXISTS (SELECT 1 FROM asset_file f WHERE f.asset_id = a.id AND (%(see_all)s OR f.readers && %(principals)s::bigint[]) AND lower(f.country) = lower(btrim(%(flt_7)s))) AND (NOT coalesce(EXISTS (SELECT 1 FROM asset_file f WHERE f.asset_id = a.id AND (%(see_all)s OR f.readers && %(principals)s::bigint[]) AND lower(f.country) = lower(btrim(%(flt_9)s))), false)) AND EXISTS (SELECT 1 FROM asset_file f WHERE f.asset_id = a.id AND f.captured >= %(flt_10)s AND f.captured < %(flt_11)s AND (%(see_all)s OR f.readers && %(principals)s::bigint[])))
          AND (%(see_all)s OR loupe_can_read(a.readers, a.embargo_until, a.rights_expire_at, false, %(principals)s::bigint[]))
        OFFSET 0
    ) x
    LIMIT %(filter_limit)s),
page AS (
    SELECT x.asset_id
    FROM (SELECT DISTINCT d0.asset_id FROM (SELECT f.asset_id FROM asset_file f WHERE f.facet_tokens @> ARRAY[%(flt_0)s || lower(btrim(%(flt_1)s))] AND (%(see_all)s OR f.readers && %(principals)s::bigint[])) AS d0(asset_id)) d
    CROSS JOIN LATERAL (
        SELECT a.id AS asset_id
        FROM asset a
        WHERE a.id = d.asset_id
          AND a.tenant_id = %(tenant_id)s
          AND ((EXISTS (SELECT 1 FROM asset_file f WHERE f.asset_id = a.id AND (%(see_all)s OR f.readers && %(principals)s::bigint[]) AND f.facet_tokens @> ARRAY[%(flt_2)s || lower(btrim(%(flt_3)s))]) OR ((%(see_all)s OR coalesce(a.doc_readers, a.readers) && %(principals)s::bigint[]) AND EXISTS (SELECT 1 FROM asset_keyword k WHERE k.asset_id = a.id AND lower(k.keyword) = lower(btrim(%(flt_3)s))))) AND EXISTS (SELECT 1 FROM asset_file f WHERE f.asset_id = a.id AND (%(see_all)s OR f.readers && %(principals)s::bigint[]) AND f.facet_tokens @> ARRAY[%(flt_4)s || lower(btrim(%(flt_5)s))]) AND EXISTS (SELECT 1 FROM asset_file f WHERE f.asset_id = a.id AND (%(see_all)s OR f.readers && %(principals)s::bigint[]) AND lower(f.country) = lower(btrim(%(flt_7)s))) AND (NOT coalesce(EXISTS (SELECT 1 FROM asset_file f WHERE f.asset_id = a.id AND (%(see_all)s OR f.readers && %(principals)s::bigint[]) AND lower(f.country) = lower(btrim(%(flt_9)s))), false)) AND EXISTS (SELECT 1 FROM asset_file f WHERE f.asset_id = a.id AND f.captured >= %(flt_10)s AND f.captured < %(flt_11)s AND (%(see_all)s OR f.readers && %(principals)s::bigint[])))
          AND (%(see_all)s OR loupe_can_read(a.readers, a.embargo_until, a.rights_expire_at, false, %(principals)s::bigint[]))
        OFFSET 0
    ) x
    ORDER BY x.asset_id DESC
    LIMIT %(limit)s OFFSET %(offset)s
)
SELECT (SELECT count(*) FROM m) AS n, p.asset_id
FROM (SELECT 1) one LEFT JOIN page p ON true
ORDER BY p.asset_id DESC
