"""A search is one round trip to the server once its query has been analysed
on the connection, and its statement runs from one plan kept on the server
(loupe.db.plans, loupe.lexical.memo). Round trips are counted from libpq's
own protocol trace (each answered sync ends with a ReadyForQuery message)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import psycopg
import pytest
from corpus import add_document
from psycopg import pq
from tinymodels import build_clip

from loupe import Library
from loupe.db.plans import fetch_generic
from loupe.fusion.run import fused_search
from loupe.fusion.search import VectorLane
from loupe.lexical import lexical_search, memo
from loupe.lexical.search import QueryTerms
from loupe.vector import queries as vq


@pytest.fixture
def kettles(lib: Library) -> Library:
    add_document(lib, 1, {"title": "Red kettle 4471-RD", "keywords": "kettle; red"})
    add_document(lib, 2, {"title": "Blue kettle 4471-BL", "keywords": "kettle; blue"})
    add_document(lib, 3, {"title": "Kettle and teapot", "description": "a red teapot by a kettle"})
    add_document(lib, 4, {"title": "Café au lait", "description": "Photographs of breakfast"})
    return lib


def round_trips(conn: psycopg.Connection, tmp: Path, fn) -> tuple[int, object]:
    """How many times ``fn()`` waited for the server (ReadyForQuery messages
    in libpq's trace), and what it returned."""
    trace = tmp / "trace.txt"
    with trace.open("w") as f:
        conn.pgconn.trace(f.fileno())
        conn.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS)
        try:
            out = fn()
        finally:
            conn.pgconn.untrace()
    lines = trace.read_text().splitlines()
    return sum(1 for ln in lines if ln.startswith("B") and "\tReadyForQuery" in ln), out


def hits(res) -> list[tuple[int, float | None]]:
    return [(h.asset_id, h.score) for h in res.hits]


def test_a_search_is_one_round_trip_once_its_query_was_analysed(kettles: Library, tmp_path):
    conn, t = kettles.conn, kettles.tenant_id
    first, res1 = round_trips(conn, tmp_path, lambda: lexical_search(conn, t, "red kettle", "en"))
    again, res2 = round_trips(conn, tmp_path, lambda: lexical_search(conn, t, "red kettle", "en"))
    # the analysis, the query's words per term, the forms the library writes
    # for the stemmed "kettl" (loupe.lexical.forms: they depend on the
    # library and the viewer, so they are read each time), then the statement
    assert first == 4
    assert again == 2    # the forms and the statement: the analysis is remembered
    assert [h.asset_id for h in res2.hits] == [1, 3, 2] and hits(res1) == hits(res2)
    assert res2.verdict == "complete" and res2.total == 3


def test_the_typo_fallback_of_a_repeated_query_asks_no_stop_words_again(kettles: Library,
                                                                         tmp_path):
    conn, t = kettles.conn, kettles.tenant_id
    lexical_search(conn, t, "ketle", "en")
    n, res = round_trips(conn, tmp_path, lambda: lexical_search(conn, t, "ketle", "en"))
    assert res.corrections == {"ketl": "kettl"} and res.verdict == "unknown"
    # the forms the library writes for "ketl" (none), the statement, the
    # correction, the statement with it
    assert n == 4


def test_the_search_statement_runs_from_its_generic_plan(kettles: Library):
    conn, t = kettles.conn, kettles.tenant_id
    for query in ("red kettle", "teapot", "kettle", "breakfast"):
        lexical_search(conn, t, query, "en")
    # (the server holds it with psycopg's $n placeholders: found by its CTEs)
    plans = conn.execute("SELECT generic_plans, custom_plans FROM pg_prepared_statements"
                         " WHERE statement LIKE '%%cand_l AS MATERIALIZED%%'"
                         "   AND statement LIKE '%%tband AS MATERIALIZED%%'").fetchall()
    assert plans == [(4, 0)]
    # the setting lived in the statement's own transaction only
    assert conn.execute("SHOW plan_cache_mode").fetchone()[0] == "auto"
    assert conn.info.transaction_status == pq.TransactionStatus.IDLE


def test_the_generic_plan_ranks_as_a_plan_made_for_the_query(kettles: Library):
    conn, t = kettles.conn, kettles.tenant_id
    for query in ("red kettle", "kettle", "teapot kettle", "4471", "cafe", "ketle"):
        generic = lexical_search(conn, t, query, "en")
        with conn.transaction():   # inside a transaction: prepared, planned per execution
            conn.execute("SET LOCAL plan_cache_mode = force_custom_plan")
            custom = lexical_search(conn, t, query, "en")
        assert hits(generic) == hits(custom) and generic.total == custom.total
        assert generic.verdict == custom.verdict


def test_a_failing_statement_leaves_the_connection_as_it_was(lib: Library):
    conn = lib.conn
    with pytest.raises(psycopg.errors.DivisionByZero):
        fetch_generic(conn, "SELECT 1 / %(zero)s::int", {"zero": 0})
    assert conn.info.transaction_status == pq.TransactionStatus.IDLE
    assert conn.execute("SHOW plan_cache_mode").fetchone()[0] == "auto"
    assert fetch_generic(conn, "SELECT 6 / %(two)s::int", {"two": 2}) == [(3,)]


def test_inside_a_transaction_the_plan_setting_is_left_alone(lib: Library):
    conn = lib.conn
    with conn.transaction():
        assert fetch_generic(conn, "SELECT current_setting('plan_cache_mode'), %(x)s::int",
                             {"x": 5}) == [("auto", 5)]
        assert conn.execute("SHOW plan_cache_mode").fetchone()[0] == "auto"


def test_what_a_connection_remembers_is_its_own_and_bounded(lib: Library, db_url: str,
                                                            monkeypatch):
    asked = []

    def compute(n):
        asked.append(n)
        return n * 10

    assert memo.remembered(lib.conn, ("k", 1), lambda: compute(1)) == 10
    assert memo.remembered(lib.conn, ("k", 1), lambda: compute(1)) == 10
    with psycopg.connect(db_url, autocommit=True) as other:
        assert memo.remembered(other, ("k", 1), lambda: compute(1)) == 10
    assert asked == [1, 1]
    monkeypatch.setattr(memo, "MAX_ENTRIES", 2)
    memo.remembered(lib.conn, ("k", 2), lambda: compute(2))
    memo.remembered(lib.conn, ("k", 3), lambda: compute(3))   # ("k", 1) goes out
    memo.remembered(lib.conn, ("k", 1), lambda: compute(1))
    memo.remembered(lib.conn, ("k", 3), lambda: compute(3))
    assert asked == [1, 1, 2, 3, 1]


def test_the_vector_lanes_generic_plan_walks_its_hnsw_index(lib: Library, home):
    """Above EXACT_MAX vectors the lane walks its HNSW index (the choice by
    size, loupe.vector.queries); run from the generic plan, whose LIMIT is a parameter, it still
    does (the index's scan count moves) and finds the brute-force nearest."""
    n = vq.EXACT_MAX + 50
    lib.install_model(build_clip(home / "src" / "tiny-clip"))
    lib.use_model("tiny-clip", "image")
    model_id = lib.conn.execute("SELECT id FROM embedding_model WHERE name = 'tiny-clip'"
                                ).fetchone()[0]
    with lib.conn.transaction():
        lib.conn.execute("""
            INSERT INTO asset (id, tenant_id, content_sha256, byte_size, media_type, width, height)
            SELECT g, %(t)s, int8send(g), 1, 'image/png', 1, 1 FROM generate_series(1, %(n)s) g
        """, {"t": lib.tenant_id, "n": n})
        lib.conn.execute("""
            INSERT INTO asset_vector (asset_id, tenant_id, model_id, lane, embedding)
            SELECT g, %(t)s, %(m)s, 'image',
                   l2_normalize(ARRAY[sin(g), cos(g), sin(2 * g), cos(3 * g)]::vector)
            FROM generate_series(1, %(n)s) g
        """, {"t": lib.tenant_id, "m": model_id, "n": n})
    lib.conn.execute("VACUUM ANALYZE asset_vector")
    index = f"asset_vector_hnsw_{model_id}_image"

    def scans() -> int:
        lib.conn.execute("SELECT pg_stat_force_next_flush()")
        lib.conn.execute("SELECT pg_stat_clear_snapshot()")
        return lib.conn.execute("SELECT idx_scan FROM pg_stat_user_indexes"
                                " WHERE indexrelname = %s", (index,)).fetchone()[0]

    q = np.array([np.sin(7.0), np.cos(7.0), np.sin(14.0), np.cos(21.0)], dtype=np.float32)
    lane = VectorLane("image", "image", model_id, "tiny-clip", 4, 2.0, q)
    params = {"tenant_id": lib.tenant_id, **QueryTerms.single("en", []).params(), "query": "",
              "raw_cap": 3000, "keep_cap": 1000, "limit": 5, "offset": 0, "fallback": False,
              "one_word": False}
    before = scans()
    for _ in range(3):
        res = fused_search(lib.conn, params, [lane])
    assert scans() - before >= 3
    assert res.lane_counts == {"image": 200}, (res.lane_counts, res.total)
    assert res.hits[0].asset_id == 7   # its own vector, distance 0
