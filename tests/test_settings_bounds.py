"""Every setting is checked against what the statements can hold before it is
stored, and a bad value already stored is reported clearly (S7)."""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from loupe import Library
from loupe.lexical.settings import SettingError

from imaging import make_image, write_sidecar

LOUPE = [sys.executable, "-m", "loupe.cli"]


def loupe(db_url: str, home: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith("LOUPE_")}
    return subprocess.run(LOUPE + ["--home", str(home), "--database-url", db_url, *args],
                          env={**base, **env}, capture_output=True, text=True, timeout=120)


@pytest.fixture
def two_photos(lib: Library, photos: Path) -> Library:
    for i, title in enumerate(["Sunset over the bay", "Sunset in the hills"]):
        img = make_image(photos / f"p{i}.jpg", color=(10 * i, 40, 40))
        write_sidecar(img, f"-XMP-dc:Title={title}")
    assert lib.ingest(photos).new_assets == 2
    return lib


def test_cli_refuses_a_cap_the_statements_cannot_hold(two_photos: Library, db_url, home):
    out = loupe(db_url, home, "settings", "--raw-cap", "300000000")
    assert out.returncode == 1
    assert "Traceback" not in out.stderr
    assert "raw_cap = 300,000,000 is out of range: it must be within 1 and 1,000,000" \
        in out.stderr
    # nothing was stored, and search still works
    assert two_photos.lexical_settings()["raw_cap"] == 3000
    assert two_photos.search("sunset").total == 2


@pytest.mark.parametrize("change, message", [
    ({"raw_cap": 300_000_000}, "raw_cap = 300,000,000 is out of range: it must be within "
                               "1 and 1,000,000"),
    ({"raw_cap": 0}, "raw_cap = 0 is out of range"),
    ({"raw_cap": 2.5}, "raw_cap must be a whole number, not 2.5"),
    ({"raw_cap": True}, "raw_cap must be a whole number, not True"),
    ({"keep_cap": 2**40}, "keep_cap = 1,099,511,627,776 is out of range: it must be within "
                          "1 and 1,000,000"),
    ({"k1": math.nan}, "k1 must be a finite number, not nan"),
    ({"k1": math.inf}, "k1 must be a finite number, not inf"),
    ({"k1": 1e300}, "k1 = 1e+300 is out of range: it must be > 0 and <= 100"),
    ({"weights": [3, 2, math.inf, 0.5]}, "weights[description] must be a finite number"),
    ({"weights": [0, 0, 0, 0, 0]}, "weights are all 0"),
    ({"weights": [1, 2, 3]}, "weights needs 5 values"),
    ({"b": [0.75, math.nan, 0.75, 0.75]}, "b[keywords] must be a finite number, not nan"),
    ({"b": [0.75, 0.75, 0.75, 1.5]}, "b[other] = 1.5 is out of range"),
    ({"vocab_decay": 0}, "vocab_decay = 0 is out of range"),
])
def test_library_method_names_the_bound(two_photos: Library, change, message):
    before = two_photos.lexical_settings()
    with pytest.raises(SettingError, match=re.escape(message)):
        two_photos.set_lexical_settings(**change)
    assert two_photos.lexical_settings() == before
    assert two_photos.search("sunset").total == 2


def test_the_largest_caps_run(two_photos: Library):
    two_photos.set_lexical_settings(raw_cap=1_000_000, keep_cap=1_000_000)
    res = two_photos.search("sunset")
    assert (res.total, res.verdict) == (2, "complete")


def test_a_bad_value_already_stored_is_reported_not_a_traceback(two_photos: Library, db_url,
                                                               home):
    # an older Loupe accepted it (the table's own check only asks > 0)
    two_photos.conn.execute("UPDATE lexical_setting SET raw_cap = 300000000 "
                            "WHERE tenant_id = %s", (two_photos.tenant_id,))
    with pytest.raises(SettingError, match=r"this library's lexical settings are invalid: "
                       r"raw_cap = 300,000,000 is out of range: it must be within 1 and "
                       r"1,000,000; fix them with 'loupe settings'"):
        two_photos.search("sunset")
    out = loupe(db_url, home, "search", "sunset")
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert "raw_cap = 300,000,000 is out of range" in out.stderr
    # the fix the message names works
    assert loupe(db_url, home, "settings", "--raw-cap", "3000").returncode == 0
    assert two_photos.search("sunset").total == 2


def test_search_limit_and_offset_are_bounded(two_photos: Library):
    with pytest.raises(ValueError, match="limit = 100000000000000000000 is out of range: "
                                         "it must be within 1 and 50,000"):
        two_photos.search("sunset", limit=10**20)
    with pytest.raises(ValueError, match="offset = 10000000000000000000 is out of range"):
        two_photos.search("sunset", offset=10**19)


def test_environment_settings_are_checked(two_photos: Library, db_url, home):
    out = loupe(db_url, home, "search", "sunset", LOUPE_HNSW_EF_SEARCH="5000")
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert "LOUPE_HNSW_EF_SEARCH=5,000 (HNSW candidates per vector-lane scan) is out of " \
           "range: it must be within 1 and 1,000" in out.stderr
    out = loupe(db_url, home, "search", "sunset", LOUPE_QUERY_VECTOR_CACHE="lots")
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert "LOUPE_QUERY_VECTOR_CACHE='lots' (query vectors kept per process) must be a " \
           "whole number within 0 and 1,000,000" in out.stderr


def test_model_thresholds_and_ingest_ceiling_are_bounded(lib: Library, photos: Path,
                                                         tmp_path: Path, db_url, home):
    import json

    from loupe.models import registry
    from tinymodels import build_clip

    img = make_image(photos / "teapot.png", size=(16, 16), color=(255, 0, 0), fmt="PNG")
    write_sidecar(img, "-XMP-dc:Title=Scarlet teapot")
    with pytest.raises(ValueError, match=r"max_pixels = -5 is out of range: it must be "
                                         r"within 1 and 1,000,000,000"):
        lib.ingest(photos, max_pixels=-5)
    out = loupe(db_url, home, "ingest", str(photos), "--max-pixels", "0")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "0 is not in the range 1<=x<=1000000000" in out.stderr
    lib.ingest(photos)
    lib.install_model(build_clip(tmp_path / "src" / "tiny-clip"))
    lib.use_model("tiny-clip", "image")
    lib.embed()
    with pytest.raises(ValueError, match=r"threshold 2=5.0 outside \(0, 2\]"):
        lib.set_model_thresholds("tiny-clip", {"2": 5.0})
    with pytest.raises(ValueError, match=r"threshold 2=nan outside \(0, 2\]"):
        lib.set_model_thresholds("tiny-clip", {"2": float("nan")})
    # a threshold edited by hand in loupe-model.json: the lane sits out and says why
    cfg_path = lib.home / "models" / "tiny-clip" / registry.CONFIG_FILE
    cfg = json.loads(cfg_path.read_text())
    cfg["thresholds"]["2"] = "wide"
    cfg_path.write_text(json.dumps(cfg))
    res = lib.search("scarlet teapot")
    assert [h.title for h in res.hits] == ["Scarlet teapot"] and res.lanes == ["lexical"]
    assert res.notices == ["image lane off: tiny-clip: threshold 2='wide' in loupe-model.json "
                           "is not a cosine distance within (0, 2]: fix it with "
                           "'loupe models thresholds'"]
