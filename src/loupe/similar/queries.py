"""Named SQL of search by image (X1). Parameterised; nothing is built from user input.

Multi-index hashing (MIH; Norouzi, Punjani, Fleet, "Fast Search in Hamming
Space with Multi-Index Hashing", CVPR 2012). Each 64-bit pHash is stored
with its four 16-bit sub-hashes ``p0..p3``, each btree-indexed (migration
0015). If two hashes are within Hamming distance ``r``, at least one of the
four sub-hashes differs in at most ``floor(r / 4)`` bits (pigeonhole: four
sub-hashes each differing in ``floor(r/4) + 1`` bits or more would make the
distance at least ``4 * floor(r/4) + 4 > r``). So the candidates are the
hashes whose sub-hash ``i`` is one of the ``floor(r/4)``-bit neighbours of
the query's sub-hash ``i`` (``loupe_mih_neighbours``: 1 value for r <= 3,
17 for r <= 7, 137 for r <= 11, 697 for r <= 15), for some ``i``; every
candidate is verified by its full distance (``loupe_hamming``, the bit
count of the exclusive or). The search is therefore exact: every readable
hash within ``r`` is returned (the verdict's ``complete``).
"""

from __future__ import annotations

#: Largest radius the statements accept: the neighbour tables of
#: ``loupe_mih_neighbours`` go to 3 bits per sub-hash (4 x 3 + 3 = 15).
MAX_RADIUS = 15

# Neighbours of one hash within %(radius)s bits, for one viewer.
#   nb:    the probe values of each sub-hash (floor(radius/4)-bit neighbours).
#   cand:  hashes sharing one probed sub-hash value (four index scans,
#          asset_phash_p0_idx .. p3_idx), each verified by its full Hamming
#          distance as it is read; deduplicated by the UNION.
#   hits:  of those, the assets the viewer may read (P1: loupe_can_read as in
#          every lane, one primary-key probe each), not the query asset itself.
# Ordered by distance then asset id; ``total`` counts every readable hit
# within the radius (not only the page).
SIMILAR = """
WITH nb AS MATERIALIZED (
    SELECT loupe_mih_neighbours((%(hash)s::bigint & 65535)::integer, %(bits)s) AS n0,
           loupe_mih_neighbours(((%(hash)s::bigint >> 16) & 65535)::integer, %(bits)s) AS n1,
           loupe_mih_neighbours(((%(hash)s::bigint >> 32) & 65535)::integer, %(bits)s) AS n2,
           loupe_mih_neighbours(((%(hash)s::bigint >> 48) & 65535)::integer, %(bits)s) AS n3
),
cand AS MATERIALIZED (
    SELECT h.asset_id, loupe_hamming(h.phash, %(hash)s::bigint) AS distance
    FROM asset_phash h, nb
    WHERE h.tenant_id = %(tenant_id)s AND h.p0 = ANY (nb.n0)
      AND loupe_hamming(h.phash, %(hash)s::bigint) <= %(radius)s
    UNION
    SELECT h.asset_id, loupe_hamming(h.phash, %(hash)s::bigint)
    FROM asset_phash h, nb
    WHERE h.tenant_id = %(tenant_id)s AND h.p1 = ANY (nb.n1)
      AND loupe_hamming(h.phash, %(hash)s::bigint) <= %(radius)s
    UNION
    SELECT h.asset_id, loupe_hamming(h.phash, %(hash)s::bigint)
    FROM asset_phash h, nb
    WHERE h.tenant_id = %(tenant_id)s AND h.p2 = ANY (nb.n2)
      AND loupe_hamming(h.phash, %(hash)s::bigint) <= %(radius)s
    UNION
    SELECT h.asset_id, loupe_hamming(h.phash, %(hash)s::bigint)
    FROM asset_phash h, nb
    WHERE h.tenant_id = %(tenant_id)s AND h.p3 = ANY (nb.n3)
      AND loupe_hamming(h.phash, %(hash)s::bigint) <= %(radius)s
),
hits AS (
    SELECT c.asset_id, c.distance
    FROM cand c
    JOIN asset a ON a.id = c.asset_id
    WHERE a.tenant_id = %(tenant_id)s
      AND c.asset_id IS DISTINCT FROM %(exclude)s::bigint
      AND loupe_can_read(a.readers, a.embargo_until, a.rights_expire_at,
                         %(see_all)s, %(principals)s::bigint[])
)
SELECT asset_id, distance, count(*) OVER () AS total
FROM hits
ORDER BY distance, asset_id
LIMIT %(limit)s OFFSET %(offset)s
"""

# The same search as a linear scan (every hash of the tenant compared): the
# baseline of benchmarks/similar.py and the oracle of the tests.
SIMILAR_LINEAR = """
SELECT h.asset_id, loupe_hamming(h.phash, %(hash)s::bigint) AS distance
FROM asset_phash h
WHERE h.tenant_id = %(tenant_id)s AND loupe_hamming(h.phash, %(hash)s::bigint) <= %(radius)s
ORDER BY distance, h.asset_id
LIMIT %(limit)s
"""

# Pairs of readable assets within %(radius)s bits of each other (a < b): the
# edges of the near-duplicate groups. Multi-index hashing over the whole
# table at once: the readable hashes (h, permission tested once per asset),
# then for each sub-hash i and each bit-flip mask of at most floor(r/4) bits
# (mih_mask), the pairs whose sub-hash i differ by exactly that mask (hash
# joins), verified by the full distance. By the pigeonhole argument of
# SIMILAR, every pair within the radius is found.
NEAR_PAIRS = """
WITH h AS MATERIALIZED (
    SELECT p.asset_id, p.phash, p.p0, p.p1, p.p2, p.p3
    FROM asset_phash p
    JOIN asset a ON a.id = p.asset_id
    WHERE p.tenant_id = %(tenant_id)s AND p.phash IS NOT NULL
      -- a hash of fewer than min_bits set bits saw no structure (a flat or
      -- smooth picture: loupe.similar.search.MIN_HASH_BITS); not compared
      AND bit_count(p.phash::bit(64)) >= %(min_bits)s
      AND loupe_can_read(a.readers, a.embargo_until, a.rights_expire_at,
                         %(see_all)s, %(principals)s::bigint[])
),
m AS MATERIALIZED (
    SELECT mask FROM mih_mask WHERE weight <= %(bits)s
)
SELECT x.asset_id AS a, y.asset_id AS b, loupe_hamming(x.phash, y.phash) AS distance
FROM h x CROSS JOIN m JOIN h y ON y.p0 = x.p0 # m.mask
WHERE y.asset_id > x.asset_id AND loupe_hamming(x.phash, y.phash) <= %(radius)s
UNION
SELECT x.asset_id, y.asset_id, loupe_hamming(x.phash, y.phash)
FROM h x CROSS JOIN m JOIN h y ON y.p1 = x.p1 # m.mask
WHERE y.asset_id > x.asset_id AND loupe_hamming(x.phash, y.phash) <= %(radius)s
UNION
SELECT x.asset_id, y.asset_id, loupe_hamming(x.phash, y.phash)
FROM h x CROSS JOIN m JOIN h y ON y.p2 = x.p2 # m.mask
WHERE y.asset_id > x.asset_id AND loupe_hamming(x.phash, y.phash) <= %(radius)s
UNION
SELECT x.asset_id, y.asset_id, loupe_hamming(x.phash, y.phash)
FROM h x CROSS JOIN m JOIN h y ON y.p3 = x.p3 # m.mask
WHERE y.asset_id > x.asset_id AND loupe_hamming(x.phash, y.phash) <= %(radius)s
ORDER BY 1, 2
"""

# Readable assets whose bytes are held by several files the viewer may read
# (exact duplicates; per-file visibility, migration 0011: a copy in a folder
# the viewer may not read is neither listed nor counted).
EXACT_GROUPS = """
SELECT a.id, a.byte_size, array_agg(f.path ORDER BY f.rel_path, f.path) AS paths
FROM asset a
JOIN asset_file f ON f.asset_id = a.id
                 AND (%(see_all)s OR f.readers && %(principals)s::bigint[])
WHERE a.tenant_id = %(tenant_id)s
  AND loupe_can_read(a.readers, a.embargo_until, a.rights_expire_at,
                     %(see_all)s, %(principals)s::bigint[])
GROUP BY a.id
HAVING count(*) > 1
ORDER BY a.byte_size DESC, a.id
"""

# Facts shown for each asset of a group: size, pixels, number of files the
# viewer may read, primary file (first by relative path among them).
ASSET_FACTS = """
SELECT a.id, a.byte_size, a.width, a.height,
       (SELECT count(*) FROM asset_file
        WHERE asset_id = a.id
          AND (%(see_all)s OR readers && %(principals)s::bigint[])) AS files, f.path
FROM asset a
LEFT JOIN LATERAL (SELECT path FROM asset_file WHERE asset_id = a.id
                     AND (%(see_all)s OR readers && %(principals)s::bigint[])
                   ORDER BY rel_path, path LIMIT 1) f ON true
WHERE a.tenant_id = %(tenant_id)s AND a.id = ANY (%(ids)s::bigint[])
"""

# An asset's stored hashes (None when not computed yet; phash NULL: failed).
ASSET_HASH = """
SELECT phash, dhash, error FROM asset_phash WHERE asset_id = %(asset_id)s AND tenant_id = %(tenant_id)s
"""

# Assets with no hash row yet (ingested before 0015), with the file to hash.
PENDING = """
SELECT a.id, f.path
FROM asset a
CROSS JOIN LATERAL (SELECT path FROM asset_file WHERE asset_id = a.id
                    ORDER BY rel_path, path LIMIT 1) f
WHERE a.tenant_id = %(tenant_id)s AND a.id > %(after)s
  AND NOT EXISTS (SELECT 1 FROM asset_phash h WHERE h.asset_id = a.id)
ORDER BY a.id
LIMIT %(batch)s
"""

# How many assets have no hash row yet (all), and how many readable assets
# have none or a failed one: what a search cannot have compared.
HASH_COVERAGE = """
SELECT count(*) FILTER (WHERE h.asset_id IS NULL) AS pending_all,
       count(*) FILTER (WHERE (h.asset_id IS NULL OR h.phash IS NULL)
                        AND loupe_can_read(a.readers, a.embargo_until, a.rights_expire_at,
                                           %(see_all)s, %(principals)s::bigint[])) AS unhashed_readable
FROM asset a
LEFT JOIN asset_phash h ON h.asset_id = a.id
WHERE a.tenant_id = %(tenant_id)s
"""


def image_neighbours(model_id: int, dims: int):
    """The image lane's nearest vectors to ``%(qv)s`` (cosine distance, HNSW
    index of (model, 'image'), see loupe.vector.queries.hnsw_index), of the
    tenant, readable by the viewer (P1), up to ``%(cap)s``, not
    ``%(exclude)s``. Model id and width are integers composed as literals so
    the statement matches the partial index; the rest is bound."""
    from psycopg import sql

    assert isinstance(model_id, int) and isinstance(dims, int)
    return sql.SQL("""
SELECT v.asset_id, v.embedding::vector({dims}) <=> %(qv)s::vector({dims}) AS dist
FROM asset_vector v
WHERE v.model_id = {model} AND v.lane = 'image' AND v.tenant_id = %(tenant_id)s
  AND v.asset_id IS DISTINCT FROM %(exclude)s::bigint
  AND (%(see_all)s OR (SELECT loupe_can_read(a.readers, a.embargo_until, a.rights_expire_at,
                                             false, %(principals)s::bigint[])
                       FROM asset a WHERE a.id = v.asset_id))
ORDER BY v.embedding::vector({dims}) <=> %(qv)s::vector({dims})
LIMIT %(cap)s
""").format(dims=sql.Literal(dims), model=sql.Literal(model_id))


# An asset's own vector of the image lane's model.
ASSET_IMAGE_VECTOR = """
SELECT embedding FROM asset_vector
WHERE asset_id = %(asset_id)s AND model_id = %(model_id)s AND lane = 'image'
"""
