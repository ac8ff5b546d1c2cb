-- 0023: what people added in Loupe is read through the whole asset only
-- (issue 11, docs/security.md "What a member sees through a copy").
--
-- The same bytes in a shared folder and in a private one are one asset with
-- two files (0011). A hand-made collection holds the asset, not a file: a
-- member who reads only the shared copy must not learn that the asset is in
-- a hand-made collection (its name, or that it exists) when that collection
-- grants the member nothing. 0011's loupe_collection_assets_for counted every
-- hand-made member; it now counts one only when the member reads every file
-- of it (asset.doc_readers, or asset.readers when all files share readers).
-- Used by loupe.queries.COLLECTIONS (a member's collection list and counts)
-- and loupe.scopes.queries.COLLECTION_VISIBLE (which collections a member may
-- name in a scope or a filter). A hand-made collection's own grants reach
-- every file of its assets (loupe_asset_wide_readers), so a member granted
-- the collection still sees all of it.

CREATE OR REPLACE FUNCTION loupe_collection_assets_for(p_collection bigint, p_principals bigint[])
RETURNS bigint[] LANGUAGE sql STABLE AS $$
    WITH RECURSIVE sub AS (
        SELECT id FROM collection WHERE id = p_collection
        UNION ALL
        SELECT c.id FROM collection c JOIN sub ON c.parent_id = sub.id
    )
    SELECT coalesce(array_agg(DISTINCT s.asset_id), '{}')
    FROM (SELECT f.asset_id FROM asset_file f JOIN sub ON f.collection_id = sub.id
          WHERE f.readers && p_principals
          UNION ALL
          SELECT m.asset_id FROM collection_member m JOIN sub ON m.collection_id = sub.id
          JOIN asset a ON a.id = m.asset_id
          WHERE coalesce(a.doc_readers, a.readers) && p_principals) s
$$;
