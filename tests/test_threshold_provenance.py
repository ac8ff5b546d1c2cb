"""A model's distance thresholds record where they came from (V4):
``loupe models thresholds NAME 3-5=0.61 --from-set S --split tune --metric M``
writes, per band, the judged query set, split, criterion and date beside the
value in loupe-model.json; a value set by hand replaces that record with
"by hand"; bad records are refused before anything is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from tinymodels import build_clip

from loupe import Library
from loupe.cli import main

PROV = {"set": "demo-blind-tune", "split": "tune",
        "metric": "Youden's J on pooled graded judgements", "date": "2026-12-01"}


def test_thresholds_record_their_provenance_per_band(db_url: str, home: Path, tmp_path: Path):
    with Library.open(home, database_url=db_url) as lib:
        lib.install_model(build_clip(tmp_path / "tiny"), name="tiny")
        lib.set_model_thresholds("tiny", {"3-5": 0.61, "6-10": 0.58}, provenance=PROV)
        cfg = json.loads((home / "models/tiny/loupe-model.json").read_text())
        assert cfg["thresholds"]["3-5"] == 0.61 and cfg["thresholds"]["6-10"] == 0.58
        assert cfg["thresholds_provenance"] == {"3-5": PROV, "6-10": PROV}
        # a value set by hand replaces the record of the band it changes, only
        lib.set_model_thresholds("tiny", {"6-10": 0.5})
        prov = lib.model_thresholds_provenance("tiny")
        assert prov["3-5"] == PROV
        assert prov["6-10"]["set"] == "by hand" and set(prov["6-10"]) == {"set", "date"}
        assert prov["1"] is None and prov["2"] is None and prov["11+"] is None
        assert lib.model_thresholds("tiny")["6-10"] == 0.5


def test_cli_records_and_shows_provenance(db_url: str, home: Path, tmp_path: Path):
    with Library.open(home, database_url=db_url) as lib:
        lib.install_model(build_clip(tmp_path / "tiny"), name="tiny")
    base = ["--home", str(home), "--database-url", db_url, "models", "thresholds", "tiny"]
    res = CliRunner().invoke(main, base + ["3-5=0.61", "--from-set", "demo-blind-tune",
                                           "--split", "tune", "--metric", PROV["metric"],
                                           "--date", "2026-12-01", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["thresholds"]["3-5"] == 0.61
    assert out["provenance"]["3-5"] == PROV and out["provenance"]["1"] is None
    res = CliRunner().invoke(main, base)
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines[0] == "1\t0.35"
    assert lines[2] == ("3-5\t0.61\tset demo-blind-tune; split tune; "
                        "metric Youden's J on pooled graded judgements; date 2026-12-01")
    # provenance needs every field, and values to describe
    res = CliRunner().invoke(main, base + ["3-5=0.7", "--from-set", "x"])
    assert res.exit_code != 0 and "--split, --metric" in res.output
    res = CliRunner().invoke(main, base + ["--from-set", "x", "--split", "t", "--metric", "m"])
    assert res.exit_code != 0 and "KEY=DISTANCE" in res.output


@pytest.mark.parametrize("bad, message", [
    ({**PROV, "date": "yesterday"}, "date='yesterday': use YYYY-MM-DD"),
    ({**PROV, "split": "tune\nrm -rf"}, "split='tune\\nrm -rf'"),
    ({**PROV, "metric": "x" * 201}, "1 to 200 characters"),
    ({k: v for k, v in PROV.items() if k != "metric"}, "missing: metric"),
    ({**PROV, "who": "me"}, "unknown: who"),
])
def test_bad_provenance_is_refused_and_nothing_written(db_url: str, home: Path, tmp_path: Path,
                                                      bad: dict, message: str):
    with Library.open(home, database_url=db_url) as lib:
        lib.install_model(build_clip(tmp_path / "tiny"), name="tiny")
        cfg = home / "models/tiny/loupe-model.json"
        before = cfg.read_bytes()
        with pytest.raises(ValueError, match=None) as err:
            lib.set_model_thresholds("tiny", {"3-5": 0.61}, provenance=bad)
        assert message in str(err.value)
        assert cfg.read_bytes() == before
