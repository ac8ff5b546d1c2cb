"""The tune-split judged sample: ``eval/judging_sheets.py
sample-tune`` draws N tune queries, one per picture, strata in proportion,
registers in turn — and reproduces the committed sample exactly."""

from __future__ import annotations

import hashlib
import importlib.util
import json
from collections import Counter
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _sheets_module():
    spec = importlib.util.spec_from_file_location("judging_sheets",
                                                  REPO / "eval/judging_sheets.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _rows(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip() and x[0] != "#"]


def test_sample_tune_is_the_committed_sample(tmp_path: Path) -> None:
    out = tmp_path / "s.jsonl"
    _sheets_module().sample_tune(str(out), "45")
    committed = REPO / "eval/judgements/tune/demo-blind-tune-judge.jsonl"
    assert out.read_bytes() == committed.read_bytes()
    rows = _rows(out)
    assert len(rows) == 45
    assert {r["strata"]["split"] for r in rows} == {"tune"}
    assert Counter(r["register"] for r in rows) == {"objects": 15, "style": 15, "question": 15}
    pics = [r["truth"][0]["sha256"] for r in rows]
    assert len(set(pics)) == 45  # one query per picture
    # strata kept in proportion to the 71 tune pictures (largest remainder)
    tune = [r for r in _rows(REPO / "eval/querysets/demo-blind.jsonl")
            if r["strata"]["split"] == "tune"]
    per_pic = {r["truth"][0]["sha256"]: (r["strata"]["source"], r["strata"]["kind"]) for r in tune}
    size = Counter(per_pic.values())
    got = Counter((r["strata"]["source"], r["strata"]["kind"]) for r in rows)
    for k, n in size.items():
        assert abs(got[k] - 45 * n / len(per_pic)) < 1, k
    # within a stratum, the first pictures by the salted hash are the ones kept
    for k in size:
        order = sorted((h for h, s in per_pic.items() if s == k),
                       key=lambda h: hashlib.sha256(("loupe-judge-2026:" + h).encode()).hexdigest())
        assert {h for h in pics if per_pic[h] == k} == set(order[:got[k]])


def test_sample_tune_refuses_more_than_one_query_per_picture(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="N must be 1..71"):
        _sheets_module().sample_tune(str(tmp_path / "s.jsonl"), "72")
