"""Named SQL of filters (migrations 0020 and 0026).

Each predicate has two forms, both with bound parameters only (the names
``{v}``, ``{w}`` ... are filled with placeholder names the compiler makes,
``%(flt_3)s``; never with a value):

* a **test** — a boolean expression over the row ``a`` of table ``asset``
  (alias ``a``: ``a.id``, ``a.tenant_id``, ``a.media_type`` ...), used inside
  every search statement wherever a row is kept, banded or counted;
* a **driver** — a SELECT of ``asset_id`` served by one index of 0020 (or
  of earlier migrations, or 0026's stored columns), from which the
  filtered set is enumerated without reading the whole tenant. It may hold
  assets of other tenants (the enumeration tests the asset's tenant), never
  miss one the test accepts. Every driver but ``person``'s is also
  **exact**: each asset of it passes the test (its file read test is in the
  driver), so the enumeration does not run that predicate's test again per
  asset (:mod:`loupe.filters.compile`).

Per-file values (creator, keyword, location, country, capture date,
folder) count only from files the viewer may read (migration 0011: a member
never matches an asset by a file it may not read); ``READ_FILE`` is that
test, ``%(see_all)s`` / ``%(principals)s`` the viewer's parameters shared
with the search statement.
"""

READ_FILE = "(%(see_all)s OR f.readers && %(principals)s::bigint[])"
# The viewer reads every file of asset ``a`` (the test of its whole document,
# migration 0011): what people added in Loupe to the asset (keywords, hand-made
# collections) counts only then.
READ_WHOLE = "(%(see_all)s OR coalesce(a.doc_readers, a.readers) && %(principals)s::bigint[])"

# 'field:value' token of asset_file.facet_tokens (migration 0026: the
# file's facet values, lower-cased, stored when the row is written),
# lower-cased in SQL (the same lower() as the column: Python and PostgreSQL
# case rules may differ).
TOKEN = "ARRAY[{p} || lower(btrim({v}))]"

# The per-file tests read only the columns 0026 stores with each file
# (facet_tokens, country, captured), never its metadata or raw metadata (a
# member's large raw metadata once cost seconds per predicate). Each is a probe of asset_file_asset_idx for the asset's files.
_FILE_TOKEN = ("EXISTS (SELECT 1 FROM asset_file f WHERE f.asset_id = a.id AND " + READ_FILE +
               " AND f.facet_tokens @> " + TOKEN + ")")
TEST = {
    "creator": _FILE_TOKEN,
    "keyword": _FILE_TOKEN,
    # (a location part equal to the file's country is not a location token:
    # loupe_file_facet_labels, 0026)
    "location": _FILE_TOKEN,
    "country": "EXISTS (SELECT 1 FROM asset_file f WHERE f.asset_id = a.id AND " + READ_FILE +
               " AND lower(f.country) = lower(btrim({v})))",
    # keywords people added to the asset (asset_keyword): asset-wide, so only
    # for a viewer who reads every file of it (the whole document: doc_readers,
    # migration 0011), never through one copy
    "asset_keyword": "(" + READ_WHOLE + " AND EXISTS (SELECT 1 FROM asset_keyword k"
                     " WHERE k.asset_id = a.id AND lower(k.keyword) = lower(btrim({v}))))",
    "captured": "EXISTS (SELECT 1 FROM asset_file f WHERE f.asset_id = a.id"
                " AND f.captured >= {v} AND f.captured < {w} AND " + READ_FILE + ")",
    "added": "(a.created_at >= {v} AND a.created_at < {w})",
    "collection": "(EXISTS (SELECT 1 FROM asset_file f WHERE f.asset_id = a.id"
                  " AND f.collection_id = ANY ({v}::bigint[]) AND " + READ_FILE + ")"
                  # a hand-made collection holds the whole asset (READ_WHOLE)
                  " OR (" + READ_WHOLE + " AND EXISTS (SELECT 1 FROM collection_member cm"
                  " WHERE cm.asset_id = a.id AND cm.collection_id = ANY ({v}::bigint[]))))",
    "media_type": "a.media_type = {v}",
    "orientation": "loupe_displayed_orientation(a.width, a.height, a.orientation) = {v}",
    "embargoed": "a.embargo_until > {v}",
    "expired": "a.rights_expire_at <= {v}",
    "expiring": "(a.rights_expire_at > {v} AND a.rights_expire_at < {w})",
    # people (migration 0022): a confirmed face of a named, not hidden person
    # of this name (case-insensitive, exact), on this asset — the people
    # pages' rule: a member knows a name only through a confirmed face on an
    # asset it may read (the filtered set's read test, READ_ASSET, holds that
    # part). A face confirmed by a name written in one of the asset's files
    # (from_file) counts for a member only when it may read every file of
    # the asset, as that name enters only the whole document (docs/people.md).
    "person": "EXISTS (SELECT 1 FROM face f JOIN person p ON p.id = f.person_id"
              " WHERE f.asset_id = a.id AND f.confirmed AND NOT p.hidden"
              " AND lower(p.name) = lower(btrim({v}))"
              " AND (NOT f.from_file OR %(see_all)s OR loupe_can_read_doc(a.readers,"
              " a.doc_readers, a.embargo_until, a.rights_expire_at, %(principals)s::bigint[])))",
    # machine words (asset_machine, migration 0019)
    "kind": "EXISTS (SELECT 1 FROM asset_machine m WHERE m.asset_id = a.id AND m.kind = {v})",
    "colour": "EXISTS (SELECT 1 FROM asset_machine m WHERE m.asset_id = a.id"
              " AND m.colours @> ARRAY[{v}]::text[])",
    "background": "EXISTS (SELECT 1 FROM asset_machine m WHERE m.asset_id = a.id"
                  " AND m.background = {v})",
    "cutout": "EXISTS (SELECT 1 FROM asset_machine m WHERE m.asset_id = a.id"
              " AND m.cutout = {v})",
    # black and white / greyscale: asset_machine.monochrome (0019; decided from the
    # pixels' chroma by loupe.pixels.colours); NULL (not analysed) matches neither value
    "monochrome": "EXISTS (SELECT 1 FROM asset_machine m WHERE m.asset_id = a.id"
                  " AND m.monochrome = {v})",
}

# READ_WHOLE inside a driver, for the asset whose id is the column {id}: a
# scalar subquery probing asset's primary key per row (a join was planned as
# a hash join over a sequential scan of asset for a member on the 100k test
# library), skipped at planning for a viewer who sees everything.
WHOLE_PROBE = ("(%(see_all)s OR coalesce((SELECT coalesce(a.doc_readers, a.readers)"
               " && %(principals)s::bigint[] FROM asset a WHERE a.id = {id}), false))")

DRIVER = {
    # (GIN index asset_file_facet_tokens_idx of 0026; a country is a token too)
    "file_token": "SELECT f.asset_id FROM asset_file f WHERE f.facet_tokens @> " + TOKEN +
                  " AND " + READ_FILE,
    # (keywords people added count only for a viewer of the whole asset)
    "asset_keyword": "SELECT k.asset_id FROM asset_keyword k"
                     " WHERE lower(k.keyword) = lower(btrim({v})) AND "
                     + WHOLE_PROBE.format(id="k.asset_id"),
    # (index asset_file_captured_col_idx of 0026)
    "captured": "SELECT f.asset_id FROM asset_file f WHERE f.tenant_id = %(tenant_id)s"
                " AND f.captured >= {v} AND f.captured < {w} AND " + READ_FILE,
    "added": "SELECT x.id FROM asset x WHERE x.tenant_id = %(tenant_id)s"
             " AND x.created_at >= {v} AND x.created_at < {w}",
    "collection": "SELECT f.asset_id FROM asset_file f WHERE f.collection_id = ANY ({v}::bigint[])"
                  " AND " + READ_FILE + " UNION ALL SELECT cm.asset_id FROM collection_member cm"
                  " WHERE cm.collection_id = ANY ({v}::bigint[]) AND "
                  + WHOLE_PROBE.format(id="cm.asset_id"),
    "media_type": "SELECT x.id FROM asset x WHERE x.tenant_id = %(tenant_id)s"
                  " AND x.media_type = {v}",
    "orientation": "SELECT x.id FROM asset x WHERE x.tenant_id = %(tenant_id)s"
                   " AND loupe_displayed_orientation(x.width, x.height, x.orientation) = {v}",
    "embargoed": "SELECT x.id FROM asset x WHERE x.tenant_id = %(tenant_id)s"
                 " AND x.embargo_until > {v}",
    "expired": "SELECT x.id FROM asset x WHERE x.tenant_id = %(tenant_id)s"
               " AND x.rights_expire_at <= {v}",
    "expiring": "SELECT x.id FROM asset x WHERE x.tenant_id = %(tenant_id)s"
                " AND x.rights_expire_at > {v} AND x.rights_expire_at < {w}",
    # (person_name_idx of 0024 finds the people, face_person_idx their faces;
    # not exact: the test also asks for a person not hidden and, for a name
    # written in a file, a viewer of the whole asset)
    "person": "SELECT f.asset_id FROM person p JOIN face f ON f.person_id = p.id"
              " WHERE p.tenant_id = %(tenant_id)s AND lower(p.name) = lower(btrim({v}))"
              " AND f.confirmed",
    "kind": "SELECT m.asset_id FROM asset_machine m WHERE m.tenant_id = %(tenant_id)s"
            " AND m.kind = {v}",
    "colour": "SELECT m.asset_id FROM asset_machine m WHERE m.colours @> ARRAY[{v}]::text[]",
    "background": "SELECT m.asset_id FROM asset_machine m WHERE m.tenant_id = %(tenant_id)s"
                  " AND m.background = {v}",
    "cutout": "SELECT m.asset_id FROM asset_machine m WHERE m.tenant_id = %(tenant_id)s"
              " AND m.cutout = {v}",
    # index asset_machine_monochrome_idx (migration 0025)
    "monochrome": "SELECT m.asset_id FROM asset_machine m WHERE m.tenant_id = %(tenant_id)s"
                  " AND m.monochrome = {v}",
}

# Every asset of the tenant (a tree with no positive predicate to start from,
# e.g. {"not": ...}): the (tenant_id, id) index of 0020.
UNIVERSE = "SELECT x.id FROM asset x WHERE x.tenant_id = %(tenant_id)s"

# The asset-level read test (migration 0005), as the scopes' members use it.
READ_ASSET = ("(%(see_all)s OR loupe_can_read(a.readers, a.embargo_until, a.rights_expire_at,"
              " false, %(principals)s::bigint[]))")

# The filtered set: the readable assets of the tenant the tree accepts, at
# most %(filter_limit)s of them (enough to choose a regime or to say "at
# least"). {driver}: the compiled driver; {test}: what the driver does not
# already guarantee of the tree (Compiled.residual: the tree's test less the
# predicate an exact driver enumerated, "true" when nothing is left). The driver's distinct ids
# are probed one by one on asset's primary key (the LATERAL ... OFFSET 0
# keeps the planner from turning the probes into a hash join over a
# sequential scan of asset, which it chose on the 100k test library), and
# each probe runs the test and the read check on that one row.
DRIVEN = """
    SELECT x.asset_id
    FROM (SELECT DISTINCT d0.asset_id FROM ({driver}) AS d0(asset_id)) d
    CROSS JOIN LATERAL (
        SELECT a.id AS asset_id
        FROM asset a
        WHERE a.id = d.asset_id
          AND a.tenant_id = %(tenant_id)s
          AND {test}
          AND """ + READ_ASSET + """
        OFFSET 0
    ) x"""
MEMBERS = DRIVEN + """
    LIMIT %(filter_limit)s"""

# A page of the filtered set with no query text (browse): newest asset
# (highest id) first, and how many there are (counted up to
# %(filter_limit)s).
BROWSE = """
WITH m AS MATERIALIZED ({members}),
page AS (""" + DRIVEN + """
    ORDER BY x.asset_id DESC
    LIMIT %(limit)s OFFSET %(offset)s
)
SELECT (SELECT count(*) FROM m) AS n, p.asset_id
FROM (SELECT 1) one LEFT JOIN page p ON true
ORDER BY p.asset_id DESC
"""

# The test for one asset id of another statement (a row ``k``: kept rows,
# fused rows): a scalar subquery probing asset's primary key, so it is never
# planned as a join over the whole table. {alias}: a column name of that
# statement (never user input); NULL (no such asset) reads as false.
ROW_TEST = "coalesce((SELECT {test} FROM asset a WHERE a.id = {alias}), false)"

# Whether any readable asset passes the test (for "an empty intersection
# says so"): one row at most.
ANY_MEMBER = "SELECT EXISTS (SELECT 1 FROM ({members}) x)"

# Facets: for the assets of a result (%(ids)s: the result's rows,
# at most BULK_MAX, never a second scan of the library), the values of each
# facet with the number of those assets holding it, the %(top)s most common
# per facet (ties by value). Per-file values come only from files the viewer
# may read; each value is returned with the key a filter names it by
# (lower-cased text, a collection id, a media type, a year).
FACETS = """
WITH r AS (SELECT DISTINCT unnest(%(ids)s::bigint[]) AS asset_id),
-- (each id probes the primary key / asset_file_asset_idx: LATERAL ... OFFSET
-- 0, because for a few thousand ids the planner chose a hash join over a
-- sequential scan of asset on the 100k test library)
ra AS MATERIALIZED (
    SELECT x.* FROM r CROSS JOIN LATERAL (
        SELECT a.id AS asset_id, a.media_type, a.width, a.height, a.orientation,
               """ + READ_WHOLE + """ AS whole
        FROM asset a WHERE a.id = r.asset_id AND a.tenant_id = %(tenant_id)s OFFSET 0) x
),
rf AS MATERIALIZED (
    SELECT x.* FROM ra CROSS JOIN LATERAL (
        SELECT f.asset_id, f.facet_labels, f.country, f.captured, f.collection_id
        FROM asset_file f WHERE f.asset_id = ra.asset_id AND """ + READ_FILE + """ OFFSET 0) x
),
vals AS (
    -- creators and keywords as written, from the file's stored facet labels
    -- ('field:value', migration 0026; the field has no colon)
    SELECT split_part(l, ':', 1) AS facet, lower(substr(l, strpos(l, ':') + 1)) AS k,
           substr(l, strpos(l, ':') + 1) AS label, rf.asset_id
    FROM rf CROSS JOIN LATERAL unnest(rf.facet_labels) l
    WHERE split_part(l, ':', 1) IN ('creator', 'keyword')
    UNION ALL
    -- added in Loupe: only where the viewer reads every file (ra.whole)
    SELECT 'keyword', lower(k.keyword), k.keyword, k.asset_id
    FROM ra CROSS JOIN LATERAL (SELECT * FROM asset_keyword k0
                                WHERE k0.asset_id = ra.asset_id OFFSET 0) k
    WHERE ra.whole
    UNION ALL
    SELECT 'collection', c.id::text, c.path, rf.asset_id
    FROM rf JOIN collection c ON c.id = rf.collection_id
    UNION ALL
    SELECT 'collection', c.id::text, c.path, cm.asset_id
    FROM ra CROSS JOIN LATERAL (SELECT * FROM collection_member cm0
                                WHERE cm0.asset_id = ra.asset_id OFFSET 0) cm
    JOIN collection c ON c.id = cm.collection_id
    WHERE ra.whole
    UNION ALL
    SELECT 'format', ra.media_type, ra.media_type, ra.asset_id FROM ra
    UNION ALL
    SELECT 'orientation', o, o, ra.asset_id
    FROM ra CROSS JOIN LATERAL loupe_displayed_orientation(ra.width, ra.height,
                                                           ra.orientation) o
    WHERE o IS NOT NULL
    UNION ALL
    SELECT 'year', y, y, rf.asset_id
    FROM rf CROSS JOIN LATERAL
         (SELECT extract(year FROM rf.captured AT TIME ZONE 'UTC')::int::text) t(y)
    WHERE y IS NOT NULL
    UNION ALL
    SELECT 'country', lower(rf.country), rf.country, rf.asset_id
    FROM rf
    WHERE rf.country IS NOT NULL
    {machine}
),
agg AS (
    SELECT facet, k, min(label) AS label, count(DISTINCT asset_id) AS n
    FROM vals GROUP BY facet, k
),
ranked AS (
    SELECT facet, k, label, n, row_number() OVER (PARTITION BY facet ORDER BY n DESC, k) AS pos
    FROM agg
)
SELECT facet, k, label, n FROM ranked WHERE pos <= %(top)s ORDER BY facet, pos
"""

# The machine-word facets (kind, colour), when asset_machine exists (0019).
FACETS_MACHINE = """
    UNION ALL
    SELECT 'kind', m.kind, m.kind, m.asset_id
    FROM ra CROSS JOIN LATERAL (SELECT * FROM asset_machine m0
                                WHERE m0.asset_id = ra.asset_id OFFSET 0) m
    WHERE m.kind IS NOT NULL
    UNION ALL
    SELECT 'colour', c, c, m.asset_id
    FROM ra CROSS JOIN LATERAL (SELECT * FROM asset_machine m0
                                WHERE m0.asset_id = ra.asset_id OFFSET 0) m
    CROSS JOIN LATERAL unnest(m.colours) c"""
