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
          -- a (term, asset) pair whose document writes the stem only in
          -- other words than the query's (%(xterm_ids)s / %(xassets)s:
          -- loupe.lexical.forms) is no match; the probe below still sees it
          -- in raw, so it adds nothing back
          WHERE NOT EXISTS (SELECT 1 FROM unnest(%(xterm_ids)s::bigint[], %(xassets)s::bigint[])
                                         AS x(term_id, asset_id)
                            WHERE x.term_id = raw.term_id AND x.asset_id = raw.asset_id)
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
    SELECT coalesce(l.asset_id, "v_image".asset_id) AS asset_id, l.rank AS lex_rank, l.score AS lex_score,
           "v_image".rank AS "image_rank", "v_image".dist AS "image_dist",
           coalesce(%(w_lexical)s::numeric * (1.0 / (%(rrf_k)s + l.rank)), 0)
           + coalesce(%(w_image)s::numeric * (1.0 / (%(rrf_k)s + "v_image".rank)), 0) AS rrf
    FROM lex l
    FULL OUTER JOIN "vec_image" "v_image" ON "v_image".asset_id = l.asset_id
),
fkept AS (
    SELECT f.*, (SELECT coalesce(max(loupe_phrase_bonus(ph.qn, d.phrase_title, d.phrase_text)), 0) FROM search_document d WHERE d.asset_id = f.asset_id AND d.tenant_id = %(tenant_id)s AND d.lang = ANY (%(langs)s::text[])) AS bonus
    FROM fused f
    CROSS JOIN phrase ph
    WHERE NOT %(one_word)s OR f.lex_rank IS NOT NULL
       OR (NOT EXISTS (SELECT 1 FROM cand) AND (false))
),
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
      AND NOT EXISTS (SELECT 1 FROM fkept s WHERE s.asset_id = d.asset_id)
      AND (%(see_all)s OR (SELECT loupe_can_read(a.readers, a.embargo_until,
                                                 a.rights_expire_at, false,
                                                 %(principals)s::bigint[])
                           FROM asset a WHERE a.id = d.asset_id))
    ORDER BY d.asset_id, bonus DESC
    LIMIT %(title_band_cap)s
),
tcounts AS (
    SELECT (SELECT count(*) FROM tband) AS band,
           (SELECT count(*) FROM tband t
            WHERE NOT EXISTS (SELECT 1 FROM cand c WHERE c.asset_id = t.asset_id)) AS unreached
),
rows AS (
    SELECT k.asset_id, k.rrf, k.bonus, false AS in_band, k.lex_rank, k.lex_score, k."image_rank", k."image_dist"
    FROM fkept k
    UNION ALL
    SELECT t.asset_id, 0, t.bonus, true, NULL, NULL, NULL, NULL
    FROM tband t
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
)
SELECT c.candidates, c.kept, c.postings_read, c.max_df, c.all_read,
       (SELECT count(*) FROM fkept) + tc.band AS fused_total,
       (SELECT count(*) FROM fkept WHERE lex_rank IS NULL) AS meaning_rows, (SELECT count(*) FROM "vec_image") AS "image_kept", (SELECT min(dist) FROM "vec_image") AS "image_best",
       p.rank, p.asset_id, p.rrf, p.bonus, p.lex_rank, p.lex_score, p."image_rank", p."image_dist", tc.band,
       tc.unreached, p.in_band
FROM counts c
CROSS JOIN tcounts tc
LEFT JOIN page p ON true
ORDER BY p.rank
