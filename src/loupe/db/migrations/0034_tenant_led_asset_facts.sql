-- What Loupe computed for an asset (perceptual hashes, machine facts,
-- vectors, the face scan) and the vocabulary's match table are keyed by
-- their tenant first, with foreign keys that name it ("(tenant_id,
-- asset_id) REFERENCES asset (tenant_id, id)", on 0030's unique indexes):
-- docs/scaling.md, "Citus". One row per asset (per model and lane, per
-- detector) as before: an asset id has one tenant. The old keys' columns
-- stay indexed (not unique) for the statements that look rows up by them.
-- The rescan trigger deletes the face scan of the asset's own tenant.

ALTER TABLE asset_phash
    DROP CONSTRAINT asset_phash_pkey,
    ADD CONSTRAINT asset_phash_pkey PRIMARY KEY (tenant_id, asset_id),
    DROP CONSTRAINT asset_phash_asset_id_fkey,
    ADD CONSTRAINT asset_phash_asset_id_fkey FOREIGN KEY (tenant_id, asset_id)
        REFERENCES asset (tenant_id, id) ON DELETE CASCADE;
CREATE INDEX asset_phash_asset_id_key_idx ON asset_phash (asset_id);

ALTER TABLE asset_machine
    DROP CONSTRAINT asset_machine_pkey,
    ADD CONSTRAINT asset_machine_pkey PRIMARY KEY (tenant_id, asset_id),
    DROP CONSTRAINT asset_machine_asset_id_fkey,
    ADD CONSTRAINT asset_machine_asset_id_fkey FOREIGN KEY (tenant_id, asset_id)
        REFERENCES asset (tenant_id, id) ON DELETE CASCADE;
CREATE INDEX asset_machine_asset_id_key_idx ON asset_machine (asset_id);

ALTER TABLE asset_vector
    DROP CONSTRAINT asset_vector_pkey,
    ADD CONSTRAINT asset_vector_pkey PRIMARY KEY (tenant_id, asset_id, model_id, lane),
    DROP CONSTRAINT asset_vector_asset_id_fkey,
    ADD CONSTRAINT asset_vector_asset_id_fkey FOREIGN KEY (tenant_id, asset_id)
        REFERENCES asset (tenant_id, id) ON DELETE CASCADE;
CREATE INDEX asset_vector_asset_id_key_idx ON asset_vector (asset_id, model_id, lane);

ALTER TABLE face_scan
    DROP CONSTRAINT face_scan_pkey,
    ADD CONSTRAINT face_scan_pkey PRIMARY KEY (tenant_id, asset_id, detector),
    DROP CONSTRAINT face_scan_asset_id_fkey,
    ADD CONSTRAINT face_scan_asset_id_fkey FOREIGN KEY (tenant_id, asset_id)
        REFERENCES asset (tenant_id, id) ON DELETE CASCADE;
CREATE INDEX face_scan_asset_id_key_idx ON face_scan (asset_id, detector);

ALTER TABLE vocabulary_match
    DROP CONSTRAINT vocabulary_match_term_id_fkey,
    ADD CONSTRAINT vocabulary_match_term_id_fkey FOREIGN KEY (tenant_id, term_id)
        REFERENCES vocabulary_term (tenant_id, id) ON DELETE CASCADE;

CREATE OR REPLACE FUNCTION loupe_faces_rescan() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM face_scan WHERE tenant_id = NEW.tenant_id AND asset_id = NEW.id;
    RETURN NULL;
END $$;
