-- The evaluation's queries, pools, judgements and runs' rows get the
-- tenant of their rows, leading their keys, uniques and foreign keys (as
-- 0031 and 0032 did; docs/scaling.md, "Citus"). Every INSERT into them
-- names tenant_id. eval_query and eval_pool_item keep their id primary key
-- for now, unique on (tenant_id, id) as 0030 made the other parents. A
-- row whose parents belong to different tenants is deleted; the old keys'
-- columns stay indexed (not unique) for the statements that look rows up
-- by them.

-- eval_query (a parent: eval_run_hit, eval_run_query, eval_pool_item)
ALTER TABLE eval_query ADD COLUMN tenant_id bigint;
UPDATE eval_query x SET tenant_id = p.tenant_id FROM eval_query_set p WHERE p.id = x.set_id;
ALTER TABLE eval_query
    ALTER COLUMN tenant_id SET NOT NULL,
    DROP CONSTRAINT eval_query_set_id_qid_key,
    ADD CONSTRAINT eval_query_set_id_qid_key UNIQUE (tenant_id, set_id, qid),
    DROP CONSTRAINT eval_query_set_id_fkey,
    ADD CONSTRAINT eval_query_set_id_fkey FOREIGN KEY (tenant_id, set_id)
        REFERENCES eval_query_set (tenant_id, id) ON DELETE CASCADE;
CREATE UNIQUE INDEX eval_query_tenant_id_uidx ON eval_query (tenant_id, id);

-- eval_pool_item (a parent: eval_judgement)
ALTER TABLE eval_pool_item ADD COLUMN tenant_id bigint;
UPDATE eval_pool_item x SET tenant_id = p.tenant_id FROM eval_pool p WHERE p.id = x.pool_id;
DELETE FROM eval_pool_item x USING eval_query r WHERE r.id = x.query_id AND r.tenant_id <> x.tenant_id;
DELETE FROM eval_pool_item x USING asset r WHERE r.id = x.asset_id AND r.tenant_id <> x.tenant_id;
ALTER TABLE eval_pool_item
    ALTER COLUMN tenant_id SET NOT NULL,
    DROP CONSTRAINT eval_pool_item_token_key,
    ADD CONSTRAINT eval_pool_item_token_key UNIQUE (tenant_id, token),
    DROP CONSTRAINT eval_pool_item_pool_id_query_id_asset_id_key,
    ADD CONSTRAINT eval_pool_item_pool_id_query_id_asset_id_key
        UNIQUE (tenant_id, pool_id, query_id, asset_id),
    DROP CONSTRAINT eval_pool_item_pool_id_position_key,
    ADD CONSTRAINT eval_pool_item_pool_id_position_key UNIQUE (tenant_id, pool_id, "position"),
    DROP CONSTRAINT eval_pool_item_pool_id_fkey,
    ADD CONSTRAINT eval_pool_item_pool_id_fkey FOREIGN KEY (tenant_id, pool_id)
        REFERENCES eval_pool (tenant_id, id) ON DELETE CASCADE,
    DROP CONSTRAINT eval_pool_item_query_id_fkey,
    ADD CONSTRAINT eval_pool_item_query_id_fkey FOREIGN KEY (tenant_id, query_id)
        REFERENCES eval_query (tenant_id, id) ON DELETE CASCADE,
    DROP CONSTRAINT eval_pool_item_asset_id_fkey,
    ADD CONSTRAINT eval_pool_item_asset_id_fkey FOREIGN KEY (tenant_id, asset_id)
        REFERENCES asset (tenant_id, id) ON DELETE CASCADE;
CREATE UNIQUE INDEX eval_pool_item_tenant_id_uidx ON eval_pool_item (tenant_id, id);
CREATE INDEX eval_pool_item_token_idx ON eval_pool_item (token);
CREATE INDEX eval_pool_item_pool_idx ON eval_pool_item (pool_id, query_id, asset_id);

-- eval_judgement
ALTER TABLE eval_judgement ADD COLUMN tenant_id bigint;
UPDATE eval_judgement x SET tenant_id = p.tenant_id FROM eval_pool_item p WHERE p.id = x.item_id;
ALTER TABLE eval_judgement
    ALTER COLUMN tenant_id SET NOT NULL,
    DROP CONSTRAINT eval_judgement_pkey,
    ADD CONSTRAINT eval_judgement_pkey PRIMARY KEY (tenant_id, item_id, judge),
    DROP CONSTRAINT eval_judgement_item_id_fkey,
    ADD CONSTRAINT eval_judgement_item_id_fkey FOREIGN KEY (tenant_id, item_id)
        REFERENCES eval_pool_item (tenant_id, id) ON DELETE CASCADE;
CREATE INDEX eval_judgement_item_id_key_idx ON eval_judgement (item_id, judge);

-- eval_pool_run
ALTER TABLE eval_pool_run ADD COLUMN tenant_id bigint;
UPDATE eval_pool_run x SET tenant_id = p.tenant_id FROM eval_pool p WHERE p.id = x.pool_id;
DELETE FROM eval_pool_run x USING eval_run r WHERE r.id = x.run_id AND r.tenant_id <> x.tenant_id;
ALTER TABLE eval_pool_run
    ALTER COLUMN tenant_id SET NOT NULL,
    DROP CONSTRAINT eval_pool_run_pkey,
    ADD CONSTRAINT eval_pool_run_pkey PRIMARY KEY (tenant_id, pool_id, run_id),
    DROP CONSTRAINT eval_pool_run_pool_id_fkey,
    ADD CONSTRAINT eval_pool_run_pool_id_fkey FOREIGN KEY (tenant_id, pool_id)
        REFERENCES eval_pool (tenant_id, id) ON DELETE CASCADE,
    DROP CONSTRAINT eval_pool_run_run_id_fkey,
    ADD CONSTRAINT eval_pool_run_run_id_fkey FOREIGN KEY (tenant_id, run_id)
        REFERENCES eval_run (tenant_id, id) ON DELETE CASCADE;
CREATE INDEX eval_pool_run_pool_id_key_idx ON eval_pool_run (pool_id, run_id);

-- eval_run_hit
ALTER TABLE eval_run_hit ADD COLUMN tenant_id bigint;
UPDATE eval_run_hit x SET tenant_id = p.tenant_id FROM eval_run p WHERE p.id = x.run_id;
DELETE FROM eval_run_hit x USING eval_query r WHERE r.id = x.query_id AND r.tenant_id <> x.tenant_id;
DELETE FROM eval_run_hit x USING asset r WHERE r.id = x.asset_id AND r.tenant_id <> x.tenant_id;
ALTER TABLE eval_run_hit
    ALTER COLUMN tenant_id SET NOT NULL,
    DROP CONSTRAINT eval_run_hit_pkey,
    ADD CONSTRAINT eval_run_hit_pkey PRIMARY KEY (tenant_id, run_id, query_id, rank),
    DROP CONSTRAINT eval_run_hit_run_id_fkey,
    ADD CONSTRAINT eval_run_hit_run_id_fkey FOREIGN KEY (tenant_id, run_id)
        REFERENCES eval_run (tenant_id, id) ON DELETE CASCADE,
    DROP CONSTRAINT eval_run_hit_query_id_fkey,
    ADD CONSTRAINT eval_run_hit_query_id_fkey FOREIGN KEY (tenant_id, query_id)
        REFERENCES eval_query (tenant_id, id) ON DELETE CASCADE,
    DROP CONSTRAINT eval_run_hit_asset_id_fkey,
    ADD CONSTRAINT eval_run_hit_asset_id_fkey FOREIGN KEY (tenant_id, asset_id)
        REFERENCES asset (tenant_id, id) ON DELETE CASCADE;
CREATE INDEX eval_run_hit_run_id_key_idx ON eval_run_hit (run_id, query_id, rank);

-- eval_run_query
ALTER TABLE eval_run_query ADD COLUMN tenant_id bigint;
UPDATE eval_run_query x SET tenant_id = p.tenant_id FROM eval_run p WHERE p.id = x.run_id;
DELETE FROM eval_run_query x USING eval_query r WHERE r.id = x.query_id AND r.tenant_id <> x.tenant_id;
ALTER TABLE eval_run_query
    ALTER COLUMN tenant_id SET NOT NULL,
    DROP CONSTRAINT eval_run_query_pkey,
    ADD CONSTRAINT eval_run_query_pkey PRIMARY KEY (tenant_id, run_id, query_id),
    DROP CONSTRAINT eval_run_query_run_id_fkey,
    ADD CONSTRAINT eval_run_query_run_id_fkey FOREIGN KEY (tenant_id, run_id)
        REFERENCES eval_run (tenant_id, id) ON DELETE CASCADE,
    DROP CONSTRAINT eval_run_query_query_id_fkey,
    ADD CONSTRAINT eval_run_query_query_id_fkey FOREIGN KEY (tenant_id, query_id)
        REFERENCES eval_query (tenant_id, id) ON DELETE CASCADE;
CREATE INDEX eval_run_query_run_id_key_idx ON eval_run_query (run_id, query_id);
