-- Fusion settings per tenant (SPEC F1; issue 14, item 3): the weight of each
-- lane in reciprocal rank fusion and RRF's rank constant k,
--   rrf(d) = w_lexical / (k + rank_lexical(d)) + w_text / (k + rank_text(d))
--          + w_image / (k + rank_image(d))           (absent from a lane: 0)
-- (Cormack, Clarke and Büttcher, SIGIR 2009: weights 1, k = 60). A tenant
-- without a row uses those defaults (loupe.queries.FUSION_SETTINGS), so this
-- migration changes no ranking. Bounds: weights in [0, 10], not all zero;
-- k in [1, 1000] (loupe.library.Library.set_fusion_settings says why).
CREATE TABLE fusion_setting (
    tenant_id  bigint PRIMARY KEY REFERENCES tenant(id) ON DELETE CASCADE,
    w_lexical  float8 NOT NULL DEFAULT 1 CHECK (w_lexical >= 0 AND w_lexical <= 10),
    w_text     float8 NOT NULL DEFAULT 1 CHECK (w_text >= 0 AND w_text <= 10),
    w_image    float8 NOT NULL DEFAULT 1 CHECK (w_image >= 0 AND w_image <= 10),
    rrf_k      integer NOT NULL DEFAULT 60 CHECK (rrf_k >= 1 AND rrf_k <= 1000),
    CHECK (w_lexical + w_text + w_image > 0)
);

-- What each query of a run got beyond its top k (issue 14, item 4): the rows
-- the system returned in all (the search's total; NULL where the system has
-- none, e.g. an index variant cut at k), its completeness verdict, and
-- whether every row came from meaning-based (vector) lanes only. This is
-- what a query set without truth (absent subjects) is measured by.
CREATE TABLE eval_run_query (
    run_id        bigint NOT NULL REFERENCES eval_run(id) ON DELETE CASCADE,
    query_id      bigint NOT NULL REFERENCES eval_query(id) ON DELETE CASCADE,
    rows_returned bigint CHECK (rows_returned >= 0),
    verdict       text,
    meaning_only  boolean,
    PRIMARY KEY (run_id, query_id)
);
