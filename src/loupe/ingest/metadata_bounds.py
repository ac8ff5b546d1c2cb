"""Bounds on metadata: what Loupe holds of ExifTool's answer as it is read
(:func:`hold_bounded`), what it keeps of the normalised fields
(:func:`bound_fields`, :func:`distinct_words`) and of the raw answer it stores
(:func:`bound_raw`) (N3, N5)."""

from __future__ import annotations

import re
from typing import Any

from .metadata import LANG_ALT_FIELDS, LIST_FIELDS, LOCATION_TAGS, ORIENTATION_TAGS, TEXT_FIELDS


#: What Loupe holds of one file's ExifTool answer between the call and the
#: store (measured: a 32 KB JPEG with a MIE trailer of 31 MiB of text
#: and one character past U+FFFF was held at 124 MiB, 48 files a batch). Right
#: after each call is parsed, each file's answer is cut (:func:`hold_bounded`):
#: a string value to :data:`HOLD_VALUE_CHARS` characters (over what anything
#: downstream keeps: :data:`MAX_RAW_VALUE`, :data:`MAX_TEXT_CHARS`), one tag
#: (a list, a structure) to :data:`HOLD_TAG_CHARS`, and the file to
#: :data:`HOLD_FILE_CHARS` (4x what ``raw_metadata`` stores,
#: :data:`MAX_RAW_CHARS`): the tags :func:`normalize` reads first, a tag
#: that starts past the bound is dropped. So one file holds at most about
#: 512 Ki characters (2 MiB even at 4 bytes a character), a batch of 48 at
#: most ~100 MiB, 24 MiB in ASCII. The peak of one call stays bounded by
#: :data:`ANSWER_MAX_BYTES` (the bytes, their text and its parse: about
#: 400 MiB for the largest hostile file measured).
HOLD_VALUE_CHARS = 32 * 1024
HOLD_TAG_CHARS = 256 * 1024
HOLD_FILE_CHARS = 256 * 1024
_HOLD_DEPTH = 32
#: The key of a held answer that says what :func:`hold_bounded` cut.
HOLD_NOTE = "Loupe:Cut"
#: Tags always kept whole (ExifTool's own, small).
_HOLD_ALWAYS = ("SourceFile", "File:FileType", "File:FileTypeExtension", "File:MIMEType")


class HeldText(str):
    """The first :data:`HOLD_VALUE_CHARS` characters of a longer value;
    ``full_length`` is how long the value was (so :func:`bound_raw` names
    the real size)."""

    full_length: int

    def __new__(cls, text: str, full_length: int) -> "HeldText":
        self = super().__new__(cls, text)
        self.full_length = full_length
        return self

    def __str__(self) -> str:       # str(x) and x.strip() keep the length known
        return self

    def strip(self, chars: str | None = None) -> str:
        return HeldText(super().strip(chars), self.full_length)


def _normalize_reads(key: str) -> bool:
    """Whether :func:`normalize`, :func:`sidecar_problem` or the stored
    ``raw_metadata``'s read-back use tag ``key`` (kept first when cutting)."""
    if key == "SourceFile" or key.startswith(("ExifTool:", "File:")) or key in READ_BACK:
        return True
    tags = [t for group in (LANG_ALT_FIELDS, LIST_FIELDS, TEXT_FIELDS) for ts in group.values()
            for t in ts] + [t for ts in LOCATION_TAGS for t in ts] + list(ORIENTATION_TAGS)
    if key in tags or any(key.startswith(t + "-") for t in tags if t.startswith("XMP-")):
        return True     # a tag, or a language variant of one (``XMP-dc:Title-fr``)
    return key.startswith(("XMP-mwg-rs:", "XMP-MP:", "XMP-iptcExt:Person", "XMP-digiKam:TagsList"))


def hold_bounded(raw: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``raw`` (ExifTool's JSON of one file) within
    :data:`HOLD_VALUE_CHARS` a string (cut to a :class:`HeldText`),
    :data:`HOLD_TAG_CHARS` a tag (list items or structure members past it
    dropped), :data:`_HOLD_DEPTH` levels, and :data:`HOLD_FILE_CHARS` a
    file (the tags :func:`_normalize_reads` names first, then the rest in
    ExifTool's order; a tag starting past the bound is dropped, except
    ExifTool's own and the file type). What was cut is said in
    ``raw[HOLD_NOTE]`` (sentences naming the sizes and bounds). Characters
    are counted as string lengths plus 4 per value and key."""
    cuts: list[str] = []
    tag = 0     # characters of the current tag

    def small(value: Any, depth: int) -> Any:
        nonlocal tag
        if tag > HOLD_TAG_CHARS:
            raise _TagFull
        if isinstance(value, str):
            if len(value) > HOLD_VALUE_CHARS:
                cuts.append(f"a value of {len(value):,} characters cut to {HOLD_VALUE_CHARS:,}")
                value = HeldText(value[:HOLD_VALUE_CHARS], len(value))
            tag += len(value) + 4
            return value
        if isinstance(value, (list, dict)) and depth >= _HOLD_DEPTH:
            cuts.append(f"a structure nested over {_HOLD_DEPTH} levels dropped")
            return None
        if isinstance(value, list):
            kept_list: list[Any] = []
            for v in value:
                try:
                    kept_list.append(small(v, depth + 1))
                except _TagFull:
                    cuts.append(f"a list of {len(value):,} values cut to {len(kept_list):,} "
                                f"(past {HOLD_TAG_CHARS:,} characters a tag)")
                    break
            return kept_list
        if isinstance(value, dict):
            kept: dict[str, Any] = {}
            for k, v in value.items():
                tag += len(k) + 4
                try:
                    kept[k] = small(v, depth + 1)
                except _TagFull:
                    cuts.append(f"a structure of {len(value):,} members cut to {len(kept):,} "
                                f"(past {HOLD_TAG_CHARS:,} characters a tag)")
                    break
            return kept
        tag += 8
        return value

    out: dict[str, Any] = {}
    size = dropped = 0
    for first in (True, False):
        for key in raw:
            if _normalize_reads(key) != first:
                continue
            if (size > HOLD_FILE_CHARS and key not in _HOLD_ALWAYS
                    and not key.startswith("ExifTool:")):
                dropped += 1
                continue
            tag = len(key) + 4
            try:
                out[key] = small(raw[key], 1)
            except _TagFull:        # a string past the bound on its own: not held
                out[key] = None
            size += tag
    if dropped:
        cuts.append(f"{dropped:,} tag(s) past {HOLD_FILE_CHARS:,} characters dropped")
    if cuts:
        more = f" (and {len(cuts) - 3:,} more)" if len(cuts) > 3 else ""
        out[HOLD_NOTE] = ("ExifTool's answer was cut when read (Loupe's bounds on what it "
                          f"holds of one file): {'; '.join(cuts[:3])}{more}")
    return out


class _TagFull(Exception):
    """One tag passed :data:`HOLD_TAG_CHARS` (internal to :func:`hold_bounded`)."""


#: Named regions kept of one file (a group photo with more is cut, with a warning).
MAX_REGIONS = 200


#: Bounds on one file's normalised metadata, enforced before anything is
#: stored or indexed (N3, N5). PostgreSQL refuses a tsvector over
#: 1,048,575 bytes ("string is too long for tsvector"), so one unbounded field
#: would make the whole image fail. With these bounds one file's text is at
#: most 3 lang-alt values x 10,000 + 3 lists x 20,000 characters per language
#: — under a tenth of that limit even in 4-byte UTF-8 — and far above what
#: people write (IPTC-IIM itself caps a caption at 2,000 bytes).
MAX_TEXT_CHARS = 10_000
#: Items kept of one list field (keywords, creators, location parts).
MAX_LIST_ITEMS = 1_000
#: Characters kept of one list item, and of one list field in all.
MAX_ITEM_CHARS = 1_000
MAX_LIST_CHARS = 20_000


_WORD = re.compile(r"[^\W_]+")


def distinct_words(md: dict[str, Any], name: str = "") -> int:
    """The number of distinct words (runs of letters and digits, lowercased)
    in the text of normalised metadata ``md`` (every string value, in
    lang-alt maps, lists and named regions, recursively; numbers and dates
    count as their digits) and in the file's ``name`` (its path relative to
    the ingested folder). What an ingest with ``max_words`` bounds
    (:class:`loupe.ingest.pipeline.Ingester`): each such word becomes a term
    of the search index in every library language (a lexicon row, postings,
    and file postings for an asset with several files), so its count bounds
    what one file adds to the database. An analyzer may
    add a few joined forms (``SS26-HERO-03`` also gives ``ss26hero03``) and
    drop stop words: the index's distinct terms are within about twice
    this count."""
    words: set[str] = set(w.lower() for w in _WORD.findall(name))
    stack: list[Any] = [md]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            words.update(w.lower() for w in _WORD.findall(value))
        elif isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, (list, tuple)):
            stack.extend(value)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            words.update(_WORD.findall(str(value)))
    return len(words)


def _cut(text: str, bound: int) -> str:
    """``text`` cut to at most ``bound`` characters, between words when a word
    boundary lies in the last tenth (else mid-word), trailing space removed."""
    if len(text) <= bound:
        return text
    head = text[:bound]
    if not text[bound].isspace():
        space = max(head.rfind(" "), head.rfind("\n"), head.rfind("\t"))
        if space >= bound - bound // 10:
            head = head[:space]
    return head.rstrip()


def bound_fields(md: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Apply the bounds above to normalised metadata (see :func:`normalize`).

    Returns ``(bounded copy, reasons)``: one sentence per cut field, naming the
    field, its size and the bound, for a warning in ``ingest_failure``. Fields
    within the bounds are returned unchanged.
    """
    out = dict(md)
    reasons: list[str] = []
    for field, value in md.items():
        if field == "regions":
            kept = [{**r, "name": _cut(str(r.get("name", "")), MAX_ITEM_CHARS)}
                    for r in value[:MAX_REGIONS]]
            if len(kept) < len(value):
                reasons.append(f"regions: {len(kept):,} of {len(value):,} named regions kept "
                               f"(the bound is {MAX_REGIONS:,} regions)")
            out[field] = kept
        elif isinstance(value, dict):  # lang-alt
            alt = {}
            for lang, text in value.items():
                text = str(text)
                cut = _cut(text, MAX_TEXT_CHARS)
                if cut != text:
                    full = getattr(text, "full_length", len(text))    # HeldText: cut as read
                    reasons.append(f"{field} ({lang}) truncated from {full:,} to "
                                   f"{len(cut):,} characters (the bound is "
                                   f"{MAX_TEXT_CHARS:,} characters)")
                alt[lang] = cut
            out[field] = alt
        elif isinstance(value, list):
            items: list[str] = []
            total = 0
            long_items = 0
            for item in value:
                item = str(item)
                cut = _cut(item, MAX_ITEM_CHARS)
                long_items += cut != item
                if len(items) >= MAX_LIST_ITEMS or total + len(cut) > MAX_LIST_CHARS:
                    break
                items.append(cut)
                total += len(cut)
            if len(items) < len(value):
                reasons.append(f"{field}: {len(items):,} of {len(value):,} values kept (the "
                               f"bound is {MAX_LIST_ITEMS:,} values and {MAX_LIST_CHARS:,} "
                               f"characters)")
            if long_items:
                reasons.append(f"{field}: {long_items:,} value(s) truncated (the bound is "
                               f"{MAX_ITEM_CHARS:,} characters a value)")
            out[field] = items
        elif isinstance(value, str):
            cut = _cut(value, MAX_TEXT_CHARS)
            if cut != value:
                reasons.append(f"{field} truncated from {len(value):,} to {len(cut):,} "
                               f"characters (the bound is {MAX_TEXT_CHARS:,} characters)")
            out[field] = cut
    return out, reasons


#: Longest string value of ExifTool's answer kept in ``raw_metadata``
#: (characters), and the most characters of one file's ``raw_metadata`` as
#: JSON (the file's part and its sidecar's part are bounded each). ExifTool
#: inflates and decodes whatever a file holds; a 100 KB upload stored 100 MiB
#: of raw metadata, which every later filter and facet statement then walked.
#: The first bounds (64 KiB a value, 1 MiB a
#: file) still let a 4 KB upload store 975 KB, 250 times its size, outside
#: the upload quota. Loupe reads only a few tags of the
#: stored JSON (:data:`READ_BACK`); the normalised fields are taken from
#: ExifTool's whole answer before this bound, with their own bounds
#: (:data:`MAX_TEXT_CHARS` ...). Real files' answers measured here: 21
#: camera JPEGs (Canon, Sony, Olympus, Nokia, Konica Minolta) 2.3-13.2 KB
#: of JSON, median 6.1 KB; so 64 KiB keeps a real file's answer whole.
MAX_RAW_VALUE = 16 * 1024
MAX_RAW_CHARS = 64 * 1024
_RAW_DEPTH = 16

#: Tags of the stored raw metadata that Loupe reads back (the country of
#: migration 0020's ``loupe_file_country``, the XMP document ids of moves:
#: ``ingest/queries.py DOCUMENT_IDS``), kept before any other tag so that
#: :data:`MAX_RAW_CHARS` never drops them.
READ_BACK = ("XMP-photoshop:Country", "IPTC:Country-PrimaryLocationName",
             "XMP-xmpMM:DocumentID", "XMP-xmpMM:OriginalDocumentID")


def bound_raw(raw: dict[str, Any], name: str) -> tuple[dict[str, Any], list[str]]:
    """``raw`` (ExifTool's JSON of one file) within :data:`MAX_RAW_VALUE` per
    string value and :data:`MAX_RAW_CHARS` in all (JSON characters, each tag
    measured as ``json.dumps({tag: value})``), with the reasons for what was
    left out, each naming ``name`` and the bound. A value over the bound is
    replaced by a note saying how long it was. ``SourceFile``, the
    ``ExifTool:`` group (errors, warnings) and the file type are always kept;
    then the tags of :data:`READ_BACK`, then the ``File:`` and ``System:``
    groups, then the rest in ExifTool's order, while they fit the total."""
    import json

    reasons: list[str] = []
    cut = 0

    def small(value: Any, depth: int) -> Any:
        nonlocal cut
        if isinstance(value, str) and len(value) > MAX_RAW_VALUE:
            cut += 1
            full = getattr(value, "full_length", len(value))     # HeldText: cut when read
            return f"(a value of {full:,} characters, over Loupe's bound of {MAX_RAW_VALUE:,}: not kept)"
        if isinstance(value, (list, dict)) and depth >= _RAW_DEPTH:
            cut += 1
            return f"(a structure nested over {_RAW_DEPTH} levels: not kept)"
        if isinstance(value, list):
            return [small(v, depth + 1) for v in value]
        if isinstance(value, dict):
            return {k: small(v, depth + 1) for k, v in value.items()}
        return value

    kept = {k: small(v, 1) for k, v in raw.items()}
    if cut:
        reasons.append(f"{name}: {cut:,} metadata value(s) over {MAX_RAW_VALUE:,} characters "
                       f"(or nested over {_RAW_DEPTH} levels) not kept in the raw metadata")
    always = [k for k in kept if k == "SourceFile" or k.startswith("ExifTool:")
              or k in ("File:FileType", "File:FileTypeExtension", "File:MIMEType")]
    order = always + [k for k in READ_BACK if k in kept]
    placed = set(order)
    order += [k for k in kept if k.split(":", 1)[0] in ("File", "System") and k not in placed]
    placed.update(order)
    order += [k for k in kept if k not in placed]
    out: dict[str, Any] = {}
    total, dropped = 2, 0
    for key in order:
        size = len(json.dumps({key: kept[key]}, ensure_ascii=False, default=str))
        if total + size > MAX_RAW_CHARS and key not in always:
            dropped += 1
            continue
        out[key] = kept[key]
        total += size
    if dropped:
        reasons.append(f"{name}: {dropped:,} metadata tag(s) past {MAX_RAW_CHARS:,} characters "
                       f"of raw metadata not kept")
    return out, reasons
