"""A word matches as itself before it matches as a stem (V8): a query
word that reaches a document only through a stem it shares with a different
word ("madrid" and the Spanish "madre", both "madr"; "hero" and the English
"here", both "her" for the Spanish analyzer) is not a match. Real
PostgreSQL, the analyzers' own Snowball stemmers."""

from __future__ import annotations

import pytest
from corpus import add_document

from loupe import Library
from loupe.lexical import forms as fm
from loupe.lexical import lexical_search

EVERY = ["en", "es"]


@pytest.mark.parametrize("word,form", [
    ("horses", "horse"), ("horse", "horses"), ("flores", "flor"), ("running", "run"),
    ("cities", "city"), ("studied", "study"), ("hiking", "hike"),
    ("organization", "organize"), ("madres", "madre"), ("caballo", "caballos"),
])
def test_forms_of_one_word_are_related(word, form):
    assert fm.related(word, form) is True


@pytest.mark.parametrize("word,form", [
    ("madrid", "madre"), ("madre", "madrid"), ("hero", "here"), ("here", "hero"),
    ("nino", "nina"), ("", "a"),
])
def test_words_that_only_share_a_stem_are_not_related(word, form):
    assert fm.related(word, form) is False


def test_classify_names_how_the_query_words_reach_the_library():
    assert fm.classify({"madrid"}, {"madre", "madres"}) == fm.COLLISION
    assert fm.classify({"madrid"}, {"madre", "madrid"}) == fm.EXACT
    assert fm.classify({"horses"}, {"horse"}) == fm.FORM
    assert fm.classify({"hero"}, set()) == fm.UNSEEN


@pytest.fixture
def spanish(lib: Library) -> Library:
    """An English and Spanish library: a mother (Spanish "madre" in its
    Spanish document), a picture whose untagged English text says "here"
    (read by the Spanish analyzer too), horses, and a hero."""
    lib.init(languages=EVERY)
    add_document(lib, 1, {"title": "mother"}, lang="en")
    add_document(lib, 1, {"title": "madre"}, lang="es")
    for lang in EVERY:
        add_document(lib, 2, {"title": "Motorcycle stereo", "description": "look here"},
                     lang=lang)
        add_document(lib, 3, {"title": "Two horses in a field"}, lang=lang)
    return lib


def test_madrid_finds_nothing_through_the_stem_of_madre(spanish: Library):
    res = spanish.search("madrid", limit=10)
    assert res.hits == [] and res.total == 0
    madr = [m for m in res.stems if m["term"] == "madr"]
    assert madr == [{"lang": "es", "term": "madr", "words": ["madrid"], "kind": "collision",
                     "forms": ["madre"], "excluded": 0}]
    assert any("“madrid” is not in the library as itself: its es stem “madr” is written only "
               "as madre" in n for n in res.notices)


def test_without_the_form_check_madrid_found_the_mother(spanish: Library):
    # the stem alone reaches the mother: what the check takes away
    from loupe.lexical.search import query_terms_in
    qt = query_terms_in(spanish.conn, "madrid", EVERY)
    assert ("es", "madr") in qt.pairs
    assert [h.asset_id for h in lexical_search(spanish.conn, spanish.tenant_id, "madre",
                                               EVERY, limit=10).hits] == [1]


def test_hero_does_not_find_here(spanish: Library):
    res = spanish.search("hero", limit=10)
    assert res.hits == []
    assert [m["kind"] for m in res.stems] == ["collision"]
    assert res.stems[0]["forms"] == ["here"]
    add_document(spanish, 4, {"title": "The hero of the day"}, lang="es")
    add_document(spanish, 4, {"title": "The hero of the day"}, lang="en")
    res = spanish.search("hero", limit=10)
    # a document that holds the word itself is found, the "here" one is not
    assert [h.asset_id for h in res.hits] == [4]


def test_a_form_of_the_word_still_matches(spanish: Library):
    res = spanish.search("horse", limit=10)
    assert [h.asset_id for h in res.hits] == [3]
    assert all(m["kind"] in (fm.EXACT, fm.FORM) for m in res.stems)


def test_the_lexical_lane_leaves_the_collision_out_too(spanish: Library):
    res = lexical_search(spanish.conn, spanish.tenant_id, "madrid", EVERY, limit=10)
    assert res.hits == [] and res.total == 0


def test_forms_are_read_only_from_documents_the_viewer_may_read(spanish: Library):
    spanish.conn.execute("UPDATE asset SET readers = ARRAY[]::bigint[] WHERE id = 1")
    from loupe.access.viewer import Viewer
    member = Viewer(see_all=False, principals=(999,))
    got = fm.stem_matches(spanish.conn, spanish.tenant_id, "madrid", [("es", "madr")], member)
    assert got == [fm.StemMatch("es", "madr", ("madrid",), fm.UNSEEN, (), ())]
    spanish.conn.execute("UPDATE asset SET readers = ARRAY[999]::bigint[] WHERE id = 1")
    got = fm.stem_matches(spanish.conn, spanish.tenant_id, "madrid", [("es", "madr")], member)
    assert got == [fm.StemMatch("es", "madr", ("madrid",), fm.COLLISION, ("madre",), ())]


def test_the_typo_fallback_does_not_bring_the_other_word_back(spanish: Library):
    # the French analyzer reads "madre" as "madr" too; "madrid" is one edit
    # pair from it, and the fallback had "corrected" madrid to madr
    add_document(spanish, 5, {"title": "madre"}, lang="en")
    res = spanish.search("madrid", limit=10)
    assert res.hits == [] and res.corrections == {}
