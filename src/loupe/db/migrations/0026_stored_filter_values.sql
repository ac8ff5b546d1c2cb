-- 0026 (issues 11 B6 and 17): the values filters and facets test become
-- STORED generated columns of asset_file, computed once when a file's row
-- is written (ingest upsert, re-ingest, any UPDATE of its metadata) from the
-- IMMUTABLE functions of 0020, and bounded. Before, every filtered or
-- faceted statement evaluated loupe_file_facets(metadata, raw_metadata),
-- loupe_file_country(raw_metadata) and loupe_file_captured(metadata) per file
-- row at query time: one member's own files with bounded-but-large raw
-- metadata (1 MiB each, attack run 5 B6) made each "not country" predicate
-- parse every such row's raw JSON again (32 of them: 78 s), and building a
-- filtered set re-read each member's capture date from its metadata
-- (issue 17: filtered lexical 9-33x unfiltered). Statements now read only
-- these columns (loupe.filters.queries); no filter or facet statement reads
-- metadata or raw_metadata.
--
-- Bounds (stated in docs/filters.md and docs/security.md):
--   * a value longer than 200 characters (loupe.filters.tree.MAX_VALUE_CHARS,
--     the longest value a filter may name, so no filter could match it) is
--     not kept: no facet lists it;
--   * at most 1,000 facet labels per file and 32,000 characters of them in
--     all (prefixes included); past either bound the rest are not kept, in
--     this order: the country, then the creators, keywords and location
--     parts in the order the file lists them. (Loupe's own metadata bound is
--     1,000 values and 20,000 characters per list, loupe.ingest.metadata.)

-- The facet values of one file as written (trimmed), 'field:value', first
-- occurrence first (see the bounds above): the country (loupe_file_country,
-- sidecar first), every creator, keyword and location part but the
-- country. The same values loupe_file_facets (0020) makes tokens of, within
-- the bounds.
CREATE FUNCTION loupe_file_facet_labels(p_md jsonb, p_raw jsonb) RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path FROM CURRENT
AS $$
    -- (the country once: each call of loupe_file_country reads p_raw again)
    WITH cc AS MATERIALIZED (SELECT loupe_file_country(p_raw) AS c)
    SELECT coalesce(array_agg(t ORDER BY pos), ARRAY[]::text[]) FROM (
        SELECT t, pos, row_number() OVER w AS n, sum(length(t)) OVER w AS chars
        FROM (SELECT t, min(pos) AS pos FROM (
                  SELECT 'country:' || cc.c AS t, 0::bigint AS pos
                  FROM cc
                  WHERE cc.c IS NOT NULL AND length(cc.c) <= 200
                  UNION ALL
                  SELECT 'creator:' || v, 1000000 + o
                  FROM loupe_json_texts(p_md->'creator') WITH ORDINALITY x(v, o)
                  WHERE length(v) <= 200
                  UNION ALL
                  SELECT 'keyword:' || v, 2000000 + o
                  FROM loupe_json_texts(p_md->'keywords') WITH ORDINALITY x(v, o)
                  WHERE length(v) <= 200
                  UNION ALL
                  SELECT 'location:' || v, 3000000 + o
                  FROM cc, loupe_json_texts(p_md->'location') WITH ORDINALITY x(v, o)
                  WHERE length(v) <= 200 AND lower(v) IS DISTINCT FROM lower(cc.c)
              ) a GROUP BY t) d
        WINDOW w AS (ORDER BY pos)
    ) k
    WHERE n <= 1000 AND chars <= 32000
$$;

-- The filter tokens of facet labels: lower-cased, distinct ('creator:' ||
-- lower(value) is lower('creator:' || value)); what the GIN index holds and
-- {"creator"|"keyword"|"location"|"country": v} compares with
-- 'field:' || lower(btrim(v)).
CREATE FUNCTION loupe_facet_tokens(p_labels text[]) RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT coalesce(array_agg(DISTINCT lower(l)), ARRAY[]::text[]) FROM unnest(p_labels) l
$$;

-- The country of one file as written, within the value bound (NULL past it,
-- like a file without one): the label the country facet shows and the value
-- {"country": v} compares with.
CREATE FUNCTION loupe_file_country_kept(p_raw jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path FROM CURRENT
AS $$
    SELECT c FROM loupe_file_country(p_raw) c WHERE length(c) <= 200
$$;

-- One rewrite of asset_file for the four columns (each row's functions run
-- once here, then on each write of the row).
ALTER TABLE asset_file
    ADD COLUMN facet_labels text[] NOT NULL
        GENERATED ALWAYS AS (loupe_file_facet_labels(metadata, raw_metadata)) STORED,
    ADD COLUMN facet_tokens text[] NOT NULL
        GENERATED ALWAYS AS (loupe_facet_tokens(loupe_file_facet_labels(metadata, raw_metadata)))
        STORED,
    ADD COLUMN country text
        GENERATED ALWAYS AS (loupe_file_country_kept(raw_metadata)) STORED,
    ADD COLUMN captured timestamptz
        GENERATED ALWAYS AS (loupe_file_captured(metadata)) STORED;

-- The indexes move to the columns (the expression indexes of 0020 would
-- otherwise evaluate the JSON functions again on every write).
DROP INDEX asset_file_facets_idx;
DROP INDEX asset_file_captured_idx;
CREATE INDEX asset_file_facet_tokens_idx ON asset_file USING gin (facet_tokens);
-- No statistics for the tokens: the planner then takes any one token for
-- rare (PostgreSQL's default containment selectivity) and enumerates a
-- token's files through the GIN index. With element statistics a token of
-- 10 % of the files (a country of ten) made a sequential scan of asset_file
-- the cheaper plan on the 100k test library (tests/test_filter_plans.py:
-- no filter reads a whole table); 0020's expression index was kept from it
-- only by the cost of the function it indexed.
ALTER TABLE asset_file ALTER COLUMN facet_tokens SET STATISTICS 0;
-- (asset_id and readers included: the captured driver, read test and all,
-- is an index-only scan where the table is vacuumed)
CREATE INDEX asset_file_captured_col_idx ON asset_file (tenant_id, captured)
    INCLUDE (asset_id, readers);
