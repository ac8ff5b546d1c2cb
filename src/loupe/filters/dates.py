"""Date ranges written as people write them, resolved against a given clock.

Every range is **half-open, [from, to), in UTC**: ``"2019"`` is
``{"from": "2019-01-01", "to": "2020-01-01"}`` — 2019-01-01 00:00:00 UTC is
in it, 2020-01-01 00:00:00 UTC is not. A capture date from EXIF has no time
zone: Loupe reads its wall-clock time as UTC (migration 0020,
``loupe_file_captured``); a date added is the moment the asset was first
stored, in UTC.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta, timezone

from .tree import FIRST_YEAR, LAST_YEAR, FilterError, in_calendar

_YEAR = re.compile(r"\d{4}")
_MONTH = re.compile(r"(\d{4})-(\d{2})")
_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
_LAST_N = re.compile(r"last (\d{1,4}) days?")


def _month_start(d: date) -> date:
    return d.replace(day=1)


def _next_month(d: date) -> date:
    return date(d.year + (d.month == 12), d.month % 12 + 1, 1)


def _parse_point(text: str, now: date, path: str) -> tuple[date, date]:
    t = text.strip().lower()
    if _YEAR.fullmatch(t):
        y = int(t)
        if not in_calendar(y):
            raise FilterError(path, f"year {y} is out of range ({FIRST_YEAR}-{LAST_YEAR})")
        return date(y, 1, 1), date(y + 1, 1, 1)
    m = _MONTH.fullmatch(t)
    if m:
        try:
            start = date(int(m[1]), int(m[2]), 1)
        except ValueError:
            raise FilterError(path, f"{text!r} is not a month YYYY-MM") from None
        if not in_calendar(start.year):
            raise FilterError(path, f"year {start.year} is out of range ({FIRST_YEAR}-{LAST_YEAR})")
        return start, _next_month(start)
    if _DAY.fullmatch(t):
        try:
            d = date.fromisoformat(t)
        except ValueError:
            raise FilterError(path, f"{text!r} is not a calendar date") from None
        if not in_calendar(d.year):
            raise FilterError(path, f"year {d.year} is out of range ({FIRST_YEAR}-{LAST_YEAR})")
        return d, d + timedelta(days=1)
    if t == "today":
        return now, now + timedelta(days=1)
    if t == "yesterday":
        return now - timedelta(days=1), now
    if t == "this month":
        return _month_start(now), _next_month(now)
    if t == "last month":
        end = _month_start(now)
        return _month_start(end - timedelta(days=1)), end
    if t == "this year":
        return date(now.year, 1, 1), date(now.year + 1, 1, 1)
    if t == "last year":
        return date(now.year - 1, 1, 1), date(now.year, 1, 1)
    m = _LAST_N.fullmatch(t)
    if m:
        n = int(m[1])
        if not 1 <= n <= 3660:
            raise FilterError(path, f"last {n} days: between 1 and 3660 days")
        return now - timedelta(days=n - 1), now + timedelta(days=1)
    raise FilterError(path, f"{text!r} is not a date Loupe understands: YYYY, YYYY-MM, "
                            f"YYYY-MM-DD, A..B, today, yesterday, this/last month, "
                            f"this/last year, last N days")


def date_range(text: str, *, now: datetime | None = None, path: str = "$") -> dict[str, str]:
    """A range ``{"from": "YYYY-MM-DD", "to": "YYYY-MM-DD"}`` (half-open,
    UTC) from ``text``: ``2019``, ``2019-05``, ``2019-05-01``, ``A..B``
    (from the start of A to the end of B; either side may be empty: open),
    ``today``, ``yesterday``, ``this month``, ``last month``, ``this year``,
    ``last year``, ``last N days`` (today included). ``now`` is the clock
    relative words are resolved against (default: the current time; a naive
    datetime is taken as UTC).

    Raises:
        FilterError: text Loupe does not understand, or an empty range.
    """
    clock = now or datetime.now(timezone.utc)
    if clock.tzinfo is not None:
        clock = clock.astimezone(timezone.utc)
    today = clock.date()
    if ".." in text:
        left, right = text.split("..", 1)
        out: dict[str, str] = {}
        if left.strip():
            out["from"] = _parse_point(left, today, path)[0].isoformat()
        if right.strip():
            out["to"] = _parse_point(right, today, path)[1].isoformat()
        if not out:
            raise FilterError(path, "'..' alone is no range")
        if "from" in out and "to" in out and out["from"] >= out["to"]:
            raise FilterError(path, f"{text!r} is an empty range")
        return out
    start, end = _parse_point(text, today, path)
    return {"from": start.isoformat(), "to": end.isoformat()}


def utc_bounds(value: dict[str, str]) -> tuple[datetime | None, datetime | None]:
    """The range's ends as UTC datetimes at midnight (None: open end)."""
    def at(k: str) -> datetime | None:
        if k not in value:
            return None
        d = date.fromisoformat(value[k])
        return datetime(d.year, d.month, d.day, tzinfo=timezone.utc)
    return at("from"), at("to")
