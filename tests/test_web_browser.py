"""The web UI driven in headless Debian chromium (Playwright, sync API)
against a real ``loupe serve`` subprocess on a free loopback port, over the
fixture library of tests/weblib.py: login, instant search, scope, paging,
empty result, verdict text for complete and truncated results, bulk action
with confirmation, upload (file picker and drag-and-drop), a forbidden
asset. Screenshots of the main pages go to tests/artifacts/."""

from __future__ import annotations

import os
import re
import socket
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
from loupe import Library
from imaging import make_image
from test_web_api import populate

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).parent / "artifacts"
sync_api = pytest.importorskip("playwright.sync_api")
pytestmark = [pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian chromium not installed"),
              pytest.mark.slow]  # real Chromium


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(pg_admin_url, template_db, tmp_path_factory):
    """``loupe serve`` on the fixture library: ``(base URL, asset ids, db url, home)``."""
    tmp = tmp_path_factory.mktemp("browser")
    name = "loupe_b_" + uuid.uuid4().hex[:12]
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name} TEMPLATE {template_db}")
    url = make_conninfo(pg_admin_url, dbname=name)
    home = tmp / "home"
    ids = populate(home, url, tmp / "photos")
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
        yield base, ids, url, home
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()
        with psycopg.connect(pg_admin_url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture(scope="module")
def browser():
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync"])
        yield b
        b.close()


def login(browser, base: str, user: str, **context):
    ctx = browser.new_context(**context)
    page = ctx.new_page()
    page.goto(base + "/")
    assert page.url.startswith(base + "/login")
    page.get_by_label("User name").fill(user)
    page.get_by_label("Password").fill(f"{user}-password")
    page.get_by_label("Password").press("Enter")
    page.wait_for_url(base + "/")
    return page


def search(page, text: str) -> str:
    """Type into the search box and wait for the instant results of exactly
    this query and the scope now picked; return the verdict line."""
    page.get_by_label("Search the library").fill(text)
    page.wait_for_function(
        "([q]) => { const v = document.getElementById('verdict');"
        " return v && v.dataset.q === q &&"
        " v.dataset.scope === document.getElementById('scope').value; }", arg=[text])
    return page.locator("#verdict").text_content()


def test_login_refuses_a_wrong_password(server, browser):
    base, *_ = server
    page = browser.new_page()
    page.goto(base + "/login")
    page.get_by_label("User name").fill("alice")
    page.get_by_label("Password").fill("wrong")
    page.get_by_role("button", name="Log in").click()
    assert page.locator("#login-error").text_content() == "Wrong user name or password."
    page.screenshot(path=ARTIFACTS / "login.png")
    page.close()


def test_search_paging_scope_and_empty_result(server, browser):
    base, ids, *_ = server
    page = login(browser, base, "admin")
    assert search(page, "sunset") == "All 30 results."
    page.screenshot(path=ARTIFACTS / "search.png", full_page=True)
    # the grid loads the next page when its end scrolls into view
    page.locator("#next-page").scroll_into_view_if_needed()
    page.wait_for_function("() => document.querySelectorAll('#grid .tile').length === 30")
    # paging by link, keyboard only: Enter in the search box, then the Next link
    page.goto(base + "/")
    page.get_by_label("Search the library").fill("sunset")
    page.get_by_label("Search the library").press("Enter")
    page.wait_for_selector("#verdict")
    page.goto(base + "/?q=sunset&page=2")
    assert page.locator("#grid .tile").count() == 6
    assert page.locator(".pager span").text_content() == "Page 2 of 2"
    # scope picker
    page.goto(base + "/")
    page.get_by_label("In", exact=True).select_option("travel/porto")
    assert search(page, "bridge") == "1 result — the only one."
    assert page.locator("#grid .tile a").get_attribute("href").startswith(
        f"/assets/{ids['porto-bridge']}?")
    page.get_by_label("In", exact=True).select_option("animals")
    page.wait_for_function(
        "() => document.getElementById('verdict').textContent.startsWith('No results')")
    assert page.locator("#verdict").text_content() == "No results for “bridge”."
    page.get_by_label("In", exact=True).select_option("")
    assert search(page, "madrid") == "No results for “madrid”."
    assert page.locator("#grid").count() == 0
    # the asset page says why it matched
    page.goto(base + f"/assets/{ids['porto-bridge']}?q=bridge")
    assert page.locator("h1").text_content() == "Dom Luís bridge at dusk"
    assert "Why it matched “bridge”" in page.content()
    page.screenshot(path=ARTIFACTS / "asset.png", full_page=True)
    page.goto(base + "/status")
    assert page.locator(".lanes li").nth(1).text_content().startswith(
        "image search off: no image model installed")
    page.screenshot(path=ARTIFACTS / "status.png", full_page=True)
    page.context.close()


def test_truncated_verdict_and_bulk_with_confirmation(server, browser):
    base, ids, url, home = server
    with Library.open(home, database_url=url) as lib:
        before = lib.lexical_settings()["keep_cap"]
        lib.set_lexical_settings(keep_cap=10)
    try:
        page = login(browser, base, "admin")
        text = search(page, "sunset")
        assert re.fullmatch(r"(At least 30 results|30 results, of which the first 10 can be "
                            r"shown) — narrow the search to act on all of them\.", text), text
        assert page.locator("#verdict").get_attribute("data-verdict") == "truncated"
        page.get_by_label(re.compile("Select all")).check()
        page.get_by_label("Action", exact=True).select_option("add_keyword")
        page.get_by_label("Value", exact=True).fill("goldenhour")
        page.get_by_role("button", name="Apply to all").click()
        page.wait_for_selector("#confirm-text")
        assert page.locator("#confirm-text").text_content().startswith("Not applied yet: ")
        page.screenshot(path=ARTIFACTS / "bulk-confirm.png")
        page.get_by_role("button", name="Apply anyway").click()
        done = page.locator("#bulk-done").text_content()
        assert re.fullmatch(r"Add keyword “goldenhour”: applied to \d+ assets\.", done), done
        page.goto(base + "/")
        assert search(page, "goldenhour").endswith("results.")
        # a complete result is applied without a confirmation step
        search(page, "cat")
        page.get_by_label(re.compile("Select all")).check()
        page.get_by_label("Value", exact=True).fill("feline")
        page.get_by_role("button", name="Apply to all").click()
        assert page.locator("#bulk-done").text_content() == \
            "Add keyword “feline”: applied to 3 assets."
        page.context.close()
    finally:
        with Library.open(home, database_url=url) as lib:
            lib.set_lexical_settings(keep_cap=before)


def test_upload_by_picker_and_by_drop(server, browser, tmp_path):
    base, *_ = server
    page = login(browser, base, "bob")
    page.goto(base + "/upload")
    pic = make_image(tmp_path / "ferry-terminal.png", color=(5, 6, 7))
    page.get_by_label("choose files").set_input_files(str(pic))
    page.get_by_role("button", name="Upload and ingest").click()
    # (predicates as functions: the CSP forbids evaluating strings as script)
    page.wait_for_function(
        "() => document.getElementById('upload-result').textContent.startsWith('Stored')")
    assert page.locator("#upload-result p").text_content() == "Stored 1 of 1 image(s), 0 refused."
    # drag and drop: a DataTransfer holding a file, dropped on the zone
    data = make_image(tmp_path / "tram.png", color=(9, 8, 7)).read_bytes()
    page.evaluate("""(bytes) => {
        const dt = new DataTransfer();
        dt.items.add(new File([new Uint8Array(bytes)], 'tram-line.png', {type: 'image/png'}));
        document.getElementById('dropzone').dispatchEvent(
            new DragEvent('drop', {dataTransfer: dt, bubbles: true, cancelable: true}));
    }""", list(data))
    page.wait_for_function("() => document.getElementById('upload-result').textContent.includes('Stored 1 of 1')"
                           " && !document.getElementById('upload-result').textContent.startsWith('Uploading')")
    page.screenshot(path=ARTIFACTS / "upload.png")
    page.goto(base + "/")
    assert search(page, "ferry") in ("1 result — the only one.",)
    page.context.close()


def test_a_forbidden_asset_is_not_found(server, browser):
    base, ids, *_ = server
    page = login(browser, base, "alice")
    resp = page.goto(base + f"/assets/{ids['cat-01']}")
    assert resp.status == 404
    assert page.locator(".error").text_content() == f"There is no asset {ids['cat-01']} you can see."
    assert page.request.get(base + f"/api/assets/{ids['cat-01']}/thumbnail").status == 404
    page.goto(base + "/")
    assert search(page, "cat") == "No results for “cat”."
    # she finds her own pictures, and is offered no bulk action (admins only)
    assert search(page, "sunset").startswith("All ")
    assert page.locator("form.bulk").count() == 0
    page.context.close()


def test_phone_width(server, browser):
    base, *_ = server
    page = login(browser, base, "alice", viewport={"width": 390, "height": 844})
    search(page, "sunset")
    widths = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert widths[0] <= widths[1], "no horizontal scrolling at phone width"
    columns = page.evaluate("getComputedStyle(document.getElementById('grid'))"
                            ".gridTemplateColumns.split(' ').length")
    assert columns == 2
    page.screenshot(path=ARTIFACTS / "search-phone.png", full_page=True)
    page.context.close()


def test_a_page_on_another_port_cannot_act_for_the_admin(server, browser, tmp_path):
    """A page served from another port of the same host (same
    site, so the Lax session cookie is sent) auto-submits the bulk form and
    an upload as the logged-in admin: both are refused (403), nothing is
    applied, and the app refuses to be framed."""
    import http.server
    import threading

    base, ids, url, home = server
    evil = tmp_path / "evil"
    evil.mkdir()
    (evil / "bulk.html").write_text(
        f'<form id="f" method="post" action="{base}/bulk">'
        '<input name="action" value="add_keyword"><input name="value" value="csrfmark">'
        '<input name="q" value="cat"></form>'
        '<script>document.getElementById("f").submit()</script>')
    (evil / "frame.html").write_text(f'<iframe id="x" src="{base}/login"></iframe>')
    (evil / "blank.html").write_text("<p>nothing to see</p>")
    handler = lambda *a: http.server.SimpleHTTPRequestHandler(*a, directory=str(evil))  # noqa: E731
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    other = f"http://127.0.0.1:{httpd.server_address[1]}"
    try:
        page = login(browser, base, "admin")
        with page.expect_response(f"{base}/bulk") as resp:
            page.goto(other + "/bulk.html")
        assert resp.value.status == 403
        assert "cross-origin request refused" in page.content()
        page.goto(other + "/blank.html")
        status = page.evaluate("""async (base) => {
            const d = new FormData(); d.append('files', new Blob(['x']), 'a.png');
            try { const r = await fetch(base + '/api/upload', {method: 'POST', body: d,
                                        mode: 'no-cors', credentials: 'include'});
                  return r.type; } catch (e) { return 'error'; } }""", base)
        # sent (an opaque answer, or an error where the answer's
        # Cross-Origin-Resource-Policy blocks it), and refused on the server:
        assert status in ("opaque", "error")
        assert not (home / "uploads" / "admin").exists()
        page.goto(base + "/")
        assert search(page, "csrfmark") == "No results for “csrfmark”."
        page.goto(other + "/frame.html")
        time.sleep(1)
        # frame-ancestors 'none': Chromium shows its error page, not the login form
        assert page.frame_locator("#x").locator("form.login").count() == 0
        assert page.frames[1].url == "chrome-error://chromewebdata/"
        page.context.close()
    finally:
        httpd.shutdown()


def test_more_like_this_shows_only_what_the_user_may_see(server, browser):
    from loupe.ingest.perceptual import hamming

    base, ids, url, _home = server
    query = ids["lisbon-sunset-01"]
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT f.rel_path, h.phash FROM asset_phash h "
                            "JOIN asset_file f ON f.asset_id = h.asset_id").fetchall()
    hashes = {Path(rel).stem: (rel, h) for rel, h in rows}
    mine = hashes["lisbon-sunset-01"][1]
    # alice reads the travel collection only; the radius is 10 bits
    expected = sorted(ids[stem] for stem, (rel, h) in hashes.items()
                      if rel.startswith("travel/") and stem != "lisbon-sunset-01"
                      and hamming(h, mine) <= 10)
    hidden = [ids[stem] for stem, (rel, h) in hashes.items()
              if not rel.startswith("travel/") and hamming(h, mine) <= 10]
    assert expected
    page = login(browser, base, "alice")
    page.goto(base + f"/assets/{query}")
    page.get_by_role("link", name="More like this").click()
    page.wait_for_url(base + f"/assets/{query}/similar")
    assert page.locator(".verdict").get_attribute("data-verdict") == "complete"
    shown = sorted(int(h.split("/")[-1]) for h in
                   page.locator("#similar a[data-rank]").evaluate_all(
                       "els => els.map(e => e.getAttribute('href'))"))
    assert shown == expected
    assert page.locator(".verdict").text_content().startswith(f"{len(expected)} near-duplicate")
    assert not set(shown) & set(hidden)
    page.screenshot(path=ARTIFACTS / "more-like-this.png")
    page.context.close()
