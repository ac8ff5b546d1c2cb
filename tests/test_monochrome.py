"""The monochrome predicate (row 2): "black and white" /
"noir et blanc" / "greyscale" is ``{"monochrome": true}``, decided from the
pixels (asset_machine.monochrome, computed at ingest), not the palette colour
grey. Real photographs: three colour JPEGs of tests/fixtures/similar and
greyscale versions of two of them (one saved as an 8-bit grey JPEG, one as an
RGB JPEG whose channels are equal up to JPEG noise)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from loupe import Library

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "similar"


def stems(res) -> set[str]:
    return {Path(h.path).stem for h in res.hits}


@pytest.fixture
def mono(lib: Library, photos: Path, db_url: str) -> Library:
    """shared/: astronaut (colour), astronaut_bw (grey JPEG), coffee (colour);
    private/: chelsea (colour), chelsea_bw (RGB JPEG of a greyscale picture).
    Member mia reads shared/ only."""
    for folder, name, grey in (("shared", "astronaut", None), ("shared", "astronaut", "L"),
                               ("shared", "coffee", None), ("private", "chelsea", None),
                               ("private", "chelsea", "RGB")):
        (photos / folder).mkdir(exist_ok=True)
        im = Image.open(FIXTURES / f"{name}.jpg")
        if grey:
            im = im.convert("L").convert(grey)
        im.save(photos / folder / f"{name}{'_bw' if grey else ''}.jpg", "JPEG", quality=88)
    assert lib.ingest(photos).new_assets == 5
    lib.create_user("mia", "mia-password-1")
    lib.grant("mia", collection="shared")
    lib.test_url = db_url
    return lib


def test_black_and_white_filters_the_greyscale_photos_for_owner_and_member(mono: Library):
    rows = dict(mono.conn.execute(
        "SELECT regexp_replace(f.rel_path, '^.*/|[.]jpg$', '', 'g'), m.monochrome "
        "FROM asset_machine m JOIN asset_file f ON f.asset_id = m.asset_id").fetchall())
    assert rows == {"astronaut": False, "astronaut_bw": True, "coffee": False, "chelsea": False,
                    "chelsea_bw": True}
    res = mono.search("", filters={"monochrome": True}, limit=10)
    assert stems(res) == {"astronaut_bw", "chelsea_bw"} and res.total == 2
    assert res.verdict == "complete"
    res = mono.search("", filters={"monochrome": False}, limit=10)
    assert stems(res) == {"astronaut", "coffee", "chelsea"} and res.total == 3
    res = mono.search("", filters={"not": {"monochrome": True}}, limit=10)
    assert stems(res) == {"astronaut", "coffee", "chelsea"}
    mia = mono.as_user("mia")
    res = mia.search("", filters={"monochrome": True}, limit=10)
    assert stems(res) == {"astronaut_bw"} and res.total == 1
    # the conversation: "black and white" then "not the black and white ones"
    first = mono.ask("black and white pictures")
    assert first["turn"]["filter"] == {"monochrome": True}
    assert {Path(h["path"]).stem for h in first["search"]["hits"]} == {"astronaut_bw", "chelsea_bw"}
    fr = mono.ask("les photos en couleur", lang="fr")
    assert fr["state"]["filter"] == {"not": {"monochrome": True}}
    assert {Path(h["path"]).stem for h in fr["search"]["hits"]} == {"astronaut", "coffee", "chelsea"}


def test_the_tree_checks_the_monochrome_value_and_the_cli_has_the_option(mono: Library):
    from loupe.filters import FilterError

    with pytest.raises(FilterError, match=r"filter \$.monochrome: true or false"):
        mono.search("", filters={"monochrome": "yes"})
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOUPE_")}
    base = [sys.executable, "-m", "loupe.cli", "--home", str(mono.home), "--database-url",
            mono.test_url, "search"]
    for flag, want in (("--monochrome", {"astronaut_bw", "chelsea_bw"}),
                       ("--no-monochrome", {"astronaut", "coffee", "chelsea"})):
        out = subprocess.run(base + [flag, "--json"], env=env, capture_output=True, text=True,
                             timeout=120)
        assert out.returncode == 0, out.stderr
        got = json.loads(out.stdout)
        assert {Path(h["path"]).stem for h in got["hits"]} == want
        assert got["filter"] == {"monochrome": flag == "--monochrome"}
