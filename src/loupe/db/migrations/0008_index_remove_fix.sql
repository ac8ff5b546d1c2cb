-- 0008: the loupe_index_remove repair, as a migration of its own (SPEC N6).
--
-- The fix below and its lexical rebuild were first appended to
-- 0005_permissions.sql after 0006 and 0007 had shipped. migrate.py skips a
-- version already recorded, so a library that applied 0005 before that edit
-- (from 0005 as committed in 01a8a14, 8bc6ed0 or dc54b33) never received
-- them: every rewritten search document there can still drop a term from the
-- one other document holding it. From now on a change is a new file and an
-- applied file is never edited (migrate.py refuses one whose SHA-256 differs
-- from the one recorded when it was applied).
--
-- Idempotent: for a library whose 0005 already held the fix this defines the
-- same function again and rebuilds statistics that were already right.

-- loupe_index_remove (0002) lowered df and then deleted the terms whose df
-- was 1 — including those it had just lowered from 2 to 1, whose other
-- document still held them: that document's postings were orphaned (their
-- term id gone; a re-added term gets a new id). Delete first, then lower.
CREATE OR REPLACE FUNCTION loupe_index_remove(p_asset bigint, p_tenant bigint, p_lang text,
                                              p_tsv tsvector, p_vocab tsvector, p_len integer,
                                              p_group_len float8[])
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    terms text[];
BEGIN
    SELECT coalesce(array_agg(DISTINCT l ORDER BY l), '{}') INTO terms
    FROM (SELECT unnest(tsvector_to_array(p_tsv)) UNION ALL
          SELECT unnest(tsvector_to_array(p_vocab))) AS x(l);
    DELETE FROM lexical_posting p
    USING lexicon_term t
    WHERE t.tenant_id = p_tenant AND t.lang = p_lang AND t.term = ANY (terms)
      AND p.term_id = t.id AND p.asset_id = p_asset;
    -- terms only this document held go; the others lose one document
    DELETE FROM lexicon_term t
    WHERE t.tenant_id = p_tenant AND t.lang = p_lang AND t.term = ANY (terms) AND t.df <= 1;
    UPDATE lexicon_term t SET df = t.df - 1
    WHERE t.tenant_id = p_tenant AND t.lang = p_lang AND t.term = ANY (terms) AND t.df > 1;
    UPDATE corpus_stat s
    SET n_docs = s.n_docs - 1, total_len = s.total_len - p_len,
        group_len = ARRAY[s.group_len[1] - p_group_len[1], s.group_len[2] - p_group_len[2],
                          s.group_len[3] - p_group_len[3], s.group_len[4] - p_group_len[4]]
    WHERE s.tenant_id = p_tenant AND s.lang = p_lang;
END
$$;

-- 0005 as first committed (01a8a14) lacked this function, which the deep
-- band of a scope calls; same body as 0005's.
CREATE OR REPLACE FUNCTION loupe_term_asset_ids(p_term bigint, p_cap integer)
RETURNS TABLE (asset_id bigint)
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET enable_bitmapscan = off SET enable_sort = off SET enable_seqscan = off
AS $$
    SELECT p.asset_id
    FROM lexical_posting p
    WHERE p.term_id = p_term
    ORDER BY p.impact DESC, p.asset_id
    LIMIT p_cap
$$;

-- Postings lost before are back: rebuild lexicon (df), corpus statistics and
-- postings of every tenant and language that has documents ...
SELECT loupe_reindex_lexical(x.tenant_id, x.lang)
FROM (SELECT DISTINCT tenant_id, lang FROM search_document ORDER BY 1, 2) AS x;

-- ... and drop what is left of a language that has none (a rebuild of such a
-- language leaves nothing; statistics there can only be leftovers).
DELETE FROM lexical_posting p USING lexicon_term t
WHERE p.term_id = t.id
  AND NOT EXISTS (SELECT 1 FROM search_document d
                  WHERE d.tenant_id = t.tenant_id AND d.lang = t.lang);
DELETE FROM lexicon_term t
WHERE NOT EXISTS (SELECT 1 FROM search_document d
                  WHERE d.tenant_id = t.tenant_id AND d.lang = t.lang);
DELETE FROM corpus_stat s
WHERE NOT EXISTS (SELECT 1 FROM search_document d
                  WHERE d.tenant_id = s.tenant_id AND d.lang = s.lang);
-- postings whose term is gone (orphaned by the bug) belong to no language
DELETE FROM lexical_posting p
WHERE NOT EXISTS (SELECT 1 FROM lexicon_term t WHERE t.id = p.term_id);
