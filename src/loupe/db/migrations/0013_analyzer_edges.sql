-- 0013: the analyzer at its edges (issue 12; SPEC S4, S1).
--
-- * Scripts without spaces: CJK text (Han, Hiragana, Katakana, Hangul) is
--   segmented into overlapping character bigrams plus unigrams, so that a
--   word inside a longer string is found ("猫" finds "一只猫在睡觉", "桜"
--   finds "桜の花"). This is the scheme of Lucene's CJKAnalyzer /
--   CJKBigramFilter (outputUnigrams = true) and of Elasticsearch's
--   cjk_bigram token filter with output_unigrams: dependency-free and
--   language-neutral (no dictionary), at the price of some noise that the
--   bigrams' higher IDF ranks below adjacent matches. Queries are analysed
--   the same way, so a query of several characters scores best on the
--   documents holding its adjacent pairs.
-- * Stop words: a value made only of stop words ("The Who", "to_do") keeps
--   its words (lower-cased, accents folded, unstemmed: loupe_simple), in
--   documents and queries alike, so it can be found by itself. Titles and
--   keywords are analysed value by value for this.
-- * Joined forms: every compound of letters/digits joined by - _ . + is
--   also indexed joined ("Wi-Fi" -> wi, fi, wifi; "e-mail" -> e, mail,
--   email), not only those holding a digit.
--
-- Every existing search document is re-analysed and every tenant's lexical
-- index rebuilt at the end.

-- Characters segmented as CJK: Hangul Jamo, CJK iteration marks (々 〆 〇),
-- Hiragana, Katakana (and its extensions, half-width forms), Hangul
-- compatibility Jamo and syllables, CJK unified ideographs (extension A,
-- the basic block, compatibility ideographs, the supplementary planes).
CREATE FUNCTION loupe_cjk_class() RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN '\u1100-\u11FF\u3005-\u3007\u3040-\u309F\u30A0-\u30FF\u3130-\u318F\u31F0-\u31FF'
    || '\u3400-\u4DBF\u4E00-\u9FFF\uA960-\uA97F\uAC00-\uD7AF\uF900-\uFAFF\uFF66-\uFF9F'
    || '\U00020000-\U0003FFFF';

-- One run of CJK characters as its unigrams and overlapping bigrams, in
-- reading order: "一只猫" -> "一 一只 只 只猫 猫" (a single character stays
-- itself).
CREATE FUNCTION loupe_cjk_grams(run text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN (SELECT string_agg(CASE WHEN i < length(run)
                               THEN substr(run, i, 1) || ' ' || substr(run, i, 2)
                               ELSE substr(run, i, 1) END, ' ' ORDER BY i)
        FROM generate_series(1, length(run)) AS i);

-- A text with each CJK run replaced by its grams (loupe_cjk_grams), the
-- rest unchanged; a text without CJK characters is returned as is.
CREATE FUNCTION loupe_cjk_segment(t text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN CASE WHEN t !~ ('[' || loupe_cjk_class() || ']') THEN t
            ELSE (SELECT string_agg(CASE WHEN m.p[1] ~ ('^[' || loupe_cjk_class() || ']')
                                         THEN loupe_cjk_grams(m.p[1]) ELSE m.p[1] END,
                                    ' ' ORDER BY m.n)
                  FROM regexp_matches(t, '[' || loupe_cjk_class() || ']+|[^'
                                         || loupe_cjk_class() || ']+', 'g')
                       WITH ORDINALITY AS m(p, n))
       END;

-- The split form of a text: the separators / _ - . + between letters or
-- digits become spaces, so each part is a term ("A52/A52S" -> "A52 A52S",
-- "Wi-Fi" -> "Wi Fi").
CREATE FUNCTION loupe_split_form(t text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN regexp_replace(t, '([[:alnum:]])[-_./+]+(?=[[:alnum:]])', '\1 ', 'g');

-- The joined forms of a text: each compound of letters/digits joined by
-- - _ . + without its separators ("4471-RD" -> "4471RD", "Wi-Fi" ->
-- "WiFi", "e-mail" -> "email"); '' when it has none.
CREATE FUNCTION loupe_joined_forms(t text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN coalesce((SELECT string_agg(regexp_replace(m[1], '[-_.+]', '', 'g'), ' ')
                 FROM regexp_matches(t, '([[:alnum:]]+(?:[-_.+][[:alnum:]]+)+)', 'g') AS m), '');

-- Replaces 0002's: the split form followed by the joined forms (kept for
-- callers that want the prepared text; loupe_analyze uses the parts).
CREATE OR REPLACE FUNCTION loupe_prepare(t text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN loupe_split_form(t) || coalesce(nullif(' ' || loupe_joined_forms(t), ' '), '');

-- The terms of one value's words: the language's configuration, and when
-- that drops every word (a value made only of stop words, "The Who"), the
-- same words lower-cased and accent-folded by loupe_simple instead.
CREATE FUNCTION loupe_words(cfg regconfig, t text) RETURNS tsvector
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN (SELECT CASE WHEN v = ''::tsvector THEN to_tsvector('loupe_simple'::regconfig, s) ELSE v END
        FROM (SELECT loupe_cjk_segment(loupe_split_form(t)) AS s) AS x
        CROSS JOIN LATERAL (SELECT to_tsvector(cfg, x.s) AS v) AS y);

-- The analyzer (replaces 0002's): the split form's words (loupe_words, CJK
-- segmented, stop-word-only values kept), then the joined forms, through
-- the language's configuration (parser, stop words, accent folding,
-- Snowball stemmer).
CREATE OR REPLACE FUNCTION loupe_analyze(cfg regconfig, t text) RETURNS tsvector
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN loupe_words(cfg, t) || to_tsvector(cfg, loupe_cjk_segment(loupe_joined_forms(t)));

-- A field holding several values joined by sep (keywords "a; b", titles
-- of several files "a / b"), analysed value by value so that each value's
-- stop-word rule applies to it alone.
CREATE FUNCTION loupe_analyze_values(cfg regconfig, t text, sep text) RETURNS tsvector
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN (SELECT coalesce(loupe_tsv_agg(loupe_analyze(cfg, v) ORDER BY n), ''::tsvector)
        FROM string_to_table(t, sep) WITH ORDINALITY AS x(v, n));

-- The document's tsvector (replaces 0002's; same fields and weight
-- letters): titles and keywords analysed value by value.
CREATE OR REPLACE FUNCTION loupe_document_tsv(cfg regconfig, title text, filename text,
                                              keywords text, description text,
                                              collections text, location text, people text,
                                              creator text, copyright text,
                                              machine_tags text, ocr text)
RETURNS tsvector LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN setweight(loupe_analyze_values(cfg, coalesce(title, ''), ' / '), 'A')
    || setweight(loupe_analyze(cfg, coalesce(filename, '')), 'B')
    || setweight(loupe_analyze_values(cfg, coalesce(keywords, ''), '; '), 'B')
    || setweight(loupe_analyze(cfg, coalesce(description, '')), 'C')
    || setweight(loupe_analyze(cfg, coalesce(collections, '')), 'C')
    || setweight(loupe_analyze(cfg, coalesce(location, '')), 'C')
    || setweight(loupe_analyze(cfg, coalesce(people, '')), 'C')
    || setweight(loupe_analyze(cfg, coalesce(creator, '')), 'D')
    || setweight(loupe_analyze(cfg, coalesce(copyright, '')), 'D')
    || setweight(loupe_analyze(cfg, coalesce(machine_tags, '')), 'D')
    || setweight(loupe_analyze(cfg, coalesce(ocr, '')), 'D');

-- The phrase-bonus form (replaces 0002's; SPEC L3): as before, with each
-- CJK character a word of its own, so that a CJK query inside a longer
-- string ("猫在" in "一只猫在睡觉") earns the bonus like a Latin phrase.
CREATE OR REPLACE FUNCTION loupe_phrase_norm(t text) RETURNS text
LANGUAGE sql STABLE STRICT PARALLEL SAFE
RETURN ' ' || btrim(regexp_replace(regexp_replace(lower(unaccent(t)),
                                                  '([' || loupe_cjk_class() || '])', ' \1 ', 'g'),
                                   '[^[:alnum:]]+', ' ', 'g')) || ' ';

-- Bring existing documents to the new analyzer (as 0002 did): re-analyse
-- them, then rebuild each tenant's and language's lexical index.
SET LOCAL loupe.bulk = 'on';
UPDATE search_document d
SET tsv = loupe_document_tsv(d.ts_config, d.title, d.filename, d.keywords, d.description,
                             d.collections, d.location, d.people, d.creator, d.copyright,
                             d.machine_tags, d.ocr),
    vocab_tsv = loupe_vocab_tsv(d.asset_id, d.lang, d.ts_config);
UPDATE search_document d
SET doc_len = loupe_tsv_len(d.tsv),
    phrase_title = loupe_phrase_norm(d.title),
    phrase_text = loupe_phrase_text(d.title, d.filename, d.keywords, d.description,
                                    d.collections, d.location, d.people, d.creator,
                                    d.copyright, d.machine_tags, d.ocr, d.vocabulary);
SELECT loupe_reindex_lexical(x.tenant_id, x.lang)
FROM (SELECT DISTINCT tenant_id, lang FROM search_document ORDER BY 1, 2) AS x;
SET LOCAL loupe.bulk = 'off';
