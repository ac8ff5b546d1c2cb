-- 0019: machine words from the pixels (issue 15, SPEC X3).
--
-- * asset_machine: what Loupe measured in an asset's pixels (loupe.pixels):
--   kind, orientation and size class, background and cut-out, subject and
--   background colours (English palette names), OCR text. One row per asset;
--   a row whose pixels could not be read keeps the reason in `error` (so
--   `loupe enrich` does not retry it forever) and the facts it could give.
-- * machine_setting: per-tenant switches of the enrichment (OCR off by
--   default: it costs ~0.3-2 s an image on a CPU).
-- * A fifth field group, "machine", in BM25F: search_document.machine holds
--   the machine words in the document's language (loupe.pixels.words) and
--   machine_tsv their analysis. It has its own weight and b in
--   lexical_setting (weights[5], b[5]); it is never part of the title (no
--   phrase bonus 2) nor of phrase_text (no phrase bonus 1: a guess from the
--   pixels never outranks what people wrote), never in the columns the text
--   lane or the evaluation's caption variant embed (title ... creator, ocr),
--   and never written back to files.
--   Postings' tf and group_len arrays gain a fifth element; a four-element
--   array (written before 0019) reads tf[5] as NULL, which loupe_bm25f_tf
--   counts as 0. The corpus statistics are rebuilt at the end.

CREATE TABLE asset_machine (
    asset_id           bigint PRIMARY KEY REFERENCES asset(id) ON DELETE CASCADE,
    tenant_id          bigint NOT NULL REFERENCES tenant(id) ON DELETE CASCADE,
    kind               text CHECK (kind IN ('photo', 'illustration', 'clipart', 'lineart',
                                            'screenshot', 'document', 'icon')),
    orientation        text CHECK (orientation IN ('portrait', 'landscape', 'square',
                                                   'panorama')),
    size_class         text CHECK (size_class IN ('icon', 'small', 'medium', 'large')),
    background         text CHECK (background IN ('transparent', 'white', 'black', 'uniform',
                                                  'scene')),
    cutout             boolean,
    colours            text[] NOT NULL DEFAULT '{}',   -- subject colours, dominant first
    colour_shares      real[] NOT NULL DEFAULT '{}',   -- their shares of the subject's pixels
    background_colour  text,
    monochrome         boolean,                        -- no colour: black, white and greys
    closeup            boolean,                        -- sharp centre, soft border (photo)
    ocr_text           text,                           -- NULL: OCR not run; '' ran, no text
    ocr_lang           text,
    ocr_ms             integer,
    cues               jsonb NOT NULL DEFAULT '{}',    -- the measured cues (loupe.pixels.kind)
    error              text,                           -- why the pixels gave no or few words
    version            integer NOT NULL,
    computed_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX asset_machine_tenant_kind_idx ON asset_machine (tenant_id, kind);
CREATE INDEX asset_machine_colours_idx ON asset_machine USING gin (colours);
CREATE INDEX asset_machine_tenant_version_idx ON asset_machine (tenant_id, version);

CREATE TABLE machine_setting (
    tenant_id       bigint PRIMARY KEY REFERENCES tenant(id) ON DELETE CASCADE,
    ocr             boolean NOT NULL DEFAULT false,
    ocr_budget_ms   integer NOT NULL DEFAULT 3000 CHECK (ocr_budget_ms BETWEEN 100 AND 60000),
    ocr_min_score   real NOT NULL DEFAULT 0.7 CHECK (ocr_min_score >= 0 AND ocr_min_score <= 1)
);

-------------------------------------------------------------------------------
-- The machine field group (5th) in BM25F
-------------------------------------------------------------------------------

ALTER TABLE search_document ADD COLUMN machine text NOT NULL DEFAULT '';
ALTER TABLE search_document ADD COLUMN machine_tsv tsvector NOT NULL DEFAULT ''::tsvector;
ALTER TABLE file_document ADD COLUMN machine_tsv tsvector NOT NULL DEFAULT ''::tsvector;

ALTER TABLE lexical_setting DROP CONSTRAINT IF EXISTS lexical_setting_check;
UPDATE lexical_setting SET weights = weights || 0.5::float8, b = b || 0.75::float8
WHERE cardinality(weights) = 4;
ALTER TABLE lexical_setting ALTER COLUMN weights SET DEFAULT ARRAY[3.0, 2.0, 1.0, 0.5, 0.5];
ALTER TABLE lexical_setting ALTER COLUMN b SET DEFAULT ARRAY[0.75, 0.75, 0.75, 0.75, 0.75];
ALTER TABLE lexical_setting ADD CONSTRAINT lexical_setting_groups_check
    CHECK (cardinality(weights) = 5 AND cardinality(b) = 5);

-- Element-wise a + sign * b over the five groups (a missing element is 0).
CREATE FUNCTION loupe_groups_add(a float8[], b float8[], sign float8) RETURNS float8[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN ARRAY[coalesce(a[1], 0) + sign * coalesce(b[1], 0), coalesce(a[2], 0) + sign * coalesce(b[2], 0),
             coalesce(a[3], 0) + sign * coalesce(b[3], 0), coalesce(a[4], 0) + sign * coalesce(b[4], 0),
             coalesce(a[5], 0) + sign * coalesce(b[5], 0)];

-- Average group lengths of a corpus (group_len / n_docs), five groups.
CREATE FUNCTION loupe_avglen(group_len float8[], n_docs bigint) RETURNS float8[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN ARRAY[coalesce(group_len[1], 0) / n_docs, coalesce(group_len[2], 0) / n_docs,
             coalesce(group_len[3], 0) / n_docs, coalesce(group_len[4], 0) / n_docs,
             coalesce(group_len[5], 0) / n_docs];

-- BM25F pseudo-frequency (0002), now over five groups; a group missing from
-- an older four-element array (tf[5] NULL) contributes nothing.
CREATE OR REPLACE FUNCTION loupe_bm25f_tf(tf real[], len real[], avglen float8[], w float8[], b float8[])
RETURNS float8 LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN (CASE WHEN tf[1] > 0 AND avglen[1] > 0
             THEN w[1] * tf[1] / (1.0 - b[1] + b[1] * len[1] / avglen[1]) ELSE 0.0 END)
     + (CASE WHEN tf[2] > 0 AND avglen[2] > 0
             THEN w[2] * tf[2] / (1.0 - b[2] + b[2] * len[2] / avglen[2]) ELSE 0.0 END)
     + (CASE WHEN tf[3] > 0 AND avglen[3] > 0
             THEN w[3] * tf[3] / (1.0 - b[3] + b[3] * len[3] / avglen[3]) ELSE 0.0 END)
     + (CASE WHEN tf[4] > 0 AND avglen[4] > 0
             THEN w[4] * tf[4] / (1.0 - b[4] + b[4] * len[4] / avglen[4]) ELSE 0.0 END)
     + (CASE WHEN tf[5] > 0 AND avglen[5] > 0 AND w[5] IS NOT NULL
             THEN w[5] * tf[5] / (1.0 - b[5] + b[5] * len[5] / avglen[5]) ELSE 0.0 END);

-- Frequencies per group of each lexeme: the document's tsvector (letters
-- A-D = groups 1-4), its vocabulary (group 2, decayed by distance) and its
-- machine words (group 5).
CREATE FUNCTION loupe_doc_terms(tsv tsvector, vocab tsvector, machine tsvector, decay float8)
RETURNS TABLE (lexeme text, tf real[])
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    SELECT x.lexeme, ARRAY[sum(x.a), sum(x.b), sum(x.c), sum(x.d), sum(x.m)]::real[]
    FROM (
        SELECT u.lexeme,
               count(*) FILTER (WHERE w = 'A')::float8 AS a,
               count(*) FILTER (WHERE w = 'B')::float8 AS b,
               count(*) FILTER (WHERE w = 'C')::float8 AS c,
               count(*) FILTER (WHERE w = 'D')::float8 AS d,
               0::float8 AS m
        FROM unnest(tsv) AS u, unnest(u.weights) AS w
        GROUP BY u.lexeme
        UNION ALL
        SELECT v.lexeme, 0, max(power(decay, ascii(w) - ascii('A'))), 0, 0, 0
        FROM unnest(vocab) AS v, unnest(v.weights) AS w
        GROUP BY v.lexeme
        UNION ALL
        SELECT m.lexeme, 0, 0, 0, 0, cardinality(m.positions)::float8
        FROM unnest(machine) AS m
    ) x
    GROUP BY x.lexeme
$$;

-- The three-argument form (0002) now gives five-element arrays too.
CREATE OR REPLACE FUNCTION loupe_doc_terms(tsv tsvector, vocab tsvector, decay float8)
RETURNS TABLE (lexeme text, tf real[])
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$ SELECT * FROM loupe_doc_terms(tsv, vocab, ''::tsvector, decay) $$;

CREATE FUNCTION loupe_group_len(tsv tsvector, vocab tsvector, machine tsvector, decay float8)
RETURNS float8[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN (SELECT ARRAY[coalesce(sum(tf[1]), 0), coalesce(sum(tf[2]), 0), coalesce(sum(tf[3]), 0),
                     coalesce(sum(tf[4]), 0), coalesce(sum(tf[5]), 0)]::float8[]
        FROM loupe_doc_terms(tsv, vocab, machine, decay));

CREATE OR REPLACE FUNCTION loupe_group_len(tsv tsvector, vocab tsvector, decay float8) RETURNS float8[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN loupe_group_len(tsv, vocab, ''::tsvector, decay);

-- The machine words of a document, analysed by its language's configuration.
CREATE FUNCTION loupe_machine_tsv(cfg regconfig, machine text) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN loupe_analyze(cfg, coalesce(machine, ''));

-- Index maintenance (0002, 0008) with the machine tsvector: its terms'
-- postings are removed and added with the document's.
CREATE FUNCTION loupe_index_remove(p_asset bigint, p_tenant bigint, p_lang text,
                                   p_tsv tsvector, p_vocab tsvector, p_machine tsvector,
                                   p_len integer, p_group_len float8[])
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    terms text[];
BEGIN
    SELECT coalesce(array_agg(DISTINCT l ORDER BY l), '{}') INTO terms
    FROM (SELECT unnest(tsvector_to_array(p_tsv)) UNION ALL
          SELECT unnest(tsvector_to_array(p_vocab)) UNION ALL
          SELECT unnest(tsvector_to_array(p_machine))) AS x(l);
    DELETE FROM lexical_posting p
    USING lexicon_term t
    WHERE t.tenant_id = p_tenant AND t.lang = p_lang AND t.term = ANY (terms)
      AND p.term_id = t.id AND p.asset_id = p_asset;
    DELETE FROM lexicon_term t
    WHERE t.tenant_id = p_tenant AND t.lang = p_lang AND t.term = ANY (terms) AND t.df <= 1;
    UPDATE lexicon_term t SET df = t.df - 1
    WHERE t.tenant_id = p_tenant AND t.lang = p_lang AND t.term = ANY (terms) AND t.df > 1;
    UPDATE corpus_stat s
    SET n_docs = s.n_docs - 1, total_len = s.total_len - p_len,
        group_len = loupe_groups_add(s.group_len, p_group_len, -1)
    WHERE s.tenant_id = p_tenant AND s.lang = p_lang;
END
$$;

CREATE FUNCTION loupe_index_add(p_asset bigint, p_tenant bigint, p_lang text,
                                p_tsv tsvector, p_vocab tsvector, p_machine tsvector,
                                p_len integer, p_group_len float8[])
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    st lexical_setting%ROWTYPE;
    stat corpus_stat%ROWTYPE;
    avglen float8[];
BEGIN
    SELECT * INTO st FROM lexical_setting WHERE tenant_id = p_tenant;
    INSERT INTO corpus_stat AS s (tenant_id, lang, n_docs, total_len, group_len)
    VALUES (p_tenant, p_lang, 1, p_len, loupe_groups_add(p_group_len, NULL, 1))
    ON CONFLICT (tenant_id, lang) DO UPDATE
        SET n_docs = s.n_docs + 1, total_len = s.total_len + p_len,
            group_len = loupe_groups_add(s.group_len, p_group_len, 1)
    RETURNING * INTO stat;
    avglen := loupe_avglen(stat.group_len, stat.n_docs);
    WITH d AS MATERIALIZED (
        SELECT * FROM loupe_doc_terms(p_tsv, p_vocab, p_machine, st.vocab_decay)
    ),
    lex AS (
        INSERT INTO lexicon_term AS t (tenant_id, lang, term, df)
        SELECT p_tenant, p_lang, d.lexeme, 1 FROM d ORDER BY d.lexeme
        ON CONFLICT (tenant_id, lang, term) DO UPDATE SET df = t.df + 1
        RETURNING t.id, t.term
    )
    INSERT INTO lexical_posting (term_id, asset_id, impact, tf, group_len)
    SELECT lex.id, p_asset, x.tfn / (st.k1 + x.tfn), d.tf, p_group_len::real[]
    FROM d
    JOIN lex ON lex.term = d.lexeme
    CROSS JOIN LATERAL (
        SELECT loupe_bm25f_tf(d.tf, p_group_len::real[], avglen, st.weights, st.b) AS tfn
    ) AS x;
END
$$;

CREATE OR REPLACE FUNCTION loupe_search_document_index() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('loupe.bulk', true) = 'on' THEN
        RETURN NULL;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        PERFORM loupe_index_remove(OLD.asset_id, OLD.tenant_id, OLD.lang, OLD.tsv,
                                   OLD.vocab_tsv, OLD.machine_tsv, OLD.doc_len, OLD.group_len);
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') THEN
        PERFORM loupe_index_add(NEW.asset_id, NEW.tenant_id, NEW.lang, NEW.tsv,
                                NEW.vocab_tsv, NEW.machine_tsv, NEW.doc_len, NEW.group_len);
    END IF;
    RETURN NULL;
END
$$;
DROP TRIGGER search_document_index ON search_document;
CREATE TRIGGER search_document_index
AFTER INSERT OR DELETE OR UPDATE OF tsv, vocab_tsv, machine_tsv, doc_len, group_len, tenant_id, lang
ON search_document
FOR EACH ROW EXECUTE FUNCTION loupe_search_document_index();

-- File documents (0011) carry the asset's machine words too: the pixels are
-- the same in every file, and a member who may read one file may see them.
CREATE OR REPLACE FUNCTION loupe_file_document_index() RETURNS trigger LANGUAGE plpgsql AS $$
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
        SELECT loupe_avglen(s.group_len, s.n_docs)
        INTO avglen FROM corpus_stat s
        WHERE s.tenant_id = NEW.tenant_id AND s.lang = NEW.lang AND s.n_docs > 0;
        avglen := coalesce(avglen, NEW.group_len);
        INSERT INTO file_posting (tenant_id, lang, term, file_id, asset_id, impact, tf, group_len)
        SELECT NEW.tenant_id, NEW.lang, d.lexeme, NEW.file_id, NEW.asset_id,
               x.tfn / (st.k1 + x.tfn), d.tf, NEW.group_len::real[]
        FROM loupe_doc_terms(NEW.tsv, NEW.vocab_tsv, NEW.machine_tsv, st.vocab_decay) AS d
        CROSS JOIN LATERAL (
            SELECT loupe_bm25f_tf(d.tf, NEW.group_len::real[], avglen, st.weights, st.b) AS tfn
        ) AS x;
    END IF;
    RETURN NULL;
END
$$;
DROP TRIGGER file_document_index ON file_document;
CREATE TRIGGER file_document_index
AFTER INSERT OR DELETE OR UPDATE OF tsv, vocab_tsv, machine_tsv, group_len, asset_id ON file_document
FOR EACH ROW EXECUTE FUNCTION loupe_file_document_index();

-- The set-based rebuild (0002) over five groups.
CREATE OR REPLACE FUNCTION loupe_reindex_lexical(p_tenant bigint, p_lang text) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    st lexical_setting%ROWTYPE;
    avglen float8[];
    n bigint;
    prev text := coalesce(current_setting('loupe.bulk', true), 'off');
BEGIN
    SELECT * INTO st FROM lexical_setting WHERE tenant_id = p_tenant;
    PERFORM set_config('loupe.bulk', 'on', true);
    UPDATE search_document d
    SET group_len = loupe_group_len(d.tsv, d.vocab_tsv, d.machine_tsv, st.vocab_decay)
    WHERE d.tenant_id = p_tenant AND d.lang = p_lang;
    DELETE FROM lexical_posting p USING lexicon_term t
    WHERE p.term_id = t.id AND t.tenant_id = p_tenant AND t.lang = p_lang;
    DELETE FROM lexicon_term WHERE tenant_id = p_tenant AND lang = p_lang;
    DELETE FROM corpus_stat WHERE tenant_id = p_tenant AND lang = p_lang;
    INSERT INTO corpus_stat (tenant_id, lang, n_docs, total_len, group_len)
    SELECT p_tenant, p_lang, count(*), coalesce(sum(doc_len), 0),
           ARRAY[coalesce(sum(group_len[1]), 0), coalesce(sum(group_len[2]), 0),
                 coalesce(sum(group_len[3]), 0), coalesce(sum(group_len[4]), 0),
                 coalesce(sum(group_len[5]), 0)]
    FROM search_document WHERE tenant_id = p_tenant AND lang = p_lang
    HAVING count(*) > 0;
    SELECT loupe_avglen(group_len, n_docs)
    INTO avglen FROM corpus_stat WHERE tenant_id = p_tenant AND lang = p_lang;
    IF avglen IS NULL THEN
        PERFORM set_config('loupe.bulk', prev, true);
        RETURN 0;
    END IF;
    CREATE TEMP TABLE loupe_reindex_terms ON COMMIT DROP AS
    SELECT d.asset_id, x.lexeme, x.tf, d.group_len::real[] AS group_len
    FROM search_document d
    CROSS JOIN LATERAL loupe_doc_terms(d.tsv, d.vocab_tsv, d.machine_tsv, st.vocab_decay) AS x
    WHERE d.tenant_id = p_tenant AND d.lang = p_lang;
    INSERT INTO lexicon_term (tenant_id, lang, term, df)
    SELECT p_tenant, p_lang, lexeme, count(*) FROM loupe_reindex_terms
    GROUP BY lexeme ORDER BY lexeme;
    INSERT INTO lexical_posting (term_id, asset_id, impact, tf, group_len)
    SELECT t.id, r.asset_id,
           loupe_bm25f_tf(r.tf, r.group_len, avglen, st.weights, st.b)
             / (st.k1 + loupe_bm25f_tf(r.tf, r.group_len, avglen, st.weights, st.b)),
           r.tf, r.group_len
    FROM loupe_reindex_terms r
    JOIN lexicon_term t ON t.tenant_id = p_tenant AND t.lang = p_lang AND t.term = r.lexeme;
    GET DIAGNOSTICS n = ROW_COUNT;
    DROP TABLE loupe_reindex_terms;
    PERFORM set_config('loupe.bulk', prev, true);
    RETURN n;
END
$$;

-- Existing libraries: every statistic and posting in the five-group form.
SELECT loupe_reindex_lexical(x.tenant_id, x.lang)
FROM (SELECT DISTINCT tenant_id, lang FROM search_document ORDER BY 1, 2) AS x;
