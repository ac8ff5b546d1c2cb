"""Reading EXIF, IPTC-IIM and XMP with ExifTool, and normalising them (SPEC S6).

ExifTool is the field's reference reader. Loupe keeps one long-lived ExifTool
process in ``-stay_open`` batch mode (through ``pyexiftool``) and reads files
in batches; it never starts one process per file.

The normalised form of one file's metadata is a plain dict::

    {
      "title":       {"x-default": "Cheetah", "fr": "Guépard"},   # lang-alt
      "description": {"x-default": "..."},                         # lang-alt
      "copyright":   {"x-default": "..."},                         # lang-alt
      "keywords":    ["cheetah", "animals"],
      "creator":     ["Jane Doe"],
      "licence":     "https://creativecommons.org/licenses/by/4.0/",
      "location":    ["Lisbon", "Portugal"],
      "date_taken":  "2024:05:01 18:30:00",
      "orientation": 6,
    }

Absent fields are absent keys. When an XMP sidecar exists its fields take
precedence, field by field, over the embedded ones (the sidecar is where DAMs
and raw developers write edits); fields the sidecar does not carry fall back
to the embedded metadata.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import exiftool

from .errors import BadFile

# Tags per normalised field, in order of precedence (ExifTool -G1 group names).
# Within one file the first tag present wins, so XMP beats IPTC-IIM beats EXIF,
# the order recommended by the Metadata Working Group guidelines.
LANG_ALT_FIELDS: dict[str, tuple[str, ...]] = {
    "title": ("XMP-dc:Title", "IPTC:ObjectName", "XMP-photoshop:Headline", "IPTC:Headline",
              "IFD0:XPTitle"),
    "description": ("XMP-dc:Description", "IPTC:Caption-Abstract", "IFD0:ImageDescription",
                    "IFD0:XPComment", "XMP-exif:UserComment", "ExifIFD:UserComment"),
    "copyright": ("XMP-dc:Rights", "IPTC:CopyrightNotice", "IFD0:Copyright"),
}
LIST_FIELDS: dict[str, tuple[str, ...]] = {
    "keywords": ("XMP-dc:Subject", "IPTC:Keywords", "XMP-lr:HierarchicalSubject",
                 "IFD0:XPKeywords", "XMP-pdf:Keywords"),
    "creator": ("XMP-dc:Creator", "IPTC:By-line", "IFD0:Artist", "IFD0:XPAuthor"),
}
TEXT_FIELDS: dict[str, tuple[str, ...]] = {
    "licence": ("XMP-xmpRights:WebStatement", "XMP-cc:License", "XMP-xmpRights:UsageTerms"),
    "date_taken": ("ExifIFD:DateTimeOriginal", "XMP-exif:DateTimeOriginal",
                   "XMP-photoshop:DateCreated", "IPTC:DateCreated", "ExifIFD:CreateDate"),
}
# Location parts, most specific first; all present parts are kept.
LOCATION_TAGS: tuple[tuple[str, ...], ...] = (
    ("XMP-iptcCore:Location", "IPTC:Sub-location"),
    ("XMP-photoshop:City", "IPTC:City"),
    ("XMP-photoshop:State", "IPTC:Province-State"),
    ("XMP-photoshop:Country", "IPTC:Country-PrimaryLocationName"),
)
ORIENTATION_TAGS = ("IFD0:Orientation", "XMP-tiff:Orientation")


class ExifToolReader:
    """One long-lived ExifTool process in batch (``-stay_open``) mode.

    Use as a context manager::

        with ExifToolReader() as reader:
            raw = reader.read(["/photos/a.jpg", "/photos/a.jpg.xmp"])

    ``read`` returns ExifTool's JSON (``-G1 -a -n``) per path; a path ExifTool
    could not read at all maps to ``{"ExifTool:Error": reason}``.

    Raises:
        RuntimeError: ExifTool is not installed (message says how to install it).
    """

    COMMON_ARGS = ["-G1", "-a", "-n", "-charset", "filename=utf8", "-api", "LargeFileSupport=1"]

    def __init__(self, executable: str | None = None):
        self._executable = executable
        self._et: exiftool.ExifToolHelper | None = None

    def __enter__(self) -> "ExifToolReader":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        """Start the ExifTool process (idempotent)."""
        if self._et is not None and self._et.running:
            return
        kwargs: dict[str, Any] = {"common_args": self.COMMON_ARGS, "check_execute": False}
        if self._executable:
            kwargs["executable"] = self._executable
        try:
            self._et = exiftool.ExifToolHelper(**kwargs)
            self._et.run()
        except FileNotFoundError as exc:
            raise RuntimeError(
                "ExifTool is not installed: install it with "
                "'apt-get install libimage-exiftool-perl' (Debian/Ubuntu)"
            ) from exc

    def close(self) -> None:
        """Stop the ExifTool process."""
        if self._et is not None:
            try:
                self._et.terminate()
            except Exception:
                pass
            self._et = None

    @property
    def version(self) -> str:
        self.start()
        assert self._et is not None
        return str(self._et.version)

    def read(self, paths: Iterable[str]) -> dict[str, dict[str, Any]]:
        """Read metadata of ``paths`` in one ExifTool call; falls back to one call per
        path if the batch fails, so one hostile file cannot hide the others."""
        paths = list(paths)
        if not paths:
            return {}
        self.start()
        assert self._et is not None
        try:
            rows = self._et.get_metadata(paths)
        except Exception:
            if len(paths) == 1:
                self.close()
                return {paths[0]: {"ExifTool:Error": "ExifTool could not read this file"}}
            out: dict[str, dict[str, Any]] = {}
            for p in paths:
                out.update(self.read([p]))
            return out
        out = {str(r.get("SourceFile")): r for r in rows}
        for p in paths:
            out.setdefault(p, {"ExifTool:Error": "ExifTool returned no metadata for this file"})
        return out


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, list):
        return [str(v).strip() for v in value if str(v).strip()]
    text = str(value).strip()
    return [text] if text else []


def _lang_alt(raw: dict[str, Any], tag: str) -> dict[str, str]:
    """Collect ``Tag`` (x-default) and ``Tag-fr``/``Tag-de-DE`` variants into a dict."""
    out: dict[str, str] = {}
    base = raw.get(tag)
    if base is not None and str(base).strip():
        out["x-default"] = str(base).strip()
    prefix = tag + "-"
    for key, value in raw.items():
        if key.startswith(prefix) and value is not None and str(value).strip():
            lang = key[len(prefix):]
            if re.fullmatch(r"[a-zA-Z]{2,3}(-[A-Za-z0-9]+)*", lang):
                out.setdefault(lang, str(value).strip())
    return out


def _split_keywords(tag: str, values: list[str]) -> list[str]:
    if tag == "XMP-lr:HierarchicalSubject":
        parts: list[str] = []
        for v in values:
            parts.extend(p.strip() for p in v.split("|") if p.strip())
        return parts
    if tag in ("IFD0:XPKeywords", "XMP-pdf:Keywords"):
        parts = []
        for v in values:
            parts.extend(p.strip() for p in re.split(r"[;,]", v) if p.strip())
        return parts
    return values


def normalize(raw: dict[str, Any]) -> dict[str, Any]:
    """Map one ExifTool JSON object (``-G1 -a -n``) to Loupe's normalised fields."""
    out: dict[str, Any] = {}
    for field, tags in LANG_ALT_FIELDS.items():
        for tag in tags:
            if tag.startswith("XMP-"):
                alt = _lang_alt(raw, tag)
            else:
                alt = {"x-default": ", ".join(_as_list(raw.get(tag)))} if _as_list(raw.get(tag)) else {}
            if alt:
                out[field] = alt
                break
    for field, tags in LIST_FIELDS.items():
        values: list[str] = []
        for tag in tags:
            for v in _split_keywords(tag, _as_list(raw.get(tag))):
                if v.lower() not in {x.lower() for x in values}:
                    values.append(v)
            if values and field == "creator":
                break  # creators: the first standard that names them wins
        if values:
            out[field] = values
    for field, tags in TEXT_FIELDS.items():
        for tag in tags:
            vals = _as_list(raw.get(tag))
            if vals:
                out[field] = vals[0]
                break
    location: list[str] = []
    for tags in LOCATION_TAGS:
        for tag in tags:
            vals = _as_list(raw.get(tag))
            if vals:
                if vals[0] not in location:
                    location.append(vals[0])
                break
    if location:
        out["location"] = location
    for tag in ORIENTATION_TAGS:
        v = raw.get(tag)
        if isinstance(v, int) and 1 <= v <= 8:
            out["orientation"] = v
            break
    return out


def merge(embedded: dict[str, Any], sidecar: dict[str, Any] | None) -> dict[str, Any]:
    """Sidecar fields win over embedded ones, field by field."""
    merged = dict(embedded)
    if sidecar:
        for key, value in sidecar.items():
            if key == "orientation":
                continue  # orientation describes the stored pixels: the file's own EXIF
            merged[key] = value
    return merged


def check_readable(path: str, raw: dict[str, Any]) -> None:
    """Raise :class:`BadFile` (kind ``metadata``) for image ``path`` when ExifTool
    could not read its metadata at all (an ``Error`` in its output)."""
    err = raw.get("ExifTool:Error")
    if err:
        raise BadFile(path, "metadata", f"ExifTool could not read the metadata: {err}")


def sidecar_problem(sidecar: str, raw: dict[str, Any]) -> str | None:
    """Why an XMP sidecar cannot be used, or None when it can.

    A sidecar is unusable when ExifTool reports an error, when the XML is
    malformed (a "format error" warning: it would be read partially), when
    ExifTool does not recognise it as XMP, or when it holds no XMP property.
    The image is then indexed from its own metadata and the problem is
    recorded as a warning, so one bad sidecar never hides a good image.
    """
    err = raw.get("ExifTool:Error")
    if err:
        return f"XMP sidecar {sidecar} ignored: {err}"
    warn = str(raw.get("ExifTool:Warning") or "")
    if "format error" in warn.lower():
        return f"XMP sidecar {sidecar} ignored: malformed XML ({warn})"
    ftype = raw.get("File:FileType")
    if ftype != "XMP":
        return f"XMP sidecar {sidecar} ignored: not XMP (ExifTool reads it as {ftype or 'unknown'})"
    if not any(k.startswith("XMP-") and k != "XMP-x:XMPToolkit" for k in raw):
        return f"XMP sidecar {sidecar} ignored: it holds no XMP property"
    return None


def document_ids(raw_all: dict[str, Any]) -> tuple[str | None, str | None]:
    """The XMP Media Management ``DocumentID`` and ``OriginalDocumentID`` of one
    image, from ``{"file": raw, "sidecar": raw}`` (the sidecar's first), or None.

    Adobe's XMP specification (Part 2, xmpMM): DocumentID stays the same across
    saves of one document; OriginalDocumentID names the document a derivative
    ("save as", export) was made from. Ingest uses them to recognise a file that
    moved and changed bytes at once (SPEC S7).
    """
    out: list[str | None] = []
    for tag in ("XMP-xmpMM:DocumentID", "XMP-xmpMM:OriginalDocumentID"):
        value = None
        for part in ("sidecar", "file"):
            v = (raw_all.get(part) or {}).get(tag)
            if isinstance(v, str) and v.strip():
                value = v.strip()
                break
        out.append(value)
    return out[0], out[1]


#: Bounds on one file's normalised metadata, enforced before anything is
#: stored or indexed (SPEC N3, N5). PostgreSQL refuses a tsvector over
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
        if isinstance(value, dict):  # lang-alt
            alt = {}
            for lang, text in value.items():
                text = str(text)
                cut = _cut(text, MAX_TEXT_CHARS)
                if cut != text:
                    reasons.append(f"{field} ({lang}) truncated from {len(text):,} to "
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
