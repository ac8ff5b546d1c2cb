-- 0011: visibility per file (issue 11; SPEC P4, P5).
--
-- An asset is one content: the same bytes at shared/nice_view.jpg and at
-- private/plan.jpg (with a sidecar titled "Project Falcon ...") are one
-- asset with two files. The asset's search document (0001) holds the words
-- of both files, so testing readability per asset let a member granted
-- shared/ find the asset by "falcon". From here on readability is decided
-- per file as well as per asset:
--
--   asset_file.readers   principals that may read this file: the grants of
--                        its collection and that collection's ancestors,
--                        plus the asset-wide grants (asset_grant, and the
--                        grants of hand-made collections holding the asset).
--   asset.readers        (0005, unchanged) the union over its files: who
--                        may see the asset at all (show, thumbnail, pixels).
--   asset.doc_readers    who may read EVERY file, hence the asset's search
--                        document (0001, the "whole document"): NULL when all
--                        the asset's files have the same readers (always so
--                        for an asset with one file), meaning asset.readers;
--                        else the intersection of its files' readers.
--   file_document        one document per file per language, for assets
--                        with two files or more (compiled by Loupe with the
--                        same compiler as the whole document, from that one
--                        file): what a member who may read some but not all
--                        of an asset's files is matched against.
--   file_posting         the postings of file documents, by term text.
--
-- The whole document stays the statistics' document (lexicon df, corpus
-- N and lengths, BM25F): the owner and admins search exactly as before, and
-- file documents never count in the statistics. A member reads the whole
-- document's postings when it is in doc_readers, and otherwise the postings
-- of the file documents it may read; per (term, asset) the best readable
-- posting counts, so an asset is found only by words of readable files and
-- every count is of distinct assets.

ALTER TABLE asset_file ADD COLUMN readers bigint[] NOT NULL DEFAULT '{}';
ALTER TABLE asset ADD COLUMN doc_readers bigint[];

-- The principals one file's folder reaches: grants of its collection and of
-- that collection's ancestors.
CREATE FUNCTION loupe_file_collection_readers(p_collection bigint) RETURNS bigint[]
LANGUAGE sql STABLE AS $$
    WITH RECURSIVE up AS (
        SELECT c.id, c.parent_id FROM collection c WHERE c.id = p_collection
        UNION
        SELECT c.id, c.parent_id FROM collection c JOIN up ON c.id = up.parent_id
    )
    SELECT coalesce(array_agg(DISTINCT g.principal_id ORDER BY g.principal_id), '{}')
    FROM collection_grant g JOIN up ON g.collection_id = up.id
$$;

-- The principals that reach an asset as a whole: its own grants and the
-- grants of the hand-made collections (and their ancestors) holding it.
CREATE FUNCTION loupe_asset_wide_readers(p_asset bigint) RETURNS bigint[]
LANGUAGE sql STABLE AS $$
    WITH RECURSIVE up AS (
        SELECT c.id, c.parent_id
        FROM collection_member m JOIN collection c ON c.id = m.collection_id
        WHERE m.asset_id = p_asset
        UNION
        SELECT c.id, c.parent_id FROM collection c JOIN up ON c.id = up.parent_id
    )
    SELECT coalesce(array_agg(DISTINCT s.principal_id ORDER BY s.principal_id), '{}')
    FROM (SELECT principal_id FROM asset_grant WHERE asset_id = p_asset
          UNION ALL
          SELECT g.principal_id FROM collection_grant g JOIN up ON g.collection_id = up.id) s
$$;

-- Recompute, for some assets, each file's readers, the asset's readers
-- (0005's definition: the union) and doc_readers (see the top of this
-- file). Writes only rows that change. Replaces 0005's function of the same
-- name, so every trigger of 0005 (grants, files, hand-made collections)
-- keeps the three in step in the writing transaction.
CREATE OR REPLACE FUNCTION loupe_refresh_readers(p_assets bigint[]) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    UPDATE asset_file f SET readers = r.readers
    FROM (SELECT f2.id,
                 (SELECT coalesce(array_agg(DISTINCT x ORDER BY x), '{}')
                  FROM unnest(loupe_file_collection_readers(f2.collection_id)
                              || loupe_asset_wide_readers(f2.asset_id)) AS x) AS readers
          FROM asset_file f2 WHERE f2.asset_id = ANY (p_assets)) r
    WHERE f.id = r.id AND f.readers IS DISTINCT FROM r.readers;
    UPDATE asset a SET readers = r.readers, doc_readers = r.doc_readers
    FROM (SELECT a2.id, loupe_asset_readers(a2.id) AS readers,
                 CASE WHEN (SELECT count(DISTINCT f.readers) FROM asset_file f
                            WHERE f.asset_id = a2.id) <= 1 THEN NULL
                      ELSE (SELECT coalesce(array_agg(x.p ORDER BY x.p), '{}')
                            FROM (SELECT p FROM asset_file f, unnest(f.readers) AS p
                                  WHERE f.asset_id = a2.id
                                  GROUP BY p
                                  HAVING count(*) = (SELECT count(*) FROM asset_file f3
                                                     WHERE f3.asset_id = a2.id)) x)
                 END AS doc_readers
          FROM asset a2 WHERE a2.id = ANY (p_assets)) r
    WHERE a.id = r.id
      AND (a.readers IS DISTINCT FROM r.readers OR a.doc_readers IS DISTINCT FROM r.doc_readers);
END
$$;

-- The assets with a file in a collection or its sub-collections that a
-- member may read (the file's readers meet its principals), or added to one
-- by hand (0005's loupe_collection_assets, per file).
CREATE FUNCTION loupe_collection_assets_for(p_collection bigint, p_principals bigint[])
RETURNS bigint[] LANGUAGE sql STABLE AS $$
    WITH RECURSIVE sub AS (
        SELECT id FROM collection WHERE id = p_collection
        UNION ALL
        SELECT c.id FROM collection c JOIN sub ON c.parent_id = sub.id
    )
    SELECT coalesce(array_agg(DISTINCT s.asset_id), '{}')
    FROM (SELECT f.asset_id FROM asset_file f JOIN sub ON f.collection_id = sub.id
          WHERE f.readers && p_principals
          UNION ALL
          SELECT m.asset_id FROM collection_member m JOIN sub ON m.collection_id = sub.id) s
$$;

-------------------------------------------------------------------------------
-- File documents
-------------------------------------------------------------------------------

CREATE TABLE file_document (
    file_id      bigint NOT NULL REFERENCES asset_file(id) ON DELETE CASCADE,
    asset_id     bigint NOT NULL REFERENCES asset(id) ON DELETE CASCADE,
    tenant_id    bigint NOT NULL REFERENCES tenant(id) ON DELETE CASCADE,
    lang         text NOT NULL,
    title        text NOT NULL DEFAULT '',
    filename     text NOT NULL DEFAULT '',
    description  text NOT NULL DEFAULT '',
    creator      text NOT NULL DEFAULT '',
    copyright    text NOT NULL DEFAULT '',
    location     text NOT NULL DEFAULT '',
    keywords     text NOT NULL DEFAULT '',
    collections  text NOT NULL DEFAULT '',
    vocabulary   text NOT NULL DEFAULT '',
    tsv          tsvector NOT NULL,
    vocab_tsv    tsvector NOT NULL DEFAULT ''::tsvector,
    doc_len      integer NOT NULL,
    group_len    float8[] NOT NULL,
    phrase_title text NOT NULL DEFAULT '',
    phrase_text  text NOT NULL DEFAULT '',
    PRIMARY KEY (file_id, lang)
);
CREATE INDEX file_document_asset_idx ON file_document (asset_id, lang);

-- Postings of file documents: as lexical_posting, keyed by the term's text
-- (lexicon ids change when a language is reindexed), with the file.
CREATE TABLE file_posting (
    tenant_id  bigint NOT NULL,
    lang       text NOT NULL,
    term       text NOT NULL,
    file_id    bigint NOT NULL REFERENCES asset_file(id) ON DELETE CASCADE,
    asset_id   bigint NOT NULL REFERENCES asset(id) ON DELETE CASCADE,
    impact     real NOT NULL,
    tf         real[] NOT NULL,
    group_len  real[] NOT NULL,
    PRIMARY KEY (tenant_id, lang, term, file_id)
);
CREATE INDEX file_posting_impact_idx ON file_posting (tenant_id, lang, term, impact DESC, asset_id);
CREATE INDEX file_posting_asset_idx ON file_posting (tenant_id, lang, term, asset_id);
CREATE INDEX file_posting_file_idx ON file_posting (file_id);

-- A file document's postings follow it in the same transaction; impacts use
-- the corpus averages at write time (as loupe_index_add). The statistics
-- are not touched: they describe whole documents only.
CREATE FUNCTION loupe_file_document_index() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    st lexical_setting%ROWTYPE;
    avglen float8[];
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        DELETE FROM file_posting WHERE file_id = OLD.file_id AND lang = OLD.lang
                                   AND tenant_id = OLD.tenant_id;
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') THEN
        SELECT * INTO st FROM lexical_setting WHERE tenant_id = NEW.tenant_id;
        SELECT ARRAY[s.group_len[1] / s.n_docs, s.group_len[2] / s.n_docs,
                     s.group_len[3] / s.n_docs, s.group_len[4] / s.n_docs]
        INTO avglen FROM corpus_stat s
        WHERE s.tenant_id = NEW.tenant_id AND s.lang = NEW.lang AND s.n_docs > 0;
        avglen := coalesce(avglen, NEW.group_len);
        INSERT INTO file_posting (tenant_id, lang, term, file_id, asset_id, impact, tf, group_len)
        SELECT NEW.tenant_id, NEW.lang, d.lexeme, NEW.file_id, NEW.asset_id,
               x.tfn / (st.k1 + x.tfn), d.tf, NEW.group_len::real[]
        FROM loupe_doc_terms(NEW.tsv, NEW.vocab_tsv, st.vocab_decay) AS d
        CROSS JOIN LATERAL (
            SELECT loupe_bm25f_tf(d.tf, NEW.group_len::real[], avglen, st.weights, st.b) AS tfn
        ) AS x;
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER file_document_index
AFTER INSERT OR DELETE OR UPDATE OF tsv, vocab_tsv, group_len, asset_id ON file_document
FOR EACH ROW EXECUTE FUNCTION loupe_file_document_index();

-------------------------------------------------------------------------------
-- What a member reads
-------------------------------------------------------------------------------

-- Whether a member may read a whole document / one file of an asset: the
-- read test of 0005 on doc_readers / the file's readers, with the asset's
-- embargo and rights dates. Plain RETURN: inlined into the caller.
CREATE FUNCTION loupe_can_read_doc(p_readers bigint[], p_doc_readers bigint[],
                                   p_embargo timestamptz, p_expiry timestamptz,
                                   p_principals bigint[])
RETURNS boolean LANGUAGE sql STABLE PARALLEL SAFE
RETURN loupe_can_read(coalesce(p_doc_readers, p_readers), p_embargo, p_expiry, false,
                      p_principals);

-- A term's postings in impact order, the first p_cap that the viewer may
-- read among the first p_budget: 0005's walk, its read test now on the
-- whole document (doc_readers: a member who may not read every file of an
-- asset does not read its whole document's postings). Used as it is for a
-- viewer who sees everything, and for a member when no file document holds
-- the term (the common case: the statements check, see q.files in
-- loupe.lexical.queries); otherwise loupe_term_postings_merged.
CREATE OR REPLACE FUNCTION loupe_term_postings_for(p_term bigint, p_cap integer, p_budget integer,
                                                   p_see_all boolean, p_principals bigint[])
RETURNS TABLE (asset_id bigint, tf real[], group_len real[])
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET enable_bitmapscan = off SET enable_sort = off SET enable_seqscan = off
AS $$
    SELECT w.asset_id, w.tf, w.group_len
    FROM (SELECT p.asset_id, p.tf, p.group_len, p.impact
          FROM lexical_posting p
          WHERE p.term_id = p_term
          ORDER BY p.impact DESC, p.asset_id
          LIMIT greatest(p_budget, p_cap)) AS w
    WHERE p_see_all OR (SELECT loupe_can_read_doc(a.readers, a.doc_readers, a.embargo_until,
                                                  a.rights_expire_at, p_principals)
                        FROM asset a WHERE a.id = w.asset_id)
    ORDER BY w.impact DESC, w.asset_id
    LIMIT p_cap
$$;

-- A member's postings of a term when file documents hold it: the readable
-- whole-document postings (loupe_term_postings_for's first p_cap) and the
-- file-document postings among the first p_budget whose file it may read
-- (only for assets whose whole document it may not read), merged: the best
-- posting per asset, the first p_cap assets in impact order. Every asset
-- appears once, so the counts over the walk are of distinct assets.
CREATE FUNCTION loupe_term_postings_merged(p_term bigint, p_cap integer, p_budget integer,
                                           p_principals bigint[])
RETURNS TABLE (asset_id bigint, tf real[], group_len real[])
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET enable_bitmapscan = off SET enable_seqscan = off
AS $$
    SELECT m.asset_id, m.tf, m.group_len
    FROM (SELECT DISTINCT ON (u.asset_id) u.asset_id, u.tf, u.group_len, u.impact
          FROM ((SELECT w.asset_id, w.tf, w.group_len, w.impact
                 FROM (SELECT p.asset_id, p.tf, p.group_len, p.impact
                       FROM lexical_posting p
                       WHERE p.term_id = p_term
                       ORDER BY p.impact DESC, p.asset_id
                       LIMIT greatest(p_budget, p_cap)) AS w
                 WHERE (SELECT loupe_can_read_doc(a.readers, a.doc_readers, a.embargo_until,
                                                  a.rights_expire_at, p_principals)
                        FROM asset a WHERE a.id = w.asset_id)
                 ORDER BY w.impact DESC, w.asset_id
                 LIMIT p_cap)
                UNION ALL
                (SELECT fw.asset_id, fw.tf, fw.group_len, fw.impact
                 FROM (SELECT fp.asset_id, fp.file_id, fp.tf, fp.group_len, fp.impact
                       FROM lexicon_term t
                       JOIN file_posting fp ON fp.tenant_id = t.tenant_id AND fp.lang = t.lang
                                           AND fp.term = t.term
                       WHERE t.id = p_term
                       ORDER BY fp.impact DESC, fp.asset_id
                       LIMIT greatest(p_budget, p_cap)) AS fw
                 -- file documents only where the whole one is not readable
                 WHERE (SELECT loupe_can_read(f.readers, a.embargo_until, a.rights_expire_at,
                                              false, p_principals)
                               AND NOT loupe_can_read_doc(a.readers, a.doc_readers,
                                                          a.embargo_until, a.rights_expire_at,
                                                          p_principals)
                        FROM asset_file f JOIN asset a ON a.id = f.asset_id
                        WHERE f.id = fw.file_id))) AS u
          ORDER BY u.asset_id, u.impact DESC) AS m
    ORDER BY m.impact DESC, m.asset_id
    LIMIT p_cap
$$;

-- Whether file documents of a tenant and language hold a term (one probe).
CREATE FUNCTION loupe_term_in_files(p_tenant bigint, p_lang text, p_term text) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
RETURN EXISTS (SELECT 1 FROM file_posting fp
               WHERE fp.tenant_id = p_tenant AND fp.lang = p_lang AND fp.term = p_term);

-- The posting of one term in one asset that a member may read: the whole
-- document's when it may read every file, else the best of the file
-- documents it may read; none otherwise. Used where the statements probe a
-- known asset (missing terms of kept rows, scope bands).
-- (Not inlined, on purpose: the SET clause keeps its joins out of the
-- caller's planning, which a member pays on every query; it runs only for
-- terms that file documents hold.)
CREATE FUNCTION loupe_member_posting(p_term bigint, p_asset bigint, p_principals bigint[])
RETURNS TABLE (tf real[], group_len real[])
LANGUAGE sql STABLE PARALLEL SAFE
SET enable_seqscan = off
AS $$
    SELECT x.tf, x.group_len
    FROM (SELECT p.tf, p.group_len, p.impact
          FROM lexical_posting p JOIN asset a ON a.id = p.asset_id
          WHERE p.term_id = p_term AND p.asset_id = p_asset
            AND loupe_can_read_doc(a.readers, a.doc_readers, a.embargo_until,
                                   a.rights_expire_at, p_principals)
          UNION ALL
          SELECT fp.tf, fp.group_len, fp.impact
          FROM lexicon_term t
          JOIN file_posting fp ON fp.tenant_id = t.tenant_id AND fp.lang = t.lang
                              AND fp.term = t.term AND fp.asset_id = p_asset
          JOIN asset_file f ON f.id = fp.file_id
          JOIN asset a ON a.id = f.asset_id
          WHERE t.id = p_term
            AND loupe_can_read(f.readers, a.embargo_until, a.rights_expire_at, false,
                               p_principals)
            AND NOT loupe_can_read_doc(a.readers, a.doc_readers, a.embargo_until,
                                       a.rights_expire_at, p_principals)) x
    ORDER BY x.impact DESC
    LIMIT 1
$$;

-- The phrase bonus (loupe_phrase_bonus) a member may see: of the whole
-- document when it may read every file, else the best over the file
-- documents it may read (0 when none).
CREATE FUNCTION loupe_member_bonus(p_asset bigint, p_lang text, p_qn text, p_principals bigint[])
RETURNS integer LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT coalesce(max(x.b), 0)::integer
    FROM (SELECT loupe_phrase_bonus(p_qn, d.phrase_title, d.phrase_text) AS b
          FROM search_document d JOIN asset a ON a.id = d.asset_id
          WHERE d.asset_id = p_asset AND d.lang = p_lang
            AND loupe_can_read_doc(a.readers, a.doc_readers, a.embargo_until,
                                   a.rights_expire_at, p_principals)
          UNION ALL
          SELECT loupe_phrase_bonus(p_qn, fd.phrase_title, fd.phrase_text)
          FROM file_document fd
          JOIN asset_file f ON f.id = fd.file_id
          JOIN asset a ON a.id = fd.asset_id
          WHERE fd.asset_id = p_asset AND fd.lang = p_lang
            AND loupe_can_read(f.readers, a.embargo_until, a.rights_expire_at, false,
                               p_principals)
            AND NOT loupe_can_read_doc(a.readers, a.doc_readers, a.embargo_until,
                                       a.rights_expire_at, p_principals)) x
$$;

-- The assets whose file documents match a title-band query (tsquery on the
-- title group) among the files a member may read, for assets whose whole
-- document it may not read (those come from search_document). Not inlined
-- (SET clause): its joins stay out of the member statement's planning.
CREATE FUNCTION loupe_member_title_files(p_tenant bigint, p_lang text, p_tq tsquery,
                                         p_principals bigint[])
RETURNS TABLE (asset_id bigint)
LANGUAGE sql STABLE PARALLEL SAFE
SET enable_bitmapscan = off
AS $$
    SELECT DISTINCT fd.asset_id
    FROM file_document fd
    JOIN asset_file f ON f.id = fd.file_id
    JOIN asset a ON a.id = fd.asset_id
    WHERE fd.tenant_id = p_tenant AND fd.lang = p_lang AND fd.tsv @@ p_tq
      AND loupe_can_read(f.readers, a.embargo_until, a.rights_expire_at, false, p_principals)
      AND NOT loupe_can_read_doc(a.readers, a.doc_readers, a.embargo_until,
                                 a.rights_expire_at, p_principals)
$$;

-- Existing libraries: every file's readers and every asset's doc_readers
-- from the grants as they are (file documents of existing assets with
-- several files are compiled by Loupe when it opens the library after this
-- migration: loupe.document.compile.rebuild_file_documents; until then a
-- member who may read only some files of such an asset does not find it by
-- words, which hides, never leaks).
SELECT loupe_refresh_readers(array_agg(a.id))
FROM asset a
WHERE EXISTS (SELECT 1 FROM principal p WHERE p.tenant_id = a.tenant_id)
HAVING count(*) > 0;
