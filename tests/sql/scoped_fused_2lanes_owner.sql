WITH
st AS (
    SELECT s.lang, s.n_docs,
           loupe_avglen(s.group_len, s.n_docs) AS avglen,  -- five groups (0019)
           ls.k1, ls.weights, ls.b
    FROM corpus_stat s JOIN lexical_setting ls ON ls.tenant_id = s.tenant_id
    WHERE s.tenant_id = %(tenant_id)s AND s.lang = ANY (%(langs)s::text[]) AND s.n_docs > 0
),
q AS MATERIALIZED (
    SELECT t.id AS term_id, t.lang, x.grp, x.need, t.df,
           loupe_bm25_idf(st.n_docs, t.df) AS idf
    FROM unnest(%(qlangs)s::text[], %(qterms)s::text[], %(qgroups)s::int[],
                %(qneed)s::int[]) AS x(lang, term, grp, need)
    JOIN st ON st.lang = x.lang
    JOIN lexicon_term t ON t.tenant_id = %(tenant_id)s AND t.lang = x.lang AND t.term = x.term
),
raw AS MATERIALIZED (
    SELECT q.term_id, q.lang, q.grp, q.need, p.asset_id,
           loupe_bm25f_part(q.idf, p.tf, p.group_len, st.avglen, st.weights, st.b, st.k1) AS part
    FROM q
    JOIN st ON st.lang = q.lang
    CROSS JOIN LATERAL loupe_term_postings_for(q.term_id, %(raw_cap)s, %(raw_cap)s * 10,
                                               %(see_all)s, %(principals)s::bigint[]) AS p
),
cand_l AS MATERIALIZED (
    -- the parts of a hyphenated compound (grp > 0) count only together
    -- (loupe.lexical.compounds: every term of the group in the document)
    SELECT asset_id, lang, sum(score) AS score
    FROM (SELECT asset_id, lang, grp, sum(part) AS score, count(*) AS hits, min(need) AS need
          FROM raw
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
    CROSS JOIN LATERAL (
        SELECT p.tf, p.group_len FROM lexical_posting p
        WHERE p.term_id = q.term_id AND p.asset_id = k.asset_id
        LIMIT 1
    ) AS p
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
           (SELECT loupe_phrase_bonus(ph.qn, d.phrase_title, d.phrase_text)
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
           (SELECT CASE WHEN %(see_all)s
                        THEN coalesce(max(df) FILTER (WHERE grp = 0), 0) ELSE 0 END
            FROM q) AS max_df,
           (SELECT coalesce(bool_and(q.df <= %(raw_cap)s
                                     OR (q.df <= %(raw_cap)s * 10
                                         AND (SELECT count(*) FROM raw r
                                              WHERE r.term_id = q.term_id) < %(raw_cap)s)),
                             true)
            FROM q) AS all_read
)
,
"vec_text" AS MATERIALIZED (
    SELECT x.asset_id, x.dist, row_number() OVER (ORDER BY x.dist, x.asset_id) AS rank
    FROM (
        (SELECT e.asset_id, e.dist
         FROM (SELECT v.asset_id, v.embedding::vector(384) <=> %(qv_text)s::vector(384) AS dist
               FROM asset_vector v
               WHERE v.model_id = 11 AND v.lane = 'text' AND v.tenant_id = %(tenant_id)s
                 AND (SELECT coalesce(max(n_vectors), 0) FROM vector_stat
                WHERE tenant_id = %(tenant_id)s AND model_id = 11 AND lane = 'text')
               <= 10000
                 AND (%(see_all)s OR (SELECT loupe_can_read(coalesce(a.doc_readers, a.readers), a.embargo_until,
                                       a.rights_expire_at, false,
                                       %(principals)s::bigint[])
                 FROM asset a WHERE a.id = v.asset_id))
               OFFSET 0) e
         ORDER BY e.dist, e.asset_id
         LIMIT %(vec_cap)s)
        UNION ALL
        (SELECT v.asset_id, v.embedding::vector(384) <=> %(qv_text)s::vector(384) AS dist
         FROM asset_vector v
         WHERE v.model_id = 11 AND v.lane = 'text' AND v.tenant_id = %(tenant_id)s
           AND NOT (SELECT coalesce(max(n_vectors), 0) FROM vector_stat
                WHERE tenant_id = %(tenant_id)s AND model_id = 11 AND lane = 'text')
               <= 10000
           AND (%(see_all)s OR (SELECT loupe_can_read(coalesce(a.doc_readers, a.readers), a.embargo_until,
                                       a.rights_expire_at, false,
                                       %(principals)s::bigint[])
                 FROM asset a WHERE a.id = v.asset_id))
         ORDER BY v.embedding::vector(384) <=> %(qv_text)s::vector(384)
         LIMIT %(vec_cap)s)
    ) AS x
    WHERE x.dist <= %(maxd_text)s
),
"vec_image" AS MATERIALIZED (
    SELECT x.asset_id, x.dist, row_number() OVER (ORDER BY x.dist, x.asset_id) AS rank
    FROM (
        (SELECT e.asset_id, e.dist
         FROM (SELECT v.asset_id, v.embedding::vector(512) <=> %(qv_image)s::vector(512) AS dist
               FROM asset_vector v
               WHERE v.model_id = 12 AND v.lane = 'image' AND v.tenant_id = %(tenant_id)s
                 AND (SELECT coalesce(max(n_vectors), 0) FROM vector_stat
                WHERE tenant_id = %(tenant_id)s AND model_id = 12 AND lane = 'image')
               <= 10000
                 AND (%(see_all)s OR (SELECT loupe_can_read(a.readers, a.embargo_until,
                                       a.rights_expire_at, false,
                                       %(principals)s::bigint[])
                 FROM asset a WHERE a.id = v.asset_id))
               OFFSET 0) e
         ORDER BY e.dist, e.asset_id
         LIMIT %(vec_cap)s)
        UNION ALL
        (SELECT v.asset_id, v.embedding::vector(512) <=> %(qv_image)s::vector(512) AS dist
         FROM asset_vector v
         WHERE v.model_id = 12 AND v.lane = 'image' AND v.tenant_id = %(tenant_id)s
           AND NOT (SELECT coalesce(max(n_vectors), 0) FROM vector_stat
                WHERE tenant_id = %(tenant_id)s AND model_id = 12 AND lane = 'image')
               <= 10000
           AND (%(see_all)s OR (SELECT loupe_can_read(a.readers, a.embargo_until,
                                       a.rights_expire_at, false,
                                       %(principals)s::bigint[])
                 FROM asset a WHERE a.id = v.asset_id))
         ORDER BY v.embedding::vector(512) <=> %(qv_image)s::vector(512)
         LIMIT %(vec_cap)s)
    ) AS x
    WHERE x.dist <= %(maxd_image)s
),
lex AS (
    SELECT asset_id, score, row_number() OVER (ORDER BY score DESC, asset_id) AS rank
    FROM final
),
fused AS (
    SELECT coalesce(coalesce(l.asset_id, "v_text".asset_id), "v_image".asset_id) AS asset_id, l.rank AS lex_rank, l.score AS lex_score,
           "v_text".rank AS "text_rank", "v_text".dist AS "text_dist",
           "v_image".rank AS "image_rank", "v_image".dist AS "image_dist",
           coalesce(%(w_lexical)s::numeric * (1.0 / (%(rrf_k)s + l.rank)), 0)
           + coalesce(%(w_text)s::numeric * (1.0 / (%(rrf_k)s + "v_text".rank)), 0)
           + coalesce(%(w_image)s::numeric * (1.0 / (%(rrf_k)s + "v_image".rank)), 0) AS rrf
    FROM lex l
    FULL OUTER JOIN "vec_text" "v_text" ON "v_text".asset_id = l.asset_id
    FULL OUTER JOIN "vec_image" "v_image" ON "v_image".asset_id = coalesce(l.asset_id, "v_text".asset_id)
),
fkept AS (
    SELECT f.*, (SELECT coalesce(max(loupe_phrase_bonus(ph.qn, d.phrase_title, d.phrase_text)), 0) FROM search_document d WHERE d.asset_id = f.asset_id AND d.tenant_id = %(tenant_id)s AND d.lang = ANY (%(langs)s::text[])) AS bonus
    FROM fused f
    CROSS JOIN phrase ph
    WHERE NOT %(one_word)s OR f.lex_rank IS NOT NULL
       OR (NOT EXISTS (SELECT 1 FROM cand) AND (false OR f."text_rank" IS NOT NULL))
),
scope AS MATERIALIZED (
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
                           FROM asset a WHERE a.id = m.asset_id))
    LIMIT %(deep_max)s + 1
),
regime AS MATERIALIZED (
    SELECT c.n, CASE WHEN c.n <= %(direct_max)s THEN 'direct'
                     WHEN c.n <= %(deep_max)s THEN 'deep'
                     ELSE 'none' END AS r
    FROM (SELECT count(*) AS n FROM scope) c
),
ranked AS MATERIALIZED (
    SELECT k.* FROM fkept k WHERE (
    EXISTS (SELECT 1 FROM asset_file f
            WHERE f.asset_id = k.asset_id AND f.collection_id = ANY (%(collections)s::bigint[])
              AND (%(see_all)s OR f.readers && %(principals)s::bigint[]))
    OR EXISTS (SELECT 1 FROM collection_member cm
               WHERE cm.asset_id = k.asset_id
                 AND cm.collection_id = ANY (%(collections)s::bigint[])))
),
band_direct AS (
    SELECT DISTINCT ON (x.asset_id) x.asset_id, x.score
    FROM (
        SELECT s.asset_id, q.lang,
               sum(loupe_bm25f_part(q.idf, p.tf, p.group_len, st.avglen, st.weights, st.b,
                                    st.k1)) AS score
        FROM scope s
        CROSS JOIN q
        JOIN st ON st.lang = q.lang
        CROSS JOIN LATERAL (
        SELECT p.tf, p.group_len FROM lexical_posting p
        WHERE p.term_id = q.term_id AND p.asset_id = s.asset_id
        LIMIT 1
    ) AS p
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
    SELECT q.term_id, q.lang, q.idf, w.asset_id
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
        CROSS JOIN LATERAL (
        SELECT p.tf, p.group_len FROM lexical_posting p
        WHERE p.term_id = d.term_id AND p.asset_id = d.asset_id
        LIMIT 1
    ) AS p
        GROUP BY d.asset_id, d.lang
    ) x
    ORDER BY x.asset_id, x.score DESC
),
lband AS (
    SELECT * FROM band_direct UNION ALL SELECT * FROM band_deep
),
"vband_text" AS MATERIALIZED (
    SELECT x.asset_id, x.dist, row_number() OVER (ORDER BY x.dist, x.asset_id) AS rank
    FROM (SELECT s.asset_id, v.embedding::vector(384) <=> %(qv_text)s::vector(384) AS dist
          FROM scope s
          -- one primary-key probe per member (LATERAL ... OFFSET 0): as a
          -- join, the planner read every vector of the library (a sequential
          -- scan of asset_vector, 2.1 s of the 3.0 s of a filtered search on
          -- the 100k benchmark library)
          CROSS JOIN LATERAL (SELECT v0.embedding FROM asset_vector v0
                              WHERE v0.asset_id = s.asset_id AND v0.model_id = 11
                                AND v0.lane = 'text' OFFSET 0) v
          WHERE (SELECT r FROM regime) = 'direct'
            AND NOT EXISTS (SELECT 1 FROM ranked r WHERE r.asset_id = s.asset_id)
            AND (%(see_all)s OR (SELECT loupe_can_read_doc(a.readers, a.doc_readers,
                                                         a.embargo_until, a.rights_expire_at,
                                                         %(principals)s::bigint[])
                                       FROM asset a WHERE a.id = s.asset_id))) x
    WHERE x.dist <= %(maxd_text)s
),
"vband_image" AS MATERIALIZED (
    SELECT x.asset_id, x.dist, row_number() OVER (ORDER BY x.dist, x.asset_id) AS rank
    FROM (SELECT s.asset_id, v.embedding::vector(512) <=> %(qv_image)s::vector(512) AS dist
          FROM scope s
          -- one primary-key probe per member (LATERAL ... OFFSET 0): as a
          -- join, the planner read every vector of the library (a sequential
          -- scan of asset_vector, 2.1 s of the 3.0 s of a filtered search on
          -- the 100k benchmark library)
          CROSS JOIN LATERAL (SELECT v0.embedding FROM asset_vector v0
                              WHERE v0.asset_id = s.asset_id AND v0.model_id = 12
                                AND v0.lane = 'image' OFFSET 0) v
          WHERE (SELECT r FROM regime) = 'direct'
            AND NOT EXISTS (SELECT 1 FROM ranked r WHERE r.asset_id = s.asset_id)
            ) x
    WHERE x.dist <= %(maxd_image)s
),
band_rows AS (
    SELECT coalesce(coalesce(lb.asset_id, "vb_text".asset_id), "vb_image".asset_id) AS asset_id, lb.rank AS lex_rank, lb.score AS lex_score,
           "vb_text".rank AS "text_rank", "vb_text".dist AS "text_dist",
           "vb_image".rank AS "image_rank", "vb_image".dist AS "image_dist",
           coalesce(%(w_lexical)s::numeric * (1.0 / (%(rrf_k)s + lb.rank)), 0)
           + coalesce(%(w_text)s::numeric * (1.0 / (%(rrf_k)s + "vb_text".rank)), 0)
           + coalesce(%(w_image)s::numeric * (1.0 / (%(rrf_k)s + "vb_image".rank)), 0) AS rrf
    FROM (SELECT asset_id, score, row_number() OVER (ORDER BY score DESC, asset_id) AS rank
          FROM lband) lb
    FULL OUTER JOIN "vband_text" "vb_text" ON "vb_text".asset_id = lb.asset_id
    FULL OUTER JOIN "vband_image" "vb_image" ON "vb_image".asset_id = coalesce(lb.asset_id, "vb_text".asset_id)
),
band AS (
    SELECT b.*, (SELECT coalesce(max(loupe_phrase_bonus(ph.qn, d.phrase_title, d.phrase_text)), 0) FROM search_document d WHERE d.asset_id = b.asset_id AND d.tenant_id = %(tenant_id)s AND d.lang = ANY (%(langs)s::text[])) AS bonus
    FROM band_rows b
    CROSS JOIN phrase ph
    WHERE NOT %(one_word)s OR b.lex_rank IS NOT NULL
),
rows AS (
    SELECT asset_id, rrf, bonus, false AS in_band, lex_rank, lex_score, "text_rank", "text_dist", "image_rank", "image_dist" FROM ranked
    UNION ALL
    SELECT asset_id, rrf, bonus, true, lex_rank, lex_score, "text_rank", "text_dist", "image_rank", "image_dist" FROM band
),
page AS (
    SELECT r.*, row_number() OVER (ORDER BY r.in_band, r.bonus DESC, r.facts DESC, r.rrf DESC,
                                            r.asset_id) AS rank
    FROM (SELECT r0.*, (%(qf_on)s AND EXISTS (
        SELECT 1 FROM asset_machine qf
        WHERE qf.asset_id = r0.asset_id
          AND (cardinality(%(qf_kind)s::text[]) = 0 OR qf.kind = ANY(%(qf_kind)s::text[]))
          AND (cardinality(%(qf_background)s::text[]) = 0
               OR qf.background = ANY(%(qf_background)s::text[]))
          AND (cardinality(%(qf_orientation)s::text[]) = 0
               OR qf.orientation = ANY(%(qf_orientation)s::text[]))
          AND (NOT %(qf_cutout)s OR qf.cutout IS TRUE)
          AND (NOT %(qf_monochrome)s OR qf.monochrome IS TRUE))) AS facts FROM rows r0) r
    ORDER BY r.in_band, r.bonus DESC, r.facts DESC, r.rrf DESC, r.asset_id
    LIMIT %(limit)s OFFSET %(offset)s
),
scounts AS (
    SELECT (SELECT n FROM regime) AS members,
           (SELECT count(*) FROM ranked) AS ranked,
           (SELECT count(*) FROM band) AS band,
           (SELECT coalesce(bool_and(df <= %(deep_cap)s), true) FROM q) AS deep_all_read,
           (SELECT r FROM regime) AS regime,
           0
           + (SELECT count(*) FROM scope s
              WHERE (SELECT r FROM regime) = 'direct'
                AND NOT EXISTS (SELECT 1 FROM asset_vector v WHERE v.asset_id = s.asset_id
                                AND v.model_id = 11 AND v.lane = 'text'))
           + (SELECT count(*) FROM scope s
              WHERE (SELECT r FROM regime) = 'direct'
                AND NOT EXISTS (SELECT 1 FROM asset_vector v WHERE v.asset_id = s.asset_id
                                AND v.model_id = 12 AND v.lane = 'image')) AS waiting
)
SELECT c.candidates, c.kept, c.postings_read, c.max_df, c.all_read,
       sc.members, sc.ranked, sc.band, sc.deep_all_read, sc.waiting,
       p.rank, p.asset_id, p.rrf, p.bonus, p.in_band, p.lex_rank, p.lex_score, p."text_rank", p."text_dist", p."image_rank", p."image_dist",
       sc.regime
FROM counts c
CROSS JOIN scounts sc
LEFT JOIN page p ON true
ORDER BY p.rank
