"""Fusion weights and RRF k as library settings (F1):
rrf(d) = Σ_lanes w_lane / (k + rank_lane(d)), defaults w = 1, k = 60 (plain
RRF); shown and set by ``loupe settings``, bounded, used by the library-wide
and the scoped fused statements."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from loupe import Library
from loupe.cli import main


@pytest.fixture
def three(kettle_swatches) -> Library:
    # test_vectors' hand-worked example (conftest.KETTLE_SWATCHES), in folder
    # "set" (a collection, for the scoped statement): lexical lane for
    # "kettle red": A 1, B 2; image lane: A 1, C 2 (B is blue, cut by the threshold)
    return kettle_swatches(folder="set")


def ranked(res) -> list[tuple[str, float]]:
    return [(h.title, round(h.score, 9)) for h in res.hits]


def test_weights_and_k_change_the_order_as_the_formula_says(three: Library):
    assert three.fusion_settings() == {"w_lexical": 1.0, "w_text": 1.0, "w_image": 1.0,
                                       "rrf_k": 60}
    plain = [("Red kettle", round(2 / 61, 9)), ("Kettle", round(1 / 62, 9)),
             ("Untitled", round(1 / 62, 9))]
    assert ranked(three.search("kettle red")) == plain
    assert ranked(three.search("kettle red", scope="set")) == plain
    three.set_fusion_settings(w_image=2.0, rrf_k=10)
    # A: 1/11 + 2/11; C (image rank 2): 2/12 now beats B (lexical rank 2): 1/12
    weighted = [("Red kettle", round(3 / 11, 9)), ("Untitled", round(2 / 12, 9)),
                ("Kettle", round(1 / 12, 9))]
    assert ranked(three.search("kettle red")) == weighted
    assert ranked(three.search("kettle red", scope="set")) == weighted
    three.set_fusion_settings(w_lexical=0.5, w_image=0.0, rrf_k=60)
    # the image lane still contributes rows, with weight 0 they tie at 0 (by asset id)
    assert ranked(three.search("kettle red")) == [
        ("Red kettle", round(0.5 / 61, 9)), ("Kettle", round(0.5 / 62, 9)), ("Untitled", 0.0)]
    three.set_fusion_settings(w_lexical=1, w_image=1, rrf_k=60)
    assert ranked(three.search("kettle red")) == plain


@pytest.mark.parametrize("change, message", [
    ({"w_text": -0.1}, "w_text must be a number within [0.0, 10.0]"),
    ({"w_image": 10.5}, "w_image must be a number within [0.0, 10.0]"),
    ({"w_lexical": float("nan")}, "w_lexical must be a number within"),
    ({"rrf_k": 0}, "rrf_k must be a number within [1, 1000]"),
    ({"rrf_k": 2.5}, "rrf_k must be an integer"),
    ({"w_lexical": 0, "w_text": 0, "w_image": 0}, "at least one of"),
    ({"k": 3}, "unknown fusion setting(s): k"),
])
def test_bad_fusion_settings_are_refused_and_change_nothing(lib: Library, change, message):
    with pytest.raises(ValueError) as exc:
        lib.set_fusion_settings(**change)
    assert message in str(exc.value)
    assert lib.fusion_settings() == {"w_lexical": 1.0, "w_text": 1.0, "w_image": 1.0,
                                     "rrf_k": 60}


def test_settings_cli_shows_and_sets_fusion(lib: Library, db_url: str, home: Path):
    runner = CliRunner()
    base = ["--home", str(home), "--database-url", db_url, "settings"]
    shown = runner.invoke(main, base + ["--json"])
    assert shown.exit_code == 0, shown.output
    info = json.loads(shown.output)
    assert {k: info[k] for k in ("w_lexical", "w_text", "w_image", "rrf_k")} == {
        "w_lexical": 1.0, "w_text": 1.0, "w_image": 1.0, "rrf_k": 60}
    ok = runner.invoke(main, base + ["--text-weight", "0.5", "--rrf-k", "20"])
    assert ok.exit_code == 0, ok.output
    assert "w_text\t0.5" in ok.output and "rrf_k\t20" in ok.output
    # one bad value: an error naming it and the bound, and nothing changes
    bad = runner.invoke(main, base + ["--image-weight", "11", "--keep-cap", "5"])
    assert bad.exit_code == 1
    assert "w_image must be a number within [0.0, 10.0], not 11.0" in bad.output
    assert lib.fusion_settings()["w_image"] == 1.0
    assert lib.lexical_settings()["keep_cap"] == 1000
    # a good fusion value with a bad lexical one: refused together
    bad2 = runner.invoke(main, base + ["--text-weight", "0.7", "--keep-cap", "0"])
    assert bad2.exit_code == 1 and "keep_cap = 0 is out of range: it must be within 1 and 1,000,000" in bad2.output
    assert lib.fusion_settings()["w_text"] == 0.5
