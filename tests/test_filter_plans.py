"""Filters keep the statement's shape: on a 100k-asset library
each predicate alone and a five-predicate tree are served by indexes — no
sequential scan of a big table — and read a bounded number of rows, in the
filtered set's enumeration, in the scoped lexical statement they run in
(owner and member), and in the facet statement."""

from __future__ import annotations

import json
import uuid

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from loupe import Library
from loupe.access import OWNER
from loupe.filters import search as fs
from loupe.filters import queries as fq
from loupe.lexical.search import QueryTerms
from loupe.search.facts import NO_FACTS
from loupe.scopes import queries as sq

from test_plans import BIG_TABLES, load_synthetic, plan_nodes

pytestmark = pytest.mark.slow  # builds a 100,000-asset library
N = 100_000
BIG = BIG_TABLES | {"asset_keyword", "collection_member", "asset_machine"}
#: Most rows any node of a filtered statement may read (rows x loops): the
#: filtered set's bound (FILTER_LIMIT) plus one deep read per term.
ROW_BOUND = 60_000

PREDICATES = [
    {"creator": "Creator 7"},
    {"keyword": "kw3"},
    {"location": "city12"},
    {"country": "country4"},
    {"captured": {"from": "2007-01-01", "to": "2008-01-01"}},
    {"added": {"from": "2026-01-01"}},
    {"format": "png"},
    {"orientation": "portrait"},
    {"collection": "campaign"},
    {"collection": "picks"},
    {"rights": {"expiring_before": "2100-01-01"}},
    {"kind": "icon"},
    {"colour": "yellow"},
    {"all": [{"creator": "Creator 7"}, {"captured": {"from": "2007-01-01"}},
             {"orientation": "landscape"}, {"not": {"keyword": "kw3"}}, {"format": "jpg"}]},
]


@pytest.fixture(scope="module")
def fbig(pg_admin_url, template_db, tmp_path_factory):
    name = "loupe_fplan_" + uuid.uuid4().hex[:8]
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name} TEMPLATE {template_db}")
    url = make_conninfo(pg_admin_url, dbname=name)
    with Library.open(tmp_path_factory.mktemp("fhome"), database_url=url) as lib:
        load_synthetic(lib, N)
        with lib.conn.transaction():
            # 50 creators, 200 keywords, 100 cities, 10 countries, 20 years;
            # a quarter of each orientation, a tenth PNG, a thousand days of adds
            lib.conn.execute("""
                UPDATE asset_file SET
                  metadata = jsonb_build_object(
                      'creator', jsonb_build_array('Creator ' || (asset_id % 50)),
                      'keywords', jsonb_build_array('kw' || (asset_id % 200)),
                      'location', jsonb_build_array('City' || (asset_id % 100),
                                                    'Country' || (asset_id % 10)),
                      'date_taken', (2000 + asset_id % 20) || ':06:15 12:00:00'),
                  raw_metadata = jsonb_build_object('file', jsonb_build_object(
                      'XMP-photoshop:Country', 'Country' || (asset_id % 10)))""")
            lib.conn.execute("""
                UPDATE asset SET
                  width = (ARRAY[3, 4, 5, 30])[id % 4 + 1], height = (ARRAY[4, 3, 5, 10])[id % 4 + 1],
                  media_type = CASE WHEN id % 10 = 0 THEN 'image/png' ELSE 'image/jpeg' END,
                  created_at = timestamptz '2026-12-01' - (id % 1000) * interval '1 day',
                  rights_expire_at = CASE WHEN id % 100 = 0 THEN timestamptz '2099-01-01' END""")
            # keywords people added (a fifth of the assets) and a hand-made collection
            lib.conn.execute("""INSERT INTO asset_keyword (asset_id, keyword)
                                SELECT id, 'kw' || (id % 200) FROM asset WHERE id % 5 = 0""")
            hand = lib.conn.execute("""INSERT INTO collection (tenant_id, name, path)
                                       VALUES (%s, 'picks', 'picks') RETURNING id""",
                                    (lib.tenant_id,)).fetchone()[0]
            lib.conn.execute("""INSERT INTO collection_member (collection_id, asset_id)
                                SELECT %s, id FROM asset WHERE id %% 97 = 0""", (hand,))
            # machine words (asset_machine): a kind and a colour each (a colour
            # of 5 names, 20 % each, made a sequential scan the right plan)
            lib.conn.execute("""
                INSERT INTO asset_machine (asset_id, tenant_id, kind, colours, version)
                SELECT id, tenant_id,
                       (ARRAY['photo', 'illustration', 'clipart', 'lineart', 'screenshot',
                              'document', 'icon'])[id % 7 + 1],
                       -- one of twenty palette names each (5 %), as the palette spreads
                       ARRAY[(ARRAY['red', 'blue', 'green', 'yellow', 'black', 'white', 'grey',
                                    'orange', 'brown', 'pink', 'purple', 'violet', 'navy',
                                    'teal', 'cyan', 'olive', 'maroon', 'beige', 'gold',
                                    'silver'])[id % 20 + 1]], 1
                FROM asset""")
            other = lib.conn.execute("""INSERT INTO collection (tenant_id, name, path)
                                        VALUES (%s, 'selects', 'selects') RETURNING id""",
                                     (lib.tenant_id,)).fetchone()[0]
            lib.conn.execute("""INSERT INTO collection_member (collection_id, asset_id)
                                SELECT %s, id FROM asset WHERE id %% 7 = 0""", (other,))
        lib.conn.execute("ANALYZE")
        yield lib
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def check(lib: Library, stmt, params) -> None:
    doc = lib.conn.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + stmt, params).fetchone()[0]
    doc = doc if isinstance(doc, list) else json.loads(doc)
    for node in plan_nodes(doc[0]["Plan"]):
        rel = node.get("Relation Name")
        if rel in BIG:
            assert node["Node Type"] != "Seq Scan", f"sequential scan of {rel}"
            assert node["Actual Rows"] * node["Actual Loops"] <= ROW_BOUND, (rel, node["Node Type"])


@pytest.mark.parametrize("member", [False, True], ids=["owner", "member"])
@pytest.mark.parametrize("tree", PREDICATES, ids=lambda t: next(iter(t)))
def test_each_predicate_and_a_five_predicate_tree_use_indexes(fbig: Library, tree, member):
    viewer = fbig.as_user("member").viewer if member else OWNER
    filt = fs.prepare(fbig.conn, fbig.tenant_id, tree, viewer=viewer)
    p = fs.statement_params(filt, fbig.tenant_id, viewer)
    check(fbig, filt.members_sql(), p)
    terms = ["w1", "w2"]
    params = {**p, **QueryTerms.single("en", terms).params(), "query": " ".join(terms),
              "raw_cap": 3000, "keep_cap": 1000, "limit": 20, "offset": 0, "fallback": False,
              "collections": [], "direct_max": sq.DIRECT_MAX, "deep_max": sq.DEEP_MAX,
              "deep_cap": sq.DEEP_CAP, **NO_FACTS.params()}
    check(fbig, sq.scoped_lane(member, filt), params)
    # and the search gives what a direct count says (owner: exact below the bound)
    res = fbig.as_user("member").search("", filters=tree) if member else \
        fbig.search("", filters=tree)
    assert res.total_exact


def test_the_five_predicate_tree_counts_exactly(fbig: Library):
    tree = PREDICATES[-1]
    want = fbig.conn.execute("""
        SELECT count(*) FROM asset a WHERE a.id % 50 = 7 AND 2000 + a.id % 20 >= 2007
          AND a.id % 4 = 1 AND a.id % 200 <> 3 AND a.id % 10 <> 0""").fetchone()[0]
    res = fbig.search("", filters=tree)
    assert res.total == want and res.verdict == "complete"


def test_facets_read_only_the_result(fbig: Library):
    ids = [r[0] for r in fbig.conn.execute("SELECT id FROM asset ORDER BY id LIMIT 5000")]
    params = {"ids": ids, "tenant_id": fbig.tenant_id, "top": 10, **OWNER.params()}
    stmt = fq.FACETS.replace("{machine}", fq.FACETS_MACHINE)
    check(fbig, stmt, params)
    f = fbig.facets("", filters={"creator": "Creator 7"})
    assert f["exact"] and f["facets"]["creator"][0]["count"] == N // 50
