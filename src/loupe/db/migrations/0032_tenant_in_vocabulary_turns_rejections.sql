-- Assets' vocabulary terms, conversations' turns and "not this person"
-- rejections get the tenant of their rows, leading their primary keys and
-- their foreign keys (as 0031 did for grants; docs/scaling.md, "Citus").
-- Every INSERT into them names tenant_id. A row whose two parents belong
-- to different tenants is deleted; the old primary key's columns stay
-- indexed (not unique) for the statements that look rows up by them.

-- asset_vocabulary
ALTER TABLE asset_vocabulary ADD COLUMN tenant_id bigint;
UPDATE asset_vocabulary x SET tenant_id = p.tenant_id FROM asset p WHERE p.id = x.asset_id;
DELETE FROM asset_vocabulary x USING vocabulary_term r WHERE r.id = x.term_id AND r.tenant_id <> x.tenant_id;
ALTER TABLE asset_vocabulary
    ALTER COLUMN tenant_id SET NOT NULL,
    DROP CONSTRAINT asset_vocabulary_pkey,
    ADD CONSTRAINT asset_vocabulary_pkey PRIMARY KEY (tenant_id, asset_id, term_id),
    DROP CONSTRAINT asset_vocabulary_asset_id_fkey,
    ADD CONSTRAINT asset_vocabulary_asset_id_fkey FOREIGN KEY (tenant_id, asset_id) REFERENCES asset (tenant_id, id) ON DELETE CASCADE,
    DROP CONSTRAINT asset_vocabulary_term_id_fkey,
    ADD CONSTRAINT asset_vocabulary_term_id_fkey FOREIGN KEY (tenant_id, term_id) REFERENCES vocabulary_term (tenant_id, id) ON DELETE CASCADE;
CREATE INDEX asset_vocabulary_asset_id_key_idx ON asset_vocabulary (asset_id, term_id);

-- conversation_turn
ALTER TABLE conversation_turn ADD COLUMN tenant_id bigint;
UPDATE conversation_turn x SET tenant_id = p.tenant_id FROM conversation p WHERE p.id = x.conversation_id;
ALTER TABLE conversation_turn
    ALTER COLUMN tenant_id SET NOT NULL,
    DROP CONSTRAINT conversation_turn_pkey,
    ADD CONSTRAINT conversation_turn_pkey PRIMARY KEY (tenant_id, conversation_id, n),
    DROP CONSTRAINT conversation_turn_conversation_id_fkey,
    ADD CONSTRAINT conversation_turn_conversation_id_fkey FOREIGN KEY (tenant_id, conversation_id) REFERENCES conversation (tenant_id, id) ON DELETE CASCADE;
CREATE INDEX conversation_turn_conversation_id_key_idx ON conversation_turn (conversation_id, n);

-- face_rejection
ALTER TABLE face_rejection ADD COLUMN tenant_id bigint;
UPDATE face_rejection x SET tenant_id = p.tenant_id FROM face p WHERE p.id = x.face_id;
DELETE FROM face_rejection x USING person r WHERE r.id = x.person_id AND r.tenant_id <> x.tenant_id;
ALTER TABLE face_rejection
    ALTER COLUMN tenant_id SET NOT NULL,
    DROP CONSTRAINT face_rejection_pkey,
    ADD CONSTRAINT face_rejection_pkey PRIMARY KEY (tenant_id, face_id, person_id),
    DROP CONSTRAINT face_rejection_face_id_fkey,
    ADD CONSTRAINT face_rejection_face_id_fkey FOREIGN KEY (tenant_id, face_id) REFERENCES face (tenant_id, id) ON DELETE CASCADE,
    DROP CONSTRAINT face_rejection_person_id_fkey,
    ADD CONSTRAINT face_rejection_person_id_fkey FOREIGN KEY (tenant_id, person_id) REFERENCES person (tenant_id, id) ON DELETE CASCADE;
CREATE INDEX face_rejection_face_id_key_idx ON face_rejection (face_id, person_id);
