"""Machine words in the library: computed at ingest into
asset_machine and the search document's own field group (migration 0019),
searched in every library language, never a phrase bonus, in the text the
text lane embeds but never in the leak check's caption variant, shown apart,
and recomputed by `loupe enrich` (resumable)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import skimage
from click.testing import CliRunner
from PIL import Image, ImageDraw

from loupe import Library
from loupe.cli import main
from loupe.vector import queries as vq
from loupe.vector.embedtext import embedding_text, text_hash

from imaging import exiftool_write

SKIMAGE_DATA = Path(os.path.dirname(skimage.__file__)) / "data"


def _pictures(folder: Path) -> None:
    """A red disc on white (a cut-out on white), black lines on white (line
    art), a real photo (scikit-image's chelsea), a transparent stamp."""
    im = Image.new("RGB", (400, 300), "white")
    ImageDraw.Draw(im).ellipse((120, 70, 280, 230), fill=(220, 20, 60))
    im.save(folder / "disc.jpg", quality=95)
    im = Image.new("RGB", (600, 400), "white")
    d = ImageDraw.Draw(im)
    for i in range(0, 600, 60):
        d.line((i, 0, 600 - i, 400), fill="black", width=4)
    im.save(folder / "lines.png")
    shutil.copy(SKIMAGE_DATA / "chelsea.png", folder / "chelsea.png")
    im = Image.new("RGBA", (400, 300), (0, 0, 0, 0))
    ImageDraw.Draw(im).rectangle((100, 60, 300, 240), fill=(30, 144, 255, 255))
    im.save(folder / "stamp.png")


@pytest.fixture
def four(db_url: str, home: Path, photos: Path):
    _pictures(photos)
    with Library.open(home, database_url=db_url, create=True) as lib:
        lib.init(languages=["en", "fr"])
        summary = lib.ingest(photos)
        assert summary.failed == 0
        yield lib


def _ids(lib: Library) -> dict[str, int]:
    return {r[0]: r[1] for r in lib.conn.execute("SELECT rel_path, asset_id FROM asset_file")}


def test_machine_words_are_computed_at_ingest_and_searched(four: Library):
    ids = _ids(four)
    row = four.conn.execute("SELECT kind, background, cutout, colours, background_colour, version"
                            " FROM asset_machine WHERE asset_id = %s", (ids["disc.jpg"],)).fetchone()
    assert row == ("clipart", "white", True, ["red"], "white", 5)
    res = four.search("cut-out on white")
    assert res.hits[0].asset_id == ids["disc.jpg"]
    res = four.search("black and white line drawing")
    assert res.hits[0].asset_id == ids["lines.png"]
    res = four.search("détouré fond transparent", lang="fr")
    assert res.hits[0].asset_id == ids["stamp.png"]
    # a machine phrase never earns the phrase bonus (neither 2 nor 1)
    res = four.search("white background")
    assert res.hits and all(h.bonus == 0 for h in res.hits)


def test_machine_words_never_reach_the_caption_variant_or_the_files(four: Library):
    """The leak check embeds the caption variant from these columns
    (loupe.vector.embed.embed_texts): the same text with and without
    machine words, so the check's meaning is unchanged."""
    def caption_texts() -> dict[int, str]:
        rows = four.conn.execute(vq.TEXT_DOCUMENTS, {
            "tenant_id": four.tenant_id, "lang": "en", "model_id": -1, "lane": "caption",
            "after": 0, "batch": 100}).fetchall()
        cols = ("title", "description", "keywords", "vocabulary", "collections", "location",
                "people", "creator", "ocr")
        return {r[0]: embedding_text(dict(zip(cols, r[1:10]))) for r in rows}

    with_machine = caption_texts()
    assert four.conn.execute("SELECT count(*) FROM search_document WHERE machine <> ''"
                             ).fetchone()[0] == 8
    four.conn.execute("DELETE FROM asset_machine")
    from loupe.document.compile import rebuild_documents
    for asset_id in with_machine:
        rebuild_documents(four.conn, four.tenant_id, asset_id, ["en", "fr"])
    assert four.conn.execute("SELECT count(*) FROM search_document WHERE machine <> ''"
                             ).fetchone()[0] == 0
    assert caption_texts() == with_machine
    assert not any("background" in t or "clip art" in t for t in with_machine.values())


def test_the_text_lane_embeds_machine_words_and_the_caption_variant_does_not(
        four: Library, photos: Path, tmp_path: Path):
    """The text lane's vector is of the text with the
    machine words, the caption variant's (what the leak check compares with
    the pixels) of the metadata alone — the hash of each embedded text is
    stored with its vector."""
    from imaging import write_sidecar
    from tinymodels import build_clip

    write_sidecar(photos / "disc.jpg", "-XMP-dc:Title=Red disc", "-XMP-dc:Subject=badge")
    assert four.ingest(photos).updated == 1
    four.install_model(build_clip(tmp_path / "src" / "tiny-clip"))
    four.use_model("tiny-clip", "text")
    four.embed()
    four.build_variants("tiny-clip")
    disc = _ids(four)["disc.jpg"]
    row = four.conn.execute(vq.TEXT_DOCUMENTS, {
        "tenant_id": four.tenant_id, "lang": "en", "model_id": -1, "lane": "text",
        "after": disc - 1, "batch": 1}).fetchone()
    cols = ("title", "description", "keywords", "vocabulary", "collections", "location",
            "people", "creator", "ocr")
    human = dict(zip(cols, row[1:10]))
    assert row[11] == ("clip art clipart graphic cartoon · red · white background · "
                       "cut-out isolated · horizontal · small")
    with_machine = embedding_text({**human, "machine": row[11]})
    assert with_machine == ("Red disc. clip art clipart graphic cartoon, red, white background, "
                            "cut-out isolated, horizontal, small. badge")
    hashes = dict(four.conn.execute(
        "SELECT lane, source_hash FROM asset_vector WHERE asset_id = %s AND lane IN "
        "('text', 'caption')", (disc,)).fetchall())
    assert bytes(hashes["text"]) == text_hash(with_machine)
    assert bytes(hashes["caption"]) == text_hash(embedding_text(human))
    assert embedding_text(human) == "Red disc. badge"


def test_embedding_text_places_machine_words_after_the_title():
    doc = {"title": "Rose", "description": "A rose in a garden", "keywords": "flower, red",
           "ocr": "", "machine": "photo photograph · red · scene background"}
    assert embedding_text(doc) == ("Rose. photo photograph, red, scene background. A rose in a "
                                   "garden. flower, red")
    del doc["machine"]   # without machine words: the text a build without them embedded
    assert embedding_text(doc) == "Rose. A rose in a garden. flower, red"


def test_enrich_computes_what_is_missing_and_resumes(four: Library):
    four.conn.execute("DELETE FROM asset_machine WHERE asset_id IN "
                      "(SELECT asset_id FROM asset_file WHERE rel_path IN ('disc.jpg', 'lines.png'))")
    assert four.enrich() == {"computed": 2, "warnings": 0, "ocr_read": 0, "pending": 0,
                             "skipped": 0, "skipped_reasons": []}
    assert four.enrich()["computed"] == 0


def test_show_and_why_it_matched_keep_machine_words_apart(four: Library):
    from loupe.web.service import why_matched

    disc = _ids(four)["disc.jpg"]
    asset = four.show(disc)
    assert asset["machine"]["colours"] == ["red"]
    assert asset["machine"]["words"]["fr"].startswith("clipart image graphique dessin · rouge")
    assert all("machine" not in d for d in asset["documents"])
    why = {w["term"]: w["fields"] for w in why_matched(four, asset, "red disc", "en")}
    assert why["red"] == [f"machine: {asset['machine']['words']['en']}"]
    assert why["disc"] == ["filename"]


def test_machine_weight_is_a_lexical_setting(four: Library):
    assert four.lexical_settings()["weights"] == [3.0, 2.0, 1.0, 0.5, 0.5]
    four.set_lexical_settings(weights=[3, 2, 1, 0.5])   # four values keep the machine weight
    assert four.lexical_settings()["weights"] == [3.0, 2.0, 1.0, 0.5, 0.5]
    before = four.search("cut-out").hits[0].score
    four.set_lexical_settings(weights=[3, 2, 1, 0.5, 1.0])
    assert four.search("cut-out").hits[0].score > before


def test_the_asset_page_shows_machine_words_apart(four: Library, db_url: str):
    from fastapi.testclient import TestClient

    from loupe.web import create_app
    from weblib import web_login

    four.create_user("admin", "admin-password", admin=True)
    disc = _ids(four)["disc.jpg"]
    app = create_app(four.home, database_url=db_url, pool_size=1)
    with TestClient(app) as client:
        r = web_login(client, "admin", "admin-password", next="/")
        assert r.status_code == 303
        page = client.get(f"/assets/{disc}", params={"q": "red disc"}).text
        assert "Machine words (from the pixels)" in page
        assert "never written to the file" in page
        assert "<strong>red</strong>: in machine: clip art clipart graphic cartoon · red" in page
        assert client.get(f"/api/assets/{disc}").status_code == 200


def test_a_query_of_machine_facts_only_names_them():
    """query_facts reads the conversation's lexicon; only a query whose every
    word names a pixel fact (never a colour) ranks by facts."""
    from loupe.conversation.facts import query_facts
    from loupe.search.facts import NO_FACTS, QueryFacts

    assert query_facts("cut-out on white") == QueryFacts(background=("white",), cutout=True)
    assert query_facts("black and white line drawing") == QueryFacts(kind=("lineart",),
                                                                    monochrome=True)
    assert query_facts("transparent background icon") == QueryFacts(
        kind=("icon",), background=("transparent",))
    assert query_facts("détouré sur fond blanc") == QueryFacts(background=("white",),
                                                                cutout=True)
    # a subject word, a colour alone, a negation, nothing: no facts
    assert query_facts("side view fish photo on white background") is NO_FACTS
    assert query_facts("white") is NO_FACTS
    assert query_facts("red flower close-up") is NO_FACTS
    assert query_facts("not cut-out") is NO_FACTS
    assert query_facts("   ") is NO_FACTS
    assert query_facts("x" * 100_000) is NO_FACTS
    assert QueryFacts(background=("white",), cutout=True).words() == "cut-out, background white"
    assert not NO_FACTS and NO_FACTS.params()["qf_on"] is False


def test_a_query_of_machine_facts_ranks_those_facts_first(db_url: str, home: Path,
                                                          photos: Path):
    """A transparent stamp titled "white" outranked a cut-out on white for
    "cut-out on white" (its title holds "white"; blind judges graded it 0).
    The facts the query names now come first; a query that also names a
    subject keeps the lanes' order."""
    (photos / "set").mkdir()
    _pictures(photos / "set")
    exiftool_write(photos / "set" / "stamp.png", "-XMP-dc:Title=white")
    exiftool_write(photos / "set" / "disc.jpg", "-XMP-dc:Title=disc")
    with Library.open(home, database_url=db_url, create=True) as lib:
        lib.init(languages=["en"])
        assert lib.ingest(photos).failed == 0
        ids = {k.removeprefix("set/"): v for k, v in _ids(lib).items()}
        res = lib.search("cut-out on white")
        assert [h.asset_id for h in res.hits[:2]] == [ids["disc.jpg"], ids["stamp.png"]]
        assert ("every word of the query names what the pixels show (cut-out, background "
                "white): the results whose machine facts match come first") in res.notices
        res = lib.search("white cut-out stamp")
        assert res.hits[0].asset_id == ids["stamp.png"]
        assert not any("machine facts" in n for n in res.notices)
        # a scope orders the same way (the scope's own page statement)
        res = lib.search("cut-out on white", scope="set")
        assert res.hits[0].asset_id == ids["disc.jpg"]
