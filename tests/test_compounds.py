"""Hyphenated compounds in queries, searched as Lucene's WordDelimiterGraphFilter
searches them (loupe.lexical.compounds): the catenated form,
or the parts together — a part alone never matches ("cut-out on white" must
not find "Party horn out" through the French document's "out"). Unicode
hyphens in a query read as "-"."""

from __future__ import annotations

import pytest
from corpus import add_document

from loupe import Library
from loupe.lexical import compounds as cp
from loupe.lexical import lexical_search

# -- the pure part -------------------------------------------------------------


def test_find_compounds_gives_parts_and_catenated_form():
    found = cp.find_compounds("cut-out on white, black-and-white e_mail v1.2 A52/A52S")
    assert [(c.text, c.parts, c.joined) for c in found] == [
        ("cut-out", ("cut", "out"), "cutout"),
        ("black-and-white", ("black", "and", "white"), "blackandwhite"),
        ("e_mail", ("e", "mail"), "email"),
        ("v1.2", ("v1", "2"), "v12"),
    ]
    assert cp.find_compounds("tiny icon") == []


def test_unicode_hyphens_read_as_hyphen_minus():
    # U+2010 hyphen, U+2011 non-breaking hyphen, U+2013 en dash; soft hyphen dropped
    assert cp.normalise_dashes("close\u2011up line\u2010art 3\u20134 cut\u00adout") == \
        "close-up line-art 3-4 cutout"
    assert [c.joined for c in cp.find_compounds("close\u2011up")] == ["closeup"]


def test_with_joined_replaces_each_compound_by_its_catenated_form():
    assert cp.with_joined("cut-out on white close\u2011up") == "cutout on white closeup"
    assert cp.with_joined("tiny icon") == "tiny icon"


def test_term_groups():
    # French analysis of "cut-out on white": cut, cutout, out, whit
    groups = cp.term_groups(["cut", "cutout", "out", "whit"], {"cutout", "on", "whit"},
                            [{"cut", "out"}])
    assert groups == {"cut": (1, 2), "out": (1, 2), "cutout": (0, 1), "whit": (0, 1)}
    # a part also typed as a word of its own is a plain term; the group left
    # with one term is not searched (one part is no evidence of the phrase)
    assert cp.term_groups(["black", "blackandwhit", "whit"], {"whit", "blackandwhit"},
                          [{"black", "whit"}], [True]) == {"blackandwhit": (0, 1), "whit": (0, 1)}
    # English "close-up": "up" is a stop word, so "close" alone is not searched
    assert cp.term_groups(["close", "closeup"], {"closeup"}, [{"close"}], [True]) == {
        "closeup": (0, 1)}
    # "mahi-mahi": one word twice, nothing lost: "mahi" is searched
    assert cp.term_groups(["mahi", "mahimahi"], {"mahimahi"}, [{"mahi"}], [False]) == {
        "mahi": (1, 1), "mahimahi": (0, 1)}
    # two compounds: each its own group
    assert cp.term_groups(["a", "ab", "b", "c", "cd", "d"], {"ab", "cd"},
                          [{"a", "b"}, {"c", "d"}]) == {
        "a": (1, 2), "b": (1, 2), "ab": (0, 1), "c": (2, 2), "d": (2, 2), "cd": (0, 1)}


# -- the lexical lane ----------------------------------------------------------

def ids(lib: Library, query: str, lang, **kw) -> list[int]:
    return [h.asset_id for h in lexical_search(lib.conn, lib.tenant_id, query, lang,
                                                limit=100, **kw).hits]


@pytest.fixture
def styles(lib: Library) -> Library:
    lib.init(languages=["en", "fr"])
    docs = {
        1: {"title": "Party horn out", "keywords": "party"},
        2: {"title": "Apple", "keywords": "fruit; cut-out; white background"},
        3: {"title": "Cut flowers", "keywords": "flowers"},
        4: {"title": "Horse", "description": "a black and white photo of a horse"},
        5: {"title": "Black cat", "keywords": "cat"},
        6: {"title": "Daisy close-up", "keywords": "flower"},
        7: {"title": "Closed door", "keywords": "door"},
        8: {"title": "Pear", "keywords": "cutout; fruit"},
        9: {"title": "Cut out the shape", "keywords": "paper"},
    }
    for lang in ("en", "fr"):
        for asset_id, fields in docs.items():
            add_document(lib, asset_id, fields, lang=lang)
    return lib


@pytest.mark.parametrize("langs,expected", [(["en", "fr"], [2, 4, 8, 9]),
                                            ("fr", [2, 4, 8, 9]), ("en", [2, 4, 8])])
def test_cut_out_on_white_never_matches_a_part_alone(styles: Library, langs, expected):
    # the catenated form (2, 8) or both parts (9, in French where "out" is
    # not a stop word), or "white" (4); never "out" alone (1) or "cut" alone (3)
    got = ids(styles, "cut-out on white", langs)
    assert got[0] == 2
    assert sorted(got) == expected


def test_black_and_white_needs_both_colours(styles: Library):
    assert ids(styles, "black-and-white", ["en", "fr"]) == [4]
    assert sorted(ids(styles, "black white", ["en", "fr"])) == [2, 4, 5]


def test_a_compound_of_one_repeated_word_finds_the_word(styles: Library):
    add_document(styles, 10, {"title": "Mahi mahi", "keywords": "fish"})
    assert ids(styles, "whole raw mahi-mahi fish", "en") == [10]


@pytest.mark.parametrize("query", ["close-up", "close\u2011up", "closeup", "close\u2010up"])
def test_close_up_in_any_hyphen(styles: Library, query):
    # never "Closed door" (7) through the part "close" alone
    assert ids(styles, query, ["en", "fr"]) == [6]


def test_a_typed_compound_still_finds_the_catenated_and_the_split_forms(styles: Library):
    assert sorted(ids(styles, "cutout", ["en", "fr"])) == [2, 8]
    assert sorted(ids(styles, "cut-out", "fr")) == [2, 8, 9]


# -- the machine words cover the words people type for style --------------------

#: (fact, words a person types for it) in each language: the machine text of
#: the fact must hold every one of them.
STYLE_WORDS = {
    "en": {"cutout": ["cut-out", "isolated"], "lineart": ["line-art", "line", "drawing", "sketch"],
           "icon": ["icon", "pictogram"], "monochrome": ["black", "white", "monochrome",
                                                         "grayscale", "greyscale"],
           "bg.transparent": ["transparent"]},
    "fr": {"cutout": ["détouré"], "lineart": ["trait", "croquis"], "icon": ["icône",
                                                                            "pictogramme"],
           "monochrome": ["noir", "blanc", "monochrome"], "bg.transparent": ["transparent"]},
    "de": {"cutout": ["freigestellt"], "lineart": ["Strichzeichnung", "Skizze"],
           "icon": ["Icon", "Piktogramm"], "monochrome": ["schwarzweiß", "Graustufen"],
           "bg.transparent": ["transparenter"]},
    "es": {"cutout": ["recortado"], "lineart": ["lineal", "boceto"],
           "icon": ["icono", "pictograma"], "monochrome": ["blanco", "negro"],
           "bg.transparent": ["transparente"]},
    "it": {"cutout": ["scontornato"], "lineart": ["tratto", "schizzo"],
           "icon": ["icona", "pittogramma"], "monochrome": ["bianco", "nero"],
           "bg.transparent": ["trasparente"]},
    "pt": {"cutout": ["recortado"], "lineart": ["linha", "esboço"],
           "icon": ["ícone", "pictograma"], "monochrome": ["preto", "branco"],
           "bg.transparent": ["transparente"]},
}


@pytest.mark.parametrize("lang", sorted(STYLE_WORDS))
def test_machine_words_hold_the_style_words_people_type(lang):
    from loupe.pixels.words import machine_text
    for fact, words in STYLE_WORDS[lang].items():
        if fact in ("lineart", "icon"):
            text = machine_text({"kind": fact}, lang)
        elif fact == "bg.transparent":
            text = machine_text({"background": "transparent"}, lang)
        else:
            text = machine_text({fact: True}, lang)
        assert set(words) <= set(text.split()), (lang, fact, text)


def test_two_compounds_each_with_its_own_group(styles: Library):
    # "close-up" (English: "up" lost, catenated form only) before "mahi-mahi"
    # (nothing lost): the second compound's parts are still searched
    add_document(styles, 10, {"title": "Mahi mahi", "keywords": "fish"})
    assert sorted(ids(styles, "close-up mahi-mahi", "en")) == [6, 10]


def test_a_compounds_parts_bound_no_total(styles: Library):
    """"mango_ripe_kesar" said "17 results (complete)" and showed
    one: the total's lower bound took the largest df of the query's terms,
    a part's ("mango") included, though a part alone matches nothing. Only
    plain terms bound it now."""
    for lang in ("en", "fr"):
        add_document(styles, 11, {"title": "Mango, ripe, kesar"}, lang=lang)
        for asset_id in (12, 13, 14):
            add_document(styles, asset_id, {"title": "Mango"}, lang=lang)
    res = lexical_search(styles.conn, styles.tenant_id, "mango_ripe_kesar", ["en", "fr"],
                         limit=100)
    assert ([h.asset_id for h in res.hits], res.total, res.verdict) == ([11], 1, "complete")
    res = styles.search("mango_ripe_kesar")
    assert ([h.asset_id for h in res.hits], res.total, res.verdict) == ([11], 1, "complete")
    # a plain term still bounds it: "mango" is in 4 documents
    assert styles.search("mango").total == 4


def test_picture_extensions_are_those_ingest_reads():
    from loupe.ingest.image import EXTENSIONS

    assert {"." + e for e in cp.PICTURE_EXTENSIONS} == EXTENSIONS


def test_a_file_name_typed_whole_finds_its_file(lib: Library, photos):
    """"giraffe.webp" found nothing as typed ("webp" → "web"
    was then "corrected"): the document indexes a file's name without its
    extension, and the query now reads it the same way."""
    from imaging import make_image

    (photos / "zoo").mkdir()
    make_image(photos / "zoo" / "giraffe_calf.png", size=(16, 16), color=(200, 160, 60),
               fmt="PNG")
    make_image(photos / "giraffe.webp", size=(16, 16), color=(190, 150, 50), fmt="WEBP")
    make_image(photos / "zoo" / "zebra.png", size=(16, 16), color=(10, 10, 10), fmt="PNG")
    lib.ingest(photos)
    res = lib.search("giraffe_calf.PNG")
    assert ([h.path.rsplit("/", 1)[-1] for h in res.hits], res.total, res.verdict,
            res.corrections) == (["giraffe_calf.png"], 1, "complete", {})
    res = lib.search("giraffe.webp")
    assert [(h.path.rsplit("/", 1)[-1], h.bonus) for h in res.hits] == [
        ("giraffe.webp", 1), ("giraffe_calf.png", 1)]   # (no titles: the bonus of 1)
    assert (res.total, res.verdict, res.corrections) == (2, "complete", {})
    # analyze --query shows what the search reads
    assert lib.analyze("giraffe.webp", query=True) == ["giraff"]
    # the character limit holds for the query as typed (a
    # word of many extensions passed it)
    from loupe.lexical.search import QueryTooLong

    with pytest.raises(QueryTooLong, match="query too long: 1,007 characters"):
        lib.search("giraffe" + ".jpeg" * 200)
