"""Named SQL of users, groups and grants (tables of migration 0005)."""

CREATE_USER = """
INSERT INTO principal (tenant_id, kind, name, password_hash, admin)
VALUES (%(tenant_id)s, 'user', %(name)s, %(password_hash)s, %(admin)s)
RETURNING id
"""
CREATE_GROUP = """
INSERT INTO principal (tenant_id, kind, name) VALUES (%(tenant_id)s, 'group', %(name)s)
RETURNING id
"""
PRINCIPAL_BY_NAME = """
SELECT id, kind, password_hash, admin FROM principal
WHERE tenant_id = %(tenant_id)s AND name = %(name)s
"""
SET_PASSWORD = "UPDATE principal SET password_hash = %(password_hash)s WHERE id = %(id)s"
ADD_MEMBER = """
INSERT INTO group_member (tenant_id, group_id, user_id)
VALUES (%(tenant_id)s, %(group_id)s, %(user_id)s)
ON CONFLICT DO NOTHING
"""
# A user's groups (ids and names): its principals beyond its own id.
USER_GROUPS = """
SELECT g.id, g.name FROM group_member m JOIN principal g ON g.id = m.group_id
WHERE m.user_id = %(user_id)s ORDER BY g.name
"""
PRINCIPALS = """
SELECT p.name, p.kind, p.admin, p.disabled_at IS NOT NULL AS disabled,
       coalesce((SELECT array_agg(g.name ORDER BY g.name)
                 FROM group_member m JOIN principal g ON g.id = m.group_id
                 WHERE m.user_id = p.id), ARRAY[]::text[]) AS groups,
       coalesce((SELECT array_agg(u.name ORDER BY u.name)
                 FROM group_member m JOIN principal u ON u.id = m.user_id
                 WHERE m.group_id = p.id), ARRAY[]::text[]) AS members
FROM principal p WHERE p.tenant_id = %(tenant_id)s ORDER BY p.kind DESC, p.name
"""
GRANT_COLLECTION = """
INSERT INTO collection_grant (tenant_id, collection_id, principal_id)
VALUES (%(tenant_id)s, %(collection_id)s, %(principal_id)s) ON CONFLICT DO NOTHING
"""
REVOKE_COLLECTION = """
DELETE FROM collection_grant
WHERE collection_id = %(collection_id)s AND principal_id = %(principal_id)s
"""
GRANT_ASSET = """
INSERT INTO asset_grant (tenant_id, asset_id, principal_id)
SELECT a.tenant_id, a.id, %(principal_id)s FROM asset a
WHERE a.id = %(asset_id)s AND a.tenant_id = %(tenant_id)s
ON CONFLICT DO NOTHING
"""
REVOKE_ASSET = """
DELETE FROM asset_grant WHERE asset_id = %(asset_id)s AND principal_id = %(principal_id)s
"""
# A grant on one file of the tenant, named by its full path (migration 0027):
# it reaches that file only, never the asset's other files (a member's upload).
FILE_BY_PATH = "SELECT id FROM asset_file WHERE tenant_id = %(tenant_id)s AND path = %(path)s"
GRANT_FILE = """
INSERT INTO file_grant (tenant_id, file_id, principal_id)
VALUES (%(tenant_id)s, %(file_id)s, %(principal_id)s) ON CONFLICT DO NOTHING
"""
REVOKE_FILE = """
DELETE FROM file_grant WHERE file_id = %(file_id)s AND principal_id = %(principal_id)s
"""
# (a collection grant also gives the collection's id and full path: two
# sources may hold collections of the same path)
GRANTS = """
SELECT p.name, p.kind, 'collection' AS on_kind, c.path AS target, c.id,
       CASE WHEN s.id IS NULL THEN NULL ELSE rtrim(s.root_path, '/') || '/' || c.path END
FROM collection_grant g JOIN principal p ON p.id = g.principal_id
JOIN collection c ON c.id = g.collection_id
LEFT JOIN source s ON s.id = c.source_id
WHERE p.tenant_id = %(tenant_id)s
UNION ALL
SELECT p.name, p.kind, 'asset', g.asset_id::text, NULL, NULL
FROM asset_grant g JOIN principal p ON p.id = g.principal_id
WHERE p.tenant_id = %(tenant_id)s
UNION ALL
SELECT p.name, p.kind, 'file', f.path, NULL, NULL
FROM file_grant g JOIN principal p ON p.id = g.principal_id
JOIN asset_file f ON f.id = g.file_id
WHERE p.tenant_id = %(tenant_id)s
ORDER BY 1, 3, 4, 5
"""
# Embargo and usage-rights dates, for assets of the tenant (others untouched).
SET_EMBARGO = """
UPDATE asset SET embargo_until = %(until)s, updated_at = now()
WHERE tenant_id = %(tenant_id)s AND id = ANY (%(ids)s::bigint[])
"""
SET_RIGHTS_EXPIRY = """
UPDATE asset SET rights_expire_at = %(until)s, updated_at = now()
WHERE tenant_id = %(tenant_id)s AND id = ANY (%(ids)s::bigint[])
"""
# One asset, if the viewer may read it.
CAN_READ = """
SELECT 1 FROM asset a
WHERE a.id = %(asset_id)s AND a.tenant_id = %(tenant_id)s
  AND loupe_can_read(a.readers, a.embargo_until, a.rights_expire_at,
                     %(see_all)s, %(principals)s::bigint[])
"""

# -- the user lifecycle (migration 0009) ---------------------------------------
# Whether a user is disabled (NULL disabled_at: active).
USER_DISABLED = "SELECT disabled_at IS NOT NULL FROM principal WHERE id = %(id)s"
SET_DISABLED = """
UPDATE principal SET disabled_at = CASE WHEN %(disabled)s THEN coalesce(disabled_at, now()) END
WHERE id = %(id)s
"""
# Delete a user: its tokens, group memberships and grants go with it (ON DELETE
# CASCADE of migrations 0005 and 0007); audit rows keep its name as text.
DELETE_USER = "DELETE FROM principal WHERE id = %(id)s AND kind = 'user'"
# Revoke a user's login sessions and API tokens (the kinds listed).
REVOKE_TOKENS = """
DELETE FROM web_token
WHERE user_id = %(id)s AND tenant_id = %(tenant_id)s AND kind = ANY (%(kinds)s::text[])
"""
# One audit row for an action on a user (no query, verdict or count).
AUDIT_USER_ACTION = """
INSERT INTO audit_log (tenant_id, principal_id, actor, action, value, target, count, asset_ids)
VALUES (%(tenant_id)s, %(principal_id)s, %(actor)s, %(action)s, %(value)s, %(target)s, 0,
        '{}'::bigint[])
RETURNING id
"""
