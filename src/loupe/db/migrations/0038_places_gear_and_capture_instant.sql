-- 0038: coordinates, places, camera, lens, rating, colour label and the
-- true capture instant become values filters and facets read, stored with
-- each file like those of 0026.
--
-- The ingest now writes, in a file's normalised metadata (loupe.ingest.capture),
-- "gps" {lat, lon, alt, direction}, "place" {city, state, county, country,
-- country_code} (GeoNames, offline), "captured" {local, offset_min, source,
-- zone, instant}, "rating" (-1 rejected .. 5), "label", "camera", "lens" and
-- "make" and "exposure". Filters and facets read only stored columns (0026): these are
-- STORED generated columns of asset_file, so a member's filter counts only
-- the files it may read, as for every per-file value (READ_FILE).

-- A JSON number within [lo, hi], else NULL (a value of another type, or out
-- of range, is no value).
CREATE FUNCTION loupe_json_number(p jsonb, lo float8, hi float8) RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT v FROM (SELECT CASE WHEN jsonb_typeof(p) = 'number' THEN (p #>> '{}')::float8 END) x(v)
    WHERE v BETWEEN lo AND hi
$$;

-- A JSON string of 1..200 characters, trimmed, else NULL (the filter value
-- bound of loupe.filters.tree.MAX_VALUE_CHARS: nothing longer can be named).
CREATE FUNCTION loupe_json_label(p jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT v FROM (SELECT CASE WHEN jsonb_typeof(p) = 'string' THEN btrim(p #>> '{}') END) x(v)
    WHERE length(v) BETWEEN 1 AND 200
$$;

-- The facet labels of one file: those of 0026, then (each at most once, in
-- this order) 'country:' (the geocoded country, only when no country was
-- typed: 0026 labels a typed one), 'camera:', 'make:' (the camera's maker as
-- people name it), 'lens:', 'label:' and 'city:' (the geocoded city, else
-- the region). Six more labels at most, 200 characters each, past 0026's
-- bound of 1,000 labels and 32,000 characters.
CREATE FUNCTION loupe_file_facet_labels_v2(p_md jsonb, p_raw jsonb) RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path FROM CURRENT
AS $$
    SELECT loupe_file_facet_labels(p_md, p_raw) || coalesce(array_agg(l ORDER BY o), ARRAY[]::text[])
    FROM (VALUES (0, CASE WHEN loupe_file_country_kept(p_raw) IS NULL
                          THEN 'country:' || loupe_json_label(p_md->'place'->'country') END),
                 (1, 'camera:' || loupe_json_label(p_md->'camera')),
                 (2, 'make:' || loupe_json_label(p_md->'make')),
                 (3, 'lens:' || loupe_json_label(p_md->'lens')),
                 (4, 'label:' || loupe_json_label(p_md->'label')),
                 (5, 'city:' || coalesce(loupe_json_label(p_md->'place'->'city'),
                                         loupe_json_label(p_md->'place'->'state')))) v(o, l)
    WHERE l IS NOT NULL
$$;

-- The country a person typed (0026), else the one of the file's coordinates.
CREATE FUNCTION loupe_file_country_v2(p_md jsonb, p_raw jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path FROM CURRENT
AS $$
    SELECT coalesce(loupe_file_country_kept(p_raw), loupe_json_label(p_md->'place'->'country'))
$$;

-- The true instant of capture: the wall clock of 0020's loupe_file_captured
-- less the offset the file or its coordinates give (minutes east of UTC);
-- NULL where the offset is unknown.
CREATE FUNCTION loupe_file_captured_at(p_md jsonb) RETURNS timestamptz
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path FROM CURRENT
AS $$
    SELECT loupe_file_captured(p_md)
           - make_interval(mins => loupe_json_number(p_md->'captured'->'offset_min', -840, 840)::int)
$$;

ALTER TABLE asset_file
    ALTER COLUMN facet_labels SET EXPRESSION AS (loupe_file_facet_labels_v2(metadata, raw_metadata)),
    ALTER COLUMN facet_tokens SET EXPRESSION AS
        (loupe_facet_tokens(loupe_file_facet_labels_v2(metadata, raw_metadata))),
    ALTER COLUMN country SET EXPRESSION AS (loupe_file_country_v2(metadata, raw_metadata)),
    ADD COLUMN gps_lat float8
        GENERATED ALWAYS AS (loupe_json_number(metadata->'gps'->'lat', -90, 90)) STORED,
    ADD COLUMN gps_lon float8
        GENERATED ALWAYS AS (loupe_json_number(metadata->'gps'->'lon', -180, 180)) STORED,
    ADD COLUMN rating smallint
        GENERATED ALWAYS AS (loupe_json_number(metadata->'rating', -1, 5)::smallint) STORED,
    ADD COLUMN captured_at timestamptz
        GENERATED ALWAYS AS (loupe_file_captured_at(metadata)) STORED;

-- Drivers of the place and rating filters (a bounding box is a range of
-- latitude; a distance filter is first its bounding box).
CREATE INDEX asset_file_gps_idx ON asset_file (tenant_id, gps_lat, gps_lon)
    INCLUDE (asset_id, readers) WHERE gps_lat IS NOT NULL;
CREATE INDEX asset_file_rating_idx ON asset_file (tenant_id, rating)
    INCLUDE (asset_id, readers) WHERE rating IS NOT NULL;
CREATE INDEX asset_file_captured_at_idx ON asset_file (tenant_id, captured_at)
    INCLUDE (asset_id, readers) WHERE captured_at IS NOT NULL;
