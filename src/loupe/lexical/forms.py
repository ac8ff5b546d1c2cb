"""A word matches as itself before it matches as a stem (V8).

A Snowball stemmer conflates words that are not forms of one another:
Spanish reads ``madrid`` and ``madre`` both as ``madr``, and the English
word ``here`` and ``hero`` both as ``her``. A query word whose stem reaches
the library only through such different words is not a match: the search
leaves that (language, stem) term out, says so, and a one-word query whose
only term it was finds nothing ("madrid" -> "No results").

How a stem match is judged, for one query term (language, stem) and the
query words that the language's analyzer reads as that stem:

* the forms the library writes with that stem are read from the documents
  of the term's first :data:`FORM_SAMPLE` postings that the viewer may read
  (their normalised text, split into words, each word analysed);
* ``exact``: a form is one of the query words itself;
* ``form``: a form is a form of a query word (:func:`related`);
* ``collision``: forms were read and none is either: the term is left out;
* ``unseen``: no form was read (the stem comes only from a joined
  identifier, or from documents the viewer reads only through file
  documents): kept, nothing is claimed.

Words the stemmer did not change (the stem is the query word) are not
judged: every form of such a stem extends the query word.
"""

from __future__ import annotations

from dataclasses import dataclass

import psycopg

from ..access.viewer import OWNER, Viewer
from ..document.languages import ts_config
from . import memo

#: Postings of a term whose documents are read for its forms (impact order,
#: best first): the forms of a stem held by more documents are judged on
#: these only.
FORM_SAMPLE = 200

#: Endings an inflection adds after a final ``e`` is dropped
#: (hike/hiking, dance/dancer, organize/organization); kept short on
#: purpose: ``madre``/``madrid`` differ by ``id``, which is not one.
E_DROP_ENDINGS = ("ing", "ings", "ed", "er", "ers", "est", "en", "es", "ation", "ations",
                  "ement", "ements", "ent", "ant", "ante", "antes")

EXACT = "exact"
FORM = "form"
COLLISION = "collision"
UNSEEN = "unseen"


def related(word: str, form: str) -> bool:
    """Whether ``form`` (a word the library writes) is a form of ``word``
    (a query word), both lower case with accents folded.

    True when they are equal, when one extends the other (horse/horses,
    flor/flores, run/running), when a final ``y`` turns into ``i`` before
    an ending (city/cities, study/studied), or when a final ``e`` is dropped
    before one of :data:`E_DROP_ENDINGS` (hike/hiking). False otherwise:
    two words with one stem that differ in their last letters
    (madrid/madre, hero/here) are different words.
    """
    if word == form:
        return True
    short, long_ = (word, form) if len(word) <= len(form) else (form, word)
    if not short:
        return False
    if long_.startswith(short):
        return True
    if short.endswith("y") and len(short) > 2 and long_.startswith(short[:-1] + "i"):
        return True
    if short.endswith("e") and len(short) > 2:
        base = short[:-1]
        return long_.startswith(base) and long_[len(base):] in E_DROP_ENDINGS
    return False


def classify(words: set[str], forms: set[str]) -> str:
    """How the query ``words`` of one stem reach the library that writes
    that stem as ``forms``: :data:`EXACT`, :data:`FORM`, :data:`COLLISION`
    or :data:`UNSEEN` (no form read)."""
    if not forms:
        return UNSEEN
    if words & forms:
        return EXACT
    if any(related(w, f) for w in words for f in forms):
        return FORM
    return COLLISION


@dataclass(frozen=True)
class StemMatch:
    """One query term (``lang``, ``term``: the stem) that the analyzer made
    from ``words`` of the query, how they reach the library (``kind``, see
    :func:`classify`) and the ``forms`` read (sorted, at most 10); as plain
    data, ``excluded`` is the number of assets read that are no match."""

    lang: str
    term: str
    words: tuple[str, ...]
    kind: str
    forms: tuple[str, ...]
    #: (term id, asset id): the assets read whose document writes the stem
    #: only in other words (a term with some related forms keeps its
    #: other assets; a collision's are all of them, and it is left out).
    excluded: tuple[tuple[int, int], ...] = ()

    def as_dict(self) -> dict:
        """Plain data for a result or the API."""
        return {"lang": self.lang, "term": self.term, "words": list(self.words),
                "kind": self.kind, "forms": list(self.forms), "excluded": len(self.excluded)}


# The query's words, each lower case with accents folded, with the terms the
# language's analyzer reads it as (one row per word and term).
QUERY_WORD_TERMS = """
SELECT DISTINCT w.word, u.lexeme
FROM regexp_split_to_table(lower(unaccent(%(query)s)), '[^[:alnum:]]+') AS w(word)
CROSS JOIN LATERAL unnest(tsvector_to_array(loupe_analyze(%(cfg)s::regconfig, w.word))) AS u(lexeme)
WHERE w.word <> ''
"""

# The words that the documents of a term's first %(sample)s postings the
# viewer may read (whole documents: loupe_term_postings_for) write with that
# stem: their normalised text (phrase_title, phrase_text, the machine words)
# split into words, each analysed by the term's language. A word is tried
# only when it starts like the stem (its first letters but the last, so
# city/citi is tried).
STEM_FORMS = """
SELECT DISTINCT t.id, p.asset_id, w.word
FROM lexicon_term t
CROSS JOIN LATERAL loupe_term_postings_for(t.id, %(sample)s, %(sample)s * 10, %(see_all)s,
                                           %(principals)s::bigint[]) AS p
JOIN search_document d ON d.asset_id = p.asset_id AND d.lang = t.lang
                      AND d.tenant_id = t.tenant_id
CROSS JOIN LATERAL regexp_split_to_table(
    d.phrase_title || ' ' || d.phrase_text || ' ' || lower(unaccent(d.machine)),
    '[^[:alnum:]]+') AS w(word)
WHERE t.tenant_id = %(tenant_id)s AND t.lang = %(lang)s AND t.term = %(term)s
  AND left(w.word, greatest(length(t.term) - 1, 1)) = left(t.term, greatest(length(t.term) - 1, 1))
  AND t.term = ANY (tsvector_to_array(loupe_analyze(%(cfg)s::regconfig, w.word)))
"""


def query_words(conn: psycopg.Connection, query: str, lang: str) -> dict[str, set[str]]:
    """term -> the query's words (lower case, accents folded) that the
    analyzer of ``lang`` reads as that term."""
    cfg = ts_config(lang)
    # a function of the text and the analyzer alone: remembered per
    # connection like the rest of a query's analysis (loupe.lexical.memo)
    rows = memo.remembered(conn, ("query words", cfg, query), lambda: tuple(
        (word, term) for word, term in conn.execute(QUERY_WORD_TERMS,
                                                    {"query": query, "cfg": cfg})))
    out: dict[str, set[str]] = {}
    for word, term in rows:
        out.setdefault(term, set()).add(word)
    return out


def stem_matches(conn: psycopg.Connection, tenant_id: int, query: str,
                 pairs: list[tuple[str, str]], viewer: Viewer = OWNER) -> list[StemMatch]:
    """How each query term of ``pairs`` ((language, term), the query
    analysed) reaches the library, for the terms the analyzer made by
    changing a query word (a term equal to its word is not judged and not
    listed). Reads at most :data:`FORM_SAMPLE` documents per judged term,
    only documents ``viewer`` may read (P1: no form of a hidden asset is
    read or told).
    """
    out: list[StemMatch] = []
    by_lang: dict[str, dict[str, set[str]]] = {}
    for lang, term in pairs:
        if lang not in by_lang:
            by_lang[lang] = query_words(conn, query, lang)
        words = by_lang[lang].get(term, set())
        if not words or term in words:
            continue
        per_asset: dict[tuple[int, int], set[str]] = {}
        for term_id, asset_id, word in conn.execute(STEM_FORMS, {
                "tenant_id": tenant_id, "lang": lang, "term": term, "cfg": ts_config(lang),
                "sample": FORM_SAMPLE, **viewer.params()}):
            per_asset.setdefault((term_id, asset_id), set()).add(word)
        forms = set().union(*per_asset.values()) if per_asset else set()
        kind = classify(words, forms)
        other = tuple(sorted(k for k, ws in per_asset.items()
                             if classify(words, ws) == COLLISION)) if kind != COLLISION else ()
        out.append(StemMatch(lang, term, tuple(sorted(words)), kind,
                             tuple(sorted(forms)[:10]), other))
    return out


def excluded(matches: list[StemMatch]) -> tuple[tuple[int, int], ...]:
    """(term id, asset id) pairs that are no match: the asset writes a
    searched stem only in other words than the query's."""
    return tuple(p for m in matches for p in m.excluded)


def collisions(matches: list[StemMatch]) -> set[tuple[str, str]]:
    """The (language, term) pairs that reach the library only through other words."""
    return {(m.lang, m.term) for m in matches if m.kind == COLLISION}
