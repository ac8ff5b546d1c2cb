"""Browsing the library without a query (the home page) and one meaning per
query, over HTTP (FastAPI's TestClient) against the real database and a
dated library of real files (tests/browselib.py): the grid of what the
viewer may read, newest first and paged; the timeline's counts equal to the
totals its links show; the collection tree; facets without a query; the
language menu's default of every library language."""

from __future__ import annotations

import json
import re
import uuid
from html import unescape
from urllib.parse import parse_qs, urlsplit

import psycopg
import pytest
from fastapi.testclient import TestClient
from psycopg.conninfo import make_conninfo

from browselib import COLLECTIONS, build_library, expected_months, taken
from loupe.web import create_app
from loupe.web.browse import collection_tree, month_range
from loupe.web.pages import PAGE_SIZE

N = 100
FAMILY = ("family/2019", "family/2020")


@pytest.fixture(scope="module")
def site(pg_admin_url, template_db, tmp_path_factory):
    """``(client, headers by user, asset ids by file index)``."""
    tmp = tmp_path_factory.mktemp("browse")
    name = "loupe_wb_" + uuid.uuid4().hex[:12]
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name} TEMPLATE {template_db}")
    url = make_conninfo(pg_admin_url, dbname=name)
    with build_library(tmp / "home", url, tmp / "photos", N, languages=["en", "fr"]) as lib:
        ids = {int(re.search(r"(\d+)\.jpg$", r[0]).group(1)): r[1]
               for r in lib.conn.execute("SELECT rel_path, asset_id FROM asset_file")}
    app = create_app(tmp / "home", database_url=url, pool_size=2)
    with TestClient(app) as client:
        heads = {}
        for user in ("admin", "carol"):
            tok = client.post("/api/tokens", json={"name": user, "password": f"{user}-password"})
            heads[user] = {"Authorization": f"Bearer {tok.json()['token']}"}
        yield client, heads, ids
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def _tiles(html: str) -> list[int]:
    return [int(x) for x in re.findall(r'<li class="tile"><a href="/assets/(\d+)\?', html)]


def _verdict(html: str) -> str:
    return unescape(re.search(r'<p id="verdict"[^>]*>([^<]*)</p>', html).group(1))


def _links(html: str, cls: str) -> list[tuple[str, str, int]]:
    """``(url, text, count)`` of each link of class ``cls`` with its count."""
    return [(unescape(u), t, int(n.replace(",", "")))
            for u, t, n in re.findall(r'<a href="([^"]+)" class="' + cls + r'"[^>]*>([^<]+)</a>'
                                      r'\s*<span class="count">([\d,]+)</span>', html)]


def test_the_home_page_is_what_a_member_may_read_newest_first(site):
    client, heads, ids = site
    mine = sorted((ids[i] for i in range(N) if COLLECTIONS[i % 5] in FAMILY), reverse=True)
    page = client.get("/", headers=heads["carol"]).text
    assert _verdict(page) == f"All {len(mine)} assets you may read, newest first."
    assert _tiles(page) == mine[:PAGE_SIZE]
    assert "Page 1 of 2" in page
    page2 = client.get("/?page=2", headers=heads["carol"]).text
    assert _tiles(page2) == mine[PAGE_SIZE:2 * PAGE_SIZE]
    # the grid's next page, as the scrolling grid fetches it
    more = client.get("/results?page=2&grid_only=1", headers=heads["carol"]).text
    assert _tiles(more) == mine[PAGE_SIZE:2 * PAGE_SIZE]
    # the admin sees the whole library, and no bulk form without a query
    page = client.get("/", headers=heads["admin"]).text
    assert _verdict(page) == f"All {N} assets you may read, newest first."
    assert _tiles(page) == sorted(ids.values(), reverse=True)[:PAGE_SIZE]
    assert 'class="bulk"' not in page


def test_the_timeline_counts_exactly_what_its_links_show(site):
    client, heads, ids = site
    page = client.get("/", headers=heads["carol"]).text
    months = _links(page, "month-link")
    want = expected_months(N, FAMILY)
    got = {}
    for url, text, n in months:
        rng = json.loads(parse_qs(urlsplit(url).query)["filters"][0])["captured"]
        y, m = int(rng["from"][:4]), int(rng["from"][5:7])
        assert rng == month_range(y, m)
        got[(y, m)] = n
    assert got == dict(want)
    years = {int(t): n for _u, t, n in _links(page, "year-link")}
    assert years == {2020: sum(v for k, v in want.items() if k[0] == 2020),
                     2019: sum(v for k, v in want.items() if k[0] == 2019)}
    # every link's total is its count, and its grid holds only that month
    for url, _text, n in months[:3] + _links(page, "year-link"):
        shown = client.get(url, headers=heads["carol"]).text
        assert re.search(r'data-total="(\d+)"', shown).group(1) == str(n)
    (url, _t, n), = [x for x in months if "%222019-05-01%22%2C" in x[0]]
    shown = client.get(url, headers=heads["carol"]).text
    want_ids = sorted((ids[i] for i in range(N) if COLLECTIONS[i % 5] in FAMILY
                       and taken(i) and taken(i)[:2] == (2019, 5)), reverse=True)
    assert _tiles(shown) == want_ids
    assert _verdict(shown) == "1 result — the only one." and n == 1
    chip = re.search(r'<li class="chip">([^<]+) <a', shown).group(1)
    assert unescape(chip) == "captured in May 2019"
    # the timeline marks the month the page shows, and only it
    assert re.findall(r'class="month-link" aria-current="page" data-month="([\d-]+)"', shown) \
        == ["2019-05"]
    # the admin's timeline also counts the undated assets (every 10th file)
    page = client.get("/", headers=heads["admin"]).text
    assert f'<p class="hint" id="undated">{N // 10} without a capture date.</p>' in page
    assert sum(n for _u, _t, n in _links(page, "month-link")) == N - N // 10


def test_collections_are_a_tree_of_what_the_viewer_may_read(site):
    client, heads, ids = site
    page = client.get("/", headers=heads["carol"]).text
    tree = [(t, n) for _u, t, n in _links(page, "collection-link")]
    assert tree == [("family", 40), ("2019", 20), ("2020", 20)]
    url, = [u for u, t, _n in _links(page, "collection-link") if t == "2020"]
    shown = client.get(url, headers=heads["carol"]).text
    assert re.search(r'data-total="(\d+)"', shown).group(1) == "20"
    assert set(_tiles(shown)) <= {ids[i] for i in range(N) if COLLECTIONS[i % 5] == "family/2020"}
    # the admin's tree holds every collection, nested
    page = client.get("/", headers=heads["admin"]).text
    assert [t for _u, t, _n in _links(page, "collection-link")] == \
        ["family", "2019", "2020", "trips", "lisbon", "porto", "work"]
    # a scope alone is browsed as its collection (the menu's "In" without words)
    shown = client.get("/?scope=trips", headers=heads["admin"]).text
    assert re.search(r'data-total="(\d+)"', shown).group(1) == "40"
    # a member asking for a collection it may not read is told it does not exist
    shown = client.get("/?scope=work", headers=heads["carol"]).text
    assert 'class="error"' in shown and 'data-total' not in shown


def test_a_collection_whose_parent_is_hidden_is_a_root():
    tree = collection_tree([
        {"id": 2, "path": "a/b", "parent_id": 1, "assets": 3},
        {"id": 3, "path": "a/b/c", "parent_id": 2, "assets": 1},
        {"id": 4, "path": "Z", "parent_id": None, "assets": 5}])
    assert [(n["name"], [c["name"] for c in n["children"]]) for n in tree] == \
        [("b", ["c"]), ("Z", [])]


def test_facets_work_without_a_query(site):
    client, heads, _ids = site
    page = client.get("/", headers=heads["carol"]).text
    facets = page[page.index('id="facets"'):]
    years = dict(re.findall(r'<a href="[^"]+" class="facet-value">(\d{4})</a>\s*'
                            r'<span class="count">(\d+)</span>', facets))
    assert years == {"2019": "20", "2020": "20"}
    # a facet link narrows the library without a query
    url = unescape(re.search(r'<a href="([^"]+)" class="facet-value">2019</a>', facets).group(1))
    assert re.search(r'data-total="(\d+)"', client.get(url, headers=heads["carol"]).text
                     ).group(1) == "20"


def test_every_way_of_reaching_a_search_sends_the_same_request(site):
    client, heads, _ids = site
    page = client.get("/", headers=heads["admin"]).text
    menu = page[page.index('<select id="lang"'):page.index("</select>", page.index('id="lang"'))]
    options = re.findall(r'<option value="([^"]*)"\s*(selected)?>([^<]+)</option>', menu)
    assert options == [("", "selected", "every library language"), ("en", "", "en"),
                       ("fr", "", "fr")]
    # the URL, the form (its empty language) and the API search the same languages
    for path in ("/?q=photo", "/?q=photo&lang=", "/results?q=photo&lang="):
        assert re.search(r'data-langs="([^"]*)"', client.get(path, headers=heads["admin"]).text
                         ).group(1) == "en fr"
    api = client.get("/api/search?q=photo", headers=heads["admin"]).json()
    assert api["langs"] == ["en", "fr"]
    # a language chosen in the menu is kept and searched alone
    page = client.get("/?q=photo&lang=fr", headers=heads["admin"]).text
    assert re.search(r'data-langs="([^"]*)"', page).group(1) == "fr"
    assert '<option value="fr" selected>' in page
