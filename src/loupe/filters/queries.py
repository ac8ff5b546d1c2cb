"""Named SQL of filters (issue 17, migration 0020).

Each predicate has two forms, both with bound parameters only (the names
``{v}``, ``{w}`` ... are filled with placeholder names the compiler makes,
``%(flt_3)s``; never with a value):

* a **test** — a boolean expression over the row ``a`` of table ``asset``
  (alias ``a``: ``a.id``, ``a.tenant_id``, ``a.media_type`` ...), used inside
  every search statement wherever a row is kept, banded or counted;
* a **driver** — a SELECT of ``asset_id`` served by one index of 0020 (or
  of earlier migrations), from which the filtered set is enumerated without
  reading the whole tenant. It may hold assets the test then rejects
  (other tenants, unreadable files), never miss one the test accepts.

Per-file values (creator, keyword, location, country, capture date,
folder) count only from files the viewer may read (migration 0011: a member
never matches an asset by a file it may not read); ``READ_FILE`` is that
test, ``%(see_all)s`` / ``%(principals)s`` the viewer's parameters shared
with the search statement.
"""

READ_FILE = "(%(see_all)s OR f.readers && %(principals)s::bigint[])"

# 'field:value' token of loupe_file_facets, lower-cased in SQL (the same
# lower() as the index: Python and PostgreSQL case rules may differ).
TOKEN = "ARRAY[{p} || lower(btrim({v}))]"

TEST = {
    "file_token": "EXISTS (SELECT 1 FROM asset_file f WHERE f.asset_id = a.id"
                  " AND loupe_file_facets(f.metadata, f.raw_metadata) @> " + TOKEN +
                  " AND " + READ_FILE + ")",
    # keywords people added to the asset (asset_keyword): asset-wide
    "asset_keyword": "EXISTS (SELECT 1 FROM asset_keyword k WHERE k.asset_id = a.id"
                     " AND lower(k.keyword) = lower(btrim({v})))",
    "captured": "EXISTS (SELECT 1 FROM asset_file f WHERE f.asset_id = a.id"
                " AND loupe_file_captured(f.metadata) >= {v}"
                " AND loupe_file_captured(f.metadata) < {w} AND " + READ_FILE + ")",
    "added": "(a.created_at >= {v} AND a.created_at < {w})",
    "collection": "(EXISTS (SELECT 1 FROM asset_file f WHERE f.asset_id = a.id"
                  " AND f.collection_id = ANY ({v}::bigint[]) AND " + READ_FILE + ")"
                  " OR EXISTS (SELECT 1 FROM collection_member cm WHERE cm.asset_id = a.id"
                  " AND cm.collection_id = ANY ({v}::bigint[])))",
    "media_type": "a.media_type = {v}",
    "orientation": "loupe_displayed_orientation(a.width, a.height, a.orientation) = {v}",
    "embargoed": "a.embargo_until > {v}",
    "expired": "a.rights_expire_at <= {v}",
    "expiring": "(a.rights_expire_at > {v} AND a.rights_expire_at < {w})",
    # machine words (asset_machine, migration 0019 of issue 15)
    "kind": "EXISTS (SELECT 1 FROM asset_machine m WHERE m.asset_id = a.id AND m.kind = {v})",
    "colour": "EXISTS (SELECT 1 FROM asset_machine m WHERE m.asset_id = a.id"
              " AND {v} = ANY (m.colours))",
    "background": "EXISTS (SELECT 1 FROM asset_machine m WHERE m.asset_id = a.id"
                  " AND m.background = {v})",
    "cutout": "EXISTS (SELECT 1 FROM asset_machine m WHERE m.asset_id = a.id"
              " AND m.cutout = {v})",
}

DRIVER = {
    "file_token": "SELECT f.asset_id FROM asset_file f"
                  " WHERE loupe_file_facets(f.metadata, f.raw_metadata) @> " + TOKEN,
    "asset_keyword": "SELECT k.asset_id FROM asset_keyword k"
                     " WHERE lower(k.keyword) = lower(btrim({v}))",
    "captured": "SELECT f.asset_id FROM asset_file f WHERE f.tenant_id = %(tenant_id)s"
                " AND loupe_file_captured(f.metadata) >= {v}"
                " AND loupe_file_captured(f.metadata) < {w}",
    "added": "SELECT x.id FROM asset x WHERE x.tenant_id = %(tenant_id)s"
             " AND x.created_at >= {v} AND x.created_at < {w}",
    "collection": "SELECT f.asset_id FROM asset_file f WHERE f.collection_id = ANY ({v}::bigint[])"
                  " UNION ALL SELECT cm.asset_id FROM collection_member cm"
                  " WHERE cm.collection_id = ANY ({v}::bigint[])",
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
}

# Every asset of the tenant (a tree with no positive predicate to start from,
# e.g. {"not": ...}): the (tenant_id, id) index of 0020.
UNIVERSE = "SELECT x.id FROM asset x WHERE x.tenant_id = %(tenant_id)s"

# The asset-level read test (migration 0005), as the scopes' members use it.
READ_ASSET = ("(%(see_all)s OR loupe_can_read(a.readers, a.embargo_until, a.rights_expire_at,"
              " false, %(principals)s::bigint[]))")

# The filtered set: the readable assets of the tenant the tree accepts, found
# from the driver, at most %(filter_limit)s of them (enough to choose a regime
# or to say "at least"). {driver}, {test}: the compiled forms.
MEMBERS = """
    SELECT a.id AS asset_id
    FROM asset a
    WHERE a.id IN ({driver})
      AND a.tenant_id = %(tenant_id)s
      AND {test}
      AND """ + READ_ASSET + """
    LIMIT %(filter_limit)s"""

# A page of the filtered set with no query text (browse): newest asset
# first, and how many there are (counted up to %(filter_limit)s).
BROWSE = """
WITH m AS MATERIALIZED ({members}),
page AS (
    SELECT a.id AS asset_id
    FROM asset a
    WHERE a.id IN ({driver})
      AND a.tenant_id = %(tenant_id)s
      AND {test}
      AND """ + READ_ASSET + """
    ORDER BY a.id DESC
    LIMIT %(limit)s OFFSET %(offset)s
)
SELECT (SELECT count(*) FROM m) AS n, p.asset_id
FROM (SELECT 1) one LEFT JOIN page p ON true
ORDER BY p.asset_id DESC
"""

# Whether any readable asset passes the test (for "an empty intersection
# says so"): one row at most.
ANY_MEMBER = "SELECT EXISTS (SELECT 1 FROM ({members}) x)"
