-- 0002: the lexical index done right (issue 3; SPEC S2, S3, S4, L1, L2, F3, N4).
--
-- * Analyzer: identifiers stay findable (loupe_prepare), before PostgreSQL's
--   parser, Snowball stemmer and accent folding.
-- * Field groups: the tsvector weight letters are Loupe's four field groups,
--   A title, B keywords/filename/vocabulary, C description/collections/
--   location/people, D creator/copyright/machine tags/OCR.
-- * BM25F (Robertson, Zaragoza & Taylor 2004, "Simple BM25 extension to
--   multiple weighted fields"): each group's term frequency is normalised by
--   that group's own length, weighted, and summed before saturation, so a
--   weight never inflates a document's length (the seed's failure, S3).
-- * Postings: one row per (term, asset) with the per-group frequencies and
--   lengths, read in impact order under explicit caps (F3).
-- * Controlled vocabulary (S2): terms with ancestors; an asset's vocabulary
--   tsvector marks its own terms A, parents B, grandparents C, beyond D.

-------------------------------------------------------------------------------
-- Analyzer
-------------------------------------------------------------------------------

-- Stop words before accent folding: 0001 folded accents first, so the
-- French "à", "été", "même" lost their accents and no longer matched the
-- stop-word list. For each language whose Snowball dictionary has a
-- stop-word file, a simple dictionary rejects those words (ACCEPT = false
-- passes every other word on) ahead of unaccent and the stemmer.
DO $$
DECLARE
    d record;
    stop text;
BEGIN
    FOR d IN
        SELECT c.cfgname, dict.dictinitoption
        FROM pg_ts_config c
        JOIN pg_namespace n ON n.oid = c.cfgnamespace AND n.nspname = 'pg_catalog'
        JOIN pg_ts_dict dict ON dict.dictname = c.cfgname || '_stem'
    LOOP
        stop := substring(d.dictinitoption FROM 'stopwords = ''([a-z_]+)''');
        IF stop IS NOT NULL THEN
            EXECUTE format('CREATE TEXT SEARCH DICTIONARY %I (TEMPLATE = pg_catalog.simple, '
                           'STOPWORDS = %s, ACCEPT = false)', 'loupe_' || d.cfgname || '_stop', stop);
            EXECUTE format('ALTER TEXT SEARCH CONFIGURATION %I ALTER MAPPING FOR word, hword, '
                           'hword_part WITH %I, unaccent, %I', 'loupe_' || d.cfgname,
                           'loupe_' || d.cfgname || '_stop', d.cfgname || '_stem');
        END IF;
    END LOOP;
END
$$;

-- Normalise separators and keep identifiers findable, before tokenising:
--   * a compound of letters/digits joined by - _ . + that holds a digit
--     ("4471-RD", "SS26-HERO-03") is also emitted joined ("4471rd",
--     "ss26hero03"), so that "4471rd" finds "4471-RD";
--   * the separators / _ - . + between letters or digits become spaces, so
--     that each part is a term of its own ("A52/A52S" -> "A52 A52S").
CREATE FUNCTION loupe_prepare(t text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN regexp_replace(t, '([[:alnum:]])[-_./+]+(?=[[:alnum:]])', '\1 ', 'g')
    || coalesce(' ' || (
        SELECT string_agg(regexp_replace(m[1], '[-_.+]', '', 'g'), ' ')
        FROM regexp_matches(t, '([[:alnum:]]+(?:[-_.+][[:alnum:]]+)+)', 'g') AS m
        WHERE m[1] ~ '[0-9]'), '');

-- The analyzer: identifier preparation, then the language's configuration
-- (parser, accent folding, Snowball stemmer, stop words).
CREATE FUNCTION loupe_analyze(cfg regconfig, t text) RETURNS tsvector
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN to_tsvector(cfg, loupe_prepare(t));

-- Normal form for the phrase bonus (L3): lower case, accents folded,
-- separators and runs of white space read as one space.
CREATE FUNCTION loupe_phrase_norm(t text) RETURNS text
LANGUAGE sql STABLE STRICT PARALLEL SAFE
RETURN ' ' || btrim(regexp_replace(lower(unaccent(t)), '[^[:alnum:]]+', ' ', 'g')) || ' ';

-------------------------------------------------------------------------------
-- Lexical settings per tenant
-------------------------------------------------------------------------------

-- Weights and length normalisation of the four field groups (A title,
-- B keywords, C description, D other incl. OCR), BM25's k1, the decay of
-- vocabulary ancestors, and the caps of the lexical lane.
CREATE TABLE lexical_setting (
    tenant_id     bigint PRIMARY KEY REFERENCES tenant(id) ON DELETE CASCADE,
    k1            float8 NOT NULL DEFAULT 1.2 CHECK (k1 > 0),
    weights       float8[] NOT NULL DEFAULT ARRAY[3.0, 2.0, 1.0, 0.5],
    b             float8[] NOT NULL DEFAULT ARRAY[0.75, 0.75, 0.75, 0.75],
    vocab_decay   float8 NOT NULL DEFAULT 0.5 CHECK (vocab_decay > 0 AND vocab_decay <= 1),
    raw_cap       integer NOT NULL DEFAULT 3000 CHECK (raw_cap > 0),
    keep_cap      integer NOT NULL DEFAULT 1000 CHECK (keep_cap > 0),
    CHECK (cardinality(weights) = 4 AND cardinality(b) = 4)
);
INSERT INTO lexical_setting (tenant_id) SELECT id FROM tenant;

CREATE FUNCTION loupe_tenant_settings() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO lexical_setting (tenant_id) VALUES (NEW.id) ON CONFLICT DO NOTHING;
    RETURN NULL;
END
$$;
CREATE TRIGGER tenant_settings AFTER INSERT ON tenant
FOR EACH ROW EXECUTE FUNCTION loupe_tenant_settings();

-------------------------------------------------------------------------------
-- Controlled vocabularies
-------------------------------------------------------------------------------

CREATE TABLE vocabulary (
    id         bigserial PRIMARY KEY,
    tenant_id  bigint NOT NULL REFERENCES tenant(id) ON DELETE CASCADE,
    name       text NOT NULL,
    UNIQUE (tenant_id, name)
);

-- A term of a vocabulary: its key (the identifier in the imported file),
-- its parent, its labels per language ('x-default' when language-neutral)
-- and its synonyms (matched against keywords, never shown as labels).
CREATE TABLE vocabulary_term (
    id             bigserial PRIMARY KEY,
    tenant_id      bigint NOT NULL REFERENCES tenant(id) ON DELETE CASCADE,
    vocabulary_id  bigint NOT NULL REFERENCES vocabulary(id) ON DELETE CASCADE,
    key            text NOT NULL,
    parent_id      bigint REFERENCES vocabulary_term(id) ON DELETE CASCADE,
    labels         jsonb NOT NULL,      -- {"x-default": "Espresso machine", "fr": "Machine à espresso"}
    synonyms       text[] NOT NULL DEFAULT '{}',
    UNIQUE (vocabulary_id, key)
);
CREATE INDEX vocabulary_term_parent_idx ON vocabulary_term (parent_id);

-- Lower-cased, accent-folded labels and synonyms of every term, to match
-- asset keywords against (exact match on the normalised string).
CREATE TABLE vocabulary_match (
    tenant_id  bigint NOT NULL,
    label      text NOT NULL,
    term_id    bigint NOT NULL REFERENCES vocabulary_term(id) ON DELETE CASCADE,
    PRIMARY KEY (tenant_id, label, term_id)
);

-- The normal form labels and keywords are matched in: lower case, accents
-- folded, runs of '_' and white space as one space ("Green_leafy  vegetables"
-- = "green leafy vegetables").
CREATE FUNCTION loupe_label_norm(t text) RETURNS text
LANGUAGE sql STABLE STRICT PARALLEL SAFE
RETURN lower(unaccent(btrim(regexp_replace(t, '[_[:space:]]+', ' ', 'g'))));

-- Which vocabulary terms an asset carries (from its keywords).
CREATE TABLE asset_vocabulary (
    asset_id  bigint NOT NULL REFERENCES asset(id) ON DELETE CASCADE,
    term_id   bigint NOT NULL REFERENCES vocabulary_term(id) ON DELETE CASCADE,
    PRIMARY KEY (asset_id, term_id)
);
CREATE INDEX asset_vocabulary_term_idx ON asset_vocabulary (term_id);

-------------------------------------------------------------------------------
-- Search document: vocabulary terms and per-group lengths
-------------------------------------------------------------------------------

-- vocab_tsv holds the labels of the asset's vocabulary terms and of their
-- ancestors; the weight letter is the distance: A own term, B parent,
-- C grandparent, D further up.
ALTER TABLE search_document ADD COLUMN vocab_tsv tsvector NOT NULL DEFAULT ''::tsvector;
-- Per-group lengths in tokens (B includes vocabulary terms at their decayed
-- weight), the document lengths BM25F normalises each group by.
ALTER TABLE search_document ADD COLUMN group_len float8[] NOT NULL DEFAULT ARRAY[0, 0, 0, 0]::float8[];

-- Phrase-bonus forms (loupe_phrase_norm) of the title and of all fields
-- ('|' between fields, so a phrase never spans two), stored at write time.
ALTER TABLE search_document ADD COLUMN phrase_title text NOT NULL DEFAULT '';
ALTER TABLE search_document ADD COLUMN phrase_text text NOT NULL DEFAULT '';

-- The GIN index is replaced by the postings below.
DROP INDEX search_document_tsv_idx;

-------------------------------------------------------------------------------
-- Lexicon, corpus statistics, postings
-------------------------------------------------------------------------------

-- Ingest problems are errors (file not ingested) or warnings (ingested, but
-- e.g. its unusable XMP sidecar was ignored).
ALTER TABLE ingest_failure ADD COLUMN severity text NOT NULL DEFAULT 'error'
    CHECK (severity IN ('error', 'warning'));

CREATE EXTENSION IF NOT EXISTS fuzzystrmatch;  -- levenshtein(), for typo corrections

ALTER TABLE lexicon_term ADD COLUMN id bigserial UNIQUE;
CREATE INDEX lexicon_term_trgm_idx ON lexicon_term USING gin (tenant_id, lang, term gin_trgm_ops);

ALTER TABLE corpus_stat ADD COLUMN group_len float8[] NOT NULL DEFAULT ARRAY[0, 0, 0, 0]::float8[];

-- One row per (term, asset): frequency of the term in each field group
-- (tf[1..4], fractional for vocabulary ancestors), the asset's group
-- lengths, and the impact used to read postings best-first: the BM25F
-- saturated frequency with the corpus averages at write time (the exact
-- score is recomputed at query time with the current averages).
CREATE TABLE lexical_posting (
    term_id    bigint NOT NULL,
    asset_id   bigint NOT NULL REFERENCES asset(id) ON DELETE CASCADE,
    impact     real NOT NULL,
    tf         real[] NOT NULL,
    group_len  real[] NOT NULL,
    PRIMARY KEY (term_id, asset_id)
);
CREATE INDEX lexical_posting_impact_idx ON lexical_posting (term_id, impact DESC, asset_id);
CREATE INDEX lexical_posting_asset_idx ON lexical_posting (asset_id);

-- The best postings of one term, at most p_cap, in impact order: a walk
-- down lexical_posting_impact_idx that stops at the cap (F3, N4). Kept as
-- a separate function with bitmap scans and sorts disabled because the
-- planner, estimating a typical term's few postings, would otherwise fetch
-- all of a common term's postings and sort them (64,008 rows for one term
-- on the 100k-document test library, instead of 3,000).
CREATE FUNCTION loupe_term_postings(p_term bigint, p_cap integer)
RETURNS TABLE (asset_id bigint, tf real[], group_len real[])
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET enable_bitmapscan = off SET enable_sort = off SET enable_seqscan = off
AS $$
    SELECT p.asset_id, p.tf, p.group_len
    FROM lexical_posting p
    WHERE p.term_id = p_term
    ORDER BY p.impact DESC, p.asset_id
    LIMIT p_cap
$$;

-- BM25F pseudo-frequency of one term in one document:
--   tf~ = sum over groups g of w_g * tf_g / (1 - b_g + b_g * len_g / avglen_g)
-- (a group with avglen 0 holds no text anywhere and contributes nothing).
-- Not STRICT: PostgreSQL only inlines a SQL function whose body is as
-- strict as it is declared, and CASE is not; inlined, it costs ~1 us a row
-- instead of ~7 (measured on the 100k test library).
CREATE FUNCTION loupe_bm25f_tf(tf real[], len real[], avglen float8[], w float8[], b float8[])
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
CREATE FUNCTION loupe_bm25f_part(idf float8, tf real[], len real[], avglen float8[],
                                 w float8[], b float8[], k1 float8)
RETURNS float8 LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN idf * (1.0 - k1 / (k1 + loupe_bm25f_tf(tf, len, avglen, w, b)));

-- The phrase bonus (SPEC L3) from a query's and a document's phrase forms
-- (loupe_phrase_norm): 2 when the title holds the literal query, 1 when
-- another field does, 0 otherwise or for a query with no letters or digits.
CREATE FUNCTION loupe_phrase_bonus(qn text, phrase_title text, phrase_text text)
RETURNS integer LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN btrim(qn) = '' THEN 0
            WHEN strpos(phrase_title, qn) > 0 THEN 2
            WHEN strpos(phrase_text, qn) > 0 THEN 1
            ELSE 0 END;

-- Frequencies per group of each lexeme of a document, from its tsvector
-- (weight letter = group) and its vocabulary tsvector (weight letter =
-- distance to the asset's own term; counted in group B at decay^distance).
CREATE FUNCTION loupe_doc_terms(tsv tsvector, vocab tsvector, decay float8)
RETURNS TABLE (lexeme text, tf real[])
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    SELECT x.lexeme, ARRAY[sum(x.a), sum(x.b), sum(x.c), sum(x.d)]::real[]
    FROM (
        SELECT u.lexeme,
               count(*) FILTER (WHERE w = 'A')::float8 AS a,
               count(*) FILTER (WHERE w = 'B')::float8 AS b,
               count(*) FILTER (WHERE w = 'C')::float8 AS c,
               count(*) FILTER (WHERE w = 'D')::float8 AS d
        FROM unnest(tsv) AS u, unnest(u.weights) AS w
        GROUP BY u.lexeme
        UNION ALL
        SELECT v.lexeme, 0, max(power(decay, ascii(w) - ascii('A'))), 0, 0
        FROM unnest(vocab) AS v, unnest(v.weights) AS w
        GROUP BY v.lexeme
    ) x
    GROUP BY x.lexeme
$$;

-- Replace the statistics trigger: lexicon (df), corpus statistics (N,
-- lengths per group) and postings follow every document change in the same
-- transaction (P2). Lexemes are handled in sorted order so that concurrent
-- writers lock lexicon rows in one order.
DROP TRIGGER search_document_stats ON search_document;
DROP FUNCTION loupe_search_document_stats();
DROP FUNCTION loupe_stats_apply(bigint, text, tsvector, integer, integer);

CREATE FUNCTION loupe_index_remove(p_asset bigint, p_tenant bigint, p_lang text,
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
    UPDATE lexicon_term t SET df = t.df - 1
    WHERE t.tenant_id = p_tenant AND t.lang = p_lang AND t.term = ANY (terms) AND t.df > 1;
    DELETE FROM lexicon_term t
    WHERE t.tenant_id = p_tenant AND t.lang = p_lang AND t.term = ANY (terms) AND t.df = 1;
    UPDATE corpus_stat s
    SET n_docs = s.n_docs - 1, total_len = s.total_len - p_len,
        group_len = ARRAY[s.group_len[1] - p_group_len[1], s.group_len[2] - p_group_len[2],
                          s.group_len[3] - p_group_len[3], s.group_len[4] - p_group_len[4]]
    WHERE s.tenant_id = p_tenant AND s.lang = p_lang;
END
$$;

CREATE FUNCTION loupe_index_add(p_asset bigint, p_tenant bigint, p_lang text,
                                p_tsv tsvector, p_vocab tsvector, p_len integer,
                                p_group_len float8[])
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    st lexical_setting%ROWTYPE;
    stat corpus_stat%ROWTYPE;
    avglen float8[];
BEGIN
    SELECT * INTO st FROM lexical_setting WHERE tenant_id = p_tenant;
    INSERT INTO corpus_stat AS s (tenant_id, lang, n_docs, total_len, group_len)
    VALUES (p_tenant, p_lang, 1, p_len, p_group_len)
    ON CONFLICT (tenant_id, lang) DO UPDATE
        SET n_docs = s.n_docs + 1, total_len = s.total_len + p_len,
            group_len = ARRAY[s.group_len[1] + p_group_len[1], s.group_len[2] + p_group_len[2],
                              s.group_len[3] + p_group_len[3], s.group_len[4] + p_group_len[4]]
    RETURNING * INTO stat;
    avglen := ARRAY[stat.group_len[1] / stat.n_docs, stat.group_len[2] / stat.n_docs,
                    stat.group_len[3] / stat.n_docs, stat.group_len[4] / stat.n_docs];
    -- one pass: the document's terms, their lexicon rows (inserted or df + 1;
    -- RETURNING gives the ids either way), then the postings
    WITH d AS MATERIALIZED (
        SELECT * FROM loupe_doc_terms(p_tsv, p_vocab, st.vocab_decay)
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

CREATE FUNCTION loupe_search_document_index() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('loupe.bulk', true) = 'on' THEN
        RETURN NULL;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        PERFORM loupe_index_remove(OLD.asset_id, OLD.tenant_id, OLD.lang, OLD.tsv,
                                   OLD.vocab_tsv, OLD.doc_len, OLD.group_len);
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') THEN
        PERFORM loupe_index_add(NEW.asset_id, NEW.tenant_id, NEW.lang, NEW.tsv,
                                NEW.vocab_tsv, NEW.doc_len, NEW.group_len);
    END IF;
    RETURN NULL;
END
$$;

-- Per-group lengths of a document: token count per weight letter, plus the
-- decayed weight of its vocabulary terms in group B.
CREATE FUNCTION loupe_group_len(tsv tsvector, vocab tsvector, decay float8) RETURNS float8[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN (SELECT ARRAY[coalesce(sum(tf[1]), 0), coalesce(sum(tf[2]), 0),
                     coalesce(sum(tf[3]), 0), coalesce(sum(tf[4]), 0)]::float8[]
        FROM loupe_doc_terms(tsv, vocab, decay));

-- Rebuild lexicon, statistics and postings of a tenant + language in one
-- set-based pass (after a bulk load, a settings change, or to refresh the
-- impacts with the current averages). Returns the number of postings.
CREATE FUNCTION loupe_reindex_lexical(p_tenant bigint, p_lang text) RETURNS bigint
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
    SET group_len = loupe_group_len(d.tsv, d.vocab_tsv, st.vocab_decay)
    WHERE d.tenant_id = p_tenant AND d.lang = p_lang;
    DELETE FROM lexical_posting p USING lexicon_term t
    WHERE p.term_id = t.id AND t.tenant_id = p_tenant AND t.lang = p_lang;
    DELETE FROM lexicon_term WHERE tenant_id = p_tenant AND lang = p_lang;
    DELETE FROM corpus_stat WHERE tenant_id = p_tenant AND lang = p_lang;
    INSERT INTO corpus_stat (tenant_id, lang, n_docs, total_len, group_len)
    SELECT p_tenant, p_lang, count(*), coalesce(sum(doc_len), 0),
           ARRAY[coalesce(sum(group_len[1]), 0), coalesce(sum(group_len[2]), 0),
                 coalesce(sum(group_len[3]), 0), coalesce(sum(group_len[4]), 0)]
    FROM search_document WHERE tenant_id = p_tenant AND lang = p_lang
    HAVING count(*) > 0;
    SELECT ARRAY[group_len[1] / n_docs, group_len[2] / n_docs, group_len[3] / n_docs,
                 group_len[4] / n_docs]
    INTO avglen FROM corpus_stat WHERE tenant_id = p_tenant AND lang = p_lang;
    IF avglen IS NULL THEN
        PERFORM set_config('loupe.bulk', prev, true);
        RETURN 0;
    END IF;
    CREATE TEMP TABLE loupe_reindex_terms ON COMMIT DROP AS
    SELECT d.asset_id, x.lexeme, x.tf, d.group_len::real[] AS group_len
    FROM search_document d
    CROSS JOIN LATERAL loupe_doc_terms(d.tsv, d.vocab_tsv, st.vocab_decay) AS x
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

CREATE TRIGGER search_document_index
AFTER INSERT OR DELETE OR UPDATE OF tsv, vocab_tsv, doc_len, group_len, tenant_id, lang
ON search_document
FOR EACH ROW EXECUTE FUNCTION loupe_search_document_index();

-------------------------------------------------------------------------------
-- The analysed search document
-------------------------------------------------------------------------------

CREATE AGGREGATE loupe_tsv_agg(tsvector) (SFUNC = tsvector_concat, STYPE = tsvector,
                                           INITCOND = '');

-- The document's tsvector: each field analysed, labelled with its group's
-- weight letter (A title; B filename, keywords; C description, collections,
-- location, people; D creator, copyright, machine tags, OCR). Vocabulary
-- terms are kept apart, in vocab_tsv.
CREATE FUNCTION loupe_document_tsv(cfg regconfig, title text, filename text, keywords text,
                                   description text, collections text, location text,
                                   people text, creator text, copyright text,
                                   machine_tags text, ocr text)
RETURNS tsvector LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN setweight(loupe_analyze(cfg, coalesce(title, '')), 'A')
    || setweight(loupe_analyze(cfg, coalesce(filename, '')), 'B')
    || setweight(loupe_analyze(cfg, coalesce(keywords, '')), 'B')
    || setweight(loupe_analyze(cfg, coalesce(description, '')), 'C')
    || setweight(loupe_analyze(cfg, coalesce(collections, '')), 'C')
    || setweight(loupe_analyze(cfg, coalesce(location, '')), 'C')
    || setweight(loupe_analyze(cfg, coalesce(people, '')), 'C')
    || setweight(loupe_analyze(cfg, coalesce(creator, '')), 'D')
    || setweight(loupe_analyze(cfg, coalesce(copyright, '')), 'D')
    || setweight(loupe_analyze(cfg, coalesce(machine_tags, '')), 'D')
    || setweight(loupe_analyze(cfg, coalesce(ocr, '')), 'D');

-- Number of token positions of a tsvector (stop words excluded).
CREATE FUNCTION loupe_tsv_len(tsv tsvector) RETURNS integer
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN (SELECT coalesce(sum(cardinality(u.positions)), 0)::integer FROM unnest(tsv) AS u);

-- A vocabulary term's label in a language: the language's own, else
-- x-default, else any.
CREATE FUNCTION loupe_label(labels jsonb, lang text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN coalesce(labels ->> lang, labels ->> 'x-default',
                (SELECT value FROM jsonb_each_text(labels) ORDER BY key LIMIT 1));

-- The asset's vocabulary terms and their ancestors with the distance from
-- the asset's own term (0 = own term).
CREATE FUNCTION loupe_asset_terms(p_asset bigint)
RETURNS TABLE (term_id bigint, labels jsonb, dist integer)
LANGUAGE sql STABLE STRICT PARALLEL SAFE
AS $$
    WITH RECURSIVE up AS (
        SELECT t.id, t.parent_id, t.labels, 0 AS dist
        FROM asset_vocabulary av JOIN vocabulary_term t ON t.id = av.term_id
        WHERE av.asset_id = p_asset
        UNION ALL
        SELECT p.id, p.parent_id, p.labels, up.dist + 1
        FROM vocabulary_term p JOIN up ON p.id = up.parent_id
        WHERE up.dist < 32
    )
    SELECT id, labels, min(dist) FROM up GROUP BY id, labels
$$;

-- vocab_tsv of an asset in a language: labels analysed, weight letter =
-- distance (A own term, B parent, C grandparent, D further).
CREATE FUNCTION loupe_vocab_tsv(p_asset bigint, p_lang text, cfg regconfig) RETURNS tsvector
LANGUAGE sql STABLE STRICT PARALLEL SAFE
RETURN (SELECT coalesce(loupe_tsv_agg(setweight(loupe_analyze(cfg, loupe_label(t.labels, p_lang)),
                                               (ARRAY['A', 'B', 'C', 'D'])[least(t.dist, 3) + 1]::"char")
                                     ORDER BY t.dist, t.term_id), ''::tsvector)
        FROM loupe_asset_terms(p_asset) AS t);

-- The readable form: own terms with their ancestors, e.g.
-- "Espresso machine < Small appliances < Kitchen".
CREATE FUNCTION loupe_vocab_text(p_asset bigint, p_lang text) RETURNS text
LANGUAGE sql STABLE STRICT PARALLEL SAFE
RETURN (SELECT coalesce(string_agg(loupe_label(t.labels, p_lang), ' < ' ORDER BY t.dist, t.term_id), '')
        FROM loupe_asset_terms(p_asset) AS t);

-- The phrase-bonus form of all the fields of a document.
CREATE FUNCTION loupe_phrase_text(VARIADIC fields text[]) RETURNS text
LANGUAGE sql STABLE STRICT PARALLEL SAFE
RETURN (SELECT string_agg(loupe_phrase_norm(coalesce(f, '')), '|') FROM unnest(fields) AS f);

DROP FUNCTION loupe_any_lexeme(text[]);

-- Bring existing documents to the new scheme: re-analyse them with the new
-- analyzer, then rebuild each tenant's and language's lexical index.
SET LOCAL loupe.bulk = 'on';
UPDATE search_document d
SET tsv = loupe_document_tsv(d.ts_config, d.title, d.filename, d.keywords, d.description,
                             d.collections, d.location, d.people, d.creator, d.copyright,
                             d.machine_tags, d.ocr);
UPDATE search_document d
SET doc_len = loupe_tsv_len(d.tsv),
    phrase_title = loupe_phrase_norm(d.title),
    phrase_text = loupe_phrase_text(d.title, d.filename, d.keywords, d.description,
                                    d.collections, d.location, d.people, d.creator,
                                    d.copyright, d.machine_tags, d.ocr, d.vocabulary);
SELECT loupe_reindex_lexical(x.tenant_id, x.lang)
FROM (SELECT DISTINCT tenant_id, lang FROM search_document ORDER BY 1, 2) AS x;
