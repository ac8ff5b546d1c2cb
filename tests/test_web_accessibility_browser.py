"""Every page of the web app checked with axe-core (the npm package,
injected by Playwright into headless Debian chromium) against a real
``loupe serve``: no serious or critical violation, at desktop and at phone
width. axe-core is installed by scripts/setup.sh (``npm install -g``)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from test_web_browser import CHROMIUM, browser, login, server  # noqa: F401 (fixtures)


def _axe() -> Path | None:
    try:
        root = subprocess.run(["npm", "root", "-g"], capture_output=True, text=True,
                              timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None
    path = Path(root) / "axe-core" / "axe.min.js"
    return path if path.is_file() else None


AXE = _axe()
sync_api = pytest.importorskip("playwright.sync_api")
pytestmark = [pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian chromium not installed"),
              pytest.mark.skipif(AXE is None, reason="axe-core not installed (scripts/setup.sh)"),
              pytest.mark.slow]  # real Chromium

SERIOUS = """async () => {
    const r = await axe.run(document, {resultTypes: ['violations']});
    return r.violations.filter(v => v.impact === 'serious' || v.impact === 'critical')
        .map(v => v.id + ' (' + v.impact + '): ' + v.nodes.slice(0, 3)
             .map(n => n.target.join(' ')).join(', '));
}"""


def _violations(page) -> list[str]:
    page.add_script_tag(path=str(AXE))
    return page.evaluate(SERIOUS)


@pytest.mark.parametrize("width", [1280, 390])
def test_no_page_has_a_serious_accessibility_violation(server, browser, width):
    base, ids, *_ = server
    anon = browser.new_context(bypass_csp=True, viewport={"width": width, "height": 900})
    page = anon.new_page()
    page.goto(base + "/login")
    found = {"/login": _violations(page)}
    anon.close()
    page = login(browser, base, "admin", bypass_csp=True, viewport={"width": width, "height": 900})
    asset = ids["porto-bridge"]
    for path in ("/", "/?q=sunset", "/?q=madrid", f"/assets/{asset}?q=bridge",
                 f"/assets/{asset}/similar", "/people", "/ask", "/upload", "/status",
                 "/assets/999999999"):
        page.goto(base + path)
        found[path] = _violations(page)
    page.context.close()
    assert {p: v for p, v in found.items() if v} == {}
