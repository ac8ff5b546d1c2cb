"""The analyzer at its edges (S4, S1): scripts without spaces
(CJK bigrams + unigrams), values made only of stop words, joined forms, text
in a language the library does not list, and a search without a language
over every language's document. Real files, metadata written by ExifTool."""

from __future__ import annotations

from pathlib import Path

import pytest
from imaging import make_image, write_sidecar

from loupe import Library


def ingest(lib: Library, photos: Path, specs: list[tuple[str, list[str]]]) -> dict[str, int]:
    """Write one image per (name, ExifTool tags), ingest them, return name -> asset id."""
    for i, (name, tags) in enumerate(specs):
        img = make_image(photos / f"{name}.jpg", color=(10 + i * 20, 40, 90))
        write_sidecar(img, *tags)
    summary = lib.ingest(photos)
    assert summary.new_assets == len(specs)
    return {Path(h["path"]).stem: h["asset_id"] for h in _paths(lib)}


def _paths(lib: Library) -> list[dict]:
    rows = lib.conn.execute("SELECT asset_id, rel_path FROM asset_file WHERE tenant_id = %s",
                            (lib.tenant_id,)).fetchall()
    return [{"asset_id": r[0], "path": r[1]} for r in rows]


def found(lib: Library, query: str, **kw) -> list[str]:
    """Stems of the file names of the hits, in rank order."""
    return [Path(h.path).stem for h in lib.search(query, limit=100, **kw).hits]


# -- scripts without spaces ----------------------------------------------------

@pytest.fixture
def cjk(lib: Library, photos: Path) -> Library:
    ingest(lib, photos, [
        ("cat", ["-XMP-dc:Title=猫"]),
        ("sleeping", ["-XMP-dc:Title=一只猫在睡觉"]),
        ("sakura", ["-XMP-dc:Title=Cherry blossom", "-XMP-dc:Title-ja=桜の花"]),
        ("apple", ["-XMP-dc:Title=사과를 먹다"]),
        ("katakana", ["-XMP-dc:Title=コーヒーカップ"]),
        ("dog", ["-XMP-dc:Title=A dog"]),
    ])
    return lib


def test_one_cjk_character_finds_the_longer_strings_holding_it(cjk: Library):
    res = cjk.search("猫")
    # the title that is the word itself first (shorter title), then the sentence
    assert ([Path(h.path).stem for h in res.hits], res.total, res.verdict) == (
        ["cat", "sleeping"], 2, "complete")


def test_a_cjk_word_inside_a_sentence_is_found(cjk: Library):
    assert found(cjk, "睡觉") == ["sleeping"]
    assert found(cjk, "在睡觉") == ["sleeping"]
    assert found(cjk, "カップ") == ["katakana"]
    assert found(cjk, "コーヒー") == ["katakana"]
    assert found(cjk, "사과") == ["apple"]


def test_a_cjk_phrase_ranks_the_adjacent_characters_first(cjk: Library):
    # "猫在" shares 猫 with both cat titles; only the sentence holds the pair
    res = cjk.search("猫在")
    assert [Path(h.path).stem for h in res.hits] == ["sleeping", "cat"]
    assert res.hits[0].bonus == 2  # the title holds the literal query


def test_the_analyzer_emits_cjk_bigrams_and_unigrams(cjk: Library):
    assert cjk.analyze("一只猫") == ["一", "一只", "只", "只猫", "猫"]
    assert cjk.analyze("桜の花") == ["桜", "桜の", "の", "の花", "花"]
    assert cjk.analyze("猫cat、犬。") == ["猫", "cat", "犬"]


def test_a_language_the_library_does_not_list_stays_searchable(cjk: Library):
    # an en library: the ja title is in the en document after the x-default one
    assert found(cjk, "桜") == ["sakura"]
    assert found(cjk, "桜の花") == ["sakura"]
    assert found(cjk, "cherry blossom") == ["sakura"]
    title = [h.title for h in cjk.search("桜").hits]
    assert title == ["Cherry blossom / 桜の花"]


def test_a_title_only_in_japanese_in_an_english_library(lib: Library, photos: Path):
    ingest(lib, photos, [("sakura", ["-XMP-dc:Title-ja=桜の花"]), ("x", ["-XMP-dc:Title=x"])])
    assert found(lib, "桜") == ["sakura"]
    assert found(lib, "花") == ["sakura"]


# -- values made only of stop words ---------------------------------------------

@pytest.fixture
def stop(lib: Library, photos: Path) -> Library:
    ingest(lib, photos, [
        ("band", ["-XMP-dc:Subject=The Who", "-XMP-dc:Subject=concert"]),
        ("chores", ["-XMP-dc:Subject=to_do"]),
        ("title", ["-XMP-dc:Title=It", "-XMP-dc:Subject=clown"]),
        ("other", ["-XMP-dc:Title=The doctor who came", "-XMP-dc:Subject=concert"]),
    ])
    return lib


def test_analyze_keeps_a_value_made_only_of_stop_words(stop: Library):
    assert stop.analyze("The Who") == ["the", "who"]
    assert stop.analyze("to_do") == ["to", "do", "todo"]
    assert stop.analyze("The Who", query=True) == ["the", "who"]
    # a value with other words drops its stop words as before
    assert stop.analyze("The doctor who came") == ["doctor", "came"]


@pytest.mark.parametrize("query,expected", [
    ("The Who", ["band"]), ("the who", ["band"]), ("to do", ["chores"]), ("to_do", ["chores"]),
    ("todo", ["chores"]), ("it", ["title"]), ("IT", ["title"])])
def test_a_keyword_or_title_made_of_stop_words_finds_its_asset(stop: Library, query, expected):
    assert found(stop, query) == expected


def test_stop_words_in_other_values_stay_out(stop: Library):
    # "other" says "The doctor who came": its stop words are not indexed, so
    # the query made only of stop words finds only the keyword "The Who"
    assert found(stop, "who") == ["band"]
    assert sorted(found(stop, "concert")) == ["band", "other"]


# -- joined forms ---------------------------------------------------------------

@pytest.fixture
def joined(lib: Library, photos: Path) -> Library:
    ingest(lib, photos, [
        ("router", ["-XMP-dc:Subject=Wi-Fi"]),
        ("letter", ["-XMP-dc:Subject=e-mail"]),
        ("clothes", ["-XMP-dc:Subject=T-Shirt"]),
        ("kettle", ["-XMP-dc:Title=Red kettle 4471-RD"]),
    ])
    return lib


@pytest.mark.parametrize("query,expected", [
    ("wifi", ["router"]), ("Wi-Fi", ["router"]), ("wi fi", ["router"]), ("WiFi", ["router"]),
    ("email", ["letter"]), ("e-mail", ["letter"]), ("emails", ["letter"]),
    ("tshirt", ["clothes"]), ("t-shirt", ["clothes"]), ("T-Shirts", ["clothes"]),
    ("shirt", ["clothes"]),
    ("4471rd", ["kettle"]), ("4471-rd", ["kettle"])])
def test_joined_and_split_forms_both_match(joined: Library, query, expected):
    assert found(joined, query) == expected


def test_analyze_emits_joined_forms_without_digits(joined: Library):
    assert joined.analyze("Wi-Fi e-mail") == ["wi", "fi", "e", "mail", "wifi", "email"]


# -- a search without a language looks in every language's document ------------

@pytest.fixture
def bilingual(lib: Library, photos: Path) -> Library:
    lib.init(languages=["en", "ja"])
    ingest(lib, photos, [
        ("sakura", ["-XMP-dc:Title=Cherry blossom", "-XMP-dc:Title-ja=桜の花"]),
        ("castle", ["-XMP-dc:Title=Himeji castle", "-XMP-dc:Title-ja=姫路城",
                    "-XMP-dc:Description=Cherry trees by the castle"]),
        ("horses", ["-XMP-dc:Title=Horses running", "-XMP-dc:Title-ja=走る馬"]),
    ])
    return lib


def test_search_without_lang_looks_in_every_language(bilingual: Library):
    # the ja titles are only in the ja documents (ja is a library language)
    res = bilingual.search("桜")
    assert ([Path(h.path).stem for h in res.hits], res.total, res.verdict, res.langs) == (
        ["sakura"], 1, "complete", ["en", "ja"])
    assert found(bilingual, "姫路城") == ["castle"]
    # --lang still restricts
    assert found(bilingual, "桜", lang="en") == []
    assert found(bilingual, "桜", lang="ja") == ["sakura"]
    assert bilingual.search("桜", lang="ja").langs == ["ja"]


def test_search_without_lang_counts_assets_not_documents(bilingual: Library):
    # every asset has an en and a ja document (x-default values in both):
    # "cherry" is in both documents of two assets, counted once each, ranked
    res = bilingual.search("cherry")
    assert ([Path(h.path).stem for h in res.hits], res.total, res.verdict) == (
        ["sakura", "castle"], 2, "complete")
    # stemmed in en ("running" -> run), as typed in ja's analyzer: both find it
    assert found(bilingual, "running") == ["horses"]
    assert found(bilingual, "run") == ["horses"]
    assert found(bilingual, "run", lang="ja") == []


def test_search_without_lang_inside_a_scope(lib: Library, photos: Path):
    lib.init(languages=["en", "ja"])
    for i, (rel, tags) in enumerate([
            ("japan/sakura.jpg", ["-XMP-dc:Title=Cherry blossom", "-XMP-dc:Title-ja=桜の花"]),
            ("japan/tree.jpg", ["-XMP-dc:Title=Old tree", "-XMP-dc:Title-ja=桜の木"]),
            ("home/garden.jpg", ["-XMP-dc:Title=Garden", "-XMP-dc:Title-ja=桜の庭"])]):
        write_sidecar(make_image(photos / rel, color=(i * 50, 1, 1)), *tags)
    lib.ingest(photos)
    res = lib.search("桜", scope="japan")
    assert (sorted(Path(h.path).stem for h in res.hits), res.total, res.verdict) == (
        ["sakura", "tree"], 2, "complete")
    assert lib.search("桜", scope="japan", lang="en").total == 0


# -- an existing library gains the new terms when migration 0013 runs -----------

# The document statement as it was before migration 0019 (git 37edd96): the
# test below writes at schema version 12, which has no machine columns.
UPSERT_DOCUMENT_0017 = """
WITH analysed AS (
    SELECT loupe_document_tsv(%(cfg)s::regconfig, %(title)s, %(filename)s, %(keywords)s,
                              %(description)s, %(collections)s, %(location)s, %(people)s,
                              %(creator)s, %(copyright)s, %(machine_tags)s, %(ocr)s) AS tsv,
           loupe_vocab_tsv(%(asset_id)s, %(lang)s, %(cfg)s::regconfig) AS vocab_tsv,
           loupe_vocab_text(%(asset_id)s, %(lang)s) AS vocabulary,
           (SELECT vocab_decay FROM lexical_setting WHERE tenant_id = %(tenant_id)s) AS decay
)
INSERT INTO search_document AS d (
    asset_id, tenant_id, lang, ts_config, title, filename, description, creator, copyright,
    location, keywords, collections, machine_tags, ocr, people, vocabulary, tsv, vocab_tsv,
    doc_len, group_len, phrase_title, phrase_text)
SELECT %(asset_id)s, %(tenant_id)s, %(lang)s, %(cfg)s::regconfig, %(title)s, %(filename)s,
       %(description)s, %(creator)s, %(copyright)s, %(location)s, %(keywords)s,
       %(collections)s, %(machine_tags)s, %(ocr)s, %(people)s, a.vocabulary,
       a.tsv, a.vocab_tsv, loupe_tsv_len(a.tsv), loupe_group_len(a.tsv, a.vocab_tsv, a.decay),
       loupe_phrase_norm(%(title)s),
       loupe_phrase_text(%(title)s, %(filename)s, %(keywords)s, %(description)s, %(collections)s,
                         %(location)s, %(people)s, %(creator)s, %(copyright)s,
                         %(machine_tags)s, %(ocr)s, a.vocabulary)
FROM analysed a
ON CONFLICT (asset_id, lang) DO UPDATE SET
    ts_config = EXCLUDED.ts_config, title = EXCLUDED.title, filename = EXCLUDED.filename,
    description = EXCLUDED.description, creator = EXCLUDED.creator,
    copyright = EXCLUDED.copyright, location = EXCLUDED.location,
    keywords = EXCLUDED.keywords, collections = EXCLUDED.collections,
    machine_tags = EXCLUDED.machine_tags, ocr = EXCLUDED.ocr, people = EXCLUDED.people,
    vocabulary = EXCLUDED.vocabulary, tsv = EXCLUDED.tsv, vocab_tsv = EXCLUDED.vocab_tsv,
    doc_len = EXCLUDED.doc_len, group_len = EXCLUDED.group_len,
    phrase_title = EXCLUDED.phrase_title, phrase_text = EXCLUDED.phrase_text, updated_at = now()
WHERE d.tsv IS DISTINCT FROM EXCLUDED.tsv
   OR d.vocab_tsv IS DISTINCT FROM EXCLUDED.vocab_tsv
   OR d.group_len IS DISTINCT FROM EXCLUDED.group_len
   OR (d.title, d.filename, d.description, d.creator, d.copyright, d.location, d.keywords,
       d.collections, d.vocabulary) IS DISTINCT FROM
      (EXCLUDED.title, EXCLUDED.filename, EXCLUDED.description, EXCLUDED.creator,
       EXCLUDED.copyright, EXCLUDED.location, EXCLUDED.keywords, EXCLUDED.collections,
       EXCLUDED.vocabulary)
"""



def test_migration_0013_reanalyses_existing_documents(pg_admin_url: str, tmp_path: Path):
    import uuid

    import psycopg
    from psycopg.conninfo import make_conninfo

    from loupe.db import migrate

    name = "loupe_mig_" + uuid.uuid4().hex[:8]
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    url = make_conninfo(pg_admin_url, dbname=name)
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            migrate(conn, target=12)  # every migration before this one
            tenant = conn.execute("SELECT id FROM tenant WHERE name = 'default'").fetchone()[0]
            conn.execute("INSERT INTO asset (id, tenant_id, content_sha256, byte_size, media_type,"
                         " width, height) VALUES (1, %s, '\\x01', 1, 'image/jpeg', 1, 1)",
                         (tenant,))
            fields = dict.fromkeys(["filename", "description", "collections", "location",
                                    "people", "creator", "copyright", "machine_tags", "ocr"], "")
            conn.execute(UPSERT_DOCUMENT_0017, {**fields, "asset_id": 1, "tenant_id": tenant,
                                           "lang": "en", "cfg": "loupe_english",
                                           "title": "一只猫在睡觉", "keywords": "Wi-Fi; The Who"})
            # the old analyzer: no term for the stop words, no wifi, one CJK token
            assert conn.execute("SELECT tsv FROM search_document").fetchone()[0] == \
                "'fi':3B 'wi':2B '一只猫在睡觉':1A"
        with Library.open(tmp_path / "home", database_url=url) as lib:
            for query in ("猫", "wifi", "the who"):
                assert [h.asset_id for h in lib.search(query).hits] == [1], query
            terms = {r[0] for r in lib.conn.execute("SELECT term FROM lexicon_term")}
            assert {"猫", "只猫", "wifi", "the", "who"} <= terms
    finally:
        with psycopg.connect(pg_admin_url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
