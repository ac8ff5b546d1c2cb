"""Where, when and with what a picture was taken, from ExifTool's answer
(``-G1 -a -n``): coordinates and place, capture time with its zone, rating
and colour label, camera, lens and exposure.

:func:`capture_fields` maps one file's answers (the file's own and its XMP
sidecar's, the sidecar winning field by field as for every other field) to
these keys of the file's normalised metadata (all optional)::

    "gps":      {"lat": 38.7223, "lon": -9.1393, "alt": 55.5, "direction": 123.4}
    "place":    {"city": "...", "state": "Lisbon", "county": "Lisbon",
                 "country": "Portugal", "country_code": "PT", "km": 0.9}
    "captured": {"local": "2024:06:02 00:30:00", "offset_min": 60,
                 "source": "DateTimeOriginal", "zone": "Europe/Lisbon",
                 "offset_from": "file"}
    "rating":   4          # -1 (rejected) .. 5
    "label":    "Red"
    "camera":   "Canon EOS R5"
    "make":     "Canon"      # the maker's first word, as people name the brand
    "lens":     "RF24-105mm F4 L IS USM"
    "exposure": {"focal_mm": 50.0, "aperture": 4.0, "iso": 400, "exposure_s": 0.004}

Capture time, in this order of sources (the first present wins; a file's
modification time never counts): **DateTimeOriginal** (EXIF, then XMP) with
OffsetTimeOriginal; IPTC/XMP **DateCreated**; **CreateDate** (EXIF, then XMP)
with OffsetTimeDigitized; **GPSDateTime** (UTC); the **QuickTime dates** of a
video (Apple's ``Keys:CreationDate``, which carries its offset, then
``QuickTime:CreateDate``, UTC by the QuickTime specification). ``local`` is
the wall clock where the picture was taken: a UTC source is turned into it
with the zone of its coordinates when it has some (else it stays UTC,
``offset_min`` 0); a source without an offset gets the zone's offset at that
wall-clock time when the coordinates give a zone (``offset_from``
``coordinates``). Day filters read ``local``; ordering and instant ranges
the true instant, ``local`` less ``offset_min``, where it is known.
"""

from __future__ import annotations

import math
import re
from datetime import datetime, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo

from .places import offset_minutes, place_of, valid_point, zone_of

#: Longest camera, lens or label name kept (characters); longer values are
#: not kept (no real one comes near; the filter bound is 200).
MAX_NAME_CHARS = 120

#: Makers as their EXIF Make writes them (first word, lower-case) -> the name
#: people use ("NIKON CORPORATION" -> "Nikon", "FUJIFILM" -> "Fujifilm").
MAKES = {"canon": "Canon", "nikon": "Nikon", "sony": "Sony", "fujifilm": "Fujifilm",
         "fuji": "Fujifilm", "olympus": "Olympus", "om": "OM System", "panasonic": "Panasonic",
         "leica": "Leica", "pentax": "Pentax", "ricoh": "Ricoh", "hasselblad": "Hasselblad",
         "apple": "Apple", "samsung": "Samsung", "google": "Google", "dji": "DJI",
         "gopro": "GoPro", "sigma": "Sigma", "xiaomi": "Xiaomi", "huawei": "Huawei",
         "eastman": "Kodak", "kodak": "Kodak", "minolta": "Minolta", "konica": "Konica Minolta"}

# (source name, tags in order, offset tags in order)
TIME_SOURCES: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("DateTimeOriginal", ("ExifIFD:DateTimeOriginal", "XMP-exif:DateTimeOriginal"),
     ("ExifIFD:OffsetTimeOriginal",)),
    ("DateCreated", ("XMP-photoshop:DateCreated", "IPTC:DateCreated"), ()),
    ("CreateDate", ("ExifIFD:CreateDate", "XMP-xmp:CreateDate"),
     ("ExifIFD:OffsetTimeDigitized",)),
)
#: The order of sources, as documented (docs/formats.md).
SOURCE_ORDER = ("DateTimeOriginal", "DateCreated", "CreateDate", "GPSDateTime",
                "QuickTime:CreationDate", "QuickTime:CreateDate")

_DATE = re.compile(r"^\s*(\d{4})[:-](\d{2})[:-](\d{2})(?:[ T](\d{2}):(\d{2})(?::(\d{2}))?"
                   r"(?:\.\d+)?)?\s*(Z|[+-]\d{2}:?\d{2})?\s*$")
_OFFSET = re.compile(r"^\s*([+-])(\d{2}):?(\d{2})\s*$")


#: Every tag this module reads (kept first when ExifTool's answer is cut to
#: its bounds: :func:`loupe.ingest.metadata_bounds.hold_bounded`).
READ_TAGS = frozenset({
    "Composite:GPSLatitude", "Composite:GPSLongitude", "Composite:GPSAltitude",
    "XMP-exif:GPSLatitude", "XMP-exif:GPSLongitude", "XMP-exif:GPSAltitude",
    "Keys:GPSCoordinates", "UserData:GPSCoordinates", "ItemList:GPSCoordinates",
    "GPS:GPSImgDirection", "XMP-exif:GPSImgDirection", "Composite:GPSDateTime",
    "Keys:CreationDate", "UserData:CreationDate", "QuickTime:CreateDate",
    "XMP-xmp:Rating", "IFD0:Rating", "XMP-xmp:Label",
    "IFD0:Make", "QuickTime:Make", "Keys:Make", "UserData:Make",
    "IFD0:Model", "QuickTime:Model", "Keys:Model", "UserData:Model",
    "ExifIFD:LensModel", "XMP-exifEX:LensModel", "XMP-aux:Lens", "Composite:LensID",
    "ExifIFD:FocalLength", "XMP-exif:FocalLength", "ExifIFD:FNumber", "Composite:Aperture",
    "XMP-exif:FNumber", "ExifIFD:ISO", "XMP-exif:ISOSpeedRatings", "ExifIFD:ExposureTime",
    "XMP-exif:ExposureTime",
    *(t for _, tags, offsets in TIME_SOURCES for t in (*tags, *offsets)),
})


def parse_date(value: Any) -> tuple[datetime, int | None] | None:
    """``(wall clock, offset minutes or None)`` of an EXIF/XMP/QuickTime date
    string (``2024:06:02 00:30:00``, ``2024-06-02T00:30:00+01:00``, ``...Z``),
    or None: not a date, a zero date (``0000:00:00``), or out of range."""
    if not isinstance(value, str):
        return None
    m = _DATE.match(value)
    if not m:
        return None
    y, mo, d = int(m[1]), int(m[2]), int(m[3])
    h, mi, s = int(m[4] or 0), int(m[5] or 0), int(m[6] or 0)
    try:
        when = datetime(y, mo, d, h, mi, min(s, 59))
    except ValueError:
        return None
    if y < 1800:
        return None
    off = m[7]
    if off is None:
        return when, None
    if off == "Z":
        return when, 0
    return when, parse_offset(off)


def parse_offset(value: Any) -> int | None:
    """Minutes east of UTC of an EXIF offset (``"+01:00"``, ``"-0430"``), or
    None (absent, malformed, or past ±14 hours)."""
    if not isinstance(value, str):
        return None
    m = _OFFSET.match(value)
    if not m:
        return None
    minutes = int(m[2]) * 60 + int(m[3])
    if minutes > 14 * 60 or int(m[3]) >= 60:
        return None
    return -minutes if m[1] == "-" else minutes


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if isinstance(value, (int, float)) and math.isfinite(value):
        return float(value)
    return None


def _first(raw: dict[str, Any], tags: tuple[str, ...]) -> Any:
    for tag in tags:
        v = raw.get(tag)
        if v not in (None, "", []):
            return v
    return None


def _name(value: Any) -> str | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        return None
    text = " ".join(value.split())
    if not text or len(text) > MAX_NAME_CHARS or not any(c.isalnum() for c in text):
        return None
    return text


def read_gps(raw: dict[str, Any]) -> dict[str, float] | None:
    """``{"lat", "lon"[, "alt"][, "direction"]}`` (degrees; metres above sea
    level; degrees from north) of one answer, or None. Signed coordinates
    from ExifTool's Composite tags (the EXIF references applied), XMP's, or a
    video's ISO 6709 ``GPSCoordinates`` (``"lat lon alt"``)."""
    lat = _number(_first(raw, ("Composite:GPSLatitude", "XMP-exif:GPSLatitude")))
    lon = _number(_first(raw, ("Composite:GPSLongitude", "XMP-exif:GPSLongitude")))
    alt = _number(_first(raw, ("Composite:GPSAltitude", "XMP-exif:GPSAltitude")))
    if lat is None or lon is None:
        coords = _first(raw, ("Keys:GPSCoordinates", "UserData:GPSCoordinates",
                              "ItemList:GPSCoordinates"))
        parts = str(coords).split() if isinstance(coords, str) else []
        if len(parts) >= 2:
            lat, lon = _number(parts[0]), _number(parts[1])
            alt = _number(parts[2]) if len(parts) > 2 else alt
    if lat is None or lon is None or not valid_point(lat, lon):
        return None
    out = {"lat": round(lat, 7), "lon": round(lon, 7)}
    if alt is not None and -12_000 <= alt <= 100_000:
        out["alt"] = round(alt, 2)
    direction = _number(_first(raw, ("GPS:GPSImgDirection", "XMP-exif:GPSImgDirection")))
    if direction is not None and 0 <= direction <= 360:
        out["direction"] = round(direction % 360, 2)
    return out


def _read_time(raw: dict[str, Any]) -> tuple[str, datetime, int | None, bool] | None:
    """``(source, wall clock or UTC time, offset or None, is_utc)`` of the first
    source of :data:`SOURCE_ORDER` present in one answer."""
    for source, tags, offset_tags in TIME_SOURCES:
        for tag in tags:
            got = parse_date(raw.get(tag))
            if got is not None:
                when, off = got
                if off is None:
                    off = parse_offset(_first(raw, offset_tags)) if offset_tags else None
                return source, when, off, False
    got = parse_date(raw.get("Composite:GPSDateTime"))
    if got is not None:
        return "GPSDateTime", got[0], 0, True
    got = parse_date(_first(raw, ("Keys:CreationDate", "UserData:CreationDate")))
    if got is not None:
        return "QuickTime:CreationDate", got[0], got[1], False
    got = parse_date(raw.get("QuickTime:CreateDate"))
    if got is not None:
        return "QuickTime:CreateDate", got[0], 0, True
    return None


def read_camera(raw: dict[str, Any]) -> dict[str, Any]:
    """``rating``, ``label``, ``camera``, ``lens`` and ``exposure`` of one
    answer (absent keys for what it does not say)."""
    out: dict[str, Any] = {}
    rating = _number(_first(raw, ("XMP-xmp:Rating", "IFD0:Rating")))
    if rating is not None and rating == int(rating) and -1 <= rating <= 5:
        out["rating"] = int(rating)
    label = _name(raw.get("XMP-xmp:Label"))
    if label:
        out["label"] = label
    make = _name(_first(raw, ("IFD0:Make", "QuickTime:Make", "Keys:Make", "UserData:Make")))
    model = _name(_first(raw, ("IFD0:Model", "QuickTime:Model", "Keys:Model",
                               "UserData:Model")))
    if model:
        # "Canon" + "Canon EOS R5" -> "Canon EOS R5"; "NIKON CORPORATION" +
        # "NIKON D850" -> "NIKON D850"; "SONY" + "ILCE-7M3" -> "SONY ILCE-7M3"
        first = (make or "").split()[0].lower() if make else ""
        camera = model if not make or model.lower().startswith(first) else f"{make} {model}"
        if len(camera) <= MAX_NAME_CHARS:
            out["camera"] = camera
    elif make:
        out["camera"] = make
    if make or model:
        brand = (make or model).split()[0].strip(",.")
        out["make"] = MAKES.get(brand.lower(), brand)
    lens = _name(_first(raw, ("ExifIFD:LensModel", "XMP-exifEX:LensModel", "XMP-aux:Lens",
                              "Composite:LensID")))
    if lens:
        out["lens"] = lens
    exposure: dict[str, Any] = {}
    for key, tags, low, high in (
            ("focal_mm", ("ExifIFD:FocalLength", "XMP-exif:FocalLength"), 0.1, 10_000),
            ("aperture", ("ExifIFD:FNumber", "Composite:Aperture", "XMP-exif:FNumber"), 0.3, 1_000),
            ("iso", ("ExifIFD:ISO", "XMP-exif:ISOSpeedRatings"), 1, 10_000_000),
            ("exposure_s", ("ExifIFD:ExposureTime", "XMP-exif:ExposureTime"), 1e-7, 86_400)):
        v = _first(raw, tags)
        if isinstance(v, list) and v:
            v = v[0]
        n = _number(v)
        if n is not None and low <= n <= high:
            exposure[key] = int(n) if key == "iso" else round(n, 6)
    if exposure:
        out["exposure"] = exposure
    return out


def capture_fields(raw: dict[str, Any], sidecar: dict[str, Any] | None = None,
                   *, geocode: bool = True) -> dict[str, Any]:
    """The keys of the module docstring for one file, from ExifTool's answer
    for the file (``raw``) and, when read, its sidecar's (each field of the
    sidecar wins over the file's). ``geocode`` False: no place lookup."""
    fields: dict[str, Any] = {}
    for answer in (raw, sidecar or {}):
        gps = read_gps(answer)
        if gps is not None:
            fields["gps"] = gps
        fields.update(read_camera(answer))
    when = _read_time(sidecar or {}) or _read_time(raw)
    gps = fields.get("gps")
    zone = zone_of(gps["lat"], gps["lon"]) if gps else None
    if gps and geocode:
        place = place_of(gps["lat"], gps["lon"])
        if place is not None:
            fields["place"] = {"city": place.city, "state": place.state, "county": place.county,
                               "country": place.country, "country_code": place.country_code,
                               "km": place.km}
    if when is not None:
        source, clock, off, is_utc = when
        offset_from = "file" if off is not None else None
        if is_utc and zone is not None:
            utc = clock.replace(tzinfo=timezone.utc)
            local = utc.astimezone(ZoneInfo(zone)).replace(tzinfo=None)
            off = offset_minutes(zone, local)
            clock, offset_from = local, "coordinates"
        elif off is None and zone is not None:
            off = offset_minutes(zone, clock)
            offset_from = "coordinates" if off is not None else None
        captured: dict[str, Any] = {"local": clock.strftime("%Y:%m:%d %H:%M:%S"),
                                    "source": source}
        if off is not None:
            captured["offset_min"] = off
            captured["offset_from"] = offset_from
            captured["instant"] = (clock - timedelta(minutes=off)).strftime(
                "%Y-%m-%dT%H:%M:%SZ")
        if zone is not None:
            captured["zone"] = zone
        fields["captured"] = captured
    return fields
