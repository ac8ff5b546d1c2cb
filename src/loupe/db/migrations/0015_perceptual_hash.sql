-- 0015: perceptual hashes of assets, indexed for Hamming-space search (SPEC X1).
--
-- One row per asset: its 64-bit pHash (and dHash) as computed by the
-- imagehash library on the EXIF-oriented pixels (loupe.ingest.perceptual),
-- stored as a signed bigint holding the 64 bits unchanged. A row whose hash
-- could not be computed keeps phash NULL and says why in error, so the asset
-- is not retried by every backfill and is counted as "not comparable".
--
-- Multi-index hashing (Norouzi, Punjani, Fleet, "Fast Search in Hamming
-- Space with Multi-Index Hashing", CVPR 2012): the hash is cut into four
-- 16-bit sub-hashes p0..p3 (p0 = the lowest 16 bits), each with its own
-- btree index. Two hashes within Hamming distance r differ in at most r bits,
-- so (pigeonhole) one of the four sub-hashes differs in at most floor(r/4)
-- bits: for r <= 3 the candidates share one sub-hash exactly, for r <= 7 one
-- sub-hash is within one bit, and so on. Probing those neighbour values in
-- the four indexes finds every hash within r; the full distance is then
-- verified (loupe_hamming). The search statement is in loupe.similar.queries.
CREATE TABLE asset_phash (
    asset_id    bigint PRIMARY KEY REFERENCES asset(id) ON DELETE CASCADE,
    tenant_id   bigint NOT NULL REFERENCES tenant(id) ON DELETE CASCADE,
    phash       bigint,
    dhash       bigint,
    p0          integer GENERATED ALWAYS AS ((phash & 65535)::integer) STORED,
    p1          integer GENERATED ALWAYS AS (((phash >> 16) & 65535)::integer) STORED,
    p2          integer GENERATED ALWAYS AS (((phash >> 32) & 65535)::integer) STORED,
    p3          integer GENERATED ALWAYS AS (((phash >> 48) & 65535)::integer) STORED,
    error       text,
    computed_at timestamptz NOT NULL DEFAULT now(),
    CHECK ((phash IS NULL) = (error IS NOT NULL))
);
CREATE INDEX asset_phash_p0_idx ON asset_phash (tenant_id, p0);
CREATE INDEX asset_phash_p1_idx ON asset_phash (tenant_id, p1);
CREATE INDEX asset_phash_p2_idx ON asset_phash (tenant_id, p2);
CREATE INDEX asset_phash_p3_idx ON asset_phash (tenant_id, p3);

-- Hamming distance of two 64-bit hashes: the number of set bits of their
-- exclusive or (0..64). Inlined by the planner (plain SQL RETURN).
CREATE FUNCTION loupe_hamming(a bigint, b bigint) RETURNS integer
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN bit_count((a # b)::bit(64))::integer;

-- Every 16-bit mask of at most 3 set bits (1 + 16 + 120 + 560 = 697 rows),
-- with its weight: the flips a multi-index probe applies to a sub-hash.
CREATE TABLE mih_mask (
    mask    integer PRIMARY KEY,
    weight  smallint NOT NULL
);
INSERT INTO mih_mask (mask, weight)
SELECT m, bit_count(m::bit(16)) FROM generate_series(0, 65535) m
WHERE bit_count(m::bit(16)) <= 3;

-- The 16-bit values within p_bits bit flips of p_sub (p_bits 0..3): the
-- neighbours a multi-index probe looks up in one sub-hash index.
CREATE FUNCTION loupe_mih_neighbours(p_sub integer, p_bits integer) RETURNS integer[]
LANGUAGE sql STABLE STRICT PARALLEL SAFE
RETURN ARRAY(SELECT p_sub # m.mask FROM mih_mask m WHERE m.weight <= p_bits ORDER BY 1);
