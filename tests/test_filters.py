"""Filters: the filter tree's JSON contract, date ranges,
and exact totals for every predicate as the owner and as a member, on a
small real library (Pillow images, metadata written by ExifTool)."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from loupe import Library
from loupe.filters import FilterError, compile_tree, Context, date_range, parse

from imaging import exiftool_write, make_image

# stem -> (folder, size, format, exif tags)
FILES = {
    "a1": ("shoot/lisbon", (64, 48), "JPEG", [
        "-XMP-dc:Title=harbour boat", "-XMP-dc:Creator=Jane Doe", "-XMP-dc:Subject=harbour",
        "-XMP-dc:Subject=boat", "-ExifIFD:DateTimeOriginal=2019:06:15 10:00:00",
        "-XMP-photoshop:City=Lisbon", "-XMP-photoshop:Country=Portugal"]),
    "a2": ("shoot/lisbon", (48, 64), "JPEG", [
        "-XMP-dc:Title=harbour at night", "-XMP-dc:Creator=jane doe",
        "-XMP-dc:Subject=Harbour", "-ExifIFD:DateTimeOriginal=2019:12:31 23:59:59",
        "-XMP-photoshop:City=Lisbon", "-XMP-photoshop:Country=Portugal"]),
    "a3": ("shoot/porto", (64, 64), "PNG", [
        "-XMP-dc:Title=harbour bridge", "-XMP-dc:Creator=John Roe", "-XMP-dc:Subject=bridge",
        "-XMP-exif:DateTimeOriginal=2020:01:01 00:00:00", "-XMP-photoshop:City=Porto",
        "-XMP-photoshop:Country=Portugal"]),
    "a4": ("studio", (200, 50), "JPEG", [
        "-XMP-dc:Title=harbour panorama", "-XMP-dc:Creator=John Roe", "-XMP-dc:Subject=harbour"]),
    # stored 48 x 64, EXIF orientation 6: displayed 64 x 48, landscape
    "a5": ("studio", (48, 64), "JPEG", [
        "-XMP-dc:Title=harbour turned", "-IFD0:Orientation#=6", "-XMP-photoshop:City=Paris",
        "-XMP-photoshop:Country=France"]),
    "a6": ("private", (64, 48), "JPEG", [
        "-XMP-dc:Title=harbour secret", "-XMP-dc:Creator=Jane Doe", "-XMP-dc:Subject=harbour",
        "-ExifIFD:DateTimeOriginal=2019:03:01 12:00:00"]),
}


@pytest.fixture(scope="module")
def flib(pg_admin_url, template_db, tmp_path_factory):
    """One library for the read-only tests of this module; member ``mia``
    reads shoot/ and studio/ (not private/)."""
    name = "loupe_f_" + uuid.uuid4().hex[:12]
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name} TEMPLATE {template_db}")
    url = make_conninfo(pg_admin_url, dbname=name)
    root = tmp_path_factory.mktemp("fphotos")
    for i, (stem, (folder, size, fmt, tags)) in enumerate(FILES.items()):
        ext = ".png" if fmt == "PNG" else ".jpg"
        path = make_image(root / folder / f"{stem}{ext}", size=size, fmt=fmt,
                          color=(30 * i, 90, 200 - 20 * i))
        exiftool_write(path, *tags)
    lib = Library.open(tmp_path_factory.mktemp("fhome"), database_url=url)
    assert lib.ingest(root).new_assets == 6
    lib.create_user("mia", "mia-password-1")
    lib.create_user("ada", "ada-password-1", admin=True)
    lib.grant("mia", collection="shoot")
    lib.grant("mia", collection="studio")
    lib.bulk("add_keyword", "Approved", query="bridge")
    lib.test_url = url   # for the CLI tests
    yield lib
    lib.close()
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def stems(res) -> set[str]:
    return {Path(h.path).stem for h in res.hits}


def ids(lib: Library) -> dict[str, int]:
    return {Path(h.path).stem: h.asset_id for h in lib.search("harbour", limit=50).hits}


# ---- the tree (no database) ------------------------------------------------

def test_tree_round_trips_to_the_contract_json():
    tree = {"all": [{"captured": {"from": "2019-01-01", "to": "2020-01-01"}},
                    {"any": [{"creator": "Jane Doe"}, {"keyword": "harbour"}]},
                    {"not": {"orientation": "portrait"}},
                    {"collection": "id:3"}, {"media_type": "image/png"}, {"format": "png"},
                    {"kind": "photo"}, {"colour": "red"}, {"background": "white"},
                    {"cutout": True}, {"country": "Portugal"}, {"location": "Lisbon"},
                    {"person": "Ana"}, {"rights": "embargoed"},
                    {"rights": {"expiring_before": "2027-01-01"}}, {"added": {"to": "2026-01-01"}}]}
    node = parse(tree)
    assert node.to_json() == tree
    assert parse(node.dumps()).to_json() == tree


@pytest.mark.parametrize("tree, path", [
    ({"all": [{"creator": "x"}, {"captured": {"from": "2019-13-01"}}]}, "$.all[1].captured.from"),
    ({"any": []}, "$.any"),
    ({"not": {"orientation": "diagonal"}}, "$.not.orientation"),
    ({"all": [{"colour": "red", "kind": "photo"}]}, "$.all[0]"),
    ({"all": [{"format": "bmp"}]}, "$.all[0].format"),
    ({"captured": {"from": "2020-01-01", "to": "2019-01-01"}}, "$.captured"),
    ({"rights": {"expiring_before": "soon"}}, "$.rights.expiring_before"),
    ({"height": 3}, "$.height"),
    ({"creator": "x" * 201}, "$.creator"),
])
def test_a_bad_node_is_named(tree, path):
    with pytest.raises(FilterError) as err:
        parse(tree)
    assert err.value.path == path and str(err.value).startswith(f"filter {path}:")


def test_deep_trees_are_refused_before_any_work():
    tree: dict = {"creator": "x"}
    for _ in range(40):
        tree = {"not": tree}
    with pytest.raises(FilterError, match="deeper than 16"):
        parse(tree)


def test_values_are_bound_never_written_into_the_sql():
    evil = "x'); DROP TABLE asset; --"
    c = compile_tree({"any": [{"creator": evil}, {"keyword": evil}]},
                     Context(now=datetime.now(timezone.utc)))
    assert evil not in c.test and evil not in c.driver
    assert evil in c.values.values() and c.params() is c.values


def test_relative_dates_resolve_against_the_given_clock():
    now = datetime(2026, 3, 10, 23, 30, tzinfo=timezone.utc)
    assert date_range("2019", now=now) == {"from": "2019-01-01", "to": "2020-01-01"}
    assert date_range("2019-02", now=now) == {"from": "2019-02-01", "to": "2019-03-01"}
    assert date_range("last month", now=now) == {"from": "2026-02-01", "to": "2026-03-01"}
    assert date_range("last year", now=now) == {"from": "2025-01-01", "to": "2026-01-01"}
    assert date_range("today", now=now) == {"from": "2026-03-10", "to": "2026-03-11"}
    assert date_range("last 7 days", now=now) == {"from": "2026-03-04", "to": "2026-03-11"}
    assert date_range("2018..2019", now=now) == {"from": "2018-01-01", "to": "2020-01-01"}
    assert date_range("..2019-06", now=now) == {"to": "2019-07-01"}
    # the clock is read in UTC: 01:30 in Lisbon summer time is the previous UTC day
    lisbon = timezone(timedelta(hours=1))
    assert date_range("today", now=datetime(2026, 7, 1, 0, 30, tzinfo=lisbon)) == \
        {"from": "2026-06-30", "to": "2026-07-01"}
    with pytest.raises(FilterError, match="not a date Loupe understands"):
        date_range("the day after tomorrow", now=now)


# ---- exact totals per predicate (browse: no query text) ----------------------

PREDICATES = [
    ({"creator": "JANE DOE"}, {"a1", "a2", "a6"}, {"a1", "a2"}),
    ({"creator": "John Roe"}, {"a3", "a4"}, {"a3", "a4"}),
    ({"keyword": "harbour"}, {"a1", "a2", "a4", "a6"}, {"a1", "a2", "a4"}),
    ({"keyword": "approved"}, {"a3"}, {"a3"}),          # added by a person (bulk)
    ({"location": "lisbon"}, {"a1", "a2"}, {"a1", "a2"}),
    ({"location": "Portugal"}, set(), set()),           # a country, not a location
    ({"country": "portugal"}, {"a1", "a2", "a3"}, {"a1", "a2", "a3"}),
    ({"country": "France"}, {"a5"}, {"a5"}),
    ({"collection": "shoot"}, {"a1", "a2", "a3"}, {"a1", "a2", "a3"}),
    ({"collection": "private"}, {"a6"}, None),  # None: hidden from mia, named like a missing one
    ({"format": "png"}, {"a3"}, {"a3"}),
    ({"format": "JPG"}, {"a1", "a2", "a4", "a5", "a6"}, {"a1", "a2", "a4", "a5"}),
    ({"media_type": "image/png"}, {"a3"}, {"a3"}),
    ({"orientation": "landscape"}, {"a1", "a5", "a6"}, {"a1", "a5"}),
    ({"orientation": "portrait"}, {"a2"}, {"a2"}),
    ({"orientation": "square"}, {"a3"}, {"a3"}),
    ({"orientation": "panorama"}, {"a4"}, {"a4"}),
    ({"captured": {"from": "2019-01-01", "to": "2020-01-01"}}, {"a1", "a2", "a6"}, {"a1", "a2"}),
    ({"captured": {"from": "2020-01-01"}}, {"a3"}, {"a3"}),
    ({"captured": {"to": "2019-06-15"}}, {"a6"}, set()),
    ({"added": {"from": "2000-01-01"}}, set(FILES), set(FILES) - {"a6"}),
    ({"added": {"to": "2000-01-01"}}, set(), set()),
    ({"not": {"creator": "jane doe"}}, {"a3", "a4", "a5"}, {"a3", "a4", "a5"}),
    ({"any": [{"format": "png"}, {"country": "france"}]}, {"a3", "a5"}, {"a3", "a5"}),
    ({"all": [{"keyword": "harbour"}, {"not": {"orientation": "landscape"}}]},
     {"a2", "a4"}, {"a2", "a4"}),
    ({"all": [{"collection": "shoot"}, {"collection": "studio"}]}, set(), set()),
]


@pytest.mark.parametrize("tree, owner, member", PREDICATES)
def test_each_predicate_gives_exact_totals_for_owner_and_member(flib, tree, owner, member):
    res = flib.search("", filters=tree, limit=50)
    assert stems(res) == owner and res.total == len(owner)
    assert res.total_exact and res.verdict == "complete" and res.filter == tree
    if member is None:
        assert_hidden_like_missing(flib, "", tree)
        return
    mia = flib.as_user("mia").search("", filters=tree, limit=50)
    assert stems(mia) == member and mia.total == len(member)
    assert mia.verdict == "complete"


def assert_hidden_like_missing(flib, query: str, tree: dict) -> None:
    """A collection mia may not see answers exactly as a missing one does
    (hidden collection names are not confirmable)."""
    mia = flib.as_user("mia")
    with pytest.raises(FilterError) as hidden:
        mia.search(query, filters=tree, limit=50)
    with pytest.raises(FilterError) as missing:
        mia.search(query, filters={"collection": "no-such-folder"}, limit=50)
    assert (str(hidden.value).replace(repr(tree["collection"]), "X")
            == str(missing.value).replace("'no-such-folder'", "X"))


def test_captured_range_boundaries_are_half_open_in_utc(flib):
    # a2 was taken at 2019-12-31 23:59:59, a3 at 2020-01-01 00:00:00 (read as UTC)
    day = flib.search("", filters={"captured": {"from": "2019-12-31", "to": "2020-01-01"}})
    assert stems(day) == {"a2"}
    nxt = flib.search("", filters={"captured": {"from": "2020-01-01", "to": "2020-01-02"}})
    assert stems(nxt) == {"a3"}
    year = flib.search("", filters={"captured": date_range("2019")})
    assert stems(year) == {"a1", "a2", "a6"}


def test_an_empty_intersection_says_so(flib):
    res = flib.search("", filters={"all": [{"collection": "shoot"}, {"collection": "studio"}]})
    assert res.total == 0 and res.hits == []
    assert any("no asset is in every one of the collections 'shoot', 'studio'" in n
               for n in res.notices)
    union = flib.search("", filters={"any": [{"collection": "shoot"}, {"collection": "studio"}]})
    assert union.total == 5


def test_an_unknown_collection_is_an_error_naming_it(flib):
    with pytest.raises(FilterError, match="no collection 'nowhere'"):
        flib.search("", filters={"collection": "nowhere"})


def test_rights_states_only_for_those_who_may_see_them(flib):
    a = ids(flib)
    later = datetime.now(timezone.utc) + timedelta(days=30)
    flib.set_embargo([a["a1"]], later)
    flib.set_rights_expiry([a["a2"]], datetime.now(timezone.utc) - timedelta(days=1))
    flib.set_rights_expiry([a["a3"]], later)
    try:
        assert stems(flib.search("", filters={"rights": "embargoed"})) == {"a1"}
        assert stems(flib.search("", filters={"rights": "expired"})) == {"a2"}
        soon = (later + timedelta(days=1)).date().isoformat()
        assert stems(flib.search("", filters={"rights": {"expiring_before": soon}})) == {"a3"}
        mia = flib.as_user("mia")
        with pytest.raises(FilterError, match="only the owner and admins"):
            mia.search("", filters={"rights": "embargoed"})
        # a member sees neither the embargoed nor the expired asset
        assert stems(mia.search("", filters={"creator": "jane doe"})) == set()
        assert stems(mia.search("", filters={"rights": {"expiring_before": soon}})) == {"a3"}
    finally:
        flib.set_embargo([a["a1"]], None)
        flib.set_rights_expiry([a["a2"], a["a3"]], None)


# ---- inside the search statement (lexical lane, vector lanes, bulk) ---------

@pytest.mark.parametrize("tree, owner, member", PREDICATES)
def test_a_query_with_a_filter_counts_exactly_what_passes_it(flib, tree, owner, member):
    # every file's title holds "harbour": the filter alone decides the set
    res = flib.search("harbour", filters=tree, limit=50)
    assert stems(res) == owner and res.total == len(owner)
    assert res.verdict == "complete" and res.total_exact and res.filter == tree
    if member is None:
        assert_hidden_like_missing(flib, "harbour", tree)
        return
    mia = flib.as_user("mia").search("harbour", filters=tree, limit=50)
    assert stems(mia) == member and mia.total == len(member) and mia.verdict == "complete"


def test_filters_and_scope_intersect_and_pages_follow_the_ranking(flib):
    res = flib.search("harbour", filters={"creator": "jane doe"}, scope="shoot")
    assert stems(res) == {"a1", "a2"}
    page2 = flib.search("harbour", filters={"country": "portugal"}, limit=1, offset=1)
    full = flib.search("harbour", filters={"country": "portugal"}, limit=3)
    assert [h.asset_id for h in page2.hits] == [full.hits[1].asset_id]
    assert page2.total == 3
    none = flib.search("boat", filters={"creator": "john roe"})
    assert none.total == 0 and none.verdict == "complete"
    assert any("nothing that passes the filter matches the query" in n for n in none.notices)


def test_fused_lanes_keep_only_what_passes_the_filter(lib: Library, photos: Path, tmp_path: Path):
    from tinymodels import build_clip

    for name, colour, creator in [("red1", (255, 0, 0), "Ann"), ("red2", (250, 10, 10), "Bob"),
                                  ("blue1", (0, 0, 255), "Ann")]:
        path = make_image(photos / f"{name}.png", size=(16, 16), color=colour, fmt="PNG")
        exiftool_write(path, "-XMP-dc:Title=kettle", f"-XMP-dc:Creator={creator}")
    lib.ingest(photos)
    lib.install_model(build_clip(tmp_path / "models" / "tiny-clip"))
    lib.use_model("tiny-clip", "image")
    lib.embed()
    plain = lib.search("red kettle", limit=10)
    assert plain.lanes == ["lexical", "image"] and stems(plain) == {"red1", "red2", "blue1"}
    res = lib.search("red kettle", filters={"creator": "ann"}, limit=10)
    assert stems(res) == {"red1", "blue1"} and res.total == 2
    assert res.hits[0].explain["image"]["rank"] is not None
    assert res.verdict == "complete" and res.lanes == ["lexical", "image"]
    assert res.filter == {"creator": "ann"}


# ---- machine words (asset_machine) -------------------------------

def machine_truth(lib: Library, column: str, value) -> set[str]:
    """The stems whose asset_machine row holds ``value`` (read directly)."""
    test = {"kind": "m.kind = %s", "colour": "%s = ANY (m.colours)",
            "background": "m.background = %s", "cutout": "m.cutout = %s"}[column]
    rows = lib.conn.execute(
        "SELECT regexp_replace(f.rel_path, '^.*/|[.][a-z]+$', '', 'g') FROM asset_machine m "
        "JOIN asset_file f ON f.asset_id = m.asset_id WHERE " + test, (value,)).fetchall()
    return {r[0] for r in rows}


def test_machine_word_predicates_match_asset_machine(flib):
    seen = flib.conn.execute("SELECT count(*) FROM asset_machine").fetchone()[0]
    assert seen == 6
    colours = {c for (cs,) in flib.conn.execute("SELECT colours FROM asset_machine") for c in cs}
    kinds = {k for (k,) in flib.conn.execute("SELECT kind FROM asset_machine") if k}
    assert colours and kinds
    checks = [("colour", c) for c in colours] + [("kind", k) for k in kinds] + \
        [("background", b) for b in ("white", "uniform", "scene")] + [("cutout", True)]
    for field, value in checks:
        want = machine_truth(flib, field, value)
        res = flib.search("", filters={field: value}, limit=50)
        assert stems(res) == want and res.total == len(want), (field, value)
        mia = flib.as_user("mia").search("", filters={field: value}, limit=50)
        assert stems(mia) == want - {"a6"}, (field, value)
    # the pictures are solid blue-ish / purple-ish blocks: some colour is found for each
    assert all(flib.search("", filters={"colour": c}).total > 0 for c in colours)


# ---- facets -------------------------------------------------------------------

def counts(f: dict, facet: str) -> dict[str, int]:
    return {v["key"]: v["count"] for v in f["facets"][facet]}


def test_facets_count_the_whole_result_exactly_and_a_hidden_asset_moves_none(flib):
    res = flib.search("harbour", facets=True, limit=1)
    f = res.facets
    assert f["exact"] is True and len(res.hits) == 1
    assert counts(f, "creator") == {"jane doe": 3, "john roe": 2}
    assert counts(f, "keyword") == {"harbour": 4, "approved": 1, "boat": 1, "bridge": 1}
    assert counts(f, "year") == {"2019": 3, "2020": 1}
    assert counts(f, "format") == {"image/jpeg": 5, "image/png": 1}
    assert counts(f, "orientation") == {"landscape": 3, "panorama": 1, "portrait": 1,
                                        "square": 1}
    assert counts(f, "country") == {"portugal": 3, "france": 1}
    assert sorted(v["value"] for v in f["facets"]["collection"]) == \
        ["private", "shoot/lisbon", "shoot/porto", "studio"]
    png = f["facets"]["format"][1]
    assert png["value"] == "png" and png["filter"] == {"media_type": "image/png"}
    y2019 = next(v for v in f["facets"]["year"] if v["key"] == "2019")
    narrowed = flib.search("harbour", filters=y2019["filter"])
    assert narrowed.total == y2019["count"] == 3
    # the member: a6 (private/) moves no count
    m = flib.as_user("mia").search("harbour", facets=True).facets
    assert counts(m, "creator") == {"jane doe": 2, "john roe": 2}
    assert counts(m, "keyword") == {"harbour": 3, "approved": 1, "boat": 1, "bridge": 1}
    assert counts(m, "year") == {"2019": 2, "2020": 1}
    assert counts(m, "orientation")["landscape"] == 2
    assert "private" not in {v["value"] for v in m["facets"]["collection"]}
    # facets of a filtered result narrow with it
    jd = flib.search("", filters={"creator": "jane doe"}, facets=True).facets
    assert counts(jd, "creator") == {"jane doe": 3} and jd["exact"] is True


def test_facets_of_a_truncated_result_say_at_least(flib):
    before = flib.lexical_settings()
    flib.set_lexical_settings(raw_cap=2, keep_cap=2)
    try:
        res = flib.search("harbour", facets=True)
        assert res.verdict == "truncated" and res.facets["exact"] is False
        assert sum(counts(res.facets, "format").values()) == 2   # what the result holds
    finally:
        flib.set_lexical_settings(raw_cap=before["raw_cap"], keep_cap=before["keep_cap"])
    with pytest.raises(ValueError, match="top = 0 is out of range"):
        flib.facets("harbour", top=0)


# ---- the CLI -------------------------------------------------------------------

def loupe_cli(lib: Library, *args: str):
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("LOUPE_")}
    return subprocess.run([sys.executable, "-m", "loupe.cli", "--home", str(lib.home),
                           "--database-url", lib.test_url, *args],
                          env=env, capture_output=True, text=True, timeout=120)


def test_cli_search_takes_readable_filters_json_and_facets(flib):
    import json

    out = loupe_cli(flib, "search", "harbour", "--creator", "jane doe", "--captured", "2019",
                    "--orientation", "portrait", "--json")
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout)
    assert {Path(h["path"]).stem for h in res["hits"]} == {"a2"} and res["total"] == 1
    assert res["filter"] == {"all": [{"creator": "jane doe"}, {"orientation": "portrait"},
                                     {"captured": {"from": "2019-01-01", "to": "2020-01-01"}}]}
    out = loupe_cli(flib, "search", "--where", '{"any": [{"format": "png"}, {"country": "France"}]}',
                    "--collection", "shoot", "--collection", "studio", "--facets")
    assert out.returncode == 0, out.stderr
    assert "2 assets pass the filter" in out.stdout
    assert "format: jpeg (1), png (1)" in out.stdout
    out = loupe_cli(flib, "search", "--collection", "shoot", "--collection", "studio",
                    "--all-collections")
    assert out.returncode == 0 and "Nothing passes the filter." in out.stdout
    assert "no asset is in every one of the collections 'shoot', 'studio'" in out.stdout
    bad = loupe_cli(flib, "search", "x", "--where", '{"all": [{"captured": {"from": "2019"}}]}')
    assert bad.returncode == 1 and "filter $.all[0].captured.from: '2019' is not a date" in bad.stderr
    assert loupe_cli(flib, "search").returncode == 2


# ---- the REST API ----------------------------------------------------------------

def test_api_search_takes_a_filter_tree_and_returns_facets(flib):
    import json

    from fastapi.testclient import TestClient

    from loupe.web import create_app

    app = create_app(flib.home, database_url=flib.test_url, pool_size=1)
    with TestClient(app) as client:
        def auth(user):
            tok = client.post("/api/tokens", json={"name": user, "password": f"{user}-password-1"})
            return {"Authorization": f"Bearer {tok.json()['token']}"}
        tree = {"all": [{"keyword": "harbour"}, {"not": {"orientation": "landscape"}}]}
        r = client.get("/api/search", params={"q": "harbour", "filters": json.dumps(tree),
                                              "facets": "true"}, headers=auth("ada"))
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["total"] == 2 and body["verdict"] == "complete" and body["filter"] == tree
        assert {Path(h["path"]).stem for h in body["hits"]} == {"a2", "a4"}
        assert body["facets"]["exact"] is True
        assert {v["key"]: v["count"] for v in body["facets"]["facets"]["orientation"]} == \
            {"portrait": 1, "panorama": 1}
        # no q: the filtered set, newest first; a member counts only what it may read
        r = client.get("/api/search", params={"filters": '{"creator": "Jane Doe"}'},
                       headers=auth("mia"))
        assert r.status_code == 200 and r.json()["total"] == 2, r.text
        assert r.json()["hits"][0]["score"] is None
        bad = client.get("/api/search", params={"q": "x", "filters": '{"any": [{"kind": "x"}]}'},
                         headers=auth("ada"))
        assert bad.status_code == 400 and "filter $.any[0].kind:" in bad.json()["detail"]
        empty = client.get("/api/search", params={
            "filters": '{"all": [{"collection": "shoot"}, {"collection": "studio"}]}'},
            headers=auth("ada")).json()
        assert empty["verdict_text"] == "Nothing passes the filter."
        assert any("intersection is empty" in n for n in empty["notices"])
        dry = client.post("/api/bulk", json={"action": "add_keyword", "value": "x", "q": "",
                                             "filters": {"creator": "john roe"},
                                             "dry_run": True}, headers=auth("ada"))
        assert dry.status_code == 200, dry.text
        assert dry.json()["matched_any"] == 2


@pytest.mark.parametrize("text, want", [
    ("2019:06:15 10:20:30", "2019-06-15 10:20:30+00"),
    ("2019-06-15T10:20:30+02:00", "2019-06-15 10:20:30+00"),   # the offset is ignored: UTC
    ("2019:06:15", "2019-06-15 00:00:00+00"),
    ("2020:02:29 00:00:00", "2020-02-29 00:00:00+00"),
    ("2019:02:29 00:00:00", None),                             # no such day
    ("2019:13:01 00:00:00", None),
    ("0000:00:00 00:00:00", None),                             # what cameras write for "unset"
    ("2019:06:15 24:00:00", None),
    ("yesterday", None),
])
def test_capture_dates_are_read_as_utc_and_nonsense_is_no_date(lib, text, want):
    got = lib.conn.execute("SELECT loupe_file_captured(jsonb_build_object('date_taken', %s::text))"
                           "::text", (text,)).fetchone()[0]
    assert got == (want and want.replace("+00", "+00"))


@pytest.mark.parametrize("tree", [{"captured": {"to": "9999-12-31"}},
                                  {"rights": {"expiring_before": "9999-12-31"}}])
def test_a_date_at_the_end_of_the_calendar_is_a_clear_error(tree):
    """9999-12-31 gave a server error (its next day is no date)."""
    with pytest.raises(FilterError, match="years 1800-9998 only"):
        parse(tree)
    with pytest.raises(FilterError, match=r"year 9999 is out of range \(1800-9998\)"):
        date_range("9999-12-31")


def test_json_nested_past_the_interpreter_is_the_depth_error():
    """~1,900 levels (under the size limit) was a server error."""
    deep = '{"not": ' * 1900 + '{"kind": "photo"}' + "}" * 1900
    with pytest.raises(FilterError, match="nested deeper than 16 levels"):
        parse(deep)


# ---- typo suggestions under a filter, and the filter in words ----------

def test_typo_suggestions_come_only_from_assets_passing_the_filter(flib):
    """A suggestion is a word of an asset that passes the filter and that the
    viewer may read: "bridge" is only in a3 (John Roe, Porto), "secret" only
    in a6 (Jane Doe, private/: mia may not read it)."""
    mia = flib.as_user("mia")
    assert set(mia.search("bridje").corrections.values()) == {"bridg"}   # unfiltered: a3's word
    jane = mia.search("bridje", filters={"creator": "jane doe"})
    assert jane.corrections == {} and jane.total == 0
    porto = mia.search("bridje", filters={"location": "porto"})
    assert set(porto.corrections.values()) == {"bridg"} and stems(porto) == {"a3"}
    # a hidden asset's word is never suggested under a filter it passes
    assert set(flib.search("secrett", filters={"creator": "jane doe"}).corrections.values()) \
        == {"secret"}
    assert mia.search("secrett", filters={"creator": "jane doe"}).corrections == {}
    # nor is a word of an asset the filter leaves out, for the owner either
    assert flib.search("secrett", filters={"creator": "john roe"}).corrections == {}


def test_a_word_known_outside_the_filter_is_never_corrected(db_url, home, photos):
    """"portrait" (a Van Gogh title elsewhere) was "corrected"
    to "port" under a collection filter whose pictures hold "port" but no
    portrait, and answered with two motorcycles. A word the viewer finds in
    the library is known, filter or not; a real typo is still corrected from
    the filter's words."""
    a = make_image(photos / "art" / "vangogh.jpg", size=(40, 30), color=(200, 120, 20))
    exiftool_write(a, "-XMP-dc:Title=Self portrait with straw hat")
    b = make_image(photos / "bikes" / "moto.jpg", size=(40, 30), color=(20, 120, 200))
    exiftool_write(b, "-XMP-dc:Title=Motorcycle at the port")
    with Library.open(home, database_url=db_url, create=True) as lib:
        lib.init(languages=["en", "fr"])   # (French analysis: portrait -> portr)
        assert lib.ingest(photos).new_assets == 2
        res = lib.search("portrait", filters={"collection": "bikes"})
        assert (res.corrections, res.total) == ({}, 0)
        res = lib.search("portt", filters={"collection": "bikes"})
        assert res.corrections == {"portt": "port"} and stems(res) == {"moto"}


def test_notices_name_the_filter_in_words_not_json(flib):
    tree = {"all": [{"captured": date_range("2019")}, {"creator": "jane doe"},
                    {"not": {"format": "png"}}]}
    res = flib.search("harbour", filters=tree)
    assert res.filter == tree                     # the JSON stays in the result / API
    [scope] = [n for n in res.notices if n.startswith("filter (")]
    assert scope.startswith("filter (captured in 2019, creator “jane doe”, not format png): "
                            "3 members")
    assert not any("{" in n for n in res.notices)
    empty = flib.search("", filters={"all": [{"creator": "nobody"}, {"format": "png"}]})
    assert empty.notices == ["no asset passes the filter (creator “nobody”, format png), "
                             "whatever the query"]
    out = loupe_cli(flib, "search", "harbour", "--creator", "jane doe", "--captured", "2019")
    assert out.returncode == 0, out.stderr
    assert "filter: creator “jane doe”, captured in 2019\n" in out.stdout
    assert '{"' not in out.stdout


def test_the_page_shows_the_filter_in_escaped_words(flib):
    import json

    from fastapi.testclient import TestClient

    from loupe.web import create_app
    from weblib import web_login

    hostile = "<b>Eve</b> & co"
    tree = {"not": {"any": [{"creator": hostile}, {"format": "png"}]}}
    app = create_app(flib.home, database_url=flib.test_url, pool_size=1)
    with TestClient(app) as client:
        web_login(client, "ada", "ada-password-1")
        page = client.get("/", params={"q": "harbour", "filters": json.dumps(tree)})
        assert page.status_code == 200, page.text
        html = page.text
        words = "not (creator “&lt;b&gt;Eve&lt;/b&gt; &amp; co” or format png)"
        assert f'<li class="chip">{words} ' in html
        assert f'<p class="notice">filter ({words}): ' in html
        assert "<b>Eve" not in html and '<p class="notice">{' not in html


def test_the_filter_in_words_names_every_predicate_of_the_contract():
    """filters.words.sentence reads each predicate, including those added after
    it was written (monochrome, from the conversational compiler)."""
    from loupe.filters.words import sentence

    tree = {"all": [{"monochrome": True}, {"not": {"monochrome": True}}, {"cutout": True},
                    {"person": "Ada Lovelace"}, {"kind": "photo"}]}
    assert sentence(tree) == ("black and white, not black and white, a cut-out, "
                              "person “Ada Lovelace”, kind photo")
