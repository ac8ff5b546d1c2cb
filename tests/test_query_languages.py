"""A search without a language reads the query in the library languages whose
stop words it holds (E9): an English question is not analysed by the
German analyzer, which keeps "with", "have", "and" as content words and so
ranked a plain-English description full of them above the picture the
English analysis ranks first. Real PostgreSQL, the analyzers' own stop words."""

from __future__ import annotations

import pytest
from corpus import add_document

from loupe import Library
from loupe.lexical import lexical_search
from loupe.lexical.search import query_languages

EVERY = ["en", "fr", "de", "es"]


@pytest.mark.parametrize("query,langs,stops", [
    ("do we have a red and white road cone with no background?", ["en"],
     {"en": 7, "fr": 0, "de": 0, "es": 2}),
    ("une photo du chat", ["fr"], {"en": 0, "fr": 2, "de": 1, "es": 0}),
    ("ein Hund mit einem Ball", ["de"], {"en": 0, "fr": 0, "de": 3, "es": 0}),
    ("un perro en la playa", ["fr", "es"], {"en": 0, "fr": 3, "de": 0, "es": 3}),  # a tie: both
    ("a", ["en", "es"], {"en": 1, "fr": 0, "de": 0, "es": 1}),
    ("galaxies", EVERY, {"en": 0, "fr": 0, "de": 0, "es": 0}),   # content words only: all
    ("madrid", EVERY, {"en": 0, "fr": 0, "de": 0, "es": 0}),
])
def test_the_languages_whose_stop_words_the_query_holds_most_of(lib: Library, query, langs,
                                                                stops):
    assert query_languages(lib.conn, query, EVERY) == (langs, stops)


def test_one_language_or_no_words_needs_no_reading(lib: Library):
    assert query_languages(lib.conn, "do we have", ["en"]) == (["en"], {})
    assert query_languages(lib.conn, "   ", EVERY) == (EVERY, {})
    with pytest.raises(ValueError, match="at least one language"):
        query_languages(lib.conn, "cat", [])


@pytest.fixture
def cones(lib: Library) -> Library:
    """Two assets with untagged English metadata, so each has a document in
    every library language (en, de): the cone, and a description that holds
    the query's English stop words again and again."""
    lib.init(languages=["en", "de"])
    docs = {1: {"title": "Traffic cone", "description": "a red and white road cone"},
            2: {"title": "Two cats",
                "description": "we have two white cats with a blue background, and we do have "
                               "more with them, and no dog"}}
    for lang in ("en", "de"):
        for asset_id, fields in docs.items():
            add_document(lib, asset_id, fields, lang=lang)
    return lib


def test_an_english_question_is_read_by_the_english_analyzer(cones: Library):
    query = "do we have a red and white road cone with no background?"
    # the German analysis keeps the stop words and ranks the cats first ...
    german = lexical_search(cones.conn, cones.tenant_id, query, "de", limit=10)
    assert [h.asset_id for h in german.hits] == [2, 1]
    # ... so a search in every language did too; now the query reads as English
    res = cones.search(query)
    assert res.langs == ["en"]
    assert [h.asset_id for h in res.hits] == [1, 2]
    assert res.notices[0] == ("the query reads as en (7 of its words are stop words in en): "
                              "only the documents in en were searched; give a language "
                              "(en/de) to choose another")
    # a language given is searched as asked, with no notice
    res = cones.search(query, lang="de")
    assert res.langs == ["de"] and [h.asset_id for h in res.hits] == [2, 1]
    assert not any("reads as" in n for n in res.notices)
    # content words only: every language, as before
    res = cones.search("cone")
    assert res.langs == ["en", "de"] and [h.asset_id for h in res.hits] == [1]
    assert not any("reads as" in n for n in res.notices)


def test_a_models_languages_come_from_its_own_files(tmp_path):
    from loupe.models.registry import ModelInfo, model_languages

    folder = tmp_path / "m"
    folder.mkdir()
    assert model_languages(ModelInfo("m", folder, {})) is None           # nothing says
    (folder / "README.md").write_text("---\nlanguage: en\nlicense: apache-2.0\n---\n# card\n")
    assert model_languages(ModelInfo("m", folder, {})) == {"en"}
    (folder / "README.md").write_text("---\nlanguage:\n- en\n- fr-FR\n---\n")
    assert model_languages(ModelInfo("m", folder, {})) == {"en", "fr"}
    (folder / "README.md").write_text("no front matter")
    assert model_languages(ModelInfo("m", folder, {})) is None
    # loupe-model.json's own setting wins over the card
    assert model_languages(ModelInfo("m", folder, {"languages": ["de"]})) == {"de"}


def test_a_lane_whose_model_cannot_read_the_query_steps_aside(lib: Library, photos, tmp_path):
    """An English text model embeds a French sentence as noise, which
    outranked the lexical lane's exact matches ("une photo de chat" put a
    camera first): a lane whose model reads none of the
    query's languages is left out, with a notice."""
    from imaging import make_image, write_sidecar
    from tinymodels import build_nomic

    lib.init(languages=["en", "fr"])
    img = make_image(photos / "k.png", size=(16, 16), color=(255, 0, 0), fmt="PNG")
    write_sidecar(img, "-XMP-dc:Title=red kettle")
    lib.ingest(photos)
    folder = build_nomic(tmp_path / "src" / "tiny-nomic")
    (folder / "README.md").write_text("---\nlanguage: en\n---\n")
    lib.install_model(folder)
    lib.use_model("tiny-nomic", "text")
    lib.embed()
    res = lib.search("the red kettle")
    assert res.langs == ["en"] and "text" in res.lanes
    assert not any("lane off" in n for n in res.notices)
    res = lib.search("une bouilloire rouge de la cuisine")
    assert res.langs == ["fr"] and res.lanes == ["lexical"]
    assert "text lane off for this query: its model tiny-nomic reads en and the query reads " \
           "as fr" in res.notices
    res = lib.search("kettle")                 # no stop word: every language, en among them
    assert res.langs == ["en", "fr"] and "text" in res.lanes


def test_a_stop_word_is_never_corrected_as_a_typo(cones: Library):
    """A query of stop words only keeps them as terms (0013); read as English
    they are in no English document, and the typo fallback "corrected" the
    → thed. Stop words are not typos: nothing is corrected, nothing matches."""
    for lang in ("en", "de"):
        add_document(cones, 3, {"title": "Theo", "description": "whoa"}, lang=lang)
    res = cones.search("the who")
    assert res.langs == ["en"]
    assert res.corrections == {} and res.hits == []
    res = cones.search("the trafic")          # a real typo beside a stop word is still fixed
    assert res.corrections == {"trafic": "traffic"} and [h.asset_id for h in res.hits] == [1]
