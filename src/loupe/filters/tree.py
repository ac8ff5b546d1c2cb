"""The filter tree (X4, C4): AND / OR / NOT over typed predicates.

Its JSON shape is the shared contract of docs/filters.md (and of the
conversational compiler)::

    node := {"all": [node, ...]} | {"any": [node, ...]} | {"not": node} | predicate
    predicate := one key naming the field, e.g.
      {"captured": {"from": "2019-01-01", "to": "2020-01-01"}}   half-open [from, to), UTC
      {"added":    {"from": ..., "to": ...}}                      the asset's date added
      {"creator": "Jane Doe"}  {"keyword": "harbour"}             case-insensitive, exact
      {"collection": "path or id:N"}                              sub-collections included
      {"media_type": "image/png"}  {"format": "png"}
      {"kind": "photo"}  {"colour": "red"}  {"background": "white"}  {"cutout": true}
      {"monochrome": true}  (black and white / greyscale pixels)
      {"orientation": "portrait"|"landscape"|"square"|"panorama"}  as displayed
      {"country": "Portugal"}  {"location": "Lisbon"}  {"city": "Lisbon"}
      {"camera": "Canon EOS R5"}  {"make": "Canon"}  {"lens": "RF24-105mm F4 L IS USM"}
      {"label": "Red"}
      {"rating": 4}  {"rating": {"min": 4}}  {"rating": {"min": -1, "max": -1}}  (-1 rejected)
      {"near": {"lat": 38.72, "lon": -9.14, "km": 5}}             within km (great circle)
      {"bbox": {"south": 38, "west": -10, "north": 39, "east": -9}}  west > east: across 180°
      {"instant": {"from": "2024-06-01T22:00:00+00:00", "to": ...}}  the true instant of
          capture (files whose zone is known), half-open, each end with its offset
      {"person": "Name"}
      {"rights": "embargoed"|"expired"} | {"rights": {"expiring_before": "YYYY-MM-DD"}}

:func:`parse` turns that JSON (a dict, or a JSON string) into immutable
nodes (:class:`All`, :class:`Any_`, :class:`Not`, :class:`Pred`) and
:meth:`Node.to_json` gives exactly the same JSON back (round trip).
Every error is a :class:`FilterError` naming the bad node by its path in
the tree, e.g. ``$.all[1].captured.from``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Union

#: Deepest nesting accepted (a hostile tree cannot exhaust the stack).
MAX_DEPTH = 16
#: Most predicates in one tree (each is one clause of the search statement).
MAX_PREDICATES = 64
#: Longest text value (creator, keyword, location...), in characters.
MAX_VALUE_CHARS = 200
#: Longest JSON text accepted by :func:`parse`.
MAX_JSON_CHARS = 20_000

KINDS = ("photo", "illustration", "clipart", "lineart", "screenshot", "document", "icon")
ORIENTATIONS = ("portrait", "landscape", "square", "panorama")
BACKGROUNDS = ("transparent", "white", "black", "uniform", "scene")
RIGHTS_STATES = ("embargoed", "expired")
#: File formats by name (``{"format": "jpg"}``) → the media types Loupe stores
#: (loupe.ingest.image.FORMATS).
FORMATS = {"jpeg": "image/jpeg", "jpg": "image/jpeg", "png": "image/png",
           "webp": "image/webp", "tiff": "image/tiff", "tif": "image/tiff",
           "gif": "image/gif", "heic": "image/heic", "heif": "image/heic",
           "avif": "image/avif", "jxl": "image/jxl",
           "cr2": "image/x-canon-cr2", "cr3": "image/x-canon-cr3", "nef": "image/x-nikon-nef",
           "arw": "image/x-sony-arw", "dng": "image/x-adobe-dng", "raf": "image/x-fuji-raf",
           "orf": "image/x-olympus-orf", "rw2": "image/x-panasonic-rw2",
           "mp4": "video/mp4", "mov": "video/quicktime", "m4v": "video/x-m4v",
           "mkv": "video/x-matroska", "webm": "video/webm", "avi": "video/x-msvideo"}
#: Fields whose value is one text (matched case-insensitively, exactly).
TEXT_FIELDS = ("creator", "keyword", "collection", "country", "location", "person", "colour",
               "camera", "make", "lens", "label", "city")
#: Ratings a file may carry: -1 (rejected), 0 (none given) .. 5 stars (XMP Rating).
RATINGS = (-1, 0, 1, 2, 3, 4, 5)
#: The widest ``near`` radius accepted, km (half the Earth's circumference).
MAX_NEAR_KM = 20_016.0
#: Fields whose value is one of a fixed list.
CHOICE_FIELDS = {"kind": KINDS, "orientation": ORIENTATIONS, "background": BACKGROUNDS}
DATE_FIELDS = ("captured", "added")
FIELDS = (DATE_FIELDS + TEXT_FIELDS + tuple(CHOICE_FIELDS)
          + ("media_type", "format", "cutout", "monochrome", "rights", "rating", "near", "bbox",
             "instant"))

_MEDIA_TYPE = re.compile(r"(image|video)/[a-z0-9][a-z0-9.+-]{0,60}")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


class FilterError(ValueError):
    """A filter tree that is not valid; ``path`` names the bad node
    (``$`` is the root, ``$.all[2].not`` a child)."""

    def __init__(self, path: str, message: str):
        self.path = path
        super().__init__(f"filter {path}: {message}")


class Node:
    """A node of the filter tree."""

    def to_json(self) -> Any:  # pragma: no cover - overridden
        raise NotImplementedError

    def predicates(self) -> list["Pred"]:
        """Every predicate of the tree, depth first."""
        raise NotImplementedError

    def dumps(self) -> str:
        """The tree as compact JSON text."""
        return json.dumps(self.to_json(), ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True)
class All(Node):
    """Every child holds (AND)."""

    children: tuple[Node, ...]

    def to_json(self) -> Any:
        return {"all": [c.to_json() for c in self.children]}

    def predicates(self) -> list["Pred"]:
        return [p for c in self.children for p in c.predicates()]


@dataclass(frozen=True)
class Any_(Node):
    """At least one child holds (OR)."""

    children: tuple[Node, ...]

    def to_json(self) -> Any:
        return {"any": [c.to_json() for c in self.children]}

    def predicates(self) -> list["Pred"]:
        return [p for c in self.children for p in c.predicates()]


@dataclass(frozen=True)
class Not(Node):
    """The child does not hold."""

    child: Node

    def to_json(self) -> Any:
        return {"not": self.child.to_json()}

    def predicates(self) -> list["Pred"]:
        return self.child.predicates()


@dataclass(frozen=True)
class Pred(Node):
    """One predicate: ``field`` (one of :data:`FIELDS`) and its value as
    written in JSON (a str, a bool, or a dict for dates and rights)."""

    field: str
    value: Any

    def to_json(self) -> Any:
        return {self.field: _copy(self.value)}

    def predicates(self) -> list["Pred"]:
        return [self]


def _copy(v: Any) -> Any:
    return dict(v) if isinstance(v, dict) else v


FilterTree = Union[All, Any_, Not, Pred]


def parse(tree: Any) -> Node:
    """A filter tree from its JSON form (a dict, a JSON string, or a node
    already parsed, returned as is).

    Raises:
        FilterError: the JSON is not a valid tree; the message names the
            node (``$.any[0].captured.to``) and what is wrong with it.
    """
    if isinstance(tree, Node):
        return tree
    if isinstance(tree, (str, bytes)):
        if len(tree) > MAX_JSON_CHARS:
            raise FilterError("$", f"the filter JSON is {len(tree):,} characters: at most "
                                   f"{MAX_JSON_CHARS:,}")
        try:
            tree = json.loads(tree)
        except ValueError as exc:
            raise FilterError("$", f"not JSON ({exc})") from None
        except RecursionError:  # ~1,000 levels: far past MAX_DEPTH: a clear error, not a crash
            raise FilterError("$", f"nested deeper than {MAX_DEPTH} levels") from None
    count = [0]
    return _node(tree, "$", 0, count)


def _node(obj: Any, path: str, depth: int, count: list[int]) -> Node:
    if depth > MAX_DEPTH:
        raise FilterError(path, f"nested deeper than {MAX_DEPTH} levels")
    if not isinstance(obj, dict) or len(obj) != 1:
        raise FilterError(path, "a node is an object with exactly one key: all, any, not or "
                                "a field (" + ", ".join(FIELDS) + ")")
    (key, val), = obj.items()
    if key in ("all", "any"):
        if not isinstance(val, list) or not val:
            raise FilterError(f"{path}.{key}", "a non-empty list of nodes")
        kids = tuple(_node(v, f"{path}.{key}[{i}]", depth + 1, count) for i, v in enumerate(val))
        return All(kids) if key == "all" else Any_(kids)
    if key == "not":
        return Not(_node(val, f"{path}.not", depth + 1, count))
    count[0] += 1
    if count[0] > MAX_PREDICATES:
        raise FilterError(path, f"more than {MAX_PREDICATES} predicates in one filter")
    return Pred(key, _value(key, val, f"{path}.{key}"))


def _text(val: Any, path: str) -> str:
    if not isinstance(val, str) or not val.strip():
        raise FilterError(path, "a non-empty text")
    if len(val) > MAX_VALUE_CHARS:
        raise FilterError(path, f"{len(val):,} characters: at most {MAX_VALUE_CHARS}")
    if any(ord(ch) < 32 for ch in val):
        raise FilterError(path, "control characters are not allowed")
    return val


#: Years a date of a filter may have: the range's end, the next day, must
#: still be a date (9999-12-31 overflowed).
FIRST_YEAR, LAST_YEAR = 1800, 9998


def in_calendar(year: int) -> bool:
    """Whether ``year`` is within [FIRST_YEAR, LAST_YEAR]."""
    return FIRST_YEAR <= year <= LAST_YEAR


def _date(val: Any, path: str) -> str:
    if not isinstance(val, str) or not _DATE.fullmatch(val):
        raise FilterError(path, f"{val!r} is not a date YYYY-MM-DD")
    try:
        d = date.fromisoformat(val)
    except ValueError:
        raise FilterError(path, f"{val!r} is not a calendar date") from None
    if not in_calendar(d.year):
        raise FilterError(path, f"{val!r}: years {FIRST_YEAR}-{LAST_YEAR} only")
    return val


def _value(key: str, val: Any, path: str) -> Any:
    if key in DATE_FIELDS:
        if not isinstance(val, dict) or not val or set(val) - {"from", "to"}:
            raise FilterError(path, 'a range {"from": "YYYY-MM-DD", "to": "YYYY-MM-DD"} '
                                    '(either end may be left out)')
        out = {k: _date(val[k], f"{path}.{k}") for k in ("from", "to") if k in val}
        if "from" in out and "to" in out and out["from"] >= out["to"]:
            raise FilterError(path, f"an empty range: from {out['from']} is not before to "
                                    f"{out['to']} (the range is [from, to))")
        return out
    if key in TEXT_FIELDS:
        return _text(val, path)
    if key in CHOICE_FIELDS:
        if val not in CHOICE_FIELDS[key]:
            raise FilterError(path, f"{val!r} is not one of " + ", ".join(CHOICE_FIELDS[key]))
        return val
    if key == "media_type":
        if not isinstance(val, str) or not _MEDIA_TYPE.fullmatch(val.lower()):
            raise FilterError(path, f"{val!r} is not an image media type (image/png)")
        return val
    if key == "format":
        if not isinstance(val, str) or val.lower().lstrip(".") not in FORMATS:
            raise FilterError(path, f"{val!r} is not a format Loupe reads: "
                                    + ", ".join(sorted(FORMATS)))
        return val
    if key in ("cutout", "monochrome"):
        if not isinstance(val, bool):
            raise FilterError(path, "true or false")
        return val
    if key == "rating":
        return _rating(val, path)
    if key == "instant":
        if not isinstance(val, dict) or not val or set(val) - {"from", "to"}:
            raise FilterError(path, 'a range {"from": "YYYY-MM-DDTHH:MM:SS+HH:MM", "to": ...} '
                                    '(either end may be left out)')
        out = {k: _instant(val[k], f"{path}.{k}") for k in ("from", "to") if k in val}
        if "from" in out and "to" in out and (datetime.fromisoformat(out["from"])
                                              >= datetime.fromisoformat(out["to"])):
            raise FilterError(path, f"an empty range: from {out['from']} is not before to "
                                    f"{out['to']} (the range is [from, to))")
        return out
    if key == "near":
        if not isinstance(val, dict) or set(val) != {"lat", "lon", "km"}:
            raise FilterError(path, '{"lat": degrees, "lon": degrees, "km": distance}')
        out = {"lat": _number(val["lat"], f"{path}.lat", -90, 90),
               "lon": _number(val["lon"], f"{path}.lon", -180, 180),
               "km": _number(val["km"], f"{path}.km", 0, MAX_NEAR_KM)}
        if out["km"] <= 0:
            raise FilterError(f"{path}.km", "a distance above 0 km")
        return out
    if key == "bbox":
        sides = {"south": 90, "west": 180, "north": 90, "east": 180}
        if not isinstance(val, dict) or set(val) != set(sides):
            raise FilterError(path, '{"south", "west", "north", "east"} in degrees')
        out = {k: _number(val[k], f"{path}.{k}", -lim, lim) for k, lim in sides.items()}
        if out["south"] > out["north"]:
            raise FilterError(path, f"south {out['south']} is north of north {out['north']}")
        return out
    if key == "rights":
        if val in RIGHTS_STATES:
            return val
        if isinstance(val, dict) and set(val) == {"expiring_before"}:
            return {"expiring_before": _date(val["expiring_before"], f"{path}.expiring_before")}
        raise FilterError(path, '"embargoed", "expired" or {"expiring_before": "YYYY-MM-DD"}')
    raise FilterError(path, f"unknown field {key!r}: one of all, any, not, " + ", ".join(FIELDS))


def _instant(val: Any, path: str) -> str:
    """An ISO 8601 date and time with its offset (``Z`` or ``±HH:MM``)."""
    if not isinstance(val, str) or len(val) > 40:
        raise FilterError(path, f"{val!r} is not a date and time with its offset")
    try:
        t = datetime.fromisoformat(val)
    except ValueError:
        raise FilterError(path, f"{val!r} is not a date and time with its offset") from None
    if t.tzinfo is None:
        raise FilterError(path, f"{val!r} has no offset (Z or +HH:MM): an instant needs one")
    if not in_calendar(t.year):
        raise FilterError(path, f"{val!r}: years {FIRST_YEAR}-{LAST_YEAR} only")
    return val


def _number(val: Any, path: str, lo: float, hi: float) -> float:
    if isinstance(val, bool) or not isinstance(val, (int, float)) or val != val:
        raise FilterError(path, f"{val!r} is not a number")
    if not lo <= val <= hi:
        raise FilterError(path, f"{val!r} is outside {lo:g}..{hi:g}")
    return float(val)


def _rating(val: Any, path: str) -> Any:
    """A rating (one of :data:`RATINGS`) or a range ``{"min", "max"}`` of them."""
    def one(v: Any, p: str) -> int:
        if isinstance(v, bool) or not isinstance(v, int) or v not in RATINGS:
            raise FilterError(p, f"{v!r} is not a rating: -1 (rejected), 0 .. 5")
        return v
    if isinstance(val, dict):
        if not val or set(val) - {"min", "max"}:
            raise FilterError(path, 'a rating -1..5 or {"min": n, "max": m} (either may be '
                                    'left out)')
        out = {k: one(val[k], f"{path}.{k}") for k in ("min", "max") if k in val}
        if "min" in out and "max" in out and out["min"] > out["max"]:
            raise FilterError(path, f"an empty range: min {out['min']} is above max "
                                    f"{out['max']}")
        return out
    return one(val, path)


def rating_option(text: str) -> Any:
    """The ``rating`` value of a readable option: ``"4+"`` (4 or more),
    ``"3"`` (exactly 3), ``"2-4"``, ``"rejected"`` or ``"-1"``.

    Raises:
        FilterError: not one of these forms (named ``--rating``).
    """
    t = text.strip().lower()
    try:
        if t in ("rejected", "reject", "-1"):
            return -1
        if t.endswith("+"):
            return _rating({"min": int(t[:-1])}, "--rating")
        if "-" in t[1:]:
            lo, hi = t.split("-", 1) if not t.startswith("-") else ("-1", t[3:])
            return _rating({"min": int(lo), "max": int(hi)}, "--rating")
        return _rating(int(t), "--rating")
    except ValueError:
        raise FilterError("--rating", f"{text!r} is not a rating: 4+, 3, 2-4 or rejected") \
            from None


def _floats(text: str, n: int, path: str) -> list[float]:
    parts = [p.strip() for p in text.split(",")]
    try:
        vals = [float(p) for p in parts]
    except ValueError:
        vals = []
    if len(vals) != n:
        raise FilterError(path, f"{text!r}: {n} numbers separated by commas")
    return vals


def near_option(point: str, within_km: Any = None) -> dict[str, Any]:
    """The ``near`` value of the options ``--near LAT,LON --within KM``
    (``within_km`` None: 1 km).

    Raises:
        FilterError: not two numbers, or out of range.
    """
    lat, lon = _floats(point, 2, "--near")
    km = 1.0 if within_km in (None, "") else within_km
    try:
        km = float(km)
    except (TypeError, ValueError):
        raise FilterError("--within", f"{within_km!r} is not a distance in km") from None
    return _value("near", {"lat": lat, "lon": lon, "km": km}, "--near")


def bbox_option(text: str) -> dict[str, Any]:
    """The ``bbox`` value of the option ``--bbox SOUTH,WEST,NORTH,EAST`` (degrees)."""
    s, w, n, e = _floats(text, 4, "--bbox")
    return _value("bbox", {"south": s, "west": w, "north": n, "east": e}, "--bbox")


def all_of(*nodes: Any) -> Node:
    """The AND of several trees (JSON or nodes); one tree alone as is."""
    parsed = [parse(n) for n in nodes if n is not None]
    if not parsed:
        raise FilterError("$", "no filter given")
    return parsed[0] if len(parsed) == 1 else All(tuple(parsed))
