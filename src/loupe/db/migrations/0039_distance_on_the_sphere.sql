-- 0039: the great-circle distance the "near" filter tests (loupe.filters.compile,
-- after the bounding box of asset_file_gps_idx has narrowed the files).
--
-- Haversine formula (R. W. Sinnott, "Virtues of the Haversine", Sky and
-- Telescope 68(2), 1984) on a sphere of the mean Earth radius 6371.0088 km
-- (IUGG), the same as loupe.ingest.places.haversine_km:
--   a = sin²(Δφ/2) + cos φ1 · cos φ2 · sin²(Δλ/2);  d = 2 R asin(min(1, √a))
CREATE FUNCTION loupe_haversine_km(lat1 float8, lon1 float8, lat2 float8, lon2 float8)
RETURNS float8
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN 2 * 6371.0088 * asin(least(1.0, sqrt(
    sin(radians(lat2 - lat1) / 2) ^ 2
    + cos(radians(lat1)) * cos(radians(lat2)) * sin(radians(lon2 - lon1) / 2) ^ 2)));
