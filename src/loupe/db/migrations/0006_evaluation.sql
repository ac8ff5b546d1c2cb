-- 0006: the evaluation instrument (SPEC E1–E9).
--
-- Query sets with provenance, runs, pools of results shown to blind judges
-- and their graded judgements; and a role that can only read, through which
-- the instrument produces runs (E1: it cannot change settings or rebuild an
-- index).

-- A named set of queries (E2), imported from a JSONL file (loupe.eval.queryset).
CREATE TABLE eval_query_set (
    id          bigserial PRIMARY KEY,
    tenant_id   bigint NOT NULL REFERENCES tenant(id) ON DELETE CASCADE,
    name        text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, name)
);

-- One query. qid is the file's id (unique in its set); provenance 'blind'
-- (written from pixels only) or 'caption-derived' (a paraphrase of a caption,
-- the positive control); register objects/style/question; strata free labels
-- {"category": "animals", ...}; truth: agreed ground truth as a list of
-- {"path": rel_path | "sha256": hex, "grade": 0..2} (references that
-- survive a re-ingest, resolved to asset ids when a run is scored).
CREATE TABLE eval_query (
    id          bigserial PRIMARY KEY,
    set_id      bigint NOT NULL REFERENCES eval_query_set(id) ON DELETE CASCADE,
    qid         text NOT NULL,
    text        text NOT NULL,
    provenance  text NOT NULL CHECK (provenance IN ('blind', 'caption-derived')),
    register    text NOT NULL CHECK (register IN ('objects', 'style', 'question')),
    strata      jsonb NOT NULL DEFAULT '{}'::jsonb,
    truth       jsonb NOT NULL DEFAULT '[]'::jsonb,
    UNIQUE (set_id, qid)
);

-- A run: one system over one query set, top-k per query.
CREATE TABLE eval_run (
    id          bigserial PRIMARY KEY,
    tenant_id   bigint NOT NULL REFERENCES tenant(id) ON DELETE CASCADE,
    set_id      bigint NOT NULL REFERENCES eval_query_set(id) ON DELETE CASCADE,
    name        text NOT NULL,
    system      text NOT NULL,
    model       text,
    k           integer NOT NULL CHECK (k > 0),
    created_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, name)
);

CREATE TABLE eval_run_hit (
    run_id      bigint NOT NULL REFERENCES eval_run(id) ON DELETE CASCADE,
    query_id    bigint NOT NULL REFERENCES eval_query(id) ON DELETE CASCADE,
    rank        integer NOT NULL CHECK (rank > 0),
    asset_id    bigint NOT NULL REFERENCES asset(id) ON DELETE CASCADE,
    score       double precision NOT NULL,
    distance    double precision,        -- cosine distance for vector systems
    PRIMARY KEY (run_id, query_id, rank)
);

-- A judging pool over one query set (E7): every (query, asset) pair that
-- some pooled run put in its top 10, once, in a seeded shuffled order.
CREATE TABLE eval_pool (
    id          bigserial PRIMARY KEY,
    tenant_id   bigint NOT NULL REFERENCES tenant(id) ON DELETE CASCADE,
    set_id      bigint NOT NULL REFERENCES eval_query_set(id) ON DELETE CASCADE,
    name        text NOT NULL,
    depth       integer NOT NULL DEFAULT 10 CHECK (depth > 0),
    seed        bigint NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, name)
);

-- Runs that contributed to a pool (re-pooling adds only new runs).
CREATE TABLE eval_pool_run (
    pool_id     bigint NOT NULL REFERENCES eval_pool(id) ON DELETE CASCADE,
    run_id      bigint NOT NULL REFERENCES eval_run(id) ON DELETE CASCADE,
    round       integer NOT NULL,
    PRIMARY KEY (pool_id, run_id)
);

-- One pair to judge. token: random and opaque (the judging page names the
-- pair and its picture by it, never by asset id or path); position: the
-- shuffled order judges see, rounds appended after earlier ones.
CREATE TABLE eval_pool_item (
    id          bigserial PRIMARY KEY,
    pool_id     bigint NOT NULL REFERENCES eval_pool(id) ON DELETE CASCADE,
    query_id    bigint NOT NULL REFERENCES eval_query(id) ON DELETE CASCADE,
    asset_id    bigint NOT NULL REFERENCES asset(id) ON DELETE CASCADE,
    token       text NOT NULL UNIQUE,
    position    integer NOT NULL,
    round       integer NOT NULL,
    UNIQUE (pool_id, query_id, asset_id),
    UNIQUE (pool_id, position)
);

-- A judge's graded judgement (E6): 2 satisfies, 1 near miss, 0 no.
CREATE TABLE eval_judgement (
    item_id     bigint NOT NULL REFERENCES eval_pool_item(id) ON DELETE CASCADE,
    judge       text NOT NULL CHECK (judge <> ''),
    grade       smallint NOT NULL CHECK (grade BETWEEN 0 AND 2),
    judged_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (item_id, judge)
);

-- The read-only role, last (it needs the tables above). Roles are
-- cluster-wide, so it is created only when missing; the instrument connects
-- with the library's own URL and switches to it with SET ROLE, which the
-- migrating user may do as a member. A database user without the right to
-- create roles still gets its library migrated: the instrument then refuses
-- to run and says what to ask the administrator for.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'loupe_eval_reader') THEN
        BEGIN
            CREATE ROLE loupe_eval_reader NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE;
        EXCEPTION WHEN insufficient_privilege THEN
            RAISE NOTICE 'loupe: cannot create role loupe_eval_reader (the evaluation '
                         'instrument needs it): %', SQLERRM;
            RETURN;
        END;
    END IF;
    IF NOT pg_has_role(current_user, 'loupe_eval_reader', 'MEMBER') THEN
        BEGIN
            EXECUTE format('GRANT loupe_eval_reader TO %I', current_user);
        EXCEPTION WHEN insufficient_privilege THEN
            RAISE NOTICE 'loupe: cannot grant loupe_eval_reader to %: %', current_user, SQLERRM;
        END;
    END IF;
    GRANT USAGE ON SCHEMA public TO loupe_eval_reader;
    GRANT SELECT ON ALL TABLES IN SCHEMA public TO loupe_eval_reader;
    -- tables of later migrations are readable too
    ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT ON TABLES TO loupe_eval_reader;
END
$$;
