-- 0027: grants on one file; a member's upload is granted as its file
-- (issue 11, attack run 7, D9).
--
-- Until now the server granted a member's upload as an ASSET (asset_grant).
-- An asset is one content: when the owner later ingested a private file
-- with the same bytes (private/secret.jpg with a sidecar titled "Project
-- Falcon"), that file joined the member's asset, and an asset-wide grant
-- reaches every file of its asset (0011: loupe_asset_wide_readers), so the
-- member read the private file's path, sidecar, title, keywords, creator and
-- collection, and found the asset by "falcon".
--
-- A grant on a file reaches that file only: it joins the file's readers
-- (asset_file.readers, 0011) and therefore asset.readers (the union over the
-- files), never the readers of the asset's other files. With a second file
-- of other readers, the asset's doc_readers (0011) no longer hold the
-- member, who is then matched against its own file's document and shown its
-- own file only: the same per-file rule as a copy in a shared folder.
--
--   file_grant     (file, principal): the file's readers include the principal.
--
-- A file grant follows the file's row: it goes with the file (ON DELETE
-- CASCADE) and stays when the file's bytes change (the row keeps its id).

CREATE TABLE file_grant (
    file_id      bigint NOT NULL REFERENCES asset_file(id) ON DELETE CASCADE,
    principal_id bigint NOT NULL REFERENCES principal(id) ON DELETE CASCADE,
    granted_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (file_id, principal_id)
);
CREATE INDEX file_grant_principal_idx ON file_grant (principal_id);

-- The principals granted one file by a file grant.
CREATE FUNCTION loupe_file_grant_readers(p_file bigint) RETURNS bigint[]
LANGUAGE sql STABLE AS $$
    SELECT coalesce(array_agg(g.principal_id ORDER BY g.principal_id), '{}')
    FROM file_grant g WHERE g.file_id = p_file
$$;

-- 0005's loupe_asset_readers (its own grants, the grants of every
-- collection holding one of its files or holding it by hand, and of their
-- ancestors) plus the file grants of its files: still the union over its
-- files' readers.
CREATE OR REPLACE FUNCTION loupe_asset_readers(p_asset bigint) RETURNS bigint[]
LANGUAGE sql STABLE AS $$
    WITH RECURSIVE up AS (
        SELECT c.id, c.parent_id
        FROM asset_file f JOIN collection c ON c.id = f.collection_id
        WHERE f.asset_id = p_asset
        UNION
        SELECT c.id, c.parent_id
        FROM collection_member m JOIN collection c ON c.id = m.collection_id
        WHERE m.asset_id = p_asset
        UNION
        SELECT c.id, c.parent_id FROM collection c JOIN up ON c.id = up.parent_id
    )
    SELECT coalesce(array_agg(DISTINCT s.principal_id ORDER BY s.principal_id), '{}')
    FROM (SELECT principal_id FROM asset_grant WHERE asset_id = p_asset
          UNION ALL
          SELECT g.principal_id FROM collection_grant g JOIN up ON g.collection_id = up.id
          UNION ALL
          SELECT g.principal_id FROM file_grant g JOIN asset_file f ON f.id = g.file_id
          WHERE f.asset_id = p_asset) s
$$;

-- 0011's loupe_refresh_readers, each file's readers now with its file
-- grants (the rest unchanged: asset.readers from loupe_asset_readers above,
-- doc_readers the intersection of the files' readers when they differ).
CREATE OR REPLACE FUNCTION loupe_refresh_readers(p_assets bigint[]) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    UPDATE asset_file f SET readers = r.readers
    FROM (SELECT f2.id,
                 (SELECT coalesce(array_agg(DISTINCT x ORDER BY x), '{}')
                  FROM unnest(loupe_file_collection_readers(f2.collection_id)
                              || loupe_asset_wide_readers(f2.asset_id)
                              || loupe_file_grant_readers(f2.id)) AS x) AS readers
          FROM asset_file f2 WHERE f2.asset_id = ANY (p_assets)) r
    WHERE f.id = r.id AND f.readers IS DISTINCT FROM r.readers;
    UPDATE asset a SET readers = r.readers, doc_readers = r.doc_readers
    FROM (SELECT a2.id, loupe_asset_readers(a2.id) AS readers,
                 CASE WHEN (SELECT count(DISTINCT f.readers) FROM asset_file f
                            WHERE f.asset_id = a2.id) <= 1 THEN NULL
                      ELSE (SELECT coalesce(array_agg(x.p ORDER BY x.p), '{}')
                            FROM (SELECT p FROM asset_file f, unnest(f.readers) AS p
                                  WHERE f.asset_id = a2.id
                                  GROUP BY p
                                  HAVING count(*) = (SELECT count(*) FROM asset_file f3
                                                     WHERE f3.asset_id = a2.id)) x)
                 END AS doc_readers
          FROM asset a2 WHERE a2.id = ANY (p_assets)) r
    WHERE a.id = r.id
      AND (a.readers IS DISTINCT FROM r.readers OR a.doc_readers IS DISTINCT FROM r.doc_readers);
END
$$;

-- A file grant given or taken back changes its file's asset. (When the
-- grant goes because its file is deleted, the file's own trigger, 0005's
-- asset_file_readers, refreshes the asset; the file row is gone here.)
CREATE FUNCTION loupe_file_grant_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    v_asset bigint;
BEGIN
    SELECT f.asset_id INTO v_asset FROM asset_file f
    WHERE f.id = coalesce(NEW.file_id, OLD.file_id);
    IF v_asset IS NOT NULL THEN
        PERFORM loupe_refresh_readers(ARRAY[v_asset]);
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER file_grant_readers AFTER INSERT OR DELETE ON file_grant
FOR EACH ROW EXECUTE FUNCTION loupe_file_grant_changed();

-- Existing libraries: the asset grants that uploads made become file
-- grants. An upload of user U was written to HOME/uploads/<folder of U>/
-- <UTC time>-<6 hex>/<name> (loupe.web.service.upload_folder_name: the name
-- itself when plain, else the name folded to [A-Za-z0-9._-] then '@' and 16
-- hex digits of its SHA-256; before attack run 6's C3 fix, the name with
-- every run of other characters replaced by '_'). An asset grant of U on an
-- asset with a file in such a folder of U is replaced by file grants on
-- those files; the asset's other files (a private copy ingested later) no
-- longer reach U. (An admin who had also granted such an asset by hand
-- grants it again: the two grants were one row and cannot be told apart.)
CREATE TEMPORARY TABLE upload_grant_0027 ON COMMIT DROP AS
SELECT g.asset_id, g.principal_id, f.id AS file_id
FROM asset_grant g
JOIN principal p ON p.id = g.principal_id AND p.kind = 'user'
JOIN asset_file f ON f.asset_id = g.asset_id
CROSS JOIN LATERAL (
    SELECT substring(f.path FROM '/uploads/([^/]+)/[0-9]{8}T[0-9]{6}Z-[0-9a-f]{6}/[^/]+$')
           AS folder,
           CASE WHEN p.name ~ '^[A-Za-z0-9_-][A-Za-z0-9._-]{0,99}$' AND p.name <> 'owner'
                THEN p.name
                ELSE coalesce(nullif(left(ltrim(replace(
                         regexp_replace(p.name, '[^A-Za-z0-9._ -]+', '_', 'g'), ' ', '_'), '.'),
                         100), ''), 'user')
                     || '@' || left(encode(sha256(convert_to(p.name, 'UTF8')), 'hex'), 16)
           END AS current_folder,
           regexp_replace(p.name, '[^A-Za-z0-9._ -]+', '_', 'g') AS legacy_folder
) u
WHERE u.folder IN (u.current_folder, u.legacy_folder);

INSERT INTO file_grant (file_id, principal_id)
SELECT DISTINCT file_id, principal_id FROM upload_grant_0027
ON CONFLICT DO NOTHING;

DELETE FROM asset_grant g
USING (SELECT DISTINCT asset_id, principal_id FROM upload_grant_0027) u
WHERE g.asset_id = u.asset_id AND g.principal_id = u.principal_id;
