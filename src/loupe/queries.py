"""Named SQL of the Library API (reads of assets, tenants, runs). Every
statement is parameterised and bound to one tenant."""

TENANT_BY_NAME = "SELECT id FROM tenant WHERE name = %(name)s"

CREATE_TENANT = "INSERT INTO tenant (name) VALUES (%(name)s) RETURNING id"

TENANT_LANGUAGES = "SELECT languages FROM tenant WHERE id = %(tenant_id)s"

SET_LANGUAGES = "UPDATE tenant SET languages = %(langs)s WHERE id = %(tenant_id)s"

ASSET_IDS = "SELECT id FROM asset WHERE tenant_id = %(tenant_id)s ORDER BY id"

# Title (in the query language, else the file name) and primary path of
# hits, as the viewer may read them (0011): the primary file is the first by
# path among the files the viewer may read; the title is the whole
# document's when the viewer may read every file, else that file's own
# document's (an asset with several files has one per file).
HIT_DETAILS = """
SELECT a.id,
       coalesce(nullif(CASE WHEN %(see_all)s
                                 OR loupe_can_read_doc(a.readers, a.doc_readers, a.embargo_until,
                                                       a.rights_expire_at, %(principals)s::bigint[])
                            THEN d.title ELSE fd.title END, ''),
                regexp_replace(f.rel_path, '^.*/', '')) AS title,
       f.path
FROM asset a
LEFT JOIN search_document d ON d.asset_id = a.id AND d.lang = %(lang)s
CROSS JOIN LATERAL (
    SELECT id, path, rel_path FROM asset_file
    WHERE asset_id = a.id AND (%(see_all)s OR readers && %(principals)s::bigint[])
    ORDER BY rel_path, path LIMIT 1
) f
LEFT JOIN file_document fd ON fd.file_id = f.id AND fd.lang = %(lang)s AND NOT %(see_all)s
WHERE a.tenant_id = %(tenant_id)s AND a.id = ANY (%(ids)s)
"""

# One asset, if the viewer may read it (P1); with its embargo and rights dates.
ASSET = """
SELECT id, content_sha256, byte_size, media_type, width, height, orientation, thumbnail,
       created_at, updated_at, embargo_until, rights_expire_at
FROM asset a
WHERE tenant_id = %(tenant_id)s AND id = %(asset_id)s
  AND loupe_can_read(a.readers, a.embargo_until, a.rights_expire_at,
                     %(see_all)s, %(principals)s::bigint[])
"""

# Collections with the number of their assets (sub-collections included)
# that the viewer may read; a member is not shown collections where it can
# read nothing (their names are not its business), and counts only assets
# with a file it may read in the collection (0011: a copy of a readable
# asset in a folder it may not read does not reveal that folder). Hand-made
# collections have no source.
COLLECTIONS = """
SELECT * FROM (
    SELECT c.id, c.path, c.parent_id, c.source_id IS NULL AS hand_made,
           (SELECT count(*) FROM asset a
            WHERE a.id = ANY (CASE WHEN %(see_all)s THEN loupe_collection_assets(c.id)
                                   ELSE loupe_collection_assets_for(c.id, %(principals)s::bigint[])
                              END)
              AND loupe_can_read(a.readers, a.embargo_until, a.rights_expire_at,
                                 %(see_all)s, %(principals)s::bigint[])) AS assets,
           -- the full path: the source's root folder, then the path
           CASE WHEN s.id IS NULL THEN NULL
                ELSE rtrim(s.root_path, '/') || '/' || c.path END AS full_path
    FROM collection c LEFT JOIN source s ON s.id = c.source_id
    WHERE c.tenant_id = %(tenant_id)s
) x
WHERE %(see_all)s OR x.assets > 0
ORDER BY x.path, x.id
"""


# An asset's files the viewer may read (0011: a member sees only those: not
# the paths, folders, sidecars or metadata of the others).
# An asset's content (SHA-256, size) and all its files, for the passes that
# read its pixels after the ingest (loupe.assets.view.open_asset_bytes).
ASSET_BYTES = """
SELECT a.content_sha256, a.byte_size, a.width, a.height FROM asset a WHERE a.id = %(asset_id)s
"""

ASSET_ALL_FILES = """
SELECT f.path FROM asset_file f WHERE f.asset_id = %(asset_id)s ORDER BY f.rel_path, f.path
"""

ASSET_FILES = """
SELECT f.path, c.path, f.sidecar_path, f.metadata
FROM asset_file f LEFT JOIN collection c ON c.id = f.collection_id
WHERE f.tenant_id = %(tenant_id)s AND f.asset_id = %(asset_id)s
  AND (%(see_all)s OR f.readers && %(principals)s::bigint[])
ORDER BY f.rel_path, f.path
"""

# An asset's search documents as the viewer may read them (0011): the whole
# documents for a viewer who may read every file; else the documents of the
# files it may read (file documents), per language in file order.
ASSET_DOCUMENTS = """
SELECT d.lang, d.title, d.description, d.keywords, d.collections, d.filename, d.creator,
       d.copyright, d.location, d.doc_len, d.vocabulary
FROM search_document d JOIN asset a ON a.id = d.asset_id
WHERE d.tenant_id = %(tenant_id)s AND d.asset_id = %(asset_id)s
  AND (%(see_all)s OR loupe_can_read_doc(a.readers, a.doc_readers, a.embargo_until,
                                         a.rights_expire_at, %(principals)s::bigint[]))
UNION ALL
SELECT x.lang, x.title, x.description, x.keywords, x.collections, x.filename, x.creator,
       x.copyright, x.location, x.doc_len, x.vocabulary
FROM (SELECT fd.*, f.rel_path, f.path
      FROM file_document fd
      JOIN asset_file f ON f.id = fd.file_id
      JOIN asset a ON a.id = fd.asset_id
      WHERE fd.tenant_id = %(tenant_id)s AND fd.asset_id = %(asset_id)s AND NOT %(see_all)s
        AND NOT loupe_can_read_doc(a.readers, a.doc_readers, a.embargo_until,
                                   a.rights_expire_at, %(principals)s::bigint[])
        AND f.readers && %(principals)s::bigint[]
      ORDER BY fd.lang, f.rel_path, f.path) x
"""

# Failures of one run, or of the tenant's latest run when run_id is null.
FAILURES = """
SELECT x.run_id, x.path, x.kind, x.reason, x.severity
FROM ingest_failure x
WHERE x.tenant_id = %(tenant_id)s
  AND x.run_id = coalesce(%(run_id)s::bigint,
                          (SELECT max(id) FROM ingest_run WHERE tenant_id = %(tenant_id)s))
ORDER BY x.severity, x.path
"""

STATS = """
SELECT (SELECT count(*) FROM asset WHERE tenant_id = %(tenant_id)s),
       (SELECT count(*) FROM asset_file WHERE tenant_id = %(tenant_id)s),
       (SELECT count(*) FROM collection WHERE tenant_id = %(tenant_id)s)
"""

# Documents per library language (0 for a language with none yet).
DOC_COUNTS = """
SELECT l.lang, coalesce(s.n_docs, 0)
FROM tenant t
CROSS JOIN LATERAL unnest(t.languages) WITH ORDINALITY AS l(lang, i)
LEFT JOIN corpus_stat s ON s.tenant_id = t.id AND s.lang = l.lang
WHERE t.id = %(tenant_id)s
ORDER BY l.i
"""

# Statistics rows of languages no longer in the library.
DROP_LANGUAGE_STATS = """
DELETE FROM corpus_stat WHERE tenant_id = %(tenant_id)s AND lang <> ALL (%(langs)s)
"""

LEXICAL_CAPS = "SELECT raw_cap, keep_cap FROM lexical_setting WHERE tenant_id = %(tenant_id)s"

ASSETS_WITH_VOCABULARY = """
SELECT DISTINCT av.asset_id FROM asset_vocabulary av JOIN asset a ON a.id = av.asset_id
WHERE a.tenant_id = %(tenant_id)s
"""

# Assets holding a term of the vocabulary directly.
VOCABULARY_ASSETS = """
SELECT count(DISTINCT av.asset_id) FROM asset_vocabulary av
JOIN vocabulary_term t ON t.id = av.term_id WHERE t.vocabulary_id = %(vocabulary_id)s
"""

VOCABULARIES = """
SELECT v.name,
       (SELECT count(*) FROM vocabulary_term t WHERE t.vocabulary_id = v.id),
       (SELECT count(DISTINCT av.asset_id) FROM asset_vocabulary av
        JOIN vocabulary_term t ON t.id = av.term_id WHERE t.vocabulary_id = v.id)
FROM vocabulary v WHERE v.tenant_id = %(tenant_id)s ORDER BY v.name
"""

LEXICAL_SETTINGS = """
SELECT k1, weights, b, vocab_decay, raw_cap, keep_cap FROM lexical_setting
WHERE tenant_id = %(tenant_id)s
"""

SET_LEXICAL_SETTINGS = """
UPDATE lexical_setting
SET k1 = %(k1)s, weights = %(weights)s, b = %(b)s, vocab_decay = %(vocab_decay)s,
    raw_cap = %(raw_cap)s, keep_cap = %(keep_cap)s
WHERE tenant_id = %(tenant_id)s
"""

# Rebuild lexicon, statistics and postings of one language (migration 0002).
REINDEX_LEXICAL = "SELECT loupe_reindex_lexical(%(tenant_id)s, %(lang)s)"

# Fusion settings (migration 0016): the tenant's lane weights and RRF k, the
# defaults (1, 1, 1, 60) when the tenant has no row.
FUSION_SETTINGS = """
SELECT coalesce(f.w_lexical, 1), coalesce(f.w_text, 1), coalesce(f.w_image, 1),
       coalesce(f.rrf_k, 60)
FROM tenant t LEFT JOIN fusion_setting f ON f.tenant_id = t.id
WHERE t.id = %(tenant_id)s
"""

SET_FUSION_SETTINGS = """
INSERT INTO fusion_setting (tenant_id, w_lexical, w_text, w_image, rrf_k)
VALUES (%(tenant_id)s, %(w_lexical)s, %(w_text)s, %(w_image)s, %(rrf_k)s)
ON CONFLICT (tenant_id) DO UPDATE
SET w_lexical = EXCLUDED.w_lexical, w_text = EXCLUDED.w_text, w_image = EXCLUDED.w_image,
    rrf_k = EXCLUDED.rrf_k
"""
