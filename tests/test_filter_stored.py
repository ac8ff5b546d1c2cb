"""Filter and facet values stored at ingest (migration 0026): the filtered and faceted statements read asset_file's stored
columns (facet_tokens / facet_labels, country, captured) and their indexes,
never a file's metadata or raw metadata JSON at query time, and stay exact
for a member whose own files carry large (bounded) raw metadata.

Golden files: tests/sql/filters/ (regenerate with LOUPE_REGEN_SQL=1 as for
tests/test_golden_sql.py, then read git diff tests/sql/)."""

from __future__ import annotations

import json
import os
import re
import uuid
from datetime import datetime, timezone
from pathlib import Path

import psycopg
import pytest
from PIL.PngImagePlugin import PngInfo
from psycopg.conninfo import make_conninfo

from loupe import Library
from loupe.access import OWNER
from loupe.filters import Context, compile_tree
from loupe.filters import queries as fq
from loupe.filters import search as fs

from imaging import exiftool_write, make_image

GOLDEN = Path(__file__).parent / "sql" / "filters"
REGEN = os.environ.get("LOUPE_REGEN_SQL") == "1"

#: What no filter or facet statement may read: the JSON columns and the
#: functions of 0020 that parse them per row.
JSON_READS = re.compile(r"raw_metadata|\bmetadata\b|loupe_file_country|loupe_file_facets"
                        r"|loupe_file_captured|loupe_json_texts")

#: Every per-file predicate (and a NOT of the country, the B6 carrier).
TREE = {"all": [{"creator": "Jane Doe"}, {"keyword": "harbour"}, {"location": "Lisbon"},
                {"country": "Portugal"}, {"not": {"country": "Iceland"}},
                {"captured": {"from": "2019-01-01", "to": "2020-01-01"}}]}


def _tidy(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip().splitlines()) + "\n"


def rendered() -> dict[str, str]:
    """name → a filter or facet statement as the library runs it."""
    c = compile_tree(TREE, Context(now=datetime(2026, 12, 1, tzinfo=timezone.utc),
                                   see_all=False, machine=True))
    return {
        "members": _tidy(c.members_sql()),
        "row_test": _tidy(c.where("k.asset_id")),
        "browse": _tidy(fq.BROWSE.replace("{members}", c.members_sql()).format(
            driver=c.driver, test=c.residual)),
        "facets": _tidy(fq.FACETS.replace("{machine}", fq.FACETS_MACHINE)),
    }


@pytest.mark.parametrize("name", ["members", "row_test", "browse", "facets"])
def test_filter_statements_match_their_golden_files(name):
    path = GOLDEN / f"{name}.sql"
    got = rendered()[name]
    if REGEN:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(got)
    assert path.exists(), f"{path} missing: regenerate with LOUPE_REGEN_SQL=1"
    assert got == path.read_text(), f"{name} changed: regenerate and review git diff tests/sql/"


@pytest.mark.parametrize("name", ["members", "row_test", "browse", "facets"])
def test_no_filter_or_facet_statement_reads_metadata_json(name):
    text = rendered()[name]
    assert JSON_READS.findall(text) == []
    # and what they read instead
    assert re.search(r"\bf\.(facet_tokens|facet_labels|country|captured)\b", text)


# ---- a library: plans, exactness with large raw metadata, bounds -----------

def _big_png(path: Path, chunks: int, colour) -> Path:
    """A 64x48 PNG with ``chunks`` zTXt chunks of 15,000 characters each
    (a hostile fill, scaled to today's bounds: each value under the
    16 KiB value bound, four of them near the 64 KiB bound of a file part)."""
    info = PngInfo()
    for i in range(chunks):
        info.add_text(f"Fill{i}", (f"{i:02d}" + "abcdefghij" * 1500)[:15_000], zip=True)
    return make_image(path, size=(64, 48), fmt="PNG", color=colour, pnginfo=info)


@pytest.fixture(scope="module")
def slib(pg_admin_url, template_db, tmp_path_factory):
    """Member ``bo`` reads mine/ only: three PNGs of ~60 KB raw metadata
    each (Iceland, Portugal, no country) and one plain JPEG (Portugal);
    other/ holds a file of Iceland bo may not read."""
    name = "loupe_fs_" + uuid.uuid4().hex[:12]
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name} TEMPLATE {template_db}")
    url = make_conninfo(pg_admin_url, dbname=name)
    root = tmp_path_factory.mktemp("fsphotos")
    big = [("b1", "Iceland", "2019:06:15 10:00:00"), ("b2", "Portugal", "2020:01:01 00:00:00"),
           ("b3", None, None)]
    for i, (stem, country, date) in enumerate(big):
        p = _big_png(root / "mine" / f"{stem}.png", 4, (40 * i, 90, 120))
        tags = [f"-XMP-dc:Creator=Bo {stem}", "-XMP-dc:Subject=fill"]
        tags += [f"-XMP-photoshop:Country={country}"] if country else []
        tags += [f"-XMP-exif:DateTimeOriginal={date}"] if date else []
        exiftool_write(p, *tags)
    plain = make_image(root / "mine" / "p1.jpg", color=(200, 10, 10))
    exiftool_write(plain, "-XMP-dc:Creator=Bo plain", "-XMP-photoshop:Country=Portugal",
                   "-XMP-photoshop:City=Lisbon", "-XMP-dc:Subject=fill")
    hidden = make_image(root / "other" / "h1.jpg", color=(10, 200, 10))
    exiftool_write(hidden, "-XMP-photoshop:Country=Iceland", "-XMP-dc:Subject=fill")
    lib = Library.open(tmp_path_factory.mktemp("fshome"), database_url=url)
    assert lib.ingest(root).new_assets == 5
    lib.create_user("bo", "bo-password-1")
    lib.grant("bo", collection="mine")
    yield lib
    lib.close()
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def _ids(lib: Library) -> dict[str, int]:
    return {Path(p).stem: a for a, p in lib.conn.execute("SELECT asset_id, path FROM asset_file")}


def test_the_big_files_really_carry_large_raw_metadata_and_their_stored_values(slib):
    rows = {Path(p).stem: (n, c, cap, t) for p, n, c, cap, t in slib.conn.execute(
        "SELECT path, length(raw_metadata::text), country, captured, facet_tokens"
        " FROM asset_file")}
    for stem in ("b1", "b2", "b3"):
        assert 60_000 < rows[stem][0] <= 65_536 + 4_096, (stem, rows[stem][0])
    assert rows["b1"][1:3] == ("Iceland", datetime(2019, 6, 15, 10, tzinfo=timezone.utc))
    assert rows["b2"][1:3] == ("Portugal", datetime(2020, 1, 1, tzinfo=timezone.utc))
    assert rows["b3"][1:3] == (None, None)
    assert rows["b1"][3] == ["country:iceland", "creator:bo b1", "keyword:fill"]
    assert rows["p1"][3] == ["country:portugal", "creator:bo plain", "keyword:fill",
                             "location:lisbon"]


@pytest.mark.parametrize("tree, expected", [
    ({"country": "iceland"}, {"b1"}),
    ({"not": {"country": "Iceland"}}, {"b2", "b3", "p1"}),
    ({"all": [{"not": {"country": f"c{i}"}} for i in range(31)] + [{"not": {"country": "Iceland"}}]},
     {"b2", "b3", "p1"}),
    ({"captured": {"from": "2019-01-01", "to": "2020-01-01"}}, {"b1"}),
    ({"captured": {"from": "2020-01-01"}}, {"b2"}),
    ({"all": [{"country": "Portugal"}, {"creator": "bo plain"}]}, {"p1"}),
    ({"location": "lisbon"}, {"p1"}),
    ({"keyword": "fill"}, {"b1", "b2", "b3", "p1"}),
])
def test_a_members_filter_over_its_large_raw_metadata_files_is_exact(slib, tree, expected):
    ids = _ids(slib)
    want = sorted(ids[s] for s in expected)
    res = slib.as_user("bo").search("", filters=tree, limit=50)
    assert sorted(h.asset_id for h in res.hits) == want and res.total == len(want)
    # the owner also sees other/h1 (Iceland)
    own = slib.search("", filters={"country": "Iceland"}, limit=50)
    assert sorted(h.asset_id for h in own.hits) == sorted([ids["b1"], ids["h1"]])


def test_a_members_facets_over_its_large_raw_metadata_files_are_exact(slib):
    f = slib.as_user("bo").search("", filters={"keyword": "fill"}, facets=True).facets
    assert f["exact"] is True
    country = {v["value"]: v["count"] for v in f["facets"]["country"]}
    assert country == {"Portugal": 2, "Iceland": 1}
    assert {v["value"]: v["count"] for v in f["facets"]["year"]} == {"2019": 1, "2020": 1}
    assert {v["value"] for v in f["facets"]["creator"]} == {"Bo b1", "Bo b2", "Bo b3",
                                                           "Bo plain"}


_EXPRESSIONS = ("Filter", "Index Cond", "Recheck Cond", "Join Filter", "Hash Cond",
                "Merge Cond", "Output")


def _plan(lib: Library, tree) -> str:
    """The filtered set's plan as text: index names and every expression a
    node evaluates (conditions, computed outputs; a scan's bare column list,
    which passes values on without reading them, is left out)."""
    c = fs.prepare(lib.conn, lib.tenant_id, tree, viewer=OWNER)
    params = fs.statement_params(c, lib.tenant_id, OWNER)
    with lib.conn.transaction():
        lib.conn.execute("SET LOCAL enable_seqscan = off")  # a 5-file library: force the index
        plan = lib.conn.execute("EXPLAIN (VERBOSE, FORMAT JSON) " + c.members_sql(),
                                params).fetchone()[0]
    out: list[str] = []

    def walk(node: dict) -> None:
        if "Index Name" in node:
            out.append('"Index Name": "%s"' % node["Index Name"])
        for key in _EXPRESSIONS:
            val = node.get(key)
            for e in val if isinstance(val, list) else [val] if val else []:
                if key != "Output" or not re.fullmatch(r"[\w.]+", e):
                    out.append(f"{key}: {e}")
        for child in node.get("Plans", []):
            walk(child)
    walk(plan[0]["Plan"])
    return "\n".join(out)


@pytest.mark.parametrize("tree, index", [
    ({"country": "Iceland"}, "asset_file_facet_tokens_idx"),
    ({"creator": "Bo b1"}, "asset_file_facet_tokens_idx"),
    # the stored column, through its index or as a filter beside the
    # tenant's (tenant_id, id) index, which the planner may prefer on a small library
    ({"captured": {"from": "2019-01-01", "to": "2020-01-01"}}, "f.captured"),
    ({"not": {"country": "Iceland"}}, None),
])
def test_a_country_or_date_predicate_plans_over_the_stored_column_or_its_index(slib, tree, index):
    plan = _plan(slib, tree)
    assert JSON_READS.findall(plan) == [], plan
    if index and index.startswith("f."):
        assert "asset_file_captured_col_idx" in plan or f"({index} >=" in plan, plan
    elif index:
        assert f'"Index Name": "{index}"' in plan
    else:
        assert "f.country" in plan


def test_facet_labels_are_bounded_per_file(slib):
    md = {"creator": ["C" * 201, "Ann"], "keywords": [f"k{i:04d}" for i in range(1500)],
          "location": ["Reykjavik", "iceland"]}
    raw = {"file": {"XMP-photoshop:Country": "Iceland"}}
    labels, tokens = slib.conn.execute(
        "SELECT l, loupe_facet_tokens(l) FROM loupe_file_facet_labels(%s::jsonb, %s::jsonb) l",
        (json.dumps(md), json.dumps(raw))).fetchone()
    # the country first, then creators and keywords in file order; the
    # 201-character creator is not kept; 1,000 labels at most
    assert labels[:4] == ["country:Iceland", "creator:Ann", "keyword:k0000", "keyword:k0001"]
    assert len(labels) == 1000 and labels[-1] == "keyword:k0997"
    assert sum(len(x) for x in labels) <= 32_000
    assert "location:iceland" not in tokens and len(tokens) == 1000
    # 32,000 characters: 208-character labels stop at the 153rd
    md = {"keywords": [f"{i:04d}" + "x" * 196 for i in range(1000)]}
    labels = slib.conn.execute("SELECT loupe_file_facet_labels(%s::jsonb, '{}'::jsonb)",
                               (json.dumps(md),)).fetchone()[0]
    assert len(labels) == 32_000 // 208 and sum(len(x) for x in labels) <= 32_000


# ---- the enumeration skips what an exact driver guarantees --------

def _compile(tree):
    return compile_tree(tree, Context(now=datetime(2026, 12, 1, tzinfo=timezone.utc),
                                      see_all=False, machine=True))


def test_an_exact_driver_is_not_tested_again_per_asset():
    year = {"captured": {"from": "2008-01-01", "to": "2009-01-01"}}
    c = _compile({"all": [year, {"orientation": "portrait"}]})
    # enumerated from the capture-time index (with the file read test in
    # it): per asset only the orientation is left
    assert "f.captured" in c.driver and "f.readers" in c.driver
    assert "f.captured" not in c.residual and "loupe_displayed_orientation" in c.residual
    assert c.members_sql().count("f.captured >=") == 1
    # the whole test still holds both, for the search's other entry points
    assert "f.captured" in c.test and "loupe_displayed_orientation" in c.test
    assert _compile({"country": "Iceland"}).residual == "true"
    assert _compile({"any": [{"creator": "a"}, {"keyword": "b"}]}).residual == "true"
    # the person driver is not exact (hidden people, names from files): tested again
    assert "person p" in _compile({"person": "Ana"}).residual
    # no positive predicate: every asset of the tenant, the whole test
    n = _compile({"not": {"country": "Iceland"}})
    assert n.driver == fq.UNIVERSE and n.residual == n.test
