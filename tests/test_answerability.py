"""Answerability (V8): rows no query word matched count as results
only when the search can show they answer the query (the nearest
neighbour's distance and the share of the query's words the library knows,
against cut-offs that live with the text model); otherwise the result says
"nothing in the library matches these words" and shows the nearest
pictures apart, uncounted. Real PostgreSQL, a real (tiny) ONNX text model."""

from __future__ import annotations

from pathlib import Path

import pytest
from imaging import make_image, write_sidecar

from loupe import Library
from loupe.models import registry
from loupe.search import answer as ans


def test_no_meaning_only_row_needs_no_decision():
    assert ans.answerable(ans.Evidence(None, 0.0, 0), None) is True


def test_without_cutoffs_meaning_only_rows_do_not_count():
    assert ans.answerable(ans.Evidence(0.01, 1.0, 3), None) is False


@pytest.mark.parametrize("best,known,expect", [
    (0.30, 0.5, True), (0.40, 0.5, True), (0.41, 0.5, False), (0.30, 0.49, False),
    (None, 1.0, False),
])
def test_the_nearest_distance_and_the_known_share_decide(best, known, expect):
    cut = ans.Cutoffs(max_distance=0.40, min_known=0.5)
    assert ans.answerable(ans.Evidence(best, known, 2), cut) is expect


@pytest.mark.parametrize("raw,message", [
    ({"max_distance": 3}, "within 0 and 2"), ({"max_distance": 0.4, "min_known": 2},
                                              "within 0 and 1"),
    ({"min_known": 0.5}, "need a number max_distance"),
])
def test_cutoffs_out_of_range_are_refused(raw, message):
    with pytest.raises(ValueError, match=message):
        ans.cutoffs_from({"answerability": raw})


def test_a_model_without_cutoffs_has_none():
    assert ans.cutoffs_from({"thresholds": {}}) is None
    assert ans.cutoffs_from({"answerability": {"max_distance": 0.4}}) == ans.Cutoffs(0.4, 0.0)


@pytest.fixture
def kettle(lib: Library, photos: Path, tmp_path: Path) -> Library:
    """A kettle and a blue swatch, with the tiny text model (its axis 3 is
    "kettle", and a word it does not know lands mostly there too) as the
    text lane."""
    from tinymodels import build_nomic

    lib.init(languages=["en"])
    for name, color, title in (("k.png", (255, 0, 0), "kettle"), ("b.png", (0, 0, 255), "blue")):
        img = make_image(photos / name, size=(16, 16), color=color, fmt="PNG")
        write_sidecar(img, f"-XMP-dc:Title={title}")
    lib.ingest(photos)
    folder = build_nomic(tmp_path / "src" / "tiny-nomic")
    lib.install_model(folder)
    lib.use_model("tiny-nomic", "text")
    lib.embed()
    return lib


def test_meaning_only_rows_without_cutoffs_are_shown_apart(kettle: Library):
    res = kettle.search("zorp quux")     # no word of it is in the library
    assert res.hits == [] and res.total == 0
    assert res.answerable is False
    assert [h.title for h in res.related][:1] == ["kettle"]
    assert res.evidence["known_share"] == 0.0 and res.evidence["meaning_rows"] >= 1
    assert "nothing in the library matches these words: the pictures nearest in meaning are " \
           "shown apart, not counted" in res.notices


def test_calibrated_cutoffs_let_meaning_only_rows_count(kettle: Library):
    registry.set_answerability(kettle.home, "tiny-nomic", 1.5, 0.0)
    res = kettle.search("zorp quux")
    assert res.answerable is True and res.related == []
    assert [h.title for h in res.hits][:1] == ["kettle"]
    registry.set_answerability(kettle.home, "tiny-nomic", 1.5, 0.5)   # no word known
    res = kettle.search("zorp quux")
    assert res.hits == [] and res.answerable is False


def test_rows_a_word_matched_still_count(kettle: Library):
    res = kettle.search("blue quux")
    assert [h.title for h in res.hits] == ["blue"]
    assert res.total == 1
    assert all(h.title != "blue" for h in res.related)


def test_a_bulk_action_never_acts_on_rows_shown_apart(kettle: Library):
    res = kettle.search("zorp quux")
    assert res.related and res.hits == []
    out = kettle.bulk("add_keyword", "checked", query="zorp quux", any_term=True,
                      confirm=True)
    assert (out["matched_any"], out["count"]) == (0, 0)


def test_the_web_page_shows_the_related_pictures_apart_and_counts_none(kettle: Library,
                                                                         db_url: str):
    from fastapi.testclient import TestClient
    from weblib import web_login

    from loupe.web import create_app

    kettle.create_user("admin", "admin-password", admin=True)
    with TestClient(create_app(kettle.home, database_url=db_url, pool_size=1)) as client:
        assert web_login(client, "admin", "admin-password", next="/").status_code == 303
        page = client.get("/", params={"q": "zorp quux"}).text
        assert "No results for “zorp quux”." in page
        assert "nothing in the library matches these words" in page
        assert 'id="related"' in page and page.count("data-related=") >= 1
        assert 'class="tile"' in page and 'id="grid"' not in page   # no counted tile
        api = client.get("/api/search", params={"q": "zorp quux"}).json()
        assert (api["total"], api["hits"], api["answerable"]) == (0, [], False)
        assert api["related"][0]["title"] == "kettle"
