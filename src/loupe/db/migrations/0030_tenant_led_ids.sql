-- Every tenant-owned table with its own id is unique on (tenant_id, id), so
-- that other tables' foreign keys can name the tenant with the row
-- ("(tenant_id, x) REFERENCES t (tenant_id, id)"): the key a database
-- distributed by tenant (Citus) needs, and one that keeps a row from
-- pointing at another tenant's even on one server (SPEC P3).
-- docs/scaling.md, "Citus". IF NOT EXISTS: the same index under the same
-- name may already have been made by another migration that needed it.
CREATE UNIQUE INDEX IF NOT EXISTS asset_tenant_id_uidx ON asset (tenant_id, id);
CREATE UNIQUE INDEX IF NOT EXISTS asset_file_tenant_id_uidx ON asset_file (tenant_id, id);
CREATE UNIQUE INDEX IF NOT EXISTS audit_log_tenant_id_uidx ON audit_log (tenant_id, id);
CREATE UNIQUE INDEX IF NOT EXISTS collection_tenant_id_uidx ON collection (tenant_id, id);
CREATE UNIQUE INDEX IF NOT EXISTS conversation_tenant_id_uidx ON conversation (tenant_id, id);
CREATE UNIQUE INDEX IF NOT EXISTS eval_pool_tenant_id_uidx ON eval_pool (tenant_id, id);
CREATE UNIQUE INDEX IF NOT EXISTS eval_query_set_tenant_id_uidx ON eval_query_set (tenant_id, id);
CREATE UNIQUE INDEX IF NOT EXISTS eval_run_tenant_id_uidx ON eval_run (tenant_id, id);
CREATE UNIQUE INDEX IF NOT EXISTS face_tenant_id_uidx ON face (tenant_id, id);
CREATE UNIQUE INDEX IF NOT EXISTS ingest_failure_tenant_id_uidx ON ingest_failure (tenant_id, id);
CREATE UNIQUE INDEX IF NOT EXISTS ingest_run_tenant_id_uidx ON ingest_run (tenant_id, id);
CREATE UNIQUE INDEX IF NOT EXISTS person_tenant_id_uidx ON person (tenant_id, id);
CREATE UNIQUE INDEX IF NOT EXISTS principal_tenant_id_uidx ON principal (tenant_id, id);
CREATE UNIQUE INDEX IF NOT EXISTS source_tenant_id_uidx ON source (tenant_id, id);
CREATE UNIQUE INDEX IF NOT EXISTS vocabulary_tenant_id_uidx ON vocabulary (tenant_id, id);
CREATE UNIQUE INDEX IF NOT EXISTS vocabulary_term_tenant_id_uidx ON vocabulary_term (tenant_id, id);
CREATE UNIQUE INDEX IF NOT EXISTS web_token_tenant_id_uidx ON web_token (tenant_id, id);
