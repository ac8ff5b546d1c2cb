"""Which scan a vector lane gets: the tenant's vectors of the lane
scanned exactly when they are at most ``exact_max`` (default
:data:`loupe.vector.queries.EXACT_MAX`), the HNSW walk above. Real
PostgreSQL and pgvector; the plans are read from EXPLAIN ANALYZE (which
branch ran), the answers compared with a brute force over the same vectors."""

from __future__ import annotations

import json

import numpy as np
import pytest
from psycopg import sql
from tinymodels import build_clip

from loupe import Library
from loupe.vector import queries as vq

N = 3000
DIMS = 4


@pytest.fixture
def lane(lib: Library, home):
    """N assets, each with a seeded random 4-d unit vector in the image lane of
    a tiny model (its HNSW index built by use_model, filled by the inserts);
    assets 1 and 2 share one vector (a tie, broken by asset id).
    Returns (library, model id, {asset id: vector})."""
    lib.install_model(build_clip(home / "src" / "tiny-clip"))
    lib.use_model("tiny-clip", "image")
    model_id = lib.conn.execute("SELECT id FROM embedding_model WHERE name = 'tiny-clip'"
                                ).fetchone()[0]
    with lib.conn.transaction():
        lib.conn.execute("""
            INSERT INTO asset (id, tenant_id, content_sha256, byte_size, media_type, width, height)
            SELECT g, %(t)s, int8send(g), 1, 'image/png', 1, 1 FROM generate_series(1, %(n)s) g
        """, {"t": lib.tenant_id, "n": N})
        lib.conn.execute("SELECT setseed(0.29)")
        lib.conn.execute("""
            INSERT INTO asset_vector (asset_id, tenant_id, model_id, lane, embedding)
            SELECT g, %(t)s, %(m)s, 'image',
                   l2_normalize(ARRAY[random() - 0.5, random() - 0.5, random() - 0.5,
                                      random() - 0.5]::vector)
            FROM generate_series(1, %(n)s) g
        """, {"t": lib.tenant_id, "m": model_id, "n": N})
        lib.conn.execute("""UPDATE asset_vector SET embedding = (SELECT embedding FROM asset_vector
                                                               WHERE asset_id = 1)
                            WHERE asset_id = 2""")
    lib.conn.execute("VACUUM ANALYZE asset_vector")
    vecs = {a: np.array(json.loads(e)) for a, e in lib.conn.execute(
        "SELECT asset_id, embedding::text FROM asset_vector WHERE model_id = %s", (model_id,))}
    return lib, model_id, vecs


def statement(model_id: int, exact_max: int) -> sql.Composed:
    return sql.SQL("WITH ") + vq.vector_cte("image", model_id, "image", DIMS,
                                            exact_max=exact_max) + sql.SQL(
        "\nSELECT asset_id, dist, rank FROM vec_image ORDER BY rank")


def params(lib: Library, q: np.ndarray, cap: int = 10) -> dict:
    return {"tenant_id": lib.tenant_id, "see_all": True, "principals": [], "vec_cap": cap,
            "qv_image": q.astype(np.float32), "maxd_image": 2.0}


def executed(plan: dict) -> set[str]:
    """The scans of asset_vector that ran (actual loops > 0): 'walk' for its
    HNSW index, 'exact' for any other scan of the table."""
    out = set()
    stack = [plan]
    while stack:
        node = stack.pop()
        stack.extend(node.get("Plans", []))
        if node.get("Relation Name") == "asset_vector" and node.get("Actual Loops", 0) > 0:
            out.add("walk" if str(node.get("Index Name", "")).startswith("asset_vector_hnsw_")
                    else "exact")
    return out


def explain(lib: Library, stmt: sql.Composed, p: dict) -> dict:
    row = lib.conn.execute(sql.SQL("EXPLAIN (ANALYZE, FORMAT JSON) ") + stmt, p).fetchone()
    return (row[0] if isinstance(row[0], list) else json.loads(row[0]))[0]["Plan"]


def brute_force(vecs: dict, q: np.ndarray, cap: int) -> list[int]:
    """The nearest ``cap`` by cosine distance (float32, as pgvector computes
    it), ties by asset id."""
    qn = q.astype(np.float32) / np.linalg.norm(q)
    dist = {a: float(1 - np.dot(v.astype(np.float32), qn) / np.linalg.norm(v))
            for a, v in vecs.items()}
    return sorted(dist, key=lambda a: (round(dist[a], 6), a))[:cap]


@pytest.mark.parametrize("exact_max,scan", [(N, "exact"), (N - 1, "walk"), (0, "walk")])
def test_the_lane_is_scanned_exactly_up_to_exact_max_vectors(lane, exact_max: int, scan: str):
    lib, model_id, _ = lane
    assert lib.conn.execute("SELECT n_vectors FROM vector_stat WHERE model_id = %s",
                            (model_id,)).fetchone()[0] == N
    lib.conn.execute("SET hnsw.ef_search = 40")  # a walk the planner prefers at this size
    plan = explain(lib, statement(model_id, exact_max), params(lib, np.array([1.0, 0, 0, 0])))
    assert executed(plan) == {scan}


def test_the_exact_scan_is_what_brute_force_returns(lane):
    lib, model_id, vecs = lane
    rng = np.random.default_rng(3)
    stmt = statement(model_id, N)
    for q in [vecs[1], *rng.standard_normal((20, DIMS))]:
        got = [r[0] for r in lib.conn.execute(stmt, params(lib, q, cap=25))]
        assert got == brute_force(vecs, q, 25)
    # the tie: assets 1 and 2 hold one vector; the query is that vector
    assert [r[0] for r in lib.conn.execute(stmt, params(lib, vecs[1], cap=2))] == [1, 2]


def test_the_production_default_is_exact_max():
    text = vq.vector_cte("image", 7, "image", DIMS).as_string(None)
    assert f"<= {vq.EXACT_MAX}" in text and vq.EXACT_MAX == 10_000
