"""Work that happens by itself, in headless Debian chromium (Playwright)
against a real ``loupe serve`` with an image model in use: a picture
uploaded on the upload page gets its vector without anyone running
``loupe embed``, and the status page follows the server's background work
as it drains. Screenshots go to tests/artifacts/."""

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
from imaging import make_image
from loupe import Library
from test_web_api import populate
from test_web_browser import ARTIFACTS, CHROMIUM, _free_port, browser, login  # noqa: F401
from tinymodels import build_clip

sync_api = pytest.importorskip("playwright.sync_api")
pytestmark = [pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian chromium not installed"),
              pytest.mark.slow]  # real Chromium


@pytest.fixture(scope="module")
def server(pg_admin_url, template_db, tmp_path_factory):
    """``loupe serve --background-every-s 1`` on the fixture library with the
    tiny image model in use: ``(base URL, db url, home)``."""
    tmp = tmp_path_factory.mktemp("background-browser")
    name = "loupe_bg_" + uuid.uuid4().hex[:12]
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name} TEMPLATE {template_db}")
    url = make_conninfo(pg_admin_url, dbname=name)
    home = tmp / "home"
    populate(home, url, tmp / "photos")
    with Library.open(home, database_url=url) as lib:
        lib.install_model(build_clip(tmp / "models" / "tiny-clip"))
        lib.use_model("tiny-clip", "image")
    port = _free_port()
    src = str(Path(loupe.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
    log = open(tmp / "serve.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "loupe.cli", "--home", str(home),
                             "--database-url", url, "serve", "--port", str(port), "--pool", "2",
                             "--background-every-s", "1"],
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
        yield base, url, home
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()
        with psycopg.connect(pg_admin_url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def test_an_uploads_vector_arrives_without_a_command(server, browser, tmp_path):
    base, url, _home = server
    page = login(browser, base, "admin")
    page.goto(base + "/status")
    # the library's own vectors drain first, and the page follows without a reload
    page.wait_for_function("() => document.getElementById('waiting').textContent.trim()"
                           " === 'No asset waits for vectors.'", timeout=120_000)
    page.goto(base + "/upload")
    pic = make_image(tmp_path / "red-kettle.png", color=(250, 5, 5))
    page.get_by_label("choose files").set_input_files(str(pic))
    page.get_by_role("button", name="Upload and ingest").click()
    page.wait_for_function(
        "() => document.getElementById('upload-result').textContent.startsWith('Ingested')")
    page.goto(base + "/status")
    page.wait_for_function("() => document.getElementById('waiting').textContent.trim()"
                           " === 'No asset waits for vectors.'", timeout=60_000)
    assert page.locator("#background-now").text_content().startswith(
        ("Waiting for work; the last pass ended", "Computing", "Starting"))
    page.screenshot(path=ARTIFACTS / "status-background.png", full_page=True)
    with psycopg.connect(url) as conn:
        missing = conn.execute(
            "SELECT count(*) FROM asset_file f WHERE f.rel_path LIKE '%red-kettle.png' AND NOT "
            "EXISTS (SELECT 1 FROM asset_vector v WHERE v.asset_id = f.asset_id)").fetchone()[0]
        stored = conn.execute("SELECT count(*) FROM asset_file WHERE rel_path LIKE "
                              "'%red-kettle.png'").fetchone()[0]
    assert (stored, missing) == (1, 0)
    page.context.close()
