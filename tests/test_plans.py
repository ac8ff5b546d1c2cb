"""Query shape is a feature (N4, F3): on a 100k-document library the
lexical lane's statement reads postings through its indexes, never the whole
table, and each term's scan stops at the raw cap."""

from __future__ import annotations

import json

import pytest

from loupe import Library
from loupe.access import OWNER, Viewer
from loupe.lexical import queries as q
from loupe.lexical.search import QueryTerms
from loupe.search.facts import NO_FACTS

N_DOCS = 100_000
pytestmark = pytest.mark.slow  # builds a 100,000-document library
BIG_TABLES = {"lexical_posting", "search_document", "asset", "lexicon_term", "asset_file",
              "asset_vector"}


def load_synthetic(lib: Library, n: int) -> None:
    """n documents with a Zipf-like vocabulary (word k drawn with weight ~1/k),
    loaded in bulk and indexed by loupe_reindex_lexical."""
    with lib.conn.transaction():
        lib.conn.execute("SELECT set_config('loupe.bulk', 'on', true)")
        lib.conn.execute("SELECT setseed(0.42)")
        lib.conn.execute("""
            INSERT INTO asset (id, tenant_id, content_sha256, byte_size, media_type, width, height)
            SELECT g, %(t)s, int8send(g), 1, 'image/jpeg', 1, 1 FROM generate_series(1, %(n)s) g
        """, {"t": lib.tenant_id, "n": n})
        lib.conn.execute("""
            CREATE TEMP TABLE words ON COMMIT DROP AS
            SELECT g AS d, string_agg('w' || floor(exp(random() * ln(5000)))::int, ' ') AS text
            FROM generate_series(1, %(n)s) g, generate_series(1, 12) k
            GROUP BY g
        """, {"n": n})
        lib.conn.execute("""
            INSERT INTO search_document (asset_id, tenant_id, lang, ts_config, title, description,
                                         tsv, doc_len)
            SELECT d, %(t)s, 'en', 'loupe_english', split_part(text, ' ', 1), text,
                   loupe_document_tsv('loupe_english', split_part(text, ' ', 1), '', '', text,
                                      '', '', '', '', '', '', ''), 0
            FROM words
        """, {"t": lib.tenant_id})
        lib.conn.execute("UPDATE search_document SET doc_len = loupe_tsv_len(tsv)")
        lib.conn.execute("SELECT loupe_reindex_lexical(%s, 'en')", (lib.tenant_id,))
        # every asset has a file: 300 in collection 'campaign', the rest in 'archive'
        src = lib.conn.execute("INSERT INTO source (tenant_id, root_path) VALUES (%s, '/lib') "
                               "RETURNING id", (lib.tenant_id,)).fetchone()[0]
        ids = {}
        for name in ("archive", "campaign"):
            ids[name] = lib.conn.execute(
                "INSERT INTO collection (tenant_id, source_id, name, path) VALUES (%s, %s, %s, %s)"
                " RETURNING id", (lib.tenant_id, src, name, name)).fetchone()[0]
        lib.conn.execute("""
            INSERT INTO asset_file (tenant_id, asset_id, source_id, collection_id, path, rel_path,
                                    byte_size, mtime_ns, metadata, raw_metadata)
            SELECT %(t)s, g, %(src)s, CASE WHEN g %% 333 = 0 THEN %(c)s ELSE %(a)s END,
                   '/lib/' || g, g::text, 1, 0, '{}', '{}'
            FROM generate_series(1, %(n)s) g
        """, {"t": lib.tenant_id, "src": src, "c": ids["campaign"], "a": ids["archive"], "n": n})
    # a member who may read the 300 assets of 'campaign' only
    with lib.conn.transaction():
        lib.create_user("member", "member-password")
        lib.grant("member", collection="campaign")
    lib.conn.execute("ANALYZE")


def load_vectors(lib: Library, home) -> None:
    """A tiny 4-d image model with a random unit vector per asset (and its HNSW index)."""
    from tinymodels import build_clip

    lib.install_model(build_clip(home / "src" / "tiny-clip"))
    lib.use_model("tiny-clip", "image")
    with lib.conn.transaction():
        lib.conn.execute("SELECT setseed(0.17)")
        lib.conn.execute("""
            INSERT INTO asset_vector (asset_id, tenant_id, model_id, lane, embedding)
            SELECT a.id, a.tenant_id, m.id, 'image',
                   l2_normalize(ARRAY[random() - 0.5, random() - 0.5, random() - 0.5,
                                      random() - 0.5]::vector)
            FROM asset a CROSS JOIN embedding_model m WHERE m.name = 'tiny-clip'
        """)
    lib.conn.execute("ANALYZE asset_vector")


@pytest.fixture(scope="module")
def big(pg_admin_url, template_db, tmp_path_factory):
    import uuid

    import psycopg
    from psycopg.conninfo import make_conninfo

    name = "loupe_plan_" + uuid.uuid4().hex[:8]
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name} TEMPLATE {template_db}")
    url = make_conninfo(pg_admin_url, dbname=name)
    home = tmp_path_factory.mktemp("home")
    with Library.open(home, database_url=url) as lib:
        load_synthetic(lib, N_DOCS)
        load_vectors(lib, home)
        yield lib
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def plan_nodes(node: dict):
    yield node
    for child in node.get("Plans", []):
        yield from plan_nodes(child)


def explain(lib: Library, terms: list[str], raw_cap: int = 3000, keep_cap: int = 1000,
            viewer: Viewer = OWNER) -> dict:
    params = {"tenant_id": lib.tenant_id, **QueryTerms.single("en", terms).params(),
              "query": " ".join(terms),
              "raw_cap": raw_cap, "keep_cap": keep_cap, "limit": 20, "offset": 0,
              "fallback": False, "title_band": False, "title_band_cap": 5000,
              **viewer.params(), **NO_FACTS.params()}
    stmt = q.LEXICAL_LANE if viewer.see_all else q.LEXICAL_LANE_MEMBER
    row = lib.conn.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + stmt, params).fetchone()
    doc = row[0] if isinstance(row[0], list) else json.loads(row[0])
    return doc[0]["Plan"]


@pytest.mark.parametrize("member", [False, True], ids=["owner", "member"])
@pytest.mark.parametrize("terms", [["w1"], ["w1", "w2", "w3"], ["w1", "w4999"], ["w2500"]])
def test_lexical_lane_never_scans_a_whole_table(big: Library, terms: list[str], member: bool):
    df = dict(big.conn.execute("SELECT term, df FROM lexicon_term WHERE term = ANY(%s)", (terms,)))
    assert df["w1"] > 3000 if "w1" in terms else True  # the common term really is over the cap
    viewer = big.as_user("member").viewer if member else OWNER
    plan = explain(big, terms, viewer=viewer)
    for node in plan_nodes(plan):
        rel = node.get("Relation Name")
        if rel in BIG_TABLES:
            assert node["Node Type"] != "Seq Scan", f"sequential scan of {rel}"
        if rel == "lexical_posting":
            # a scan of postings returns at most raw_cap rows per loop (impact
            # scan) or one row per probe (primary key)
            assert node["Actual Rows"] <= 3000, node["Node Type"]
            assert node["Actual Rows"] * node["Actual Loops"] <= 3000 * len(terms) + 1000 * len(terms)


@pytest.mark.parametrize("terms", [["w1"], ["w1", "w2", "w3"], ["w2500"]])
def test_scoped_lane_never_scans_a_whole_table(big: Library, terms: list[str]):
    from loupe.scopes import queries as sq

    coll = big.conn.execute("SELECT id FROM collection WHERE path = 'campaign'").fetchone()[0]
    colls = big.conn.execute(sq.SUB_COLLECTIONS, {"tenant_id": big.tenant_id,
                                                  "collection_id": coll}).fetchone()[0]
    mparams = {"tenant_id": big.tenant_id, "collections": colls, "deep_max": sq.DEEP_MAX,
               **OWNER.params()}
    plans = [big.conn.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sq.SCOPE_SIZE,
                              mparams).fetchone()[0]]
    assert big.conn.execute(sq.SCOPE_SIZE, mparams).fetchone()[0] == 300
    params = {"tenant_id": big.tenant_id, **QueryTerms.single("en", terms).params(),
              "query": " ".join(terms), "raw_cap": 3000, "keep_cap": 1000, "limit": 20,
              "offset": 0, "fallback": False, "collections": colls, **NO_FACTS.params(),
              "direct_max": sq.DIRECT_MAX, "deep_max": sq.DEEP_MAX,
              "deep_cap": sq.DEEP_CAP, **OWNER.params()}
    plans.append(big.conn.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sq.SCOPED_LANE,
                                  params).fetchone()[0])
    for doc in plans:
        doc = doc if isinstance(doc, list) else json.loads(doc)
        for node in plan_nodes(doc[0]["Plan"]):
            if node.get("Relation Name") in BIG_TABLES:
                assert node["Node Type"] != "Seq Scan", f"sequential scan of {node['Relation Name']}"


def test_common_term_lane_is_truncated_on_100k(big: Library):
    from loupe.lexical import lexical_search

    res = lexical_search(big.conn, big.tenant_id, "w1", "en")
    assert res.verdict == "truncated" and not res.total_exact
    assert res.postings_read == 3000 and res.kept == 1000
    assert res.total == res.max_df > 3000


def test_permissioned_walk_reads_within_its_budget(big: Library):
    """The postings walk of a member (who reads 300 of 100,000 assets) skips
    hidden postings inside the walk: it reads at most its budget of postings
    in impact order, one asset probe each, and no table in full."""
    body = big.conn.execute("SELECT prosrc FROM pg_proc WHERE proname = 'loupe_term_postings_for'"
                            ).fetchone()[0]
    for i, name in enumerate(["p_term", "p_cap", "p_budget", "p_see_all", "p_principals"], 1):
        body = body.replace(name, f"${i}")
    viewer = big.as_user("member").viewer
    term = big.conn.execute("SELECT id FROM lexicon_term WHERE term = 'w1'").fetchone()[0]
    with big.conn.transaction():
        for setting in ("enable_bitmapscan", "enable_sort", "enable_seqscan"):
            big.conn.execute(f"SET LOCAL {setting} = off")
        big.conn.execute(f"PREPARE walk (bigint, int, int, boolean, bigint[]) AS {body}")
        from psycopg import sql

        doc = big.conn.execute(sql.SQL(
            "EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE walk({}, 3000, 30000, false, {}::bigint[])"
        ).format(sql.Literal(term), sql.Literal(list(viewer.principals)))).fetchone()[0]
        big.conn.execute("DEALLOCATE walk")
    doc = doc if isinstance(doc, list) else json.loads(doc)
    reads = {}
    for node in plan_nodes(doc[0]["Plan"]):
        rel = node.get("Relation Name")
        if rel in BIG_TABLES:
            assert node["Node Type"] != "Seq Scan", f"sequential scan of {rel}"
            reads[rel] = node["Actual Rows"] * node["Actual Loops"]
        if rel == "asset":
            assert node["Actual Loops"] <= 30_000
    assert reads["lexical_posting"] == 30_000     # w1 has more postings than the budget
    assert reads["asset"] <= 30_000


def test_member_sees_only_its_assets_on_100k(big: Library):
    """A common term for a member: hidden assets take no slot, and the total
    is the number of readable assets found (a lower bound: the walk stopped
    at its budget), never the tenant-wide document frequency."""
    member = big.as_user("member")
    readable = set(big.conn.execute(
        "SELECT f.asset_id FROM asset_file f JOIN collection c ON c.id = f.collection_id "
        "JOIN search_document d ON d.asset_id = f.asset_id "
        "WHERE c.path = 'campaign' AND d.tsv @@ 'w1'::tsquery").fetchall())
    res = member.search("w1", limit=1000)
    ids = {(h.asset_id,) for h in res.hits}
    assert ids <= readable
    assert res.total == len(ids) and not res.total_exact and res.verdict == "truncated"


@pytest.mark.parametrize("member", [False, True], ids=["owner", "member"])
@pytest.mark.parametrize("query", ["w1", "w1 w2 w3"])
def test_fused_scoped_permissioned_statement_keeps_its_row_bounds(big: Library, query: str,
                                                                   member: bool):
    """The whole statement a member's scoped hybrid search runs (lexical lane,
    HNSW lane, lexical band, exact vector scan over members) reads no big
    table in full on the 100k library."""
    import numpy as np

    from loupe.fusion.search import FUSION_DEFAULTS, VEC_CAP
    from loupe.scopes import queries as sq
    from loupe.scopes.search import scope_collections, scope_size

    viewer = big.as_user("member").viewer if member else OWNER
    from loupe.search.pipeline import SearchPipeline

    lanes = SearchPipeline(big).query_lanes(query, "en", [])
    assert [ln.name for ln in lanes] == ["image"]
    coll = big.conn.execute("SELECT id FROM collection WHERE path = 'campaign'").fetchone()[0]
    colls = scope_collections(big.conn, big.tenant_id, coll)
    assert scope_size(big.conn, big.tenant_id, colls, viewer) == 300
    terms = query.split()
    params = {"tenant_id": big.tenant_id, **QueryTerms.single("en", terms).params(),
              "query": query,
              "raw_cap": 3000, "keep_cap": 1000, "limit": 20, "offset": 0, "fallback": False,
              "one_word": len(terms) == 1, "collections": colls,
              "direct_max": sq.DIRECT_MAX, "deep_max": sq.DEEP_MAX,
              "deep_cap": sq.DEEP_CAP, "vec_cap": VEC_CAP, **viewer.params(),
              **FUSION_DEFAULTS, **NO_FACTS.params(),
              "qv_image": np.asarray(lanes[0].vector, dtype=np.float32),
              "maxd_image": lanes[0].max_dist}
    stmt = sq.scoped_fused_statement(lanes, member)
    from psycopg import sql

    doc = big.conn.execute(sql.SQL("EXPLAIN (ANALYZE, FORMAT JSON) ") + stmt, params).fetchone()[0]
    doc = doc if isinstance(doc, list) else json.loads(doc)
    # a member's filtered HNSW scan goes on past hidden vectors (iterative
    # scan) until pgvector's hnsw.max_scan_tuples, then stops: one asset probe each
    bound = int(big.conn.execute("SHOW hnsw.max_scan_tuples").fetchone()[0]) + \
        int(big.conn.execute("SHOW hnsw.ef_search").fetchone()[0])
    for node in plan_nodes(doc[0]["Plan"]):
        rel = node.get("Relation Name")
        # a branch its one-time filter skips reads nothing (never executed):
        # the vector lane's exact scan, planned beside the walk and taken only
        # for a lane of at most EXACT_MAX vectors (here 100,000)
        if rel in BIG_TABLES and node["Actual Loops"] > 0:
            assert node["Node Type"] != "Seq Scan", f"sequential scan of {rel}"
            assert node["Actual Rows"] * node["Actual Loops"] <= bound, (rel, node["Node Type"])
