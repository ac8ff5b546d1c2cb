"""The /ask page in headless Debian chromium (Playwright) against a real
``loupe serve`` (the server and browser fixtures of tests/test_web_browser.py):
a three-turn conversation, then its chips edited and removed by hand.
Screenshot: tests/artifacts/ask.png."""

from __future__ import annotations

from pathlib import Path

import pytest

from test_web_browser import ARTIFACTS, CHROMIUM, browser, login, server  # noqa: F401 (fixtures)

pytestmark = [pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian chromium not installed"),
              pytest.mark.slow]


def _send(page, sentence: str) -> None:
    page.get_by_label("Ask in a sentence").fill(sentence)
    with page.expect_navigation():
        page.get_by_label("Ask in a sentence").press("Enter")


def _total(page) -> str:
    return page.locator("#verdict").get_attribute("data-total")


def test_a_three_turn_conversation_with_editable_chips(server, browser):  # noqa: F811
    base, *_ = server
    page = login(browser, base, "admin")
    page.get_by_role("link", name="Ask").click()
    page.wait_for_url(base + "/ask")
    _send(page, "animals")
    assert _total(page) == "5"
    assert page.locator("#understood").get_attribute("data-intent") == "replace"
    _send(page, "only png")
    assert page.locator("#understood").get_attribute("data-intent") == "refine"
    assert page.locator(".chip[data-field=format] input").input_value() == "png"
    assert _total(page) == "2"
    _send(page, "not the cut-outs")           # needs machine words: said, not dropped
    assert page.locator("#understood").get_attribute("data-intent") == "remove"
    assert page.locator(".chip[data-field=cutout] .not").count() == 1
    page.screenshot(path=ARTIFACTS / "ask.png", full_page=True)
    notices = page.locator(".notice").all_text_contents()
    if page.locator("#verdict").count() == 0:
        assert any("cutout filters need machine words" in n for n in notices)
    # remove the cut-out chip: the search runs again
    with page.expect_navigation():
        page.get_by_role("button", name="Remove not cutout").click()
    assert page.locator(".chip[data-field=cutout]").count() == 0
    assert _total(page) == "2"
    # edit the format chip's value
    page.locator(".chip[data-field=format] input").fill("jpeg")
    with page.expect_navigation():
        page.get_by_role("button", name="Apply changes").click()
    assert page.locator("#understood").text_content().strip() == "Edited by hand"
    assert _total(page) == "3"
    # a value the filter tree refuses is said, and changes nothing
    page.locator(".chip[data-field=format] input").fill("<b>bmp</b>")
    page.get_by_role("button", name="Apply changes").click()
    page.wait_for_selector("p.error")
    assert "Not changed" in page.locator("p.error").text_content()
    assert page.locator("b").count() == 0 or "bmp" not in " ".join(
        page.locator("b").all_text_contents())
    page.close()
