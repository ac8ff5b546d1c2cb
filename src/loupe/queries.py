"""Named SQL of the Library API (reads of assets, tenants, runs). Every
statement is parameterised and bound to one tenant."""

TENANT_BY_NAME = "SELECT id FROM tenant WHERE name = %(name)s"

CREATE_TENANT = "INSERT INTO tenant (name) VALUES (%(name)s) RETURNING id"

TENANT_LANGUAGES = "SELECT languages FROM tenant WHERE id = %(tenant_id)s"

SET_LANGUAGES = "UPDATE tenant SET languages = %(langs)s WHERE id = %(tenant_id)s"

ASSET_IDS = "SELECT id FROM asset WHERE tenant_id = %(tenant_id)s ORDER BY id"

# Title (in the query language, else the file name) and primary path of hits.
HIT_DETAILS = """
SELECT a.id,
       coalesce(nullif(d.title, ''), regexp_replace(f.rel_path, '^.*/', '')),
       f.path
FROM asset a
LEFT JOIN search_document d ON d.asset_id = a.id AND d.lang = %(lang)s
CROSS JOIN LATERAL (
    SELECT path, rel_path FROM asset_file
    WHERE asset_id = a.id ORDER BY rel_path, path LIMIT 1
) f
WHERE a.tenant_id = %(tenant_id)s AND a.id = ANY (%(ids)s)
"""

ASSET = """
SELECT id, content_sha256, byte_size, media_type, width, height, orientation, thumbnail,
       created_at, updated_at
FROM asset WHERE tenant_id = %(tenant_id)s AND id = %(asset_id)s
"""

ASSET_FILES = """
SELECT f.path, c.path, f.sidecar_path, f.metadata
FROM asset_file f LEFT JOIN collection c ON c.id = f.collection_id
WHERE f.tenant_id = %(tenant_id)s AND f.asset_id = %(asset_id)s
ORDER BY f.rel_path, f.path
"""

ASSET_DOCUMENTS = """
SELECT lang, title, description, keywords, collections, filename, creator, copyright,
       location, doc_len
FROM search_document WHERE tenant_id = %(tenant_id)s AND asset_id = %(asset_id)s
ORDER BY lang
"""

# Failures of one run, or of the tenant's latest run when run_id is null.
FAILURES = """
SELECT x.run_id, x.path, x.kind, x.reason
FROM ingest_failure x
WHERE x.tenant_id = %(tenant_id)s
  AND x.run_id = coalesce(%(run_id)s::bigint,
                          (SELECT max(id) FROM ingest_run WHERE tenant_id = %(tenant_id)s))
ORDER BY x.path
"""

STATS = """
SELECT (SELECT count(*) FROM asset WHERE tenant_id = %(tenant_id)s),
       (SELECT count(*) FROM asset_file WHERE tenant_id = %(tenant_id)s),
       (SELECT count(*) FROM collection WHERE tenant_id = %(tenant_id)s)
"""

DOC_COUNTS = """
SELECT lang, n_docs FROM corpus_stat WHERE tenant_id = %(tenant_id)s ORDER BY lang
"""

LEXICAL_CAPS = "SELECT raw_cap, keep_cap FROM lexical_setting WHERE tenant_id = %(tenant_id)s"
