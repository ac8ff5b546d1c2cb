"""Named SQL of the ingest stage. Every statement is parameterised; none is
assembled from user input."""

TENANT_LANGUAGES = "SELECT languages FROM tenant WHERE id = %(tenant_id)s"

UPSERT_SOURCE = """
INSERT INTO source (tenant_id, root_path) VALUES (%(tenant_id)s, %(root)s)
ON CONFLICT (tenant_id, root_path) DO UPDATE SET root_path = EXCLUDED.root_path
RETURNING id
"""

START_RUN = """
INSERT INTO ingest_run (tenant_id, source_id) VALUES (%(tenant_id)s, %(source_id)s) RETURNING id
"""

FINISH_RUN = "UPDATE ingest_run SET finished_at = now(), summary = %(summary)s WHERE id = %(run_id)s"

# What ingest already knows of a source's files, to skip unchanged ones.
# Columns: path, asset_id, byte_size, mtime_ns, sidecar_path, sidecar_size, sidecar_mtime_ns.
KNOWN_FILES = """
SELECT path, asset_id, byte_size, mtime_ns, sidecar_path, sidecar_size, sidecar_mtime_ns
FROM asset_file
WHERE tenant_id = %(tenant_id)s AND source_id = %(source_id)s
"""

# One level of the folder -> collection chain; returns the collection's id.
UPSERT_COLLECTION = """
INSERT INTO collection (tenant_id, source_id, parent_id, name, path)
VALUES (%(tenant_id)s, %(source_id)s, %(parent_id)s, %(name)s, %(path)s)
ON CONFLICT (tenant_id, source_id, path) DO UPDATE SET name = EXCLUDED.name
RETURNING id
"""

# The ids of a collection and its ancestors (after commit, for the id cache).
COLLECTION_CHAIN = """
WITH RECURSIVE chain AS (
    SELECT id, path, parent_id FROM collection
    WHERE tenant_id = %(tenant_id)s AND source_id = %(source_id)s AND path = %(path)s
    UNION ALL
    SELECT c.id, c.path, c.parent_id FROM collection c JOIN chain ON c.id = chain.parent_id
)
SELECT id, path FROM chain
"""

# Delete the collections of a source that no longer hold a file, directly or
# through a sub-collection: the live ones are the files' collections and
# their ancestors.
PRUNE_COLLECTIONS = """
WITH RECURSIVE live AS (
    SELECT DISTINCT f.collection_id AS id
    FROM asset_file f
    WHERE f.tenant_id = %(tenant_id)s AND f.source_id = %(source_id)s
      AND f.collection_id IS NOT NULL
    UNION
    SELECT c.parent_id FROM collection c JOIN live ON c.id = live.id
    WHERE c.parent_id IS NOT NULL
)
DELETE FROM collection c
WHERE c.tenant_id = %(tenant_id)s AND c.source_id = %(source_id)s
  AND c.id NOT IN (SELECT id FROM live)
"""

# Lock the asset holding these bytes, if any, so that two writers cannot
# both create it.
# Whether some asset holds these bytes (no lock: an upload's never_join check).
ASSET_BY_HASH = "SELECT id FROM asset WHERE tenant_id = %(tenant_id)s AND content_sha256 = %(sha)s"

LOCK_ASSET_BY_HASH = """
SELECT id FROM asset WHERE tenant_id = %(tenant_id)s AND content_sha256 = %(sha)s FOR UPDATE
"""

# No row back when these bytes are already an asset: another ingest (of
# another folder) stored them since LOCK_ASSET_BY_HASH looked; the caller then
# locks that asset and joins it instead of failing on the unique key.
INSERT_ASSET = """
INSERT INTO asset (tenant_id, content_sha256, byte_size, media_type, width, height,
                   orientation, thumbnail, duration_s)
VALUES (%(tenant_id)s, %(sha)s, %(size)s, %(media_type)s, %(width)s, %(height)s,
        %(orientation)s, %(thumbnail)s, %(duration_s)s)
ON CONFLICT (tenant_id, content_sha256) DO NOTHING
RETURNING id
"""

UPSERT_FILE = """
INSERT INTO asset_file (tenant_id, asset_id, source_id, collection_id, path, rel_path,
                        byte_size, mtime_ns, sidecar_path, sidecar_size, sidecar_mtime_ns,
                        metadata, raw_metadata)
VALUES (%(tenant_id)s, %(asset_id)s, %(source_id)s, %(collection_id)s, %(path)s, %(rel_path)s,
        %(size)s, %(mtime_ns)s, %(sidecar_path)s, %(sidecar_size)s, %(sidecar_mtime_ns)s,
        %(metadata)s, %(raw)s)
ON CONFLICT (tenant_id, path) DO UPDATE SET
    asset_id = EXCLUDED.asset_id, source_id = EXCLUDED.source_id,
    collection_id = EXCLUDED.collection_id, rel_path = EXCLUDED.rel_path,
    byte_size = EXCLUDED.byte_size, mtime_ns = EXCLUDED.mtime_ns,
    sidecar_path = EXCLUDED.sidecar_path, sidecar_size = EXCLUDED.sidecar_size,
    sidecar_mtime_ns = EXCLUDED.sidecar_mtime_ns, metadata = EXCLUDED.metadata,
    raw_metadata = EXCLUDED.raw_metadata
"""

COUNT_FILES = "SELECT count(*) FROM asset_file WHERE asset_id = %(asset_id)s"

DELETE_FILE = "DELETE FROM asset_file WHERE tenant_id = %(tenant_id)s AND path = %(path)s"

DELETE_ASSET = "DELETE FROM asset WHERE id = %(asset_id)s AND tenant_id = %(tenant_id)s"

# A file not ingested (severity 'error') or ingested with a problem ('warning').
RECORD_FAILURE = """
INSERT INTO ingest_failure (run_id, tenant_id, path, kind, reason, severity)
VALUES (%(run_id)s, %(tenant_id)s, %(path)s, %(kind)s, %(reason)s, %(severity)s)
"""

# -- asset identity (S7) -------------------------------------------------
# An asset is what Loupe knows about one picture: its id carries grants,
# keywords, hand-made collections, embargo, rights expiry and judgements. Its
# bytes may change (a metadata edit, a re-export) and its file may move; see
# loupe.ingest.identity for the rule.

# Files of an asset other than one path (is that path its only file?).
COUNT_OTHER_FILES = """
SELECT count(*) FROM asset_file WHERE asset_id = %(asset_id)s AND path <> %(path)s
"""

# Lock one asset row (the asset a changed file belonged to).
LOCK_ASSET = "SELECT id FROM asset WHERE id = %(asset_id)s AND tenant_id = %(tenant_id)s FOR UPDATE"

# New bytes for the same asset: its content columns follow the file; its id
# and everything attached to the id stay.
UPDATE_ASSET_CONTENT = """
UPDATE asset SET content_sha256 = %(sha)s, byte_size = %(size)s, media_type = %(media_type)s,
                 width = %(width)s, height = %(height)s, orientation = %(orientation)s,
                 thumbnail = %(thumbnail)s, duration_s = %(duration_s)s, updated_at = now()
WHERE id = %(asset_id)s AND tenant_id = %(tenant_id)s
"""

# Vectors computed from the pixels (image lane, and the image+caption sum of
# the 'both' variant) no longer describe new pixels: dropped, so the next
# `loupe embed` computes them again. Text lanes re-check their text hash.
DROP_PIXEL_VECTORS = """
DELETE FROM asset_vector WHERE asset_id = %(asset_id)s AND lane IN ('image', 'both')
"""

# Who would read more if what people added to asset 'src' joined asset 'dst'
#: the principals 'src' reaches as a whole (its
# asset grants and the grants of hand-made collections holding it, 0011's
# loupe_asset_wide_readers) that do not already read every file of 'dst'.
# Empty: the grants and hand-made collections may join 'dst'; else an asset
# grant would reach files of 'dst' it never reached (a private copy's path,
# sidecar and words), so those principals get a grant on the moved file
# alone (FILE_GRANTS_FOR) and 'dst' joins no grant or collection.
# Returns (those principals, all of 'src''s asset-wide readers).
MERGE_WIDENS = """
WITH wide AS (SELECT loupe_asset_wide_readers(%(src)s) AS readers)
SELECT (SELECT coalesce(array_agg(p ORDER BY p), '{}')
        FROM unnest(wide.readers) AS p
        WHERE EXISTS (SELECT 1 FROM asset_file f
                      WHERE f.asset_id = %(dst)s AND NOT (p = ANY (f.readers)))),
       wide.readers
FROM wide
"""

# Would a file's own readers see more of asset 'src' as readers of a fork
# holding only that file? True when a reader of
# the file's new folder ('collection_id', with its ancestors) or of the
# file's own grants ('path', when its row exists) does not read every file
# of 'src' (coalesce(doc_readers, readers), 0011): keywords and hand-made
# collections added to the whole asset are then not carried to the fork.
FORK_WIDENS = """
SELECT EXISTS (
    SELECT 1
    FROM unnest(loupe_file_collection_readers(%(collection_id)s)
                || coalesce((SELECT loupe_file_grant_readers(f.id) FROM asset_file f
                             WHERE f.tenant_id = %(tenant_id)s AND f.path = %(path)s),
                            '{}')) AS p,
         asset a
    WHERE a.id = %(src)s AND NOT (p = ANY (coalesce(a.doc_readers, a.readers))))
"""

# A grant on one file (0027) for each principal in 'principals'.
FILE_GRANTS_FOR = """
INSERT INTO file_grant (tenant_id, file_id, principal_id)
SELECT f.tenant_id, f.id, p FROM asset_file f, unnest(%(principals)s::bigint[]) AS p
WHERE f.tenant_id = %(tenant_id)s AND f.path = %(path)s
ON CONFLICT DO NOTHING
"""

# What people added to asset 'src' is given to asset 'dst' too (a file left
# 'src' for 'dst'): grants, bulk keywords and hand-made collection
# memberships as a union; the later embargo and the earlier rights expiry
# (GREATEST/LEAST skip NULL = "none"), so that nothing becomes visible
# earlier or longer than either asset allowed.
INHERIT_GRANTS = """
INSERT INTO asset_grant (tenant_id, asset_id, principal_id, granted_at)
SELECT tenant_id, %(dst)s, principal_id, granted_at FROM asset_grant WHERE asset_id = %(src)s
ON CONFLICT DO NOTHING
"""
INHERIT_KEYWORDS = """
INSERT INTO asset_keyword (tenant_id, asset_id, keyword, added_at)
SELECT tenant_id, %(dst)s, keyword, added_at FROM asset_keyword WHERE asset_id = %(src)s
ON CONFLICT DO NOTHING
"""
INHERIT_MEMBERSHIPS = """
INSERT INTO collection_member (tenant_id, collection_id, asset_id, added_at)
SELECT tenant_id, collection_id, %(dst)s, added_at FROM collection_member WHERE asset_id = %(src)s
ON CONFLICT DO NOTHING
"""
INHERIT_DATES = """
UPDATE asset d SET embargo_until = GREATEST(d.embargo_until, s.embargo_until),
                   rights_expire_at = LEAST(d.rights_expire_at, s.rights_expire_at),
                   updated_at = now()
FROM asset s
WHERE s.id = %(src)s AND d.id = %(dst)s AND d.tenant_id = s.tenant_id
"""
# When 'src' is about to go (its last file left), its evaluation rows move to
# 'dst': run hits, and pool items with their judgements where 'dst' is not
# already in that pool for that query.
MOVE_EVAL_HITS = "UPDATE eval_run_hit SET asset_id = %(dst)s WHERE asset_id = %(src)s"
MOVE_EVAL_ITEMS = """
UPDATE eval_pool_item i SET asset_id = %(dst)s
WHERE i.asset_id = %(src)s
  AND NOT EXISTS (SELECT 1 FROM eval_pool_item o
                  WHERE o.pool_id = i.pool_id AND o.query_id = i.query_id AND o.asset_id = %(dst)s)
"""

# Files of the tenant that carry an XMP DocumentID (sidecar first), to
# recognise a file that moved and changed bytes at once. Columns: path,
# asset_id, source_id, DocumentID, OriginalDocumentID.
DOCUMENT_IDS = """
SELECT path, asset_id, source_id, doc_id, orig_id FROM (
    SELECT path, asset_id, source_id,
           coalesce(raw_metadata #>> '{sidecar,XMP-xmpMM:DocumentID}',
                    raw_metadata #>> '{file,XMP-xmpMM:DocumentID}') AS doc_id,
           coalesce(raw_metadata #>> '{sidecar,XMP-xmpMM:OriginalDocumentID}',
                    raw_metadata #>> '{file,XMP-xmpMM:OriginalDocumentID}') AS orig_id
    FROM asset_file
    WHERE tenant_id = %(tenant_id)s
) f
WHERE doc_id IS NOT NULL OR orig_id IS NOT NULL
"""

# May a file whose folder is collection %(collection_id)s (NULL: the root
# folder) continue the missing file at %(path)s by an XMP document id? Only
# when every principal the new file's folder chain grants to could already
# read the old file (its asset_file.readers: folder chain plus asset-wide
# grants). Whoever can write a file names its DocumentID: without this a
# file planted in a folder granted to a member took over a missing private
# file's asset, and that member then read its keywords and collections
# (docs/security.md, "Asset identity").
DOCUMENT_ID_CONTINUATION_ALLOWED = """
SELECT loupe_file_collection_readers(%(collection_id)s) <@ coalesce(f.readers, '{}')
FROM asset_file f
WHERE f.tenant_id = %(tenant_id)s AND f.path = %(path)s
"""

# -- one ingest of a folder at a time ----------------------------------------
# A session-level advisory lock per (tenant, root folder): a second ingest of
# the same folder waits for the first, then finds every file unchanged —
# instead of racing it and reporting files it wrote as duplicates or
# failures. The key is a 64-bit hash of the pair (a collision only makes two
# unrelated ingests take turns). Released at the end of the run, or by the
# server when the connection ends (a killed ingest holds nothing).
_INGEST_KEY = "hashtextextended('loupe.ingest:' || %(tenant_id)s::text || ':' || %(root)s, 0)"
TRY_LOCK_INGEST = f"SELECT pg_try_advisory_lock({_INGEST_KEY})"
LOCK_INGEST = f"SELECT pg_advisory_lock({_INGEST_KEY})"
UNLOCK_INGEST = f"SELECT pg_advisory_unlock({_INGEST_KEY})"

# One file of a source, as KNOWN_FILES gives it (a queued job's file).
KNOWN_FILE = """
SELECT path, asset_id, byte_size, mtime_ns, sidecar_path, sidecar_size, sidecar_mtime_ns
FROM asset_file
WHERE tenant_id = %(tenant_id)s AND source_id = %(source_id)s AND path = %(path)s
"""
