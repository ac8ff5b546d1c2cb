"""Filters (issue 17 part 1): the filter tree's JSON contract, date ranges,
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
    lib.grant("mia", collection="shoot")
    lib.grant("mia", collection="studio")
    lib.bulk("add_keyword", "Approved", query="bridge")
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
    assert evil in c.params.values()


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
    ({"collection": "private"}, {"a6"}, set()),
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
    mia = flib.as_user("mia").search("", filters=tree, limit=50)
    assert stems(mia) == member and mia.total == len(member)
    assert mia.verdict == "complete"


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
