"""Compiling an asset's search document (S1), one per library language.

The document is compiled from everything known about the asset: the
normalised metadata of each of its files (an asset whose bytes were found
under several paths is findable by what any of them says), the filenames, and
the names of the collections (folders) holding it. Fields that later stages
fill (confirmed people, vocabulary terms) are carried as empty slots. The
machine words from the pixels (``loupe.pixels``, migration 0019) are a field
group of their own (``machine``, weight ``weights[5]``), stored beside the
fields; the older ``ocr`` slot stays empty, so the text lane and the
evaluation's caption variant never embed machine words. The ``machine_tags``
slot (group D) holds the camera and lens names the files' EXIF gives
(``metadata["camera"]``, ``metadata["lens"]``: written by the camera, not by
a person, so weighted like the creator). The ``location`` field holds the
place names a person typed (IPTC/XMP) and, after them, those of the file's
coordinates (``metadata["place"]``, GeoNames, :mod:`loupe.ingest.places`), so
a picture with only coordinates is found by its city, region and country.

Analysis (tokenising, stemming, accent folding, field weights) happens in
PostgreSQL, in the same statement that stores the document:
see :data:`UPSERT_DOCUMENT`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import psycopg

from .languages import normalize_lang, ts_config
from .vocabulary import CARRIED_TERMS
from ..pixels.store import machine_texts

#: Fields of the search document and the field group (tsvector weight letter)
#: each is indexed in: A title, B keywords, C description, D other; 5 the
#: machine words (their own tsvector, migration 0019).
#: Vocabulary terms are indexed apart (``vocab_tsv``) and count in group B.
FIELDS: dict[str, str] = {
    "title": "A",
    "filename": "B",
    "keywords": "B",
    "vocabulary": "B",
    "description": "C",
    "collections": "C",
    "location": "C",
    "people": "C",
    "creator": "D",
    "copyright": "D",
    "machine_tags": "D",
    "ocr": "D",
    # the machine words from the pixels (migration 0019): the fifth group,
    # analysed into machine_tsv (not a tsvector weight letter); filled by
    # rebuild_documents from asset_machine, never from a file
    "machine": "5",
}

_SEP = re.compile(r"[_.]+")


@dataclass
class FileInput:
    """What the compiler needs of one file of the asset."""

    rel_path: str
    metadata: dict[str, Any]
    collection_path: str  # '' when the file is at the source root


@dataclass
class SearchDocument:
    """One compiled document: the text of each field for one language."""

    lang: str
    ts_config: str
    fields: dict[str, str] = field(default_factory=dict)


def pick_lang(alt: dict[str, str] | None, lang: str) -> str:
    """Choose the value of a lang-alt field for ``lang``.

    Order: an exact primary-subtag match (``fr`` matches ``fr-FR``), then
    ``x-default``, then the first value present. Returns '' when empty.
    """
    if not alt:
        return ""
    for key, value in alt.items():
        if normalize_lang(key) == lang:
            return value
    if "x-default" in alt:
        return alt["x-default"]
    return next(iter(alt.values()))


def lang_alt_values(alt: dict[str, str] | None, lang: str, languages: list[str]) -> list[str]:
    """The values of a lang-alt field that the ``lang`` document holds.

    First :func:`pick_lang` (the document's own language, else x-default,
    else the first value), then every other value whose language is not one
    of the library ``languages`` (x-default included): text in a language
    the library does not list stays searchable in each library language's
    document, while a value in another library language stays in
    that language's document only; a value some library language's document
    already holds as its own (an x-default repeating a language's value, or
    the x-default a language without its own value falls back to) is not
    added to the others.
    Empty values are left out.
    """
    if not alt:
        return []
    out = [pick_lang(alt, lang)]
    own = {normalize_lang(code) for code in languages}
    # the values some library language's document holds as its own (its
    # language's value, or the x-default / first value it falls back to)
    claimed = {pick_lang(alt, code).strip() for code in own}
    for key, value in alt.items():
        if normalize_lang(key) in own or not value or value.strip() in claimed:
            continue
        out.append(value)
    return [v for v in out if v and v.strip()]


def _join_unique(values: list[str], sep: str) -> str:
    seen: list[str] = []
    for v in values:
        v = v.strip()
        if v and v.lower() not in {s.lower() for s in seen}:
            seen.append(v)
    return sep.join(seen)


_PARTS = re.compile(r"[^\W_]+")


def filename_words(rel_path: str) -> str:
    """The file's name without extension, with ``_`` and ``.`` read as
    spaces, followed by the joined forms of an identifier the name writes
    with separators: ``SS26_HERO_03.jpg`` -> ``'SS26 HERO 03 SS26HERO03'``,
    ``IMG-4471-RD.jpg`` -> ``'IMG-4471-RD IMG4471RD 4471RD'``.

    Why: people type an identifier joined ("ss26hero03") as often as the
    name writes it apart; the joined form is indexed as itself so the
    search finds it as typed, not through the typo fallback. The joined
    forms are the whole name's and, when the name starts with letters only
    (a camera's ``IMG``, ``DSC``), the one from its first part holding a
    digit; only for a name of two or more parts holding a digit.
    """
    name = rel_path.rsplit("/", 1)[-1]
    stem = name.rsplit(".", 1)[0] if "." in name else name
    joined: list[str] = []
    for chunk in stem.split():   # an identifier holds no white space
        parts = _PARTS.findall(chunk)
        if len(parts) < 2 or not any(ch.isdigit() for ch in chunk):
            continue
        joined.append("".join(parts))
        first = next(i for i, p in enumerate(parts) if any(ch.isdigit() for ch in p))
        if 0 < first < len(parts) - 1:
            joined.append("".join(parts[first:]))
    return " ".join([_SEP.sub(" ", stem).strip()] + joined)


def place_words(place: Any) -> list[str]:
    """The names of a file's geocoded place (``metadata["place"]``): city,
    county, region, country, each once (case-insensitive); [] for none."""
    if not isinstance(place, dict):
        return []
    out: list[str] = []
    for key in ("city", "county", "state", "country"):
        v = place.get(key)
        if isinstance(v, str) and v.strip() and v.strip().lower() not in {o.lower() for o in out}:
            out.append(v.strip())
    return out


def collection_words(collection_path: str) -> list[str]:
    """Names of a collection and its ancestors: ``a/b/c`` -> ``['a', 'b', 'c']``."""
    return [p for p in collection_path.split("/") if p]


def compile_documents(files: list[FileInput], languages: list[str], *,
                      keywords: list[str] | None = None,
                      collections: list[str] | None = None,
                      people: list[str] | None = None) -> list[SearchDocument]:
    """Compile one :class:`SearchDocument` per language for an asset.

    ``files`` must be in a stable order (primary file first: Loupe uses the
    sorted relative paths). Lang-alt fields (title, description, copyright)
    take the value for the document's language, falling back to x-default,
    followed by the values in languages the library does not list
    (:func:`lang_alt_values`).
    ``keywords`` and ``collections`` are words people added in Loupe (bulk
    "add keyword", hand-made collections), after the files' own; ``people``
    the names of the people a person confirmed in its pictures (faces, SPEC
    X2), after the names the files carry (``metadata["people"]``).
    """
    docs = []
    for lang in languages:
        per_field: dict[str, list[str]] = {name: [] for name in FIELDS}
        for f in files:
            md = f.metadata
            per_field["title"].extend(lang_alt_values(md.get("title"), lang, languages))
            per_field["description"].extend(
                lang_alt_values(md.get("description"), lang, languages))
            per_field["copyright"].extend(lang_alt_values(md.get("copyright"), lang, languages))
            per_field["creator"].extend(md.get("creator", []))
            per_field["keywords"].extend(md.get("keywords", []))
            per_field["location"].extend(md.get("location", []))
            per_field["location"].extend(place_words(md.get("place")))
            per_field["machine_tags"].extend(
                v for v in (md.get("camera"), md.get("lens")) if isinstance(v, str))
            per_field["people"].extend(md.get("people", []))
            per_field["filename"].append(filename_words(f.rel_path))
            per_field["collections"].extend(collection_words(f.collection_path))
        per_field["keywords"].extend(keywords or [])
        per_field["collections"].extend(collections or [])
        per_field["people"].extend(people or [])
        fields = {
            "title": _join_unique(per_field["title"], " / "),
            "description": _join_unique(per_field["description"], "\n"),
            "copyright": _join_unique(per_field["copyright"], "; "),
            "creator": _join_unique(per_field["creator"], "; "),
            "keywords": _join_unique(per_field["keywords"], "; "),
            "location": _join_unique(per_field["location"], ", "),
            "filename": _join_unique(per_field["filename"], " / "),
            "collections": _join_unique(per_field["collections"], " / "),
            "people": _join_unique(per_field["people"], "; "),
            "machine_tags": _join_unique(per_field["machine_tags"], "; "),
            "ocr": "", "vocabulary": "", "machine": "",
        }
        docs.append(SearchDocument(lang=lang, ts_config=ts_config(lang), fields=fields))
    return docs


# Store one document and analyse it in the same statement (functions of
# migration 0002): the fields' tsvector with group weight letters, the
# vocabulary tsvector (own terms and ancestors), their lengths. The row is
# only rewritten when something changed, so unchanged re-ingests do not churn
# the lexical index (its trigger keeps lexicon, statistics and postings).
UPSERT_DOCUMENT = """
WITH analysed AS (
    SELECT loupe_document_tsv(%(cfg)s::regconfig, %(title)s, %(filename)s, %(keywords)s,
                              %(description)s, %(collections)s, %(location)s, %(people)s,
                              %(creator)s, %(copyright)s, %(machine_tags)s, %(ocr)s) AS tsv,
           loupe_vocab_tsv(%(asset_id)s, %(lang)s, %(cfg)s::regconfig) AS vocab_tsv,
           loupe_vocab_text(%(asset_id)s, %(lang)s) AS vocabulary,
           loupe_machine_tsv(%(cfg)s::regconfig, %(machine)s) AS machine_tsv,
           (SELECT vocab_decay FROM lexical_setting WHERE tenant_id = %(tenant_id)s) AS decay
)
INSERT INTO search_document AS d (
    asset_id, tenant_id, lang, ts_config, title, filename, description, creator, copyright,
    location, keywords, collections, machine_tags, ocr, people, vocabulary, tsv, vocab_tsv,
    machine, machine_tsv, doc_len, group_len, phrase_title, phrase_text)
SELECT %(asset_id)s, %(tenant_id)s, %(lang)s, %(cfg)s::regconfig, %(title)s, %(filename)s,
       %(description)s, %(creator)s, %(copyright)s, %(location)s, %(keywords)s,
       %(collections)s, %(machine_tags)s, %(ocr)s, %(people)s, a.vocabulary,
       a.tsv, a.vocab_tsv, %(machine)s, a.machine_tsv, loupe_tsv_len(a.tsv),
       loupe_group_len(a.tsv, a.vocab_tsv, a.machine_tsv, a.decay),
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
    machine = EXCLUDED.machine, machine_tsv = EXCLUDED.machine_tsv,
    doc_len = EXCLUDED.doc_len, group_len = EXCLUDED.group_len,
    phrase_title = EXCLUDED.phrase_title, phrase_text = EXCLUDED.phrase_text, updated_at = now()
WHERE d.tsv IS DISTINCT FROM EXCLUDED.tsv
   OR d.vocab_tsv IS DISTINCT FROM EXCLUDED.vocab_tsv
   OR d.machine_tsv IS DISTINCT FROM EXCLUDED.machine_tsv
   OR d.machine IS DISTINCT FROM EXCLUDED.machine
   OR d.group_len IS DISTINCT FROM EXCLUDED.group_len
   OR (d.title, d.filename, d.description, d.creator, d.copyright, d.location, d.keywords,
       d.collections, d.vocabulary, d.people) IS DISTINCT FROM
      (EXCLUDED.title, EXCLUDED.filename, EXCLUDED.description, EXCLUDED.creator,
       EXCLUDED.copyright, EXCLUDED.location, EXCLUDED.keywords, EXCLUDED.collections,
       EXCLUDED.vocabulary, EXCLUDED.people)
"""

# The vocabulary terms an asset carries: those whose label or synonym equals
# (lower-cased, accents folded) one of its keywords or collection names, an
# ambiguous label resolved by the others (loupe.document.vocabulary.CARRIED_TERMS).
CLEAR_ASSET_VOCABULARY = "DELETE FROM asset_vocabulary WHERE asset_id = %(asset_id)s"
ASSIGN_ASSET_VOCABULARY = """
WITH RECURSIVE""" + CARRIED_TERMS + """
INSERT INTO asset_vocabulary (tenant_id, asset_id, term_id)
SELECT %(tenant_id)s, %(asset_id)s, term_id FROM own
ON CONFLICT DO NOTHING
"""

# The inputs of an asset's documents: its files, primary (first by path) first.
ASSET_FILES = """
SELECT f.rel_path, f.metadata, coalesce(c.path, '') AS collection_path, f.id
FROM asset_file f
LEFT JOIN collection c ON c.id = f.collection_id
WHERE f.asset_id = %(asset_id)s AND f.tenant_id = %(tenant_id)s
ORDER BY f.rel_path, f.path
"""
# Words people added in Loupe: keywords, and the names of hand-made
# collections (migration 0005) holding the asset.
ASSET_ADDED_WORDS = """
SELECT (SELECT coalesce(array_agg(keyword ORDER BY added_at, keyword), ARRAY[]::text[])
        FROM asset_keyword WHERE asset_id = %(asset_id)s),
       (SELECT coalesce(array_agg(c.name ORDER BY c.name), ARRAY[]::text[])
        FROM collection_member m JOIN collection c ON c.id = m.collection_id
        WHERE m.asset_id = %(asset_id)s AND c.tenant_id = %(tenant_id)s)
"""


# Names of the people a person confirmed in the asset's pictures (migration
# 0022): confirmed faces of named, visible (not hidden) people. Unconfirmed
# faces and unnamed clusters never reach the document (X2). First all
# of them (the whole document), then those confirmed in Loupe (the file
# documents: a name confirmed only by a region written in one file is that
# file's word, and that file's document already holds it).
ASSET_CONFIRMED_PEOPLE = """
SELECT coalesce(array_agg(DISTINCT p.name ORDER BY p.name), ARRAY[]::text[]),
       coalesce(array_agg(DISTINCT p.name ORDER BY p.name) FILTER (WHERE NOT f.from_file),
                ARRAY[]::text[])
FROM face f JOIN person p ON p.id = f.person_id
WHERE f.asset_id = %(asset_id)s AND f.confirmed AND p.name IS NOT NULL AND NOT p.hidden
"""


# The assets of the tenant among the given ids, locked against another
# writer of their documents until the transaction ends, in ascending id
# order (the one global order: two writers on overlapping sets wait for each
# other instead of deadlocking). NO KEY UPDATE, not UPDATE: the foreign-key
# checks of rows added beside an asset (keywords, files) take KEY SHARE on
# it and must not conflict.
LOCK_ASSETS = """
SELECT id FROM asset
WHERE tenant_id = %(tenant_id)s AND id = ANY(%(ids)s::bigint[])
ORDER BY id
FOR NO KEY UPDATE
"""


def lock_assets(conn: psycopg.Connection, tenant_id: int, asset_ids) -> list[int]:
    """Lock the assets ``asset_ids`` of the tenant for a rebuild of their
    search documents, inside the caller's transaction, in ascending id
    order; returns the ids that exist (ascending: an asset deleted
    meanwhile is left out, never acted on).

    Every path that changes what an asset's documents are built from and
    rebuilds them takes this lock, for all the assets it will rebuild,
    before it reads their state (:func:`rebuild_documents` takes it again
    for its one asset, at no cost when held): a writer that waited reads,
    once it holds the lock, everything the writer before it committed, so
    the last writer builds the document from the latest state and no
    update is lost."""
    ids = sorted({int(i) for i in asset_ids})
    if not ids:
        return []
    return [r[0] for r in conn.execute(LOCK_ASSETS, {"tenant_id": tenant_id, "ids": ids})]


def rebuild_documents(conn: psycopg.Connection, tenant_id: int, asset_id: int,
                      languages: list[str]) -> int:
    """Recompile and store the documents of one asset, inside the caller's transaction.

    The asset is locked first (:func:`lock_assets`), so the documents are
    built from the state every writer before committed; an asset that no
    longer exists is left alone (0). Documents of languages no longer in
    ``languages`` are removed. Returns the number of documents written (0
    when none changed).
    """
    if not lock_assets(conn, tenant_id, [asset_id]):
        return 0
    rows = conn.execute(ASSET_FILES, {"asset_id": asset_id, "tenant_id": tenant_id}).fetchall()
    files = [FileInput(rel_path=r[0], metadata=r[1], collection_path=r[2]) for r in rows]
    added_keywords, added_collections = conn.execute(
        ASSET_ADDED_WORDS, {"asset_id": asset_id, "tenant_id": tenant_id}).fetchone()
    people, people_in_loupe = conn.execute(ASSET_CONFIRMED_PEOPLE,
                                           {"asset_id": asset_id}).fetchone()

    machine = machine_texts(conn, asset_id, languages)
    rebuild_file_documents(conn, tenant_id, asset_id, languages, files, [r[3] for r in rows],
                           added_keywords, people_in_loupe, machine)
    labels = sorted({k for f in files for k in f.metadata.get("keywords", [])}
                    | {c for f in files for c in collection_words(f.collection_path)}
                    | set(added_keywords) | set(added_collections))
    conn.execute(CLEAR_ASSET_VOCABULARY, {"asset_id": asset_id})
    conn.execute(ASSIGN_ASSET_VOCABULARY, {"asset_id": asset_id, "tenant_id": tenant_id,
                                           "labels": labels})
    written = 0
    for doc in compile_documents(files, languages, keywords=added_keywords,
                                 collections=added_collections, people=people):
        params = {"asset_id": asset_id, "tenant_id": tenant_id, "lang": doc.lang,
                  "cfg": doc.ts_config, **doc.fields, "machine": machine.get(doc.lang, "")}
        written += conn.execute(UPSERT_DOCUMENT, params).rowcount
    conn.execute(
        "DELETE FROM search_document WHERE asset_id = %s AND lang <> ALL(%s)",
        (asset_id, languages),
    )
    return written


# A file document (migration 0011): the document of one file of an asset
# with several files, analysed as UPSERT_DOCUMENT does, with the vocabulary
# terms that this file's own keywords and folder names carry (and their
# ancestors), never the asset's: a member who may read only this file must
# not match a term another file brought.
UPSERT_FILE_DOCUMENT = """
WITH RECURSIVE""" + CARRIED_TERMS + """,
up AS (
    SELECT t.id, t.parent_id, t.labels, 0 AS dist
    FROM vocabulary_term t JOIN own ON own.term_id = t.id
    UNION ALL
    SELECT p.id, p.parent_id, p.labels, up.dist + 1
    FROM vocabulary_term p JOIN up ON p.id = up.parent_id
    WHERE up.dist < 32
),
terms AS (
    SELECT id AS term_id, labels, min(dist) AS dist FROM up GROUP BY id, labels
),
analysed AS (
    SELECT loupe_document_tsv(%(cfg)s::regconfig, %(title)s, %(filename)s, %(keywords)s,
                              %(description)s, %(collections)s, %(location)s, %(people)s,
                              %(creator)s, %(copyright)s, %(machine_tags)s, %(ocr)s) AS tsv,
           (SELECT coalesce(loupe_tsv_agg(setweight(
                        loupe_analyze(%(cfg)s::regconfig, loupe_label(t.labels, %(lang)s)),
                        (ARRAY['A', 'B', 'C', 'D'])[least(t.dist, 3) + 1]::"char")
                        ORDER BY t.dist, t.term_id), ''::tsvector)
            FROM terms t) AS vocab_tsv,
           (SELECT coalesce(string_agg(loupe_label(t.labels, %(lang)s), ' < '
                                       ORDER BY t.dist, t.term_id), '')
            FROM terms t) AS vocabulary,
           loupe_machine_tsv(%(cfg)s::regconfig, %(machine)s) AS machine_tsv,
           (SELECT vocab_decay FROM lexical_setting WHERE tenant_id = %(tenant_id)s) AS decay
)
INSERT INTO file_document AS d (
    file_id, asset_id, tenant_id, lang, title, filename, description, creator, copyright,
    location, keywords, collections, vocabulary, tsv, vocab_tsv, machine_tsv, doc_len,
    group_len, phrase_title, phrase_text)
SELECT %(file_id)s, %(asset_id)s, %(tenant_id)s, %(lang)s, %(title)s, %(filename)s,
       %(description)s, %(creator)s, %(copyright)s, %(location)s, %(keywords)s,
       %(collections)s, a.vocabulary, a.tsv, a.vocab_tsv, a.machine_tsv, loupe_tsv_len(a.tsv),
       loupe_group_len(a.tsv, a.vocab_tsv, a.machine_tsv, a.decay),
       loupe_phrase_norm(%(title)s),
       loupe_phrase_text(%(title)s, %(filename)s, %(keywords)s, %(description)s, %(collections)s,
                         %(location)s, %(people)s, %(creator)s, %(copyright)s,
                         %(machine_tags)s, %(ocr)s, a.vocabulary)
FROM analysed a
ON CONFLICT (file_id, lang) DO UPDATE SET
    asset_id = EXCLUDED.asset_id, title = EXCLUDED.title, filename = EXCLUDED.filename,
    description = EXCLUDED.description, creator = EXCLUDED.creator,
    copyright = EXCLUDED.copyright, location = EXCLUDED.location,
    keywords = EXCLUDED.keywords, collections = EXCLUDED.collections,
    vocabulary = EXCLUDED.vocabulary, tsv = EXCLUDED.tsv, vocab_tsv = EXCLUDED.vocab_tsv,
    machine_tsv = EXCLUDED.machine_tsv,
    doc_len = EXCLUDED.doc_len, group_len = EXCLUDED.group_len,
    phrase_title = EXCLUDED.phrase_title, phrase_text = EXCLUDED.phrase_text
WHERE d.tsv IS DISTINCT FROM EXCLUDED.tsv
   OR d.vocab_tsv IS DISTINCT FROM EXCLUDED.vocab_tsv
   OR d.machine_tsv IS DISTINCT FROM EXCLUDED.machine_tsv
   OR d.asset_id IS DISTINCT FROM EXCLUDED.asset_id
   OR (d.title, d.filename, d.description, d.creator, d.copyright, d.location, d.keywords,
       d.collections, d.vocabulary) IS DISTINCT FROM
      (EXCLUDED.title, EXCLUDED.filename, EXCLUDED.description, EXCLUDED.creator,
       EXCLUDED.copyright, EXCLUDED.location, EXCLUDED.keywords, EXCLUDED.collections,
       EXCLUDED.vocabulary)
"""

# File documents of the asset other than the given files' in the given
# languages (files gone, languages dropped, or the asset is down to one file).
DELETE_OTHER_FILE_DOCUMENTS = """
DELETE FROM file_document
WHERE asset_id = %(asset_id)s AND (file_id <> ALL (%(file_ids)s::bigint[])
                                   OR lang <> ALL (%(langs)s::text[]))
"""

# Assets with more than one file (all tenants): their file documents are
# compiled when a library is first opened after migration 0011.
MULTI_FILE_ASSETS = """
SELECT f.tenant_id, f.asset_id, t.languages
FROM asset_file f JOIN tenant t ON t.id = f.tenant_id
GROUP BY f.tenant_id, f.asset_id, t.languages
HAVING count(*) > 1
ORDER BY f.tenant_id, f.asset_id
"""


def rebuild_file_documents(conn: psycopg.Connection, tenant_id: int, asset_id: int,
                           languages: list[str], files: list[FileInput], file_ids: list[int],
                           added_keywords: list[str], people: list[str] | None = None,
                           machine: dict[str, str] | None = None) -> int:
    """Store the file documents of one asset (migration 0011), inside the
    caller's transaction: for an asset with two files or more, one document
    per file and language, compiled by :func:`compile_documents` from that
    file alone (the keywords people added to the asset, ``added_keywords``,
    and hand-made collection names are left out: they are not any file's
    words, and a member reading one copy must not find the asset by words
    added for another) plus the ``people`` confirmed in Loupe in its pixels (every file holds
    those pixels; names confirmed only by another file's region are left out).
    An asset with one file has none (its whole document is that file's).
    ``files`` and ``file_ids`` are parallel. ``machine``: the asset's
    machine words per language (migration 0019; read from the database when
    None): the pixels are every file's, so each file document holds them. Returns the number of documents
    written (0 when none changed)."""
    keep = file_ids if len(files) > 1 else []
    if machine is None and keep:
        machine = machine_texts(conn, asset_id, languages)
    conn.execute(DELETE_OTHER_FILE_DOCUMENTS, {"asset_id": asset_id, "file_ids": keep,
                                               "langs": languages})
    written = 0
    # the keywords people added in Loupe belong to the asset as a whole: a
    # member who reads only some of its files (a shared copy of a private
    # file's bytes) does not find it by them (docs/security.md, "What a
    # member sees through a copy"); ``added_keywords`` is kept in the
    # signature for callers
    del added_keywords
    for f, file_id in zip(files, keep):
        labels = sorted(set(f.metadata.get("keywords", [])) | set(collection_words(f.collection_path)))
        for doc in compile_documents([f], languages, people=people):
            written += conn.execute(UPSERT_FILE_DOCUMENT, {
                "file_id": file_id, "asset_id": asset_id, "tenant_id": tenant_id,
                "lang": doc.lang, "cfg": doc.ts_config, "labels": labels,
                **doc.fields, "machine": (machine or {}).get(doc.lang, "")}).rowcount
    return written


def rebuild_all_file_documents(conn: psycopg.Connection) -> int:
    """Compile the file documents of every asset with several files, in every
    tenant (run once after migration 0011, which cannot compile documents
    itself). One transaction per asset. Returns the number of assets."""
    assets = conn.execute(MULTI_FILE_ASSETS).fetchall()
    for tenant_id, asset_id, languages in assets:
        with conn.transaction():
            rows = conn.execute(ASSET_FILES, {"asset_id": asset_id,
                                              "tenant_id": tenant_id}).fetchall()
            files = [FileInput(rel_path=r[0], metadata=r[1], collection_path=r[2]) for r in rows]
            added = conn.execute(ASSET_ADDED_WORDS, {"asset_id": asset_id,
                                                     "tenant_id": tenant_id}).fetchone()[0]
            people = (conn.execute(ASSET_CONFIRMED_PEOPLE, {"asset_id": asset_id}).fetchone()[1]
                      if conn.execute("SELECT to_regclass('face') IS NOT NULL").fetchone()[0]
                      else [])
            rebuild_file_documents(conn, tenant_id, asset_id, list(languages), files,
                                   [r[3] for r in rows], added, people)
    return len(assets)
