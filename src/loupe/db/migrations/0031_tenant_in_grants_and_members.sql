-- The tables that say who may read what (grants, group members, hand-made
-- collections' members) and people's keywords get the tenant of their rows:
-- tenant_id leads their primary keys, and their foreign keys name it
-- ("(tenant_id, asset_id) REFERENCES asset (tenant_id, id)", on 0030's
-- unique indexes). A grant can then only join an asset, file or collection
-- and a principal of one tenant, whatever the statement that writes it
-- (SPEC P3), and each table can be distributed by tenant with its parents
-- (docs/scaling.md, "Citus"). Every INSERT into them names tenant_id.
--
-- A row whose two parents belong to different tenants gave nothing anyone
-- may use (every read joins on the tenant): it is deleted, not carried.
-- The old primary key's columns stay indexed (not unique), for the
-- statements that look rows up by them.

-- asset_grant
ALTER TABLE asset_grant ADD COLUMN tenant_id bigint;
UPDATE asset_grant x SET tenant_id = p.tenant_id FROM asset p WHERE p.id = x.asset_id;
DELETE FROM asset_grant x USING principal r WHERE r.id = x.principal_id AND r.tenant_id <> x.tenant_id;
ALTER TABLE asset_grant
    ALTER COLUMN tenant_id SET NOT NULL,
    DROP CONSTRAINT asset_grant_pkey,
    ADD CONSTRAINT asset_grant_pkey PRIMARY KEY (tenant_id, asset_id, principal_id),
    DROP CONSTRAINT asset_grant_asset_id_fkey,
    ADD CONSTRAINT asset_grant_asset_id_fkey FOREIGN KEY (tenant_id, asset_id) REFERENCES asset (tenant_id, id) ON DELETE CASCADE,
    DROP CONSTRAINT asset_grant_principal_id_fkey,
    ADD CONSTRAINT asset_grant_principal_id_fkey FOREIGN KEY (tenant_id, principal_id) REFERENCES principal (tenant_id, id) ON DELETE CASCADE;
CREATE INDEX asset_grant_asset_id_key_idx ON asset_grant (asset_id, principal_id);

-- collection_grant
ALTER TABLE collection_grant ADD COLUMN tenant_id bigint;
UPDATE collection_grant x SET tenant_id = p.tenant_id FROM collection p WHERE p.id = x.collection_id;
DELETE FROM collection_grant x USING principal r WHERE r.id = x.principal_id AND r.tenant_id <> x.tenant_id;
ALTER TABLE collection_grant
    ALTER COLUMN tenant_id SET NOT NULL,
    DROP CONSTRAINT collection_grant_pkey,
    ADD CONSTRAINT collection_grant_pkey PRIMARY KEY (tenant_id, collection_id, principal_id),
    DROP CONSTRAINT collection_grant_collection_id_fkey,
    ADD CONSTRAINT collection_grant_collection_id_fkey FOREIGN KEY (tenant_id, collection_id) REFERENCES collection (tenant_id, id) ON DELETE CASCADE,
    DROP CONSTRAINT collection_grant_principal_id_fkey,
    ADD CONSTRAINT collection_grant_principal_id_fkey FOREIGN KEY (tenant_id, principal_id) REFERENCES principal (tenant_id, id) ON DELETE CASCADE;
CREATE INDEX collection_grant_collection_id_key_idx ON collection_grant (collection_id, principal_id);

-- file_grant
ALTER TABLE file_grant ADD COLUMN tenant_id bigint;
UPDATE file_grant x SET tenant_id = p.tenant_id FROM asset_file p WHERE p.id = x.file_id;
DELETE FROM file_grant x USING principal r WHERE r.id = x.principal_id AND r.tenant_id <> x.tenant_id;
ALTER TABLE file_grant
    ALTER COLUMN tenant_id SET NOT NULL,
    DROP CONSTRAINT file_grant_pkey,
    ADD CONSTRAINT file_grant_pkey PRIMARY KEY (tenant_id, file_id, principal_id),
    DROP CONSTRAINT file_grant_file_id_fkey,
    ADD CONSTRAINT file_grant_file_id_fkey FOREIGN KEY (tenant_id, file_id) REFERENCES asset_file (tenant_id, id) ON DELETE CASCADE,
    DROP CONSTRAINT file_grant_principal_id_fkey,
    ADD CONSTRAINT file_grant_principal_id_fkey FOREIGN KEY (tenant_id, principal_id) REFERENCES principal (tenant_id, id) ON DELETE CASCADE;
CREATE INDEX file_grant_file_id_key_idx ON file_grant (file_id, principal_id);

-- group_member
ALTER TABLE group_member ADD COLUMN tenant_id bigint;
UPDATE group_member x SET tenant_id = p.tenant_id FROM principal p WHERE p.id = x.group_id;
DELETE FROM group_member x USING principal r WHERE r.id = x.user_id AND r.tenant_id <> x.tenant_id;
ALTER TABLE group_member
    ALTER COLUMN tenant_id SET NOT NULL,
    DROP CONSTRAINT group_member_pkey,
    ADD CONSTRAINT group_member_pkey PRIMARY KEY (tenant_id, group_id, user_id),
    DROP CONSTRAINT group_member_group_id_fkey,
    ADD CONSTRAINT group_member_group_id_fkey FOREIGN KEY (tenant_id, group_id) REFERENCES principal (tenant_id, id) ON DELETE CASCADE,
    DROP CONSTRAINT group_member_user_id_fkey,
    ADD CONSTRAINT group_member_user_id_fkey FOREIGN KEY (tenant_id, user_id) REFERENCES principal (tenant_id, id) ON DELETE CASCADE;
CREATE INDEX group_member_group_id_key_idx ON group_member (group_id, user_id);

-- collection_member
ALTER TABLE collection_member ADD COLUMN tenant_id bigint;
UPDATE collection_member x SET tenant_id = p.tenant_id FROM collection p WHERE p.id = x.collection_id;
DELETE FROM collection_member x USING asset r WHERE r.id = x.asset_id AND r.tenant_id <> x.tenant_id;
ALTER TABLE collection_member
    ALTER COLUMN tenant_id SET NOT NULL,
    DROP CONSTRAINT collection_member_pkey,
    ADD CONSTRAINT collection_member_pkey PRIMARY KEY (tenant_id, collection_id, asset_id),
    DROP CONSTRAINT collection_member_collection_id_fkey,
    ADD CONSTRAINT collection_member_collection_id_fkey FOREIGN KEY (tenant_id, collection_id) REFERENCES collection (tenant_id, id) ON DELETE CASCADE,
    DROP CONSTRAINT collection_member_asset_id_fkey,
    ADD CONSTRAINT collection_member_asset_id_fkey FOREIGN KEY (tenant_id, asset_id) REFERENCES asset (tenant_id, id) ON DELETE CASCADE;
CREATE INDEX collection_member_collection_id_key_idx ON collection_member (collection_id, asset_id);

-- asset_keyword
ALTER TABLE asset_keyword ADD COLUMN tenant_id bigint;
UPDATE asset_keyword x SET tenant_id = p.tenant_id FROM asset p WHERE p.id = x.asset_id;
ALTER TABLE asset_keyword
    ALTER COLUMN tenant_id SET NOT NULL,
    DROP CONSTRAINT asset_keyword_pkey,
    ADD CONSTRAINT asset_keyword_pkey PRIMARY KEY (tenant_id, asset_id, keyword),
    DROP CONSTRAINT asset_keyword_asset_id_fkey,
    ADD CONSTRAINT asset_keyword_asset_id_fkey FOREIGN KEY (tenant_id, asset_id) REFERENCES asset (tenant_id, id) ON DELETE CASCADE;
CREATE INDEX asset_keyword_asset_id_key_idx ON asset_keyword (asset_id, keyword);
