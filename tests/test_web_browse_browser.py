"""Browsing a dated library in headless Debian chromium (Playwright) against
a real ``loupe serve``: the home page's grid as a member, the timeline and
the collection tree, the language menu's one meaning for every way of
searching, search by a dropped, pasted or picked picture, and the page at
phone width. Screenshots go to tests/artifacts/."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import psycopg
import pytest
from psycopg.conninfo import make_conninfo

import loupe
from browselib import build_library, expected_months
from test_web_browser import ARTIFACTS, CHROMIUM, _free_port, browser, login  # noqa: F401

sync_api = pytest.importorskip("playwright.sync_api")
pytestmark = [pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian chromium not installed"),
              pytest.mark.slow]  # real Chromium

#: Assets of the library (small real JPEG files, ingested once per module).
N = 400
FAMILY = ("family/2019", "family/2020")


@pytest.fixture(scope="module")
def server(pg_admin_url, template_db, tmp_path_factory):
    """``loupe serve`` on the dated library: ``(base URL, db url, home, photos)``."""
    tmp = tmp_path_factory.mktemp("browse-browser")
    name = "loupe_bb_" + uuid.uuid4().hex[:12]
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name} TEMPLATE {template_db}")
    url = make_conninfo(pg_admin_url, dbname=name)
    home = tmp / "home"
    build_library(home, url, tmp / "photos", N, languages=["en", "fr"]).close()
    port = _free_port()
    src = str(Path(loupe.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
    log = open(tmp / "serve.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "loupe.cli", "--home", str(home),
                             "--database-url", url, "serve", "--port", str(port), "--pool", "2"],
                            env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(150):
            if proc.poll() is not None:
                raise RuntimeError((tmp / "serve.log").read_text())
            try:
                if httpx.get(base + "/openapi.json", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.2)
        yield base, url, home, tmp / "photos"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()
        with psycopg.connect(pg_admin_url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def _total(page) -> int:
    return int(page.locator("#verdict").get_attribute("data-total"))


def test_a_member_browses_the_library_by_timeline_and_collection(server, browser):
    base, *_ = server
    page = login(browser, base, "carol")
    mine = N * 2 // 5
    assert page.locator("#verdict").text_content() == \
        f"All {mine} assets you may read, newest first."
    assert page.locator("#grid .tile").count() == 24
    page.screenshot(path=ARTIFACTS / "browse-home.png", full_page=True)
    # the grid loads the next page as its end scrolls into view
    page.locator("#next-page").scroll_into_view_if_needed()
    page.wait_for_function("() => document.querySelectorAll('#grid .tile').length === 48")
    # the timeline: a month's link jumps to exactly its count of pictures
    want = expected_months(N, FAMILY)
    month = page.get_by_role("link", name=f"May 2019: {want[(2019, 5)]}")
    month.click()
    page.wait_for_url("**/?filters=*")
    assert _total(page) == want[(2019, 5)]
    assert page.locator("#grid .tile").count() == min(24, want[(2019, 5)])
    assert page.locator("#chips .chip").first.text_content().startswith("captured in May 2019")
    page.screenshot(path=ARTIFACTS / "browse-month.png", full_page=True)
    # a year
    page.locator(".year-link", has_text="2020").click()
    page.wait_for_function("() => document.getElementById('verdict').dataset.total === '"
                           + str(sum(v for k, v in want.items() if k[0] == 2020)) + "'")
    # the collection tree: a sub-collection, then its parent
    page.locator(".collection-link", has_text="2019").click()
    page.wait_for_function("() => document.getElementById('verdict').dataset.total === '"
                           + str(mine // 2) + "'")
    page.locator(".collection-link", has_text="family").click()
    page.wait_for_function("() => document.getElementById('verdict').dataset.total === '"
                           + str(mine) + "'")
    # a member's tree holds only what it may read
    assert page.locator(".collection-link").all_text_contents() == ["family", "2019", "2020"]
    page.context.close()


def test_instant_search_the_button_and_the_url_send_the_same_request(server, browser):
    base, *_ = server
    page = login(browser, base, "admin")
    assert page.get_by_label("Language").input_value() == ""
    sent = []
    page.on("request", lambda r: sent.append(r.url) if "/results?" in r.url else None)
    page.get_by_label("Search the library").fill("photo")
    page.wait_for_function("() => { const v = document.getElementById('verdict');"
                           " return v && v.dataset.q === 'photo'; }")
    instant = page.locator("#verdict").get_attribute("data-langs")
    total = _total(page)
    page.get_by_role("button", name="Search").click()
    page.wait_for_function("() => location.search.includes('q=photo')")
    page.wait_for_timeout(300)
    assert page.locator("#verdict").get_attribute("data-langs") == instant == "en fr"
    assert all("lang=" not in u for u in sent), sent
    assert "lang" not in page.url
    page.goto(base + "/?q=photo")
    assert page.locator("#verdict").get_attribute("data-langs") == "en fr"
    assert _total(page) == total
    api = page.request.get(base + "/api/search?q=photo").json()
    assert (api["langs"], api["total"]) == (["en", "fr"], total)
    page.context.close()


def test_phone_width_puts_results_before_facets_and_browsing(server, browser):
    base, *_ = server
    page = login(browser, base, "carol", viewport={"width": 390, "height": 844})
    widths = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert widths[0] <= widths[1], "no horizontal scrolling at phone width"
    tops = page.evaluate("""() => ['#grid', '#facets', '#timeline'].map(
        s => document.querySelector(s).getBoundingClientRect().top + window.scrollY)""")
    assert tops[0] < tops[1] < tops[2], tops
    page.screenshot(path=ARTIFACTS / "browse-phone.png", full_page=False)
    # at desktop width the facets sit beside the grid
    page.set_viewport_size({"width": 1280, "height": 900})
    tops = page.evaluate("""() => ['#grid', '#facets', '#timeline'].map(
        s => document.querySelector(s).getBoundingClientRect().top)""")
    assert abs(tops[0] - tops[1]) < 40 and tops[2] < tops[0] + 200, tops
    page.context.close()


def _similar_words(url: str, home: Path, user: str, path: Path) -> tuple[str, list[int]]:
    """What ``loupe similar --file`` answers the user (its line, as the web
    names an uploaded file, and the asset ids of its first page)."""
    from loupe import Library

    with Library.open(home, database_url=url) as lib:
        res = lib.as_user(user).similar(file=str(path), limit=24)
    res.query = f"upload {path.name}"
    return res.sentence(), [h.asset_id for h in res.hits]


def _shown(page) -> list[int]:
    return [int(h.split("/")[-1]) for h in page.locator("#grid a[data-rank]").evaluate_all(
        "els => els.map(e => e.getAttribute('href'))")]


def test_search_by_a_dropped_pasted_or_picked_picture(server, browser):
    base, url, home, photos = server
    page = login(browser, base, "carol")
    mine = photos / "family" / "2019" / "photo-0000.jpg"
    hidden = photos / "work" / "photo-0004.jpg"
    with psycopg.connect(url) as conn:
        ids = dict(conn.execute("SELECT rel_path, asset_id FROM asset_file WHERE rel_path IN "
                                "('family/2019/photo-0000.jpg', 'work/photo-0004.jpg')").fetchall())
    words, expected = _similar_words(url, home, "carol", mine)
    # dropped on the zone
    page.evaluate("""([bytes, name]) => {
        const dt = new DataTransfer();
        dt.items.add(new File([new Uint8Array(bytes)], name, {type: 'image/jpeg'}));
        document.getElementById('by-picture').dispatchEvent(
            new DragEvent('drop', {dataTransfer: dt, bubbles: true, cancelable: true}));
    }""", [list(mine.read_bytes()), mine.name])
    page.wait_for_function("() => { const v = document.getElementById('verdict');"
                           " return v && v.dataset.q === 'upload photo-0000.jpg'; }")
    assert page.locator("#verdict").text_content() == words
    assert _shown(page) == expected and _shown(page)[0] == ids["family/2019/photo-0000.jpg"]
    assert page.locator("#grid .distance").first.text_content() == "0 bits"
    page.screenshot(path=ARTIFACTS / "search-by-picture.png", full_page=True)
    # pasted: a picture of the hidden collection finds only what carol may read
    words, expected = _similar_words(url, home, "carol", hidden)
    page.evaluate("""([bytes, name]) => {
        const dt = new DataTransfer();
        dt.items.add(new File([new Uint8Array(bytes)], name, {type: 'image/jpeg'}));
        document.dispatchEvent(new ClipboardEvent('paste', {clipboardData: dt, bubbles: true,
                                                            cancelable: true}));
    }""", [list(hidden.read_bytes()), hidden.name])
    page.wait_for_function("() => { const v = document.getElementById('verdict');"
                           " return v && v.dataset.q === 'upload photo-0004.jpg'; }")
    assert page.locator("#verdict").text_content() == words
    assert _shown(page) == expected
    assert ids["work/photo-0004.jpg"] not in _shown(page)
    # picked with the file chooser
    page.get_by_label("choose a picture").set_input_files(str(mine))
    page.wait_for_function("() => { const v = document.getElementById('verdict');"
                           " return v && v.dataset.q === 'upload photo-0000.jpg'; }")
    # a file that is not a picture: the reason, as the API gives it
    page.get_by_label("choose a picture").set_input_files(
        files=[{"name": "notes.jpg", "mimeType": "image/jpeg", "buffer": b"not a picture"}])
    page.wait_for_selector("#results .error")
    assert page.locator("#results .error").text_content().startswith(
        "Not searched by notes.jpg: ")
    # "more like this" from an asset of the grid
    page.goto(base + f"/assets/{ids['family/2019/photo-0000.jpg']}")
    page.get_by_role("link", name="More like this").click()
    page.wait_for_url(f"**/assets/{ids['family/2019/photo-0000.jpg']}/similar")
    page.context.close()
