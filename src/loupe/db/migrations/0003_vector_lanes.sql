-- 0003: vector lanes (issue 4; SPEC V1–V7).
--
-- Every stored vector records the model that made it (V3): a query vector is
-- only ever compared with vectors of its own model. Lanes:
--   image    vectors of the pixels only (V7)
--   text     vectors of the budgeted embedding text of the search document (S5)
--   caption  the same text through an image-text model (index variant, E4)
--   both     normalised sum of image and caption vectors (index variant, E4)

-- A model known to the database: name as installed under <home>/models,
-- kind and vector width, from its loupe-model.json.
CREATE TABLE embedding_model (
    id          serial PRIMARY KEY,
    name        text NOT NULL UNIQUE,
    kind        text NOT NULL,
    dims        integer NOT NULL CHECK (dims BETWEEN 1 AND 2000),
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- The model a tenant searches each production lane with.
CREATE TABLE lane_model (
    tenant_id  bigint NOT NULL REFERENCES tenant(id) ON DELETE CASCADE,
    lane       text NOT NULL CHECK (lane IN ('image', 'text')),
    model_id   integer NOT NULL REFERENCES embedding_model(id),
    PRIMARY KEY (tenant_id, lane)
);

-- Vectors. The column is dimensionless (models differ in width); each
-- (model, lane) gets a partial HNSW index on the vector cast to its width
-- (created by Loupe when the model is put to use, see loupe.vector.queries).
CREATE TABLE asset_vector (
    asset_id    bigint NOT NULL REFERENCES asset(id) ON DELETE CASCADE,
    tenant_id   bigint NOT NULL REFERENCES tenant(id) ON DELETE CASCADE,
    model_id    integer NOT NULL REFERENCES embedding_model(id) ON DELETE CASCADE,
    lane        text NOT NULL CHECK (lane IN ('image', 'text', 'caption', 'both')),
    embedding   vector NOT NULL,
    source_hash bytea,         -- sha256 of what was embedded (text lanes), to skip unchanged
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (asset_id, model_id, lane)
);
CREATE INDEX asset_vector_model_idx ON asset_vector (model_id, lane, tenant_id);

-- Vectors per tenant, model and lane, kept by trigger in the writing
-- transaction: with the tenant's asset count this tells how many assets are
-- still waiting for a vector (C4: their absence makes a vector lane's part
-- of a verdict unknown) without counting the table at query time.
CREATE TABLE vector_stat (
    tenant_id  bigint NOT NULL,
    model_id   integer NOT NULL,
    lane       text NOT NULL,
    n_vectors  bigint NOT NULL CHECK (n_vectors >= 0),
    PRIMARY KEY (tenant_id, model_id, lane)
);

-- Statement-level triggers with transition tables: one upsert per statement
-- and (tenant, model, lane), not one per row — a row-level counter update
-- rewrites the same row once per vector, which a bulk load of a million
-- vectors in one transaction turns into a chain of a million row versions.
CREATE FUNCTION loupe_vector_stat_ins() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO vector_stat AS s (tenant_id, model_id, lane, n_vectors)
    SELECT tenant_id, model_id, lane, count(*) FROM new_rows GROUP BY 1, 2, 3
    ON CONFLICT (tenant_id, model_id, lane) DO UPDATE SET n_vectors = s.n_vectors + EXCLUDED.n_vectors;
    RETURN NULL;
END
$$;
CREATE FUNCTION loupe_vector_stat_del() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE vector_stat s SET n_vectors = s.n_vectors - d.n
    FROM (SELECT tenant_id, model_id, lane, count(*) AS n FROM old_rows GROUP BY 1, 2, 3) d
    WHERE s.tenant_id = d.tenant_id AND s.model_id = d.model_id AND s.lane = d.lane;
    RETURN NULL;
END
$$;
CREATE TRIGGER asset_vector_stat_ins AFTER INSERT ON asset_vector
REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION loupe_vector_stat_ins();
CREATE TRIGGER asset_vector_stat_del AFTER DELETE ON asset_vector
REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION loupe_vector_stat_del();

-- Assets per tenant, kept the same way (every asset, with or without documents).
CREATE TABLE asset_stat (
    tenant_id  bigint PRIMARY KEY,
    n_assets   bigint NOT NULL CHECK (n_assets >= 0)
);
INSERT INTO asset_stat SELECT tenant_id, count(*) FROM asset GROUP BY tenant_id;

CREATE FUNCTION loupe_asset_stat_ins() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO asset_stat AS s (tenant_id, n_assets)
    SELECT tenant_id, count(*) FROM new_rows GROUP BY 1
    ON CONFLICT (tenant_id) DO UPDATE SET n_assets = s.n_assets + EXCLUDED.n_assets;
    RETURN NULL;
END
$$;
CREATE FUNCTION loupe_asset_stat_del() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE asset_stat s SET n_assets = s.n_assets - d.n
    FROM (SELECT tenant_id, count(*) AS n FROM old_rows GROUP BY 1) d
    WHERE s.tenant_id = d.tenant_id;
    RETURN NULL;
END
$$;
CREATE TRIGGER asset_stat_ins AFTER INSERT ON asset
REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION loupe_asset_stat_ins();
CREATE TRIGGER asset_stat_del AFTER DELETE ON asset
REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION loupe_asset_stat_del();
