"""The facet sidebar and filter chips in real Chromium: a search
is narrowed by a facet value with its count, the chip removes it again, and
a filter alone lists what passes it — on the web fixture library
(tests/weblib.py) served by a real ``loupe serve``."""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest

from test_web_browser import ARTIFACTS, browser, login, search, server  # noqa: F401 (fixtures)

pytestmark = pytest.mark.slow  # real Chromium


def facet(page, name: str) -> dict[str, str]:
    sec = page.locator(f'#facets section[data-facet="{name}"] li')
    out = {}
    for i in range(sec.count()):
        li = sec.nth(i)
        out[li.locator(".facet-value, .facet-active").text_content().strip()] = \
            li.locator(".count").text_content().strip()
    return out


def test_facets_narrow_the_result_and_chips_undo_it(server, browser):  # noqa: F811
    base, *_ = server
    page = login(browser, base, "admin")
    # "animals": the folder holds 3 cats (JPEG) and 2 dogs (PNG)
    assert search(page, "animals") == "All 5 results."
    assert facet(page, "format") == {"jpeg": "3", "png": "2"}
    assert facet(page, "collection") == {"animals/cats": "3", "animals/dogs": "2"}
    page.screenshot(path=ARTIFACTS / "facets.png", full_page=True)
    page.locator('#facets section[data-facet="format"] a', has_text="png").click()
    page.wait_for_selector("#chips")
    assert page.locator("#verdict").text_content() == "All 2 results."
    assert page.locator("#grid .tile").count() == 2
    assert page.locator("#chips .chip").first.text_content().startswith("media_type: image/png")
    assert facet(page, "format") == {"png": "2"}
    # narrowing further, then removing the first chip keeps the second
    page.locator('#facets section[data-facet="collection"] a', has_text="animals/dogs").click()
    page.wait_for_function("() => document.querySelectorAll('#chips .chip').length === 2")
    assert page.locator("#verdict").text_content() == "All 2 results."
    page.locator("#chips .chip-remove").first.click()
    page.wait_for_function("() => document.querySelectorAll('#chips .chip').length === 1")
    assert page.locator("#verdict").text_content() == "All 2 results."
    assert page.locator("#chips .chip").first.text_content().startswith("collection: id:")
    page.locator("#chips .chip-remove").first.click()
    page.wait_for_function("() => !document.getElementById('chips')")
    assert page.locator("#verdict").text_content() == "All 5 results."
    # typing keeps the active filter (it travels in the form)
    page.goto(base + "/?q=animals&filters=" + quote(json.dumps({"format": "png"})))
    assert search(page, "dog") == "All 2 results."
    page.close()


def test_a_filter_alone_lists_what_passes_it(server, browser):  # noqa: F811
    base, *_ = server
    page = login(browser, base, "alice")   # alice reads travel/ only
    page.goto(base + "/?filters=" + quote(json.dumps({"creator": "ana costa"})))
    assert page.locator("#verdict").text_content() == "1 result — the only one."
    assert page.locator("#grid .tile").count() == 1
    page.goto(base + "/?filters=" + quote(json.dumps({"format": "png"})))
    assert page.locator("#verdict").text_content() == "Nothing passes the filter."
    page.goto(base + "/?filters=" + quote('{"all": [{"captured": {"from": "2019-13-01"}}]}'))
    assert "filter $.all[0].captured.from" in page.locator(".error").text_content()
    page.close()
