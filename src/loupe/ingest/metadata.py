"""ExifTool's tags mapped to Loupe's normalised metadata fields (S6).

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
      "people":      ["Jane Doe"],            # names a person wrote (see below)
      "regions":     [{"name": "Jane Doe", "x": 0.15, "y": 0.3, "w": 0.2, "h": 0.4,
                       "source": "mwg"}],     # named face regions, top-left, 0..1
    }

``people`` holds the names of the people in the picture as a person wrote
them (X2: only names a person gave are searchable): XMP MWG face
regions (``mwg-rs:Regions`` of ``Type=Face``), IPTC Extension
``PersonInImage`` (and ``PersonInImageWDetails/PersonName``), Microsoft
Photo regions (``MP:RegionInfoMP`` ``PersonDisplayName``), digiKam
``TagsList`` and Lightroom ``HierarchicalSubject`` paths under ``People``.
``regions`` keeps the named areas of the MWG and Microsoft regions, so that
a detected face can later be linked to the name written over it.

Absent fields are absent keys. When an XMP sidecar exists its fields take
precedence, field by field, over the embedded ones (the sidecar is where DAMs
and raw developers write edits); fields the sidecar does not carry fall back
to the embedded metadata.
"""

from __future__ import annotations

import re
from typing import Any


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


#: Root tags under which digiKam (``TagsList``, ``/``) and Lightroom
#: (``HierarchicalSubject``, ``|``) file the people tagged in a picture.
PEOPLE_ROOTS = frozenset({"people", "persons", "person"})
#: digiKam's own face-tag states under ``People`` (not names: "Unknown" and
#: "Unconfirmed" faces and "Ignored" ones, digiKam 7+ face management).
DIGIKAM_NOT_NAMES = frozenset({"unknown", "unconfirmed", "ignored"})


def _unit_float(value: Any) -> float | None:
    """``value`` as a finite float, or None."""
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return f if f == f and f not in (float("inf"), float("-inf")) else None


def _box(x: float | None, y: float | None, w: float | None, h: float | None
         ) -> dict[str, float] | None:
    """A normalised top-left box clipped to the picture, or None when any part
    is missing, not a number, or the box is empty or wholly outside 0..1."""
    if None in (x, y, w, h) or w <= 0 or h <= 0:  # type: ignore[operator]
        return None
    x0, y0 = max(0.0, x), max(0.0, y)  # type: ignore[type-var]
    x1, y1 = min(1.0, x + w), min(1.0, y + h)  # type: ignore[operator]
    if x1 <= x0 or y1 <= y0:
        return None
    return {"x": round(x0, 6), "y": round(y0, 6), "w": round(x1 - x0, 6), "h": round(y1 - y0, 6)}


def _as_dicts(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, dict):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, dict)]
    return []


def _mwg_regions(raw: dict[str, Any]) -> list[dict[str, Any]]:
    """Named face regions of the Metadata Working Group's region schema
    (MWG Guidelines 2.0, section 5.9: ``Area`` X/Y is the centre, W/H the
    size, normalised unless ``Unit`` says pixel, then divided by
    ``AppliedToDimensions``). Only ``Type=Face`` regions name people."""
    out: list[dict[str, Any]] = []
    for info in _as_dicts(raw.get("XMP-mwg-rs:RegionInfo")):
        dims = info.get("AppliedToDimensions") if isinstance(info.get("AppliedToDimensions"),
                                                              dict) else {}
        dw, dh = _unit_float(dims.get("W")), _unit_float(dims.get("H"))
        for region in _as_dicts(info.get("RegionList")):
            if str(region.get("Type", "")).strip().lower() != "face":
                continue
            name = str(region.get("Name") or "").strip()
            if not name:
                continue
            area = region.get("Area") if isinstance(region.get("Area"), dict) else {}
            cx, cy = _unit_float(area.get("X")), _unit_float(area.get("Y"))
            w, h = _unit_float(area.get("W")), _unit_float(area.get("H"))
            if str(area.get("Unit", "normalized")).lower() == "pixel":
                if dw and dh and dw > 0 and dh > 0 and None not in (cx, cy, w, h):
                    cx, cy, w, h = cx / dw, cy / dh, w / dw, h / dh  # type: ignore[operator]
                else:
                    cx = None
            box = (_box(cx - w / 2, cy - h / 2, w, h)  # type: ignore[operator]
                   if None not in (cx, cy, w, h) else None)
            out.append({"name": name, **(box or {}), "source": "mwg"})
    if not out and "XMP-mwg-rs:RegionName" in raw:
        # flattened form (metadata read before -struct, kept in raw_metadata):
        # one list per field, paired only when every list has one value per
        # region (a region lacking a field would shift the others)
        names, types = _as_list(raw.get("XMP-mwg-rs:RegionName")), \
            _as_list(raw.get("XMP-mwg-rs:RegionType"))
        if len(names) == len(types):
            out = [{"name": n, "source": "mwg"} for n, t in zip(names, types)
                   if t.lower() == "face"]
    return out


def _mp_regions(raw: dict[str, Any]) -> list[dict[str, Any]]:
    """Named regions of Microsoft Photo's region schema (``MP:RegionInfoMP``,
    Windows Photo Gallery): ``Rectangle`` is "x, y, w, h", top-left, normalised."""
    out: list[dict[str, Any]] = []
    for info in _as_dicts(raw.get("XMP-MP:RegionInfoMP")):
        for region in _as_dicts(info.get("Regions")):
            name = str(region.get("PersonDisplayName") or "").strip()
            if not name:
                continue
            parts = [_unit_float(p) for p in str(region.get("Rectangle") or "").split(",")]
            box = _box(*parts) if len(parts) == 4 else None
            out.append({"name": name, **(box or {}), "source": "mp"})
    # flattened form (a reader without -struct): names only
    if not out:
        out = [{"name": n, "source": "mp"}
               for n in _as_list(raw.get("XMP-MP:RegionPersonDisplayName"))]
    return out


def _people_paths(values: list[str], sep: str) -> list[str]:
    """The leaf names of tag paths under a :data:`PEOPLE_ROOTS` root
    (``People/Family/Dora Ek`` -> ``Dora Ek``), without digiKam's face states."""
    out = []
    for v in values:
        parts = [p.strip() for p in v.split(sep) if p.strip()]
        if len(parts) >= 2 and parts[0].lower() in PEOPLE_ROOTS:
            if parts[-1].lower() not in DIGIKAM_NOT_NAMES:
                out.append(parts[-1])
    return out


def people_fields(raw: dict[str, Any]) -> tuple[list[str], list[dict[str, Any]]]:
    """``(people, regions)`` of one ExifTool JSON object (``-struct``): the
    names people wrote into the file, first seen first, case-insensitively
    unique, and the named face regions with their boxes (see module doc)."""
    regions = _mwg_regions(raw) + _mp_regions(raw)
    names = [r["name"] for r in regions]
    names += _as_list(raw.get("XMP-iptcExt:PersonInImage"))
    for details in _as_dicts(raw.get("XMP-iptcExt:PersonInImageWDetails")):
        names += _as_list(details.get("PersonName"))
    names += _people_paths(_as_list(raw.get("XMP-digiKam:TagsList")), "/")
    names += _people_paths(_as_list(raw.get("XMP-lr:HierarchicalSubject")), "|")
    people: list[str] = []
    seen: set[str] = set()
    for n in names:
        if n.lower() not in seen:
            seen.add(n.lower())
            people.append(n)
    return people, regions


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
    people, regions = people_fields(raw)
    if people:
        out["people"] = people
    if regions:
        out["regions"] = regions
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


def sidecar_problem(sidecar: str, raw: dict[str, Any]) -> str | None:
    """Why an XMP sidecar cannot be used, or None when it can.

    A sidecar is unusable when ExifTool reports an error, when the XML is
    malformed (a "format error" warning: it would be read partially), when
    ExifTool does not recognise it as XMP, when it holds no XMP property, or
    when it was refused before ExifTool read it (``Loupe:Refused``: its XML
    too deep or too large, :mod:`loupe.ingest.xmpcheck`). The image is then indexed from its own metadata and the problem is
    recorded as a warning, so one bad sidecar never hides a good image.
    """
    if raw.get("Loupe:Refused"):      # refused before ExifTool (ingest.xmpcheck)
        return str(raw["Loupe:Refused"])
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
    moved and changed bytes at once (S7).
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
