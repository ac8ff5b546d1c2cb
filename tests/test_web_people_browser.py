"""Naming a person on the People page in headless Debian chromium
(Playwright) against a real ``loupe serve``, at desktop and at phone
width: the cards wrap in a grid, each name field stays inside its card, and
a name typed there (Enter) confirms the person, whose pictures the search
then finds by it. Screenshots go to tests/artifacts/."""

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
from loupe import Library
from test_web_browser import ARTIFACTS, CHROMIUM, _free_port, browser, login, search  # noqa: F401

FACES = Path(__file__).parent / "fixtures" / "faces"
sync_api = pytest.importorskip("playwright.sync_api")
pytestmark = [pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian chromium not installed"),
              pytest.mark.slow]  # real Chromium, face detection


@pytest.fixture(scope="module")
def server(pg_admin_url, template_db, tmp_path_factory):
    """``loupe serve`` on three portraits, scanned for faces: ``base URL``."""
    tmp = tmp_path_factory.mktemp("people-browser")
    name = "loupe_pp_" + uuid.uuid4().hex[:12]
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name} TEMPLATE {template_db}")
    url = make_conninfo(pg_admin_url, dbname=name)
    home, photos = tmp / "home", tmp / "photos"
    photos.mkdir()
    for f in ("obama.jpg", "obama3.jpg", "biden.jpg"):
        (photos / f).write_bytes((FACES / f).read_bytes())
    with Library.open(home, database_url=url) as lib:
        lib.ingest(photos)
        lib.create_user("admin", "admin-password", admin=True)
        if not lib.faces_status()["available"]:
            pytest.skip("face detection is not installed")
        lib.faces()
    port = _free_port()
    src = str(Path(loupe.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
    log = open(tmp / "serve.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "loupe.cli", "--home", str(home),
                             "--database-url", url, "serve", "--port", str(port), "--pool", "2",
                             "--background-every-s", "0"],
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
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()
        with psycopg.connect(pg_admin_url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def _fields_inside_cards(page) -> list[bool]:
    return page.evaluate("""() => [...document.querySelectorAll('.person')].map(card => {
        const c = card.getBoundingClientRect(), i = card.querySelector('input[name=name]')
            .getBoundingClientRect();
        return i.left >= c.left - 0.5 && i.right <= c.right + 0.5; })""")


@pytest.mark.parametrize("width, name", [(1280, "Barack Obama"), (390, "Joe Biden")])
def test_naming_a_person_on_the_people_page(server, browser, width, name):
    base = server
    page = login(browser, base, "admin", viewport={"width": width, "height": 900})
    page.goto(base + "/people")
    cards = page.locator(".person")
    assert cards.count() >= 2
    assert all(_fields_inside_cards(page))
    widths = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert widths[0] <= widths[1], "no horizontal scrolling"
    tops = page.evaluate("[...document.querySelectorAll('.person')].map("
                         "c => Math.round(c.getBoundingClientRect().top))")
    assert tops[0] == tops[1], "the cards sit side by side in a grid"
    page.screenshot(path=ARTIFACTS / f"people-{width}.png", full_page=True)
    # the first unnamed person's card: type the name and press Enter
    card = page.locator(".person", has=page.locator("a .title", has_text="unnamed person")).first
    field = card.locator("input[name=name]")
    field.fill(name)
    field.press("Enter")
    page.wait_for_url(base + "/people")
    assert name in page.locator(".person .title").all_text_contents()
    page.goto(base + "/")
    assert search(page, name.split()[1].lower()).startswith(("1 result", "All "))
    page.context.close()
