-- Filters (issue 17 part 1, SPEC X4): the values a filter tree tests, as
-- IMMUTABLE functions of columns Loupe already keeps, each served by an
-- index, so that a filter needs no table of its own to keep in step (an
-- edited file's new metadata is what its expression indexes hold, in the
-- writing transaction) and what people added (keywords, collections,
-- rights) keeps living where it lives. loupe.filters.compile turns a tree
-- into tests of these functions; loupe.filters.queries names the statements.

-- The searchable facet values of one file, lower-cased and trimmed, as
-- 'field:value' tokens: every creator, every keyword (as written in the
-- file or its sidecar), every location part but the country (sub-location,
-- city, state) and the country (IPTC Country / XMP photoshop:Country of
-- the sidecar, else of the file: the sidecar wins per field, as in
-- loupe.ingest.metadata.merge). A GIN index over them serves
-- {"creator": ...}, {"keyword": ...}, {"location": ...}, {"country": ...}.
CREATE FUNCTION loupe_file_country(p_raw jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT btrim(CASE jsonb_typeof(v) WHEN 'array' THEN v->>0 ELSE v #>> '{}' END)
    FROM (VALUES (1, p_raw->'sidecar'->'XMP-photoshop:Country'),
                 (2, p_raw->'sidecar'->'IPTC:Country-PrimaryLocationName'),
                 (3, p_raw->'file'->'XMP-photoshop:Country'),
                 (4, p_raw->'file'->'IPTC:Country-PrimaryLocationName')) AS x(n, v)
    WHERE v IS NOT NULL AND jsonb_typeof(v) IN ('string', 'array', 'number')
      AND btrim(CASE jsonb_typeof(v) WHEN 'array' THEN v->>0 ELSE v #>> '{}' END) <> ''
    ORDER BY n
    LIMIT 1
$$;

CREATE FUNCTION loupe_json_texts(p jsonb) RETURNS SETOF text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT btrim(e) FROM jsonb_array_elements_text(
        CASE WHEN jsonb_typeof(p) = 'array' THEN p ELSE '[]'::jsonb END) AS e
    WHERE btrim(e) <> ''
$$;

-- (SET search_path FROM CURRENT: an index build runs its expressions with
-- a search path of pg_catalog only, PostgreSQL 17+, and this function calls
-- the two above.)
CREATE FUNCTION loupe_file_facets(p_md jsonb, p_raw jsonb) RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path FROM CURRENT
AS $$
    SELECT coalesce(array_agg(DISTINCT t), ARRAY[]::text[]) FROM (
        SELECT 'creator:' || lower(v) FROM loupe_json_texts(p_md->'creator') v
        UNION ALL
        SELECT 'keyword:' || lower(v) FROM loupe_json_texts(p_md->'keywords') v
        UNION ALL
        SELECT 'location:' || lower(v) FROM loupe_json_texts(p_md->'location') v
        WHERE lower(v) IS DISTINCT FROM lower(loupe_file_country(p_raw))
        UNION ALL
        SELECT 'country:' || lower(loupe_file_country(p_raw))
        WHERE loupe_file_country(p_raw) IS NOT NULL
    ) x(t)
$$;

-- The capture date of one file (metadata date_taken: EXIF DateTimeOriginal,
-- XMP, IPTC, as 'YYYY:MM:DD HH:MM:SS' or 'YYYY-MM-DD...'), its wall-clock
-- time read as UTC (EXIF carries no zone; an offset after the time is
-- ignored). NULL when absent, all zeros or not a calendar date.
CREATE FUNCTION loupe_file_captured(p_md jsonb) RETURNS timestamptz
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
    m text[];
BEGIN
    m := regexp_match(p_md->>'date_taken',
                      '^\s*(\d{4})[:-](\d{2})[:-](\d{2})(?:[ T](\d{2}):(\d{2})(?::(\d{2}))?)?');
    IF m IS NULL OR m[1]::int < 1 THEN
        RETURN NULL;
    END IF;
    RETURN make_timestamp(m[1]::int, m[2]::int, m[3]::int, coalesce(m[4], '0')::int,
                          coalesce(m[5], '0')::int, coalesce(m[6], '0')::int)
           AT TIME ZONE 'UTC';
EXCEPTION WHEN others THEN
    RETURN NULL;
END
$$;

-- How an asset is displayed: width and height after its EXIF orientation
-- (5-8 turn it a quarter), then 'panorama' when the long side is at least
-- twice the short one, 'square' when the sides differ by at most 2 % of the
-- long side, else 'landscape' or 'portrait'.
CREATE FUNCTION loupe_displayed_orientation(p_width integer, p_height integer,
                                            p_orientation smallint) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN (
    SELECT CASE WHEN least(w, h) <= 0 THEN NULL
                WHEN greatest(w, h) >= 2 * least(w, h) THEN 'panorama'
                WHEN abs(w - h) * 50 <= greatest(w, h) THEN 'square'
                WHEN w > h THEN 'landscape'
                ELSE 'portrait' END
    FROM (SELECT CASE WHEN p_orientation BETWEEN 5 AND 8 THEN p_height ELSE p_width END AS w,
                 CASE WHEN p_orientation BETWEEN 5 AND 8 THEN p_width ELSE p_height END AS h) d
);

CREATE INDEX asset_file_facets_idx ON asset_file USING gin (loupe_file_facets(metadata, raw_metadata));
CREATE INDEX asset_file_captured_idx ON asset_file (tenant_id, loupe_file_captured(metadata));
CREATE INDEX asset_keyword_lower_idx ON asset_keyword (lower(keyword), asset_id);
CREATE INDEX asset_tenant_idx ON asset (tenant_id, id);
CREATE INDEX asset_added_idx ON asset (tenant_id, created_at);
CREATE INDEX asset_media_type_idx ON asset (tenant_id, media_type);
CREATE INDEX asset_orientation_idx ON asset (tenant_id,
    loupe_displayed_orientation(width, height, orientation));
CREATE INDEX asset_embargo_idx ON asset (tenant_id, embargo_until) WHERE embargo_until IS NOT NULL;
CREATE INDEX asset_rights_expiry_idx ON asset (tenant_id, rights_expire_at)
    WHERE rights_expire_at IS NOT NULL;
