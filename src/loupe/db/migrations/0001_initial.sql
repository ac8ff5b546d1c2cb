-- 0001: tenants, assets and their files, collections, the search document,
-- and the corpus statistics that BM25 needs.
--
-- Every row that describes library content carries tenant_id, and every
-- query Loupe runs is bound to one tenant (SPEC P3). The tenant is also the
-- natural distribution key if a library outgrows one machine (SPEC N2).

CREATE EXTENSION IF NOT EXISTS vector;
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE EXTENSION IF NOT EXISTS unaccent;
CREATE EXTENSION IF NOT EXISTS btree_gin;

-- Text-search configurations used by the analyzer: PostgreSQL's Snowball
-- configuration for each language, with accents folded (unaccent) before
-- stemming for tokens that hold non-ASCII letters. One per language:
-- loupe_english, loupe_french, ... and loupe_simple (no stemming).
DO $$
DECLARE
    cfg record;
BEGIN
    FOR cfg IN
        SELECT c.cfgname
        FROM pg_ts_config c
        JOIN pg_namespace n ON n.oid = c.cfgnamespace
        WHERE n.nspname = 'pg_catalog'
    LOOP
        EXECUTE format('CREATE TEXT SEARCH CONFIGURATION %I (COPY = pg_catalog.%I)',
                       'loupe_' || cfg.cfgname, cfg.cfgname);
        EXECUTE format(
            'ALTER TEXT SEARCH CONFIGURATION %I ALTER MAPPING FOR word, hword, hword_part WITH unaccent, %I',
            'loupe_' || cfg.cfgname,
            CASE WHEN cfg.cfgname = 'simple' THEN 'simple' ELSE cfg.cfgname || '_stem' END);
    END LOOP;
END
$$;

CREATE TABLE tenant (
    id          bigserial PRIMARY KEY,
    name        text NOT NULL UNIQUE,
    -- languages searched in this tenant's library: one search document per
    -- asset per language (SPEC S1). Codes are ISO 639-1 ('en', 'fr', ...).
    languages   text[] NOT NULL DEFAULT ARRAY['en'],
    created_at  timestamptz NOT NULL DEFAULT now()
);
INSERT INTO tenant (name) VALUES ('default');

-- A folder that was ingested. Files are tracked relative to it so that a
-- re-ingest can tell which files disappeared.
CREATE TABLE source (
    id          bigserial PRIMARY KEY,
    tenant_id   bigint NOT NULL REFERENCES tenant(id) ON DELETE CASCADE,
    root_path   text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, root_path)
);

-- Folders become collections (nested by parent_id); path is relative to
-- the source root, '/'-separated.
CREATE TABLE collection (
    id          bigserial PRIMARY KEY,
    tenant_id   bigint NOT NULL REFERENCES tenant(id) ON DELETE CASCADE,
    source_id   bigint REFERENCES source(id) ON DELETE CASCADE,
    parent_id   bigint REFERENCES collection(id) ON DELETE CASCADE,
    name        text NOT NULL,
    path        text NOT NULL,
    UNIQUE (tenant_id, source_id, path)
);

-- An asset is one content (one sha256 of bytes) in one tenant; the same
-- bytes found under several paths are one asset with several files.
CREATE TABLE asset (
    id              bigserial PRIMARY KEY,
    tenant_id       bigint NOT NULL REFERENCES tenant(id) ON DELETE CASCADE,
    content_sha256  bytea NOT NULL,
    byte_size       bigint NOT NULL,
    media_type      text NOT NULL,          -- e.g. image/jpeg
    width           integer NOT NULL,       -- stored pixels, before orientation
    height          integer NOT NULL,
    orientation     smallint NOT NULL DEFAULT 1,  -- EXIF orientation 1..8
    thumbnail       text,                   -- path relative to the library home
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, content_sha256)
);

-- A file on disk holding an asset's bytes, with the metadata read from it
-- (embedded + sidecar, already merged and normalised) and the raw ExifTool
-- output for inspection.
CREATE TABLE asset_file (
    id               bigserial PRIMARY KEY,
    tenant_id        bigint NOT NULL REFERENCES tenant(id) ON DELETE CASCADE,
    asset_id         bigint NOT NULL REFERENCES asset(id) ON DELETE CASCADE,
    source_id        bigint NOT NULL REFERENCES source(id) ON DELETE CASCADE,
    collection_id    bigint REFERENCES collection(id) ON DELETE SET NULL,
    path             text NOT NULL,          -- absolute path
    rel_path         text NOT NULL,          -- relative to the source root
    byte_size        bigint NOT NULL,
    mtime_ns         bigint NOT NULL,
    sidecar_path     text,
    sidecar_mtime_ns bigint,
    sidecar_size     bigint,
    metadata         jsonb NOT NULL,         -- normalised fields (see loupe.ingest.metadata)
    raw_metadata     jsonb NOT NULL,         -- ExifTool JSON (-G1), embedded and sidecar
    UNIQUE (tenant_id, path)
);
CREATE INDEX asset_file_asset_idx ON asset_file (asset_id);
CREATE INDEX asset_file_source_idx ON asset_file (source_id);

-- The search document: one row per asset per language (SPEC S1). The fields
-- are kept apart so that weights can be applied per field; tsv is the
-- analysed form (positions carry the field's weight letter: A title,
-- B keywords/filename/vocabulary, C description/collections/location/people,
-- D creator/copyright/machine tags/OCR). doc_len counts the tokens BM25 sees.
CREATE TABLE search_document (
    asset_id     bigint NOT NULL REFERENCES asset(id) ON DELETE CASCADE,
    tenant_id    bigint NOT NULL REFERENCES tenant(id) ON DELETE CASCADE,
    lang         text NOT NULL,
    ts_config    regconfig NOT NULL,
    title        text NOT NULL DEFAULT '',
    filename     text NOT NULL DEFAULT '',
    description  text NOT NULL DEFAULT '',
    creator      text NOT NULL DEFAULT '',
    copyright    text NOT NULL DEFAULT '',
    location     text NOT NULL DEFAULT '',
    keywords     text NOT NULL DEFAULT '',
    collections  text NOT NULL DEFAULT '',
    -- filled by later stages (machine tags, OCR, confirmed people, vocabulary)
    machine_tags text NOT NULL DEFAULT '',
    ocr          text NOT NULL DEFAULT '',
    people       text NOT NULL DEFAULT '',
    vocabulary   text NOT NULL DEFAULT '',
    tsv          tsvector NOT NULL,
    doc_len      integer NOT NULL,
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (asset_id, lang)
);
CREATE INDEX search_document_tsv_idx ON search_document USING gin (tenant_id, lang, tsv);

-- BM25 corpus statistics, per tenant and language, kept exact by the
-- triggers below in the same transaction as the document change (SPEC P2):
-- document frequency per term, and document count / total length.
CREATE TABLE lexicon_term (
    tenant_id  bigint NOT NULL,
    lang       text NOT NULL,
    term       text NOT NULL,
    df         integer NOT NULL CHECK (df > 0),
    PRIMARY KEY (tenant_id, lang, term)
);

CREATE TABLE corpus_stat (
    tenant_id  bigint NOT NULL,
    lang       text NOT NULL,
    n_docs     bigint NOT NULL CHECK (n_docs >= 0),
    total_len  bigint NOT NULL CHECK (total_len >= 0),
    PRIMARY KEY (tenant_id, lang)
);

-- Add (sign = 1) or remove (sign = -1) one document's contribution to the
-- statistics. Terms are touched in sorted order so that concurrent writers
-- lock lexicon rows in the same order and cannot deadlock each other.
CREATE FUNCTION loupe_stats_apply(p_tenant bigint, p_lang text, p_tsv tsvector,
                                  p_len integer, p_sign integer)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF p_sign > 0 THEN
        INSERT INTO lexicon_term AS t (tenant_id, lang, term, df)
        SELECT p_tenant, p_lang, lexeme, 1
        FROM unnest(tsvector_to_array(p_tsv)) AS lexeme
        ORDER BY lexeme
        ON CONFLICT (tenant_id, lang, term) DO UPDATE SET df = t.df + 1;
    ELSE
        UPDATE lexicon_term t SET df = t.df - 1
        FROM (SELECT lexeme FROM unnest(tsvector_to_array(p_tsv)) AS lexeme ORDER BY lexeme) AS x
        WHERE t.tenant_id = p_tenant AND t.lang = p_lang AND t.term = x.lexeme AND t.df > 1;
        DELETE FROM lexicon_term t
        WHERE t.tenant_id = p_tenant AND t.lang = p_lang
          AND t.term = ANY (tsvector_to_array(p_tsv)) AND t.df = 1;
    END IF;
    INSERT INTO corpus_stat AS s (tenant_id, lang, n_docs, total_len)
    VALUES (p_tenant, p_lang, GREATEST(p_sign, 0), GREATEST(p_sign * p_len, 0))
    ON CONFLICT (tenant_id, lang) DO UPDATE
        SET n_docs = s.n_docs + p_sign, total_len = s.total_len + p_sign * p_len;
END
$$;

CREATE FUNCTION loupe_search_document_stats() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        PERFORM loupe_stats_apply(OLD.tenant_id, OLD.lang, OLD.tsv, OLD.doc_len, -1);
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') THEN
        PERFORM loupe_stats_apply(NEW.tenant_id, NEW.lang, NEW.tsv, NEW.doc_len, 1);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER search_document_stats
AFTER INSERT OR DELETE OR UPDATE OF tsv, doc_len, tenant_id, lang ON search_document
FOR EACH ROW EXECUTE FUNCTION loupe_search_document_stats();

-- One row per ingest run and one per file that could not be ingested.
CREATE TABLE ingest_run (
    id          bigserial PRIMARY KEY,
    tenant_id   bigint NOT NULL REFERENCES tenant(id) ON DELETE CASCADE,
    source_id   bigint NOT NULL REFERENCES source(id) ON DELETE CASCADE,
    started_at  timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz,
    summary     jsonb
);

CREATE TABLE ingest_failure (
    id          bigserial PRIMARY KEY,
    run_id      bigint NOT NULL REFERENCES ingest_run(id) ON DELETE CASCADE,
    tenant_id   bigint NOT NULL REFERENCES tenant(id) ON DELETE CASCADE,
    path        text NOT NULL,
    kind        text NOT NULL,   -- empty, not_image, corrupt, truncated, too_large, metadata, io
    reason      text NOT NULL,
    at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ingest_failure_run_idx ON ingest_failure (run_id);

-- BM25 as Lucene computes it (Lucene 8+ BM25Similarity; bm25s method
-- "lucene"; Kamphuis et al., ECIR 2020, "Which BM25 do you mean?"):
--   score(q, d) = sum over query terms t in d of idf(t) * tf / (tf + k1 * (1 - b + b * dl / avgdl))
--   idf(t)      = ln(1 + (N - df + 0.5) / (df + 0.5))
-- with N documents in the corpus (tenant + language), df documents holding
-- t, tf occurrences of t in d, dl the length of d in tokens, avgdl the mean.
CREATE FUNCTION loupe_bm25_idf(n_docs bigint, df bigint) RETURNS float8
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN ln(1.0 + (n_docs - df + 0.5)::float8 / (df + 0.5)::float8);

CREATE FUNCTION loupe_bm25_tf(tf integer, doc_len integer, avgdl float8, k1 float8, b float8)
RETURNS float8
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN tf::float8 / (tf::float8 + k1 * (1.0 - b + b * doc_len::float8 / avgdl));

-- A tsquery matching any of the given lexemes (already analysed: no further
-- parsing or stemming happens). Each lexeme is quoted in tsquery syntax, so
-- no character of it can act as an operator.
CREATE FUNCTION loupe_any_lexeme(terms text[]) RETURNS tsquery
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN (SELECT coalesce(string_agg(
            '''' || replace(replace(t, '\', '\\'), '''', '''''') || '''', ' | '), '')::tsquery
        FROM unnest(terms) AS t);
