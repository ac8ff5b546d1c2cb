"""Hyphenated compounds in queries ("cut-out", "black-and-white", "close-up"),
searched the way Lucene's WordDelimiterGraphFilter searches them.

Documents index a compound as its parts and its catenated form (migration
0013: "cut-out" -> cut, out, cutout), as WordDelimiterGraphFilter does at
index time with ``generateWordParts`` and ``catenateWords``. At query time
that filter emits a token *graph*: the catenated form, or the parts in a
row, so a query parser makes ``cutout OR "cut out"`` of it (Lucene
``QueryBuilder.analyzeGraphBoolean``; Elasticsearch's ``match`` query on a
``word_delimiter_graph`` analyzer). A part alone never matches: "cut-out on
white" does not find "Party horn out".

Loupe's lexical lane scores a bag of terms (BM25F, no positions), so the
graph is approximated as: the catenated form is a term like any other, and
the parts of one compound form a *group* whose terms count for a document
only when the document holds every term of the group (the phrase without
its adjacency test). The group's terms are those the language's analyzer
emits for the compound's parts; stop words drop out of it ("black-and-white"
in English: black, white). A term that the query also holds outside any
compound ("white cut-out" for "white") is a plain term (group 0).

One departure from Lucene: when stop words leave fewer than two terms of a
compound ("cut-out" and "close-up" in English, whose "out" and "up" are
stop words), Lucene's phrase with a position hole degenerates
to the one remaining part ("close" finds "closed door"); here such a
compound is searched by its catenated form alone, since one part is no
evidence of the phrase. The other languages' documents still find the
parts together (their analyzers keep "out" and "up").

This module holds the pure part (finding compounds, assigning groups);
:func:`loupe.lexical.search.query_terms_in` runs the analyzer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: Dashes that a pasted query may hold instead of the ASCII hyphen-minus:
#: U+2010 HYPHEN, U+2011 NON-BREAKING HYPHEN, U+2012 FIGURE DASH, U+2013 EN
#: DASH, U+00AD SOFT HYPHEN is dropped (it only marks a break opportunity).
#: Read as "-" in a query, so "close‑up" (U+2011) is "close-up".
DASHES = str.maketrans({"\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-",
                        "\u00ad": ""})

#: A compound: letters/digits joined by - _ . + (the same class as
#: ``loupe_joined_forms`` in migration 0013; ``[^\W_]`` is Python's
#: Unicode letter-or-digit, as ``[[:alnum:]]`` is PostgreSQL's).
COMPOUND = re.compile(r"[^\W_]+(?:[-_.+][^\W_]+)+")
SEPARATOR = re.compile(r"[-_.+]")


@dataclass(frozen=True)
class Compound:
    """One compound of a query: ``text`` as typed, ``parts`` its pieces in
    order ("black-and-white" -> black, and, white), ``joined`` the catenated
    form ("blackandwhite")."""

    text: str
    parts: tuple[str, ...]
    joined: str


def normalise_dashes(query: str) -> str:
    """``query`` with Unicode hyphens and the en dash read as "-" and soft
    hyphens removed (:data:`DASHES`)."""
    return query.translate(DASHES)


#: The extensions of the files Loupe ingests (``loupe.ingest.image.EXTENSIONS``
#: without the dot; a test keeps them equal).
PICTURE_EXTENSIONS = ("jpg", "jpeg", "jpe", "png", "webp", "tif", "tiff", "gif", "heic", "heif",
                      "avif", "jxl", "cr2", "cr3", "nef", "arw", "dng", "raf", "orf", "rw2",
                      "mp4", "mov", "m4v", "mkv", "webm", "avi")
#: A picture file's extension ending a word: ".webp" in "giraffe.webp".
_EXTENSION = re.compile(r"(?<=[^\W_])\.(?:" + "|".join(PICTURE_EXTENSIONS) + r")(?![^\W_])",
                        re.IGNORECASE)


def without_file_extensions(query: str) -> str:
    """``query`` with a picture file's extension dropped from each word that
    ends in one, so that a file name typed whole finds its file: the search
    document indexes the file's name without its extension
    (:func:`loupe.document.compile.filename_words`), so "giraffe.webp" held
    a term ("webp") no document has.

    >>> without_file_extensions("giraffe.webp or mango_ripe_kesar.JPEG, .png")
    'giraffe or mango_ripe_kesar, .png'
    """
    return _EXTENSION.sub("", query)


def find_compounds(query: str) -> list[Compound]:
    """The compounds of ``query`` in order of appearance (after
    :func:`normalise_dashes`); [] when it has none.

    >>> [c.joined for c in find_compounds("cut-out on white, Wi-Fi")]
    ['cutout', 'WiFi']
    """
    out = []
    for m in COMPOUND.finditer(normalise_dashes(query)):
        parts = tuple(SEPARATOR.split(m.group(0)))
        out.append(Compound(m.group(0), parts, "".join(parts)))
    return out


def with_joined(query: str) -> str:
    """``query`` with every compound replaced by its catenated form: the
    text whose terms are the query's plain terms ("cut-out on white" ->
    "cutout on white")."""
    return COMPOUND.sub(lambda m: SEPARATOR.sub("", m.group(0)), normalise_dashes(query))


def term_groups(terms: list[str], plain: set[str], parts: list[set[str]],
                lost: list[bool] | None = None) -> dict[str, tuple[int, int]]:
    """Each query term's group and the group's size, in one language.

    Args:
        terms: every term the analyzer emits for the query.
        plain: the terms of :func:`with_joined` of the query (plain words and
            catenated forms).
        parts: for each compound in order, the terms its parts give.
        lost: for each compound, whether a part gave no term (a stop word);
            None: no part was lost.

    Returns:
        term -> (group, need): group 0 with need 1 for a plain term; else
        the 1-based index of the first compound whose parts give it, and
        ``need``, how many of the query's terms are in that group (a
        document must hold them all for any of them to count). A term of a
        group of fewer than two terms whose other parts were stop words
        (``lost``) is left out: the query does not search it (module
        docstring). A compound of one repeated word ("mahi-mahi") keeps its
        one-term group.

    >>> term_groups(["cut", "cutout", "white"], {"cutout", "white"}, [{"cut"}], [True])
    {'cutout': (0, 1), 'white': (0, 1)}
    """
    lost = lost or [False] * len(parts)
    group: dict[str, int] = {}
    for t in terms:
        if t in plain:
            group[t] = 0
            continue
        group[t] = next((i for i, p in enumerate(parts, 1) if t in p), 0)
    need: dict[int, int] = {}
    for g in group.values():
        need[g] = need.get(g, 0) + 1
    return {t: (g, need[g] if g else 1) for t, g in group.items()
            if g == 0 or need[g] >= 2 or not lost[g - 1]}
