-- Permissions (SPEC P1, P3), bulk actions and their audit log (C6).
--
-- Who may read an asset is decided inside the search statement itself, as a
-- WHERE clause of every lane, band and count, never by a second pass over
-- the results. To keep that clause a single-row test, each asset carries the
-- principals that may read it (asset.readers, maintained by the triggers
-- below from the grants) next to its embargo and usage-rights dates:
--
--   readable(asset, viewer) =
--       viewer sees everything in its tenant (the local owner, an admin)
--    OR (asset.readers && viewer's principals          -- a grant reaches it
--        AND (embargo_until IS NULL OR embargo_until <= now())
--        AND (rights_expire_at IS NULL OR rights_expire_at > now()))
--
-- A viewer's principals are its own id and the ids of its groups. A grant on
-- a collection reaches every asset with a file in it or in any of its
-- sub-collections.

-- Repair: the scoring functions below were folded into migration 0002 after
-- some libraries had applied it, so those libraries lack them. Defined here
-- again (same bodies, CREATE OR REPLACE) every library has them from now on.
CREATE OR REPLACE FUNCTION loupe_bm25f_tf(tf real[], len real[], avglen float8[], w float8[], b float8[])
RETURNS float8 LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN (CASE WHEN tf[1] > 0 AND avglen[1] > 0
             THEN w[1] * tf[1] / (1.0 - b[1] + b[1] * len[1] / avglen[1]) ELSE 0.0 END)
     + (CASE WHEN tf[2] > 0 AND avglen[2] > 0
             THEN w[2] * tf[2] / (1.0 - b[2] + b[2] * len[2] / avglen[2]) ELSE 0.0 END)
     + (CASE WHEN tf[3] > 0 AND avglen[3] > 0
             THEN w[3] * tf[3] / (1.0 - b[3] + b[3] * len[3] / avglen[3]) ELSE 0.0 END)
     + (CASE WHEN tf[4] > 0 AND avglen[4] > 0
             THEN w[4] * tf[4] / (1.0 - b[4] + b[4] * len[4] / avglen[4]) ELSE 0.0 END);

-- One term's BM25F contribution, idf * tf~ / (k1 + tf~), written as
-- idf * (1 - k1 / (k1 + tf~)) so that tf~ appears once and PostgreSQL
-- inlines the whole expression (a SQL function whose argument is used twice
-- is not inlined when that argument is itself a function call).
CREATE OR REPLACE FUNCTION loupe_bm25f_part(idf float8, tf real[], len real[], avglen float8[],
                                 w float8[], b float8[], k1 float8)
RETURNS float8 LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN idf * (1.0 - k1 / (k1 + loupe_bm25f_tf(tf, len, avglen, w, b)));

-- The phrase bonus (SPEC L3) from a query's and a document's phrase forms
-- (loupe_phrase_norm): 2 when the title holds the literal query, 1 when
-- another field does, 0 otherwise or for a query with no letters or digits.
CREATE OR REPLACE FUNCTION loupe_phrase_bonus(qn text, phrase_title text, phrase_text text)
RETURNS integer LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN btrim(qn) = '' THEN 0
            WHEN strpos(phrase_title, qn) > 0 THEN 2
            WHEN strpos(phrase_text, qn) > 0 THEN 1
            ELSE 0 END;

-- Repair: loupe_index_remove (0002) lowered df and then deleted the terms
-- whose df was 1 — including those it had just lowered from 2 to 1, whose
-- other document still held them: that document's postings were orphaned
-- (their term id gone; a re-added term gets a new id). Every rewritten
-- search document (a changed sidecar,
-- a vocabulary import, a bulk keyword) could so drop a term from one other
-- document. Delete first, then lower; and rebuild the lexical index of every
-- tenant and language once, so postings lost before are back.
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

SELECT loupe_reindex_lexical(t.id, l.lang)
FROM tenant t CROSS JOIN LATERAL unnest(t.languages) AS l(lang)
WHERE EXISTS (SELECT 1 FROM search_document d WHERE d.tenant_id = t.id AND d.lang = l.lang);

-- Users and groups share one id space, so a grant names either.
CREATE TABLE principal (
    id            bigserial PRIMARY KEY,
    tenant_id     bigint NOT NULL REFERENCES tenant(id) ON DELETE CASCADE,
    kind          text NOT NULL CHECK (kind IN ('user', 'group')),
    name          text NOT NULL CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$'),
    password_hash text,                     -- users: argon2id (argon2-cffi's format)
    admin         boolean NOT NULL DEFAULT false,
    created_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, name),
    CHECK (kind = 'user' OR (password_hash IS NULL AND NOT admin))
);

CREATE TABLE group_member (
    group_id bigint NOT NULL REFERENCES principal(id) ON DELETE CASCADE,
    user_id  bigint NOT NULL REFERENCES principal(id) ON DELETE CASCADE,
    PRIMARY KEY (group_id, user_id)
);

CREATE TABLE collection_grant (
    collection_id bigint NOT NULL REFERENCES collection(id) ON DELETE CASCADE,
    principal_id  bigint NOT NULL REFERENCES principal(id) ON DELETE CASCADE,
    granted_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (collection_id, principal_id)
);

CREATE TABLE asset_grant (
    asset_id     bigint NOT NULL REFERENCES asset(id) ON DELETE CASCADE,
    principal_id bigint NOT NULL REFERENCES principal(id) ON DELETE CASCADE,
    granted_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (asset_id, principal_id)
);

ALTER TABLE asset
    ADD COLUMN readers          bigint[] NOT NULL DEFAULT '{}',
    ADD COLUMN embargo_until    timestamptz,   -- not visible to members before
    ADD COLUMN rights_expire_at timestamptz;   -- not visible to members from

-- Collections made by people (saved selections, campaigns): no source, no
-- files; membership is a list of assets. Bulk "add to collection" fills them.
CREATE TABLE collection_member (
    collection_id bigint NOT NULL REFERENCES collection(id) ON DELETE CASCADE,
    asset_id      bigint NOT NULL REFERENCES asset(id) ON DELETE CASCADE,
    added_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (collection_id, asset_id)
);
CREATE INDEX collection_member_asset_idx ON collection_member (asset_id);

-- The principals that may read one asset: its own grants and the grants of
-- every collection holding one of its files, and of their ancestors.
CREATE FUNCTION loupe_asset_readers(p_asset bigint) RETURNS bigint[]
LANGUAGE sql STABLE AS $$
    WITH RECURSIVE up AS (
        SELECT c.id, c.parent_id
        FROM asset_file f JOIN collection c ON c.id = f.collection_id
        WHERE f.asset_id = p_asset
        UNION
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

-- Recompute asset.readers for some assets (writes only rows that change).
CREATE FUNCTION loupe_refresh_readers(p_assets bigint[]) RETURNS void
LANGUAGE sql VOLATILE AS $$
    UPDATE asset a SET readers = r.readers
    FROM (SELECT id, loupe_asset_readers(id) AS readers
          FROM asset WHERE id = ANY (p_assets)) r
    WHERE a.id = r.id AND a.readers IS DISTINCT FROM r.readers
$$;

-- The assets with a file in a collection or any of its sub-collections.
CREATE FUNCTION loupe_collection_assets(p_collection bigint) RETURNS bigint[]
LANGUAGE sql STABLE AS $$
    WITH RECURSIVE sub AS (
        SELECT id FROM collection WHERE id = p_collection
        UNION ALL
        SELECT c.id FROM collection c JOIN sub ON c.parent_id = sub.id
    )
    SELECT coalesce(array_agg(DISTINCT s.asset_id), '{}')
    FROM (SELECT f.asset_id FROM asset_file f JOIN sub ON f.collection_id = sub.id
          UNION ALL
          SELECT m.asset_id FROM collection_member m JOIN sub ON m.collection_id = sub.id) s
$$;

CREATE FUNCTION loupe_asset_grant_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM loupe_refresh_readers(ARRAY[coalesce(NEW.asset_id, OLD.asset_id)]);
    RETURN NULL;
END $$;
CREATE TRIGGER asset_grant_readers AFTER INSERT OR DELETE ON asset_grant
FOR EACH ROW EXECUTE FUNCTION loupe_asset_grant_changed();

CREATE FUNCTION loupe_collection_grant_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM loupe_refresh_readers(
        loupe_collection_assets(coalesce(NEW.collection_id, OLD.collection_id)));
    RETURN NULL;
END $$;
CREATE TRIGGER collection_grant_readers AFTER INSERT OR DELETE ON collection_grant
FOR EACH ROW EXECUTE FUNCTION loupe_collection_grant_changed();

-- A file (or a hand-made membership) joining or leaving a collection
-- changes what reaches its asset.
-- (Skipped when no grant exists in the tenant: the common case of a
-- library nobody shares yet costs ingest nothing.)
CREATE FUNCTION loupe_asset_file_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM asset a JOIN principal p ON p.tenant_id = a.tenant_id
               WHERE a.id = coalesce(NEW.asset_id, OLD.asset_id)) THEN
        IF TG_OP <> 'INSERT' THEN
            PERFORM loupe_refresh_readers(ARRAY[OLD.asset_id]);
        END IF;
        IF TG_OP <> 'DELETE' THEN
            PERFORM loupe_refresh_readers(ARRAY[NEW.asset_id]);
        END IF;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER asset_file_readers AFTER INSERT OR DELETE OR UPDATE OF collection_id, asset_id
ON asset_file FOR EACH ROW EXECUTE FUNCTION loupe_asset_file_changed();
CREATE TRIGGER collection_member_readers AFTER INSERT OR DELETE
ON collection_member FOR EACH ROW EXECUTE FUNCTION loupe_asset_file_changed();

-- The read test of one asset row for one viewer (see the top of this file).
-- A SQL function with a plain RETURN: PostgreSQL inlines it into the caller.
CREATE FUNCTION loupe_can_read(p_readers bigint[], p_embargo timestamptz,
                               p_expiry timestamptz, p_see_all boolean,
                               p_principals bigint[])
RETURNS boolean LANGUAGE sql STABLE PARALLEL SAFE
RETURN p_see_all
    OR (p_readers && p_principals
        AND (p_embargo IS NULL OR p_embargo <= now())
        AND (p_expiry IS NULL OR p_expiry > now()));

-- A term's postings in impact order, the first p_cap that the viewer may
-- read among the first p_budget of the list. Unreadable postings are
-- skipped inside the walk, so they never take a slot of the cap (a hidden
-- asset cannot push a readable one out of a result) and the counts taken
-- over the walk count readable assets only. The budget bounds the rows read
-- for a viewer who can read little of a long list (N4); the caller knows
-- the list was read to its end only if df <= p_budget. For a viewer that
-- sees everything this is loupe_term_postings (p_budget >= p_cap).
CREATE FUNCTION loupe_term_postings_for(p_term bigint, p_cap integer, p_budget integer,
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
    -- a scalar subquery: one primary-key probe per posting read (an EXISTS
    -- here was planned as a hash semi-join over the whole asset table)
    WHERE p_see_all OR (SELECT loupe_can_read(a.readers, a.embargo_until, a.rights_expire_at,
                                              false, p_principals)
                        FROM asset a WHERE a.id = w.asset_id)
    ORDER BY w.impact DESC, w.asset_id
    LIMIT p_cap
$$;

-- The first p_cap asset ids of a term's postings in impact order, read
-- from the impact index alone (an index-only scan where the visibility map
-- allows): the deep band of a scope intersects them with the scope's
-- readable members before fetching any posting's frequencies.
CREATE FUNCTION loupe_term_asset_ids(p_term bigint, p_cap integer)
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

-- Bulk actions applied to a result set (C6): who, what, on which query,
-- under which verdict, and how many assets it touched.
CREATE TABLE audit_log (
    id           bigserial PRIMARY KEY,
    tenant_id    bigint NOT NULL REFERENCES tenant(id) ON DELETE CASCADE,
    at           timestamptz NOT NULL DEFAULT now(),
    principal_id bigint REFERENCES principal(id) ON DELETE SET NULL,
    actor        text NOT NULL,             -- the user's name, or 'owner'
    action       text NOT NULL,
    value        jsonb,
    query        text NOT NULL,
    scope        text,
    lang         text NOT NULL,
    verdict      text NOT NULL CHECK (verdict IN ('complete', 'truncated', 'unknown')),
    total        bigint NOT NULL,
    total_exact  boolean NOT NULL,
    confirmed    boolean NOT NULL,
    count        bigint NOT NULL,           -- assets the action was applied to
    asset_ids    bigint[] NOT NULL
);
CREATE INDEX audit_log_tenant_idx ON audit_log (tenant_id, id DESC);

-- Keywords added by people (bulk "add keyword"), kept apart from the files'
-- own metadata so a re-ingest does not lose them; the search document
-- compiler merges them into the keyword field.
CREATE TABLE asset_keyword (
    asset_id  bigint NOT NULL REFERENCES asset(id) ON DELETE CASCADE,
    keyword   text NOT NULL CHECK (length(keyword) BETWEEN 1 AND 200),
    added_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (asset_id, keyword)
);

