"""Why an asset is or is not in a search's results (C7), one test per
reason: in the results, a missing word, another language, a scope, a filter,
a cap, a vector lane's cut-off, and an asset the viewer may not read (the
answer of a missing one). Real files, real ExifTool, real PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest
from imaging import make_image, write_sidecar

from loupe import Library
from loupe.assets.view import AssetNotFound


@pytest.fixture
def zoo(lib: Library, photos: Path) -> Library:
    lib.init(languages=["en", "es"])
    specs = [("wild/cheetah.jpg", ["-XMP-dc:Title=Cheetah at sunset"]),
             ("wild/lion.jpg", ["-XMP-dc:Title=Lion at sunset"]),
             ("city/tram.jpg", ["-XMP-dc:Title=Tram at sunset"]),
             ("city/dog.jpg", ["-XMP-dc:Title=Dog", "-XMP-dc:Title-es=perro"])]
    for i, (rel, tags) in enumerate(specs):
        write_sidecar(make_image(photos / rel, color=(i * 50, 20, 20)), *tags)
    lib.ingest(photos)
    return lib


def asset(lib: Library, query: str) -> int:
    return lib.search(query, limit=1).hits[0].asset_id


def reasons(answer: dict) -> list[str]:
    return [r["reason"] for r in answer["reasons"]]


def test_an_asset_in_the_results_says_its_rank_and_words(zoo: Library):
    got = zoo.why(asset(zoo, "cheetah"), "cheetah", lang="en")
    assert (got["in_results"], got["rank"], reasons(got)) == (True, 1, ["in_results"])
    assert got["words"]["matched"] == {"en": {"cheetah": ["keywords, file name or vocabulary",
                                                     "title"]}}   # cheetah.jpg: its name


def test_a_missing_word_is_named(zoo: Library):
    got = zoo.why(asset(zoo, "lion"), "cheetah", lang="en")
    assert got["in_results"] is False
    assert got["reasons"] == [{"reason": "missing_words",
                               "text": "no query word is in its document (missing: cheetah)"}]


def test_a_word_held_in_a_language_the_search_did_not_read(zoo: Library):
    dog = asset(zoo, "perro")
    got = zoo.why(dog, "perro", lang="en")
    assert "language" in reasons(got)
    assert got["words"]["other_languages"] == {"es": ["perr"]}


def test_a_scope_that_leaves_it_out(zoo: Library):
    got = zoo.why(asset(zoo, "cheetah"), "cheetah", lang="en", scope="city")
    assert got["in_results"] is False
    assert {"reason": "scope", "text": "outside the scope: without it, it stands at rank 1"} \
        in got["reasons"]


def test_a_filter_that_leaves_it_out(zoo: Library):
    got = zoo.why(asset(zoo, "cheetah"), "cheetah", lang="en", filters={"collection": "city"})
    assert {"reason": "filter", "text": "outside the filter: without it, it stands at rank 1"} \
        in got["reasons"]


def test_a_cap_that_cut_it(zoo: Library):
    last = zoo.search("sunset", lang="en", limit=10).hits[-1].asset_id
    zoo.set_lexical_settings(keep_cap=1)
    got = zoo.why(last, "sunset", lang="en")
    assert got["in_results"] is False and got["verdict"] == "truncated"
    [cap] = [r for r in got["reasons"] if r["reason"] == "cap"]
    assert cap["text"].endswith("it would stand at rank 3 of the words' 3 matches")


def test_an_asset_the_viewer_may_not_read_is_answered_as_a_missing_one(zoo: Library):
    zoo.create_user("alice", "alice-password")
    zoo.grant("alice", collection="city")
    cheetah = asset(zoo, "cheetah")
    alice = zoo.as_user("alice")
    with pytest.raises(AssetNotFound) as hidden:
        alice.why(cheetah, "cheetah")
    with pytest.raises(AssetNotFound) as missing:
        alice.why(987654321, "cheetah")
    assert str(hidden.value).replace(str(cheetah), "N") == \
        str(missing.value).replace("987654321", "N")
    assert alice.why(asset(zoo, "tram"), "tram", lang="en")["rank"] == 1


def test_a_vector_lane_cut_off_is_told_with_the_distance(lib: Library, photos: Path,
                                                          tmp_path: Path):
    from tinymodels import build_nomic

    lib.init(languages=["en"])
    for name, color, title in (("k.png", (255, 0, 0), "red kettle"), ("b.png", (0, 0, 255),
                                                                        "blue")):
        write_sidecar(make_image(photos / name, size=(16, 16), color=color, fmt="PNG"),
                      f"-XMP-dc:Title={title}")
    lib.ingest(photos)
    lib.install_model(build_nomic(tmp_path / "src" / "tiny-nomic"))
    lib.use_model("tiny-nomic", "text")
    lib.embed()
    blue = asset(lib, "blue")
    got = lib.why(blue, "red kettle")
    assert got["in_results"] is False
    text = got["lanes"]["text"]
    assert text["within"] is False and text["distance"] > text["cut_off"]
    assert "cut_off" in reasons(got) and "missing_words" in reasons(got)


def test_the_api_answers_why_and_hides_what_the_user_may_not_read(zoo: Library, db_url: str,
                                                                  home: Path):
    from fastapi.testclient import TestClient

    from loupe.web.app import create_app

    zoo.create_user("alice", "alice-password")
    zoo.grant("alice", collection="city")
    cheetah, tram = asset(zoo, "cheetah"), asset(zoo, "tram")
    with TestClient(create_app(home, database_url=db_url, pool_size=1)) as client:
        token = client.post("/api/tokens", json={"name": "alice",
                                                 "password": "alice-password"}).json()["token"]
        auth = {"Authorization": "Bearer " + token}
        ok = client.get(f"/api/assets/{tram}/why", params={"q": "tram", "lang": "en"},
                        headers=auth)
        assert ok.status_code == 200 and ok.json()["rank"] == 1
        hidden = client.get(f"/api/assets/{cheetah}/why", params={"q": "cheetah"}, headers=auth)
        missing = client.get("/api/assets/987654321/why", params={"q": "cheetah"}, headers=auth)
        assert (hidden.status_code, hidden.json()) == (missing.status_code, missing.json()) \
            == (404, {"detail": "no such asset"})


def test_loupe_explain_prints_the_reasons(zoo: Library, db_url: str, home: Path):
    from click.testing import CliRunner

    from loupe.cli import main

    base = ["--home", str(home), "--database-url", db_url, "explain"]
    lion = asset(zoo, "lion")
    out = CliRunner().invoke(main, base + [str(lion), "-q", "cheetah", "--lang", "en"])
    assert out.exit_code == 0, out.output
    assert "missing_words: no query word is in its document (missing: cheetah)" in out.output
    gone = CliRunner().invoke(main, base + ["987654321", "-q", "cheetah"])
    assert gone.exit_code == 1 and "no asset 987654321" in gone.output
