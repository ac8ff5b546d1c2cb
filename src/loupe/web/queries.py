"""Named SQL of the web app (migration 0007). Every statement is
parameterised and bound to one tenant; secrets are looked up by hash only."""

# A new session or API token; the secret itself is never stored.
CREATE_TOKEN = """
INSERT INTO web_token (tenant_id, user_id, kind, label, token_sha256, expires_at)
VALUES (%(tenant_id)s, %(user_id)s, %(kind)s, %(label)s, %(sha)s,
        CASE WHEN %(ttl_s)s::int IS NULL THEN NULL
             ELSE now() + make_interval(secs => %(ttl_s)s::int) END)
RETURNING id, created_at, expires_at
"""

# The user a presented secret belongs to, if it is live; touches last_used_at
# at most once a minute so that a burst of requests writes once.
TOKEN_USER = """
WITH t AS (
    SELECT w.id, w.user_id, w.kind, w.last_used_at
    FROM web_token w
    WHERE w.token_sha256 = %(sha)s AND w.tenant_id = %(tenant_id)s
      AND (w.expires_at IS NULL OR w.expires_at > now())
), touch AS (
    UPDATE web_token SET last_used_at = now()
    FROM t WHERE web_token.id = t.id
      AND (t.last_used_at IS NULL OR t.last_used_at < now() - interval '1 minute')
)
SELECT t.user_id, u.name, t.kind
FROM t JOIN principal u ON u.id = t.user_id AND u.kind = 'user' AND u.tenant_id = %(tenant_id)s
"""

# The cap on a user's live secrets of one kind: keep the
# newest %(keep)s live sessions (or API tokens) of the user, revoke the older
# ones, and drop that user's expired ones of the kind; returns the ids gone.
TRIM_TOKENS = """
DELETE FROM web_token w
WHERE w.tenant_id = %(tenant_id)s AND w.user_id = %(user_id)s AND w.kind = %(kind)s
  AND (w.expires_at <= now()
       OR w.id NOT IN (SELECT k.id FROM web_token k
                       WHERE k.tenant_id = %(tenant_id)s AND k.user_id = %(user_id)s
                         AND k.kind = %(kind)s
                         AND (k.expires_at IS NULL OR k.expires_at > now())
                       ORDER BY k.created_at DESC, k.id DESC
                       LIMIT %(keep)s))
RETURNING w.id
"""

DELETE_TOKEN = "DELETE FROM web_token WHERE token_sha256 = %(sha)s AND tenant_id = %(tenant_id)s"

# The tenant's ingest runs, newest first, with their failure counts.
INGEST_RUNS = """
SELECT r.id, s.root_path, r.started_at, r.finished_at, r.summary,
       (SELECT count(*) FROM ingest_failure f WHERE f.run_id = r.id) AS problems
FROM ingest_run r JOIN source s ON s.id = r.source_id
WHERE r.tenant_id = %(tenant_id)s
ORDER BY r.id DESC
LIMIT %(limit)s
"""

# Assets with a file in the source an ingest run read (an upload batch), and
# whether the run created them (false: the same bytes were already an asset,
# which the uploader must not gain access to by uploading a copy).
RUN_ASSETS = """
SELECT a.id, a.created_at >= r.started_at AS created
FROM ingest_run r
JOIN asset a ON a.tenant_id = r.tenant_id
WHERE r.id = %(run_id)s AND r.tenant_id = %(tenant_id)s
  AND a.id IN (SELECT f.asset_id FROM asset_file f
               WHERE f.source_id = r.source_id AND f.tenant_id = r.tenant_id)
ORDER BY a.id
"""

# The files an upload's ingest run stored whose asset it created (a
# member's upload is granted as these files, never as their assets:
# migration 0027).
RUN_NEW_FILES = """
SELECT f.path
FROM ingest_run r
JOIN asset_file f ON f.source_id = r.source_id AND f.tenant_id = r.tenant_id
JOIN asset a ON a.id = f.asset_id
WHERE r.id = %(run_id)s AND r.tenant_id = %(tenant_id)s AND a.created_at >= r.started_at
ORDER BY f.path
"""

# What a user's uploads cost the search index: the distinct terms (one per
# term and language) of its uploaded files (granted to it by file grants,
# under its upload folder, given as ``prefix``: the resolved folder and '/'):
# a file's own documents (0011's file_document, which exist when its asset
# has more than one file), else the asset's search document, the file's own. Never the
# whole document of a shared asset: it holds the words of other files, a
# private copy's among them, and a 413 naming the count would tell the uploader
# how many words another user's private copy holds. Charged against its byte quota
# (loupe.web.uploads.INDEX_BYTES_PER_TERM).
UPLOAD_INDEX_TERMS = """
WITH mine AS (
    SELECT DISTINCT f.id AS file_id, f.asset_id
    FROM file_grant g JOIN asset_file f ON f.id = g.file_id
    WHERE g.principal_id = %(user_id)s AND f.tenant_id = %(tenant_id)s
      AND starts_with(f.path, %(prefix)s)
)
SELECT coalesce(sum(t.n), 0)::bigint FROM (
    SELECT length(fd.tsv) + length(fd.vocab_tsv) AS n
    FROM mine m JOIN file_document fd ON fd.file_id = m.file_id
    UNION ALL
    SELECT length(d.tsv) + length(d.vocab_tsv)
    FROM (SELECT DISTINCT asset_id FROM mine) m
    JOIN search_document d ON d.asset_id = m.asset_id
    WHERE NOT EXISTS (SELECT 1 FROM file_document fd WHERE fd.asset_id = m.asset_id)
) t
"""

# Each file's path relative to the folder it was ingested from, by absolute
# path: what a member is shown instead of the server's paths.
RELATIVE_PATHS = """
SELECT f.path, f.rel_path FROM asset_file f
WHERE f.tenant_id = %(tenant_id)s AND f.path = ANY (%(paths)s::text[])
"""


# The longest a statement of one database session may run, in milliseconds (text):
# PostgreSQL's statement_timeout for the web server's connections
# (WebLimits.statement_timeout_s); a statement past it fails with
# SQLSTATE 57014 (query_canceled).
SET_STATEMENT_TIMEOUT = "SELECT set_config('statement_timeout', %(ms)s, false)"
