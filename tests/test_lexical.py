"""The lexical lane as DAM users meet it: identifiers, languages, accents,
field weights without length bias, typos, phrase bonus, caps and verdicts
(S3, S4, L1–L3, F3, C4)."""

from __future__ import annotations

import bm25s
import pytest
from corpus import add_document

from loupe import Library
from loupe.lexical import lexical_search


def ids(lib: Library, query: str, lang: str = "en", **kw) -> list[int]:
    return [h.asset_id for h in lexical_search(lib.conn, lib.tenant_id, query, lang,
                                                limit=1000, **kw).hits]


@pytest.fixture
def products(lib: Library) -> Library:
    add_document(lib, 1, {"title": "Red kettle 4471-RD", "keywords": "kettle; red"})
    add_document(lib, 2, {"title": "Hero shot SS26-HERO-03", "keywords": "campaign"})
    add_document(lib, 3, {"title": "Samsung Galaxy A52/A52S case", "keywords": "phone"})
    add_document(lib, 4, {"title": "Café au lait", "description": "Photographs of breakfast"})
    add_document(lib, 5, {"title": "Blue kettle 4471-BL", "keywords": "kettle; blue"})
    add_document(lib, 6, {"title": "Hero banner SS25-HERO-01", "keywords": "campaign"})
    return lib


@pytest.mark.parametrize("query", ["4471-RD", "4471-rd", "4471rd", "4471 RD", "4471_rd"])
def test_identifier_4471_rd(products: Library, query: str):
    assert ids(products, query)[0] == 1


def test_identifier_without_its_suffix_finds_the_family(products: Library):
    assert ids(products, "4471") == [1, 5]


@pytest.mark.parametrize("query", ["ss26-hero-03", "SS26-HERO-03", "ss26hero03"])
def test_identifier_ss26_hero_03(products: Library, query: str):
    assert ids(products, query)[0] == 2


def test_identifier_parts_hero_03(products: Library):
    # both hero shots hold "hero"; only one holds "03" as well
    assert ids(products, "hero 03") == [2, 6]


@pytest.mark.parametrize("query", ["a52", "A52S", "a52s", "galaxy a52"])
def test_identifier_alternatives_with_slash(products: Library, query: str):
    assert ids(products, query) == [3]


def test_stemming_and_accent_folding(products: Library):
    assert ids(products, "photograph") == [4]
    assert ids(products, "cafe") == [4]
    assert ids(products, "CAFÉ") == [4]


def test_analyze_command_shows_document_and_query_terms(products: Library):
    assert products.analyze("SS26-HERO-03 Galaxy A52/A52S") == [
        "ss26", "hero", "03", "galaxi", "a52", "a52s", "ss26hero03"]
    assert products.analyze("SS26-HERO-03", query=True) == ["03", "hero", "ss26", "ss26hero03"]


MULTILINGUAL = {
    "en": [("Horses grazing in the meadows", "horse"), ("Old churches", "church")],
    "fr": [("Des chevaux dans le pré", "cheval"), ("Les châteaux de la Loire", "chateau")],
    "de": [("Alte Häuser am Fluss", "Haus"), ("Kinder spielen im Garten", "Kind")],
    "es": [("Caballos en el campo", "caballo"), ("Las montañas nevadas", "montaña")],
}


@pytest.mark.parametrize("lang", sorted(MULTILINGUAL))
def test_multilingual_stemming(lib: Library, lang: str):
    lib.init(languages=["en", "fr", "de", "es"])
    for i, (title, _) in enumerate(MULTILINGUAL[lang], start=1):
        add_document(lib, i, {"title": title}, lang=lang)
    for i, (_, query) in enumerate(MULTILINGUAL[lang], start=1):
        assert ids(lib, query, lang) == [i], (lang, query)


def test_typo_fallback_says_so_and_is_never_complete(lib: Library):
    add_document(lib, 1, {"title": "Cheetah running"})
    add_document(lib, 2, {"title": "Lion resting"})
    res = lexical_search(lib.conn, lib.tenant_id, "chetah", "en")
    assert res.corrections == {"chetah": "cheetah"}
    assert (res.terms, [h.asset_id for h in res.hits], res.verdict) == (["cheetah"], [1], "unknown")
    # a word far from every indexed term: no correction, an honest empty answer
    res = lexical_search(lib.conn, lib.tenant_id, "madrid", "en")
    assert (res.corrections, res.total, res.verdict) == ({}, 0, "complete")
    # a known word is never "corrected", nor is a query that matches as typed
    res = lexical_search(lib.conn, lib.tenant_id, "lion", "en")
    assert (res.corrections, res.verdict) == ({}, "complete")
    res = lexical_search(lib.conn, lib.tenant_id, "chetah resting", "en")
    assert (res.corrections, [h.asset_id for h in res.hits]) == ({}, [2])
    # the corrected total is not claimed exact
    res = lexical_search(lib.conn, lib.tenant_id, "chetah", "en")
    assert (res.total, res.total_exact) == (1, False)


def test_typo_correction_is_conservative(lib: Library):
    add_document(lib, 1, {"title": "Madras gram", "description": "horse gram from Madras"})
    # "madrid" is 2 edits from "madra" (the stem of Madras) but shares few
    # trigrams with it: no results is the right answer (SPEC: the user story)
    res = lexical_search(lib.conn, lib.tenant_id, "madrid", "en")
    assert (res.corrections, res.total) == ({}, 0)


def test_absurd_queries_get_a_clear_error(lib: Library):
    from loupe.lexical.search import QueryTooLong

    add_document(lib, 1, {"title": "x"})
    with pytest.raises(QueryTooLong, match=r"query too long: 1,001 characters \(the limit is 1,000\)"):
        lexical_search(lib.conn, lib.tenant_id, "a" * 1001, "en")
    many = " ".join(f"w{i}" for i in range(65))
    with pytest.raises(QueryTooLong, match=r"query has 65 distinct terms \(the limit is 64\)"):
        lexical_search(lib.conn, lib.tenant_id, many, "en")
    for odd in ["'); drop table asset; --", "\\", "%_%", ":* & | !", '"quoted"']:
        lexical_search(lib.conn, lib.tenant_id, odd, "en")  # no error, no injection
    assert lib.stats()["assets"] == 1


def test_phrase_bonus_orders_before_score(lib: Library):
    add_document(lib, 1, {"description": "kettle kettle red red red"})  # high BM25, no phrase
    add_document(lib, 2, {"description": "a red kettle on a countertop"})      # document phrase
    add_document(lib, 3, {"title": "The red kettle", "description": "studio"})  # title phrase
    add_document(lib, 4, {"title": "Red-Kettle", "description": "studio"})      # title phrase
    res = lexical_search(lib.conn, lib.tenant_id, "red kettle", "en")
    assert [(h.asset_id, h.bonus) for h in res.hits] == [(3, 2), (4, 2), (2, 1), (1, 0)]
    assert res.hits[2].score < res.hits[3].score  # the bonus, not the score, put 2 above 1


def test_the_seeds_length_bias_and_loupes_field_evidence(lib: Library):
    """Seed 002: weighting fields by repeating text lengthens documents, so BM25's
    length normalisation let sparse video documents (155–493 characters)
    outrank rich photo documents (746–1,280) for a place-name query."""
    filler = ("harbour boats morning light fishermen nets market stalls tiles azulejo facade "
              "balcony laundry tram rails cobblestones hill viewpoint river estuary bridge "
              "ferry crossing sunset golden hour crowd tourists cafe terrace pastries ")
    rich = {i: {"title": "Porto riverside", "keywords": "porto; portugal; city",
                "description": "Photograph taken in Porto. " + filler * 4}
            for i in range(1, 6)}
    sparse = {i: {"title": "Porto clip", "keywords": "video; footage",
                  "description": "Short handheld clip, twelve seconds, ambient sound only, "
                                 "exported for social media in vertical format, "
                                 "no narration, stabilised in post."}
              for i in range(11, 22)}
    for doc_id, fields in {**rich, **sparse}.items():
        add_document(lib, doc_id, fields)
        size = len(" ".join(fields.values()))
        assert 746 <= size <= 1280 if doc_id < 10 else 155 <= size <= 493

    # the naive scheme: title x3, keywords x2, description x1 in one text, plain BM25
    def naive_tokens(fields):
        text = " ".join([fields.get("title", "")] * 3 + [fields.get("keywords", "")] * 2
                        + [fields.get("description", "")])
        return lib.analyze(text)

    order = sorted({**rich, **sparse})
    reference = bm25s.BM25(method="lucene", k1=1.2, b=0.75, dtype="float64")
    reference.index([naive_tokens({**rich, **sparse}[i]) for i in order], show_progress=False)
    scores = reference.get_scores(["porto"])
    naive_top = [order[i] for i in sorted(range(len(order)), key=lambda i: -scores[i])][:11]
    assert set(naive_top) == set(sparse)  # the failure: all eleven sparse ones on top

    loupe_top = ids(lib, "porto")[:5]
    assert set(loupe_top) == set(rich)  # Loupe: the documents with more evidence lead


@pytest.fixture
def crowded(lib: Library) -> Library:
    """1,953 documents holding the same two terms (the seed's cap crowding)."""
    with lib.conn.transaction():
        lib.conn.execute("SELECT set_config('loupe.bulk', 'on', true)")
        lib.conn.execute("""
            INSERT INTO asset (id, tenant_id, content_sha256, byte_size, media_type, width, height)
            SELECT g, %(t)s, int8send(g), 1, 'image/jpeg', 1, 1 FROM generate_series(1, 1953) g
        """, {"t": lib.tenant_id})
        lib.conn.execute("""
            INSERT INTO search_document (asset_id, tenant_id, lang, ts_config, title, description,
                                         tsv, doc_len)
            SELECT g, %(t)s, 'en', 'loupe_english', 'sunset ' || g,
                   'beach sunset ' || repeat('sand ', g %% 7),
                   loupe_document_tsv('loupe_english', 'sunset ' || g, '', '',
                                      'beach sunset ' || repeat('sand ', g %% 7),
                                      '', '', '', '', '', '', ''), 0
            FROM generate_series(1, 1953) g
        """, {"t": lib.tenant_id})
        lib.conn.execute("UPDATE search_document SET doc_len = loupe_tsv_len(tsv)")
        lib.conn.execute("SELECT loupe_reindex_lexical(%s, 'en')", (lib.tenant_id,))
    return lib


def test_cap_crowding_is_truncated_with_exact_total(crowded: Library):
    res = lexical_search(crowded.conn, crowded.tenant_id, "sunset beach", "en")
    assert (res.verdict, res.total, res.total_exact, res.kept) == ("truncated", 1953, True, 1000)
    assert (res.candidates, res.max_df, res.postings_read) == (1953, 1953, 2 * 1953)


def test_within_caps_is_complete(crowded: Library):
    res = lexical_search(crowded.conn, crowded.tenant_id, "sunset beach", "en",
                         keep_cap=5000)
    assert (res.verdict, res.total, res.total_exact, res.kept) == ("complete", 1953, True, 1953)


def test_raw_cap_gives_a_lower_bound_and_exact_kept_scores(crowded: Library):
    full = lexical_search(crowded.conn, crowded.tenant_id, "sand sunset", "en", limit=1000,
                          keep_cap=5000)
    capped = lexical_search(crowded.conn, crowded.tenant_id, "sand sunset", "en", limit=1000,
                            raw_cap=100, keep_cap=50)
    assert (capped.verdict, capped.total_exact) == ("truncated", False)
    assert capped.total == full.max_df == 1953  # "at least 1,953": every doc holds 'sunset'
    assert capped.postings_read == 200
    exact = {h.asset_id: h.score for h in full.hits}
    for h in capped.hits:
        assert h.score == pytest.approx(exact[h.asset_id], abs=1e-9)
    # the kept 50 are the true top 50 here: the best postings of each term were read first
    assert [h.asset_id for h in capped.hits] == [h.asset_id for h in full.hits[:50]]


def test_title_band_keeps_every_title_match_reachable_past_the_caps(lib: Library):
    """C2 (option): documents whose title holds the query follow the ranked
    rows even when the caps left them out; page 1 does not change."""
    for i in range(1, 21):
        add_document(lib, i, {"title": "sunset sunset", "description": f"shot {i}"})
    add_document(lib, 100, {"title": "Old harbour at sunset with boats gulls fog and nets"})
    add_document(lib, 200, {"description": "a sunset somewhere"})     # not in a title
    lib.set_lexical_settings(raw_cap=5, keep_cap=5)
    plain = lib.search("sunset", limit=50)
    assert (plain.total, plain.total_exact, plain.verdict, len(plain.hits)) == (22, False,
                                                                                 "truncated", 5)
    banded = lib.search("sunset", limit=50, title_band=True)
    assert [h.asset_id for h in banded.hits[:5]] == [h.asset_id for h in plain.hits]
    band = banded.hits[5:]
    assert [h.asset_id for h in band] == sorted(
        set(range(1, 21)) - {h.asset_id for h in plain.hits}) + [100]
    assert all(h.explain.get("title_band") and h.score is None for h in band)
    assert (banded.total, banded.total_exact, banded.verdict) == (22, False, "truncated")
    assert banded.reachable == 21
    assert "16 assets whose title holds the query follow the ranked results" in \
        " ".join(banded.notices)
    page2 = lib.search("sunset", limit=5, offset=5, title_band=True)
    assert [h.asset_id for h in page2.hits] == [h.asset_id for h in band[:5]]


def test_rewriting_one_document_keeps_the_terms_it_shares_with_another(lib: Library):
    """A term held by exactly two documents survives a rewrite of either (the
    index's remove step once deleted it: df lowered to 1, then deleted)."""
    add_document(lib, 1, {"title": "Tulip vase", "keywords": "tulip; flower"})
    add_document(lib, 2, {"title": "Tulips in a field", "keywords": "tulip; flower"})
    with lib.conn.transaction():
        add_document(lib, 1, {"title": "Tulip vase", "keywords": "tulip; flower; foo"})
        add_document(lib, 2, {"title": "Tulips in a field", "keywords": "tulip; flower; foo"})
    assert sorted(ids(lib, "tulip")) == [1, 2]
    assert sorted(ids(lib, "flower")) == [1, 2]
    assert lib.conn.execute("SELECT df FROM lexicon_term WHERE term = 'flower'").fetchone() == (2,)
    # statistics equal a rebuild from the documents
    before = lib.conn.execute("SELECT term, df FROM lexicon_term ORDER BY term").fetchall()
    lib.conn.execute("SELECT loupe_reindex_lexical(%s, 'en')", (lib.tenant_id,))
    assert lib.conn.execute("SELECT term, df FROM lexicon_term ORDER BY term").fetchall() == before


def test_analyze_query_reads_the_query_in_the_languages_a_search_would(db_url, home):
    """`loupe analyze --query` showed the first language's terms
    while `loupe search` read the query in the languages its stop words name.
    Without --lang it now mirrors the search: a notice and one line per
    language; a query of content words only is read in every language."""
    import json

    from click.testing import CliRunner

    from loupe.cli import main

    with Library.open(home, database_url=db_url, create=True) as lib:
        lib.init(languages=["en", "fr"])
    base = ["--home", str(home), "--database-url", db_url, "analyze", "--query"]
    out = CliRunner().invoke(main, base + ["une photo de chats"])
    assert out.exit_code == 0, out.output
    assert out.output.splitlines() == [
        "note: the query reads as fr (2 of its words are stop words in fr): only the "
        "documents in fr were searched; give a language (en/fr) to choose another",
        "fr: chat photo"]
    out = CliRunner().invoke(main, base + ["4471-RD", "--json"])
    assert json.loads(out.output) == {
        "languages": ["en", "fr"], "notice": None,
        "terms": {"en": ["4471", "4471rd", "rd"], "fr": ["4471", "4471rd", "rd"]}}
    # with --lang: that language's terms, as before
    out = CliRunner().invoke(main, base + ["chats", "--lang", "fr"])
    assert out.output.strip() == "chat"
