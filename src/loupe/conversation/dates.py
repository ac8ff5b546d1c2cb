"""Date phrases of a sentence -> half-open UTC date ranges ``[start, end)``.

The grammar here only finds *where* a date phrase is and how coarse it is
(year, month, week, day, "the last N days"); turning the words into a calendar
date is done by ``dateparser`` (commodity), always with an explicit clock
(``RELATIVE_BASE``) so that "last month" means the same thing in a test and in
the corpus.  Units: ``datetime.date``; the contract's dates are ISO strings.

Granularity rules (docs/conversation.md "Dates"):
- a year: [1 Jan, 1 Jan next year); a month (named, "last month", "ce mois-ci"):
  the calendar month; "last week"/"la semaine dernière": the Monday-based week;
  a day ("yesterday", "3 days ago", "14 July 2019", "2021-05-03"): that day;
- "the last N days/weeks/months" / "ces N derniers jours": [clock - N units, tomorrow);
- "since X" -> from X's start; "before X" -> to X's start; "after X" -> from X's end;
  "until X" -> to X's end; "between X and Y" / "from X to Y" -> [X's start, Y's end).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from .lexicon import FULL_MONTHS, MONTHS
from ..filters.tree import in_calendar

_YEAR = re.compile(r"^(1[89]\d\d|20\d\d)$")
_ISO = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
_DMY = re.compile(r"^(\d{1,2})/(\d{1,2})/(\d{4})$")
_DAYNUM = re.compile(r"^(\d{1,2})(st|nd|rd|th|er)?$")
_DIGITS = re.compile(r"^\d{1,3}$")
#: number words up to twelve (en, fr) in "the last two weeks", "les six derniers mois"
NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
                "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "un": 1, "une": 1,
                "deux": 2, "trois": 3, "quatre": 4, "cinq": 5, "sept": 7, "huit": 8, "neuf": 9,
                "dix": 10, "onze": 11, "douze": 12, "a": 1}


class _Num:
    """``_NUM.match(word)`` for digits and number words; ``int(_NUM.value(word))``."""

    @staticmethod
    def match(word: str) -> bool:
        return bool(_DIGITS.match(word)) or word in NUMBER_WORDS

    @staticmethod
    def value(word: str) -> int:
        return int(word) if _DIGITS.match(word) else NUMBER_WORDS[word]


_NUM = _Num()
_UNITS = {"day": "day", "days": "day", "jour": "day", "jours": "day", "week": "week", "weeks": "week",
          "semaine": "week", "semaines": "week", "month": "month", "months": "month", "mois": "month",
          "year": "year", "years": "year", "an": "year", "ans": "year", "année": "year", "années": "year",
          "hour": "hour", "hours": "hour", "heure": "hour", "heures": "hour"}


@dataclass(frozen=True)
class Span:
    """A date phrase: tokens ``[i, j)`` of the sentence mean ``[start, end)``."""
    i: int
    j: int
    start: date
    end: date


def _month_end(d: date) -> date:
    return date(d.year + (d.month == 12), d.month % 12 + 1, 1)


def _parse(text: str, lang: str, clock: datetime) -> date | None:
    import dateparser

    got = dateparser.parse(text, languages=[lang], settings={
        "RELATIVE_BASE": clock.replace(tzinfo=None), "PREFER_DAY_OF_MONTH": "first",
        "RETURN_AS_TIMEZONE_AWARE": False, "PREFER_DATES_FROM": "past"})
    return got.date() if got else None


#: Seasons, meteorological, northern hemisphere (the months they start and
#: end in): spring March-May, summer June-August, autumn September-November,
#: winter December-February.
SEASONS = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12, "printemps": 3,
           "été": 6, "automne": 9, "hiver": 12}


#: Week days (Monday = 0), English and French.
WEEKDAYS = {"monday": 0, "tuesday": 1, "wednesday": 2, "thursday": 3, "friday": 4, "saturday": 5,
            "sunday": 6, "lundi": 0, "mardi": 1, "mercredi": 2, "jeudi": 3, "vendredi": 4,
            "samedi": 5, "dimanche": 6}


def _season_range(month: int, year: int) -> tuple[date, date]:
    s = date(year, month, 1)
    e = date(year + (month + 3 > 12), (month + 3 - 1) % 12 + 1, 1)
    return s, e


def _season(low: list[str], i: int, today: date) -> Span | None:
    """"last summer" / "l'été dernier" (the latest one over by the clock),
    "this summer" / "cet été" (the one of the clock's year; winter: the one
    that began in December of the year before when the clock is in January
    or February), "summer 2019" / "l'été 2019" (that year's; winter: from its
    December)."""
    w = low[i:i + 4] + [""] * 4
    if w[0] in ("last", "this", "cet", "ce", "cette") and w[1] in SEASONS:
        m, j = SEASONS[w[1]], i + 2
        kind = "last" if w[0] == "last" else "this"
    elif w[0] == "l'" and w[1] in SEASONS and w[2] in ("dernier", "passé"):
        m, j, kind = SEASONS[w[1]], i + 3, "last"
    elif w[0] in SEASONS and w[1] in ("dernier", "passé", "last"):
        m, j, kind = SEASONS[w[0]], i + 2, "last"
    elif w[0] in SEASONS and _YEAR.match(w[1]):
        return Span(i, i + 2, *_season_range(SEASONS[w[0]], int(w[1])))
    elif w[0] in ("l'", "the") and w[1] in SEASONS and _YEAR.match(w[2]):
        return Span(i, i + 3, *_season_range(SEASONS[w[1]], int(w[2])))
    else:
        return None
    if kind == "this":
        y = today.year - (m == 12 and today.month < 3)
        return Span(i, j, *_season_range(m, y))
    y = today.year
    while _season_range(m, y)[1] > today:
        y -= 1
    return Span(i, j, *_season_range(m, y))


def _relative(low: list[str], i: int, lang: str, clock: datetime) -> Span | None:
    """Relative phrases starting at token i (English and French)."""
    today = clock.date()
    w = low[i:i + 6] + [""] * 6
    got = _season(low, i, today)
    if got is not None:
        return got

    def month_of(d: date) -> tuple[date, date]:
        s = d.replace(day=1)
        return s, _month_end(s)

    year = (date(today.year, 1, 1), date(today.year + 1, 1, 1))
    fixed = {
        ("today",): (today, today + timedelta(1)), ("aujourd'hui",): (today, today + timedelta(1)),
        # "since the start of the year", "depuis le début de l'année"
        ("the", "start", "of", "the", "year"): year, ("the", "beginning", "of", "the", "year"): year,
        ("the", "start", "of", "this", "year"): year, ("le", "début", "de", "l'", "année"): year,
        ("début", "de", "l'", "année"): year, ("january", "1st"): year, ("new", "year"): year,
        ("le", "début", "d'", "année"): year,
        ("the", "day", "before", "yesterday"): (today - timedelta(2), today - timedelta(1)),
        ("day", "before", "yesterday"): (today - timedelta(2), today - timedelta(1)),
        ("avant-hier",): (today - timedelta(2), today - timedelta(1)),
        ("this", "month"): month_of(today), ("ce", "mois-ci"): month_of(today), ("ce", "mois"): month_of(today),
        ("this", "year"): (date(today.year, 1, 1), date(today.year + 1, 1, 1)),
        ("cette", "année"): (date(today.year, 1, 1), date(today.year + 1, 1, 1)),
        ("this", "week"): (today - timedelta(today.weekday()), today - timedelta(today.weekday()) + timedelta(7)),
        ("cette", "semaine"): (today - timedelta(today.weekday()), today - timedelta(today.weekday()) + timedelta(7)),
    }
    monday = today - timedelta(today.weekday())
    month = month_of(today)
    fixed.update({
        # "since the start of the month", "depuis le début du mois"
        ("the", "start", "of", "the", "month"): month, ("the", "beginning", "of", "the", "month"): month,
        ("the", "start", "of", "this", "month"): month, ("le", "début", "du", "mois"): month,
        ("début", "du", "mois"): month,
        # the day's parts are the day
        ("this", "morning"): (today, today + timedelta(1)), ("tonight",): (today, today + timedelta(1)),
        ("this", "afternoon"): (today, today + timedelta(1)), ("ce", "matin"): (today, today + timedelta(1)),
        ("cet", "après-midi"): (today, today + timedelta(1)), ("ce", "soir"): (today, today + timedelta(1)),
        # "earlier this year": the calendar period, as "this year"
        ("earlier", "this", "year"): year, ("earlier", "this", "month"): month,
        # weekends: Saturday and Sunday, [Saturday, Monday)
        ("last", "weekend"): (monday - timedelta(2), monday),
        ("this", "past", "weekend"): (monday - timedelta(2), monday),
        ("the", "past", "weekend"): (monday - timedelta(2), monday),
        ("le", "week-end", "dernier"): (monday - timedelta(2), monday),
        ("le", "weekend", "dernier"): (monday - timedelta(2), monday),
        ("week-end", "dernier"): (monday - timedelta(2), monday),
        # "the week before last", "il y a deux semaines" is the grammar below
        ("the", "week", "before", "last"): (monday - timedelta(14), monday - timedelta(7)),
        ("la", "semaine", "d'", "avant"): (monday - timedelta(14), monday - timedelta(7)),
        ("the", "month", "before", "last"): month_of(month[0] - timedelta(32)),
        ("the", "year", "before", "last"): (date(today.year - 2, 1, 1), date(today.year - 1, 1, 1)),
    })
    for phrase, (s, e) in sorted(fixed.items(), key=lambda kv: -len(kv[0])):
        if tuple(w[:len(phrase)]) == phrase:
            return Span(i, i + len(phrase), s, e)
    # "last April", "avril dernier", "en avril dernier": the latest such month
    # before the current one (June 2026: April 2026; June: June 2025)
    if w[0] == "last" and w[1] in FULL_MONTHS or w[0] in FULL_MONTHS and w[1] in ("dernier", "passé"):
        m = FULL_MONTHS[w[1] if w[0] == "last" else w[0]]
        y = today.year if m < today.month else today.year - 1
        return Span(i, i + 2, date(y, m, 1), _month_end(date(y, m, 1)))
    # "last Friday", "vendredi dernier", "on Friday": the latest such day before today
    wd = WEEKDAYS.get(w[1]) if w[0] == "last" else (
        WEEKDAYS.get(w[0]) if w[1] in ("dernier", "passé") else None)
    if wd is not None:
        d = today - timedelta((today.weekday() - wd - 1) % 7 + 1)
        return Span(i, i + 2, d, d + timedelta(1))
    # phrases dateparser reads, with the granularity the grammar gives them
    coarse = {("last", "month"): "month", ("le", "mois", "dernier"): "month", ("mois", "dernier"): "month",
              ("last", "year"): "year", ("l'", "année", "dernière"): "year", ("année", "dernière"): "year",
              ("l'", "an", "dernier"): "year", ("last", "week"): "week",
              ("la", "semaine", "dernière"): "week", ("semaine", "dernière"): "week",
              ("yesterday",): "day", ("hier",): "day"}
    for phrase, unit in sorted(coarse.items(), key=lambda kv: -len(kv[0])):
        if tuple(w[:len(phrase)]) == phrase:
            # the full, canonical wording of each phrase is what dateparser is given
            fr = phrase[-1] in ("dernier", "dernière") or phrase == ("hier",)
            text = {("month", True): "le mois dernier", ("year", True): "l'année dernière",
                    ("week", True): "la semaine dernière", ("day", True): "hier",
                    ("month", False): "last month", ("year", False): "last year",
                    ("week", False): "last week", ("day", False): "yesterday"}[(unit, fr)]
            d = _parse(text, "fr" if fr else "en", clock)
            if d is None:
                return None
            return Span(i, i + len(phrase), *_unit_range(d, unit))
    # "3 days ago" / "il y a 3 jours"
    if _NUM.match(w[0]) and w[1] in _UNITS and w[2] == "ago":
        d = _parse(f"{_NUM.value(w[0])} {w[1]} ago", "en", clock)
        return Span(i, i + 3, *_unit_range(d, _UNITS[w[1]])) if d else None
    if w[0:3] == ["il", "y", "a"] and _NUM.match(w[3]) and w[4] in _UNITS:
        d = _parse(f"il y a {_NUM.value(w[3])} {w[4]}", "fr", clock)
        return Span(i, i + 5, *_unit_range(d, _UNITS[w[4]])) if d else None
    # "the last 30 days" / "past 2 weeks" / "ces 30 derniers jours" / "les 30 derniers jours"
    k = i + (1 if w[0] in ("the", "ces", "les", "des") else 0)
    v = low[k:k + 3] + [""] * 3
    if v[0] in ("last", "past") and _NUM.match(v[1]) and v[2] in _UNITS:
        return Span(i, k + 3, _back(today, _NUM.value(v[1]), _UNITS[v[2]]), today + timedelta(1))
    # "the past week" / "over the past month": one unit back, rolling (unlike "last week",
    # the previous calendar week)
    if w[0] == "the" and v[0] == "past" and v[1] in _UNITS and _UNITS[v[1]] != "day":
        return Span(i, k + 2, _back(today, 1, _UNITS[v[1]]), today + timedelta(1))
    if _NUM.match(v[0]) and v[1] in ("derniers", "dernières") and v[2] in _UNITS:
        return Span(i, k + 3, _back(today, _NUM.value(v[0]), _UNITS[v[2]]), today + timedelta(1))
    return None


def _back(today: date, n: int, unit: str) -> date:
    if unit == "hour":             # "the last 48 hours": whole days, [today - ceil(n/24), ...)
        return today - timedelta(-(-n // 24))
    if unit == "day":
        return today - timedelta(n)
    if unit == "week":
        return today - timedelta(7 * n)
    months = today.year * 12 + today.month - 1 - n * (12 if unit == "year" else 1)
    return date(months // 12, months % 12 + 1, min(today.day, 28))


def _in_calendar(d: date | None) -> date | None:
    """``d`` when its range's end is still a date (the filter tree's years,
    :func:`loupe.filters.tree.in_calendar`), else None: the words stay free text
    ("taken on 9999-12-31" would overflow)."""
    return d if d is not None and in_calendar(d.year) else None


def _unit_range(d: date, unit: str) -> tuple[date, date]:
    if unit == "year":
        return date(d.year, 1, 1), date(d.year + 1, 1, 1)
    if unit == "month":
        s = d.replace(day=1)
        return s, _month_end(s)
    if unit == "week":
        s = d - timedelta(d.weekday())
        return s, s + timedelta(7)
    return d, d + timedelta(1)


def _absolute(toks: list[str], low: list[str], i: int, lang: str, clock: datetime) -> Span | None:
    """Year, month + year, day + month + year, ISO and d/m/y dates at token i."""
    w = low[i:i + 4] + [""] * 4
    m = _ISO.match(w[0]) or _DMY.match(w[0])
    if m:
        d = _parse(toks[i], lang, clock) if _ISO.match(w[0]) else None
        if _DMY.match(w[0]):
            try:
                d = date(int(m.group(3)), int(m.group(2)), int(m.group(1)))
            except ValueError:
                d = None
        d = _in_calendar(d)
        return Span(i, i + 1, d, d + timedelta(1)) if d else None
    if _DAYNUM.match(w[0]) and w[1] in MONTHS and _YEAR.match(w[2]):           # 14 July 2019
        d = _parse(f"{_DAYNUM.match(w[0]).group(1)} {w[1]} {w[2]}", lang, clock)
        return Span(i, i + 3, d, d + timedelta(1)) if d else None
    if w[0] in MONTHS and _DAYNUM.match(w[1]) and _YEAR.match(w[2].rstrip(",")):  # July 14 2019
        d = _parse(f"{w[0]} {_DAYNUM.match(w[1]).group(1)} {w[2]}", lang, clock)
        return Span(i, i + 3, d, d + timedelta(1)) if d else None
    if w[0] in MONTHS and _DAYNUM.match(w[1]) and w[2] == "," and _YEAR.match(w[3]):  # July 14, 2019
        d = _parse(f"{w[0]} {_DAYNUM.match(w[1]).group(1)} {w[3]}", lang, clock)
        return Span(i, i + 4, d, d + timedelta(1)) if d else None
    if w[0] in MONTHS and _YEAR.match(w[1]):                                     # March 2019
        d = _parse(f"{w[0]} {w[1]}", lang, clock)
        return Span(i, i + 2, *_unit_range(d, "month")) if d else None
    if _YEAR.match(w[0]):
        y = int(w[0])
        return Span(i, i + 1, date(y, 1, 1), date(y + 1, 1, 1))
    # quarters: "Q3 2024", "T3 2024", "the third quarter of 2024", "le troisième trimestre 2024"
    q = re.fullmatch(r"[qt]([1-4])", w[0])
    k = 1 if w[0] in ("the", "le") else 0
    if q and _YEAR.match(w[1]):
        n, j, y = int(q.group(1)), i + 2, int(w[1])
    elif w[k] in _ORDINALS and w[k + 1] in ("quarter", "trimestre") and (
            _YEAR.match(w[k + 2]) or w[k + 2] in ("of", "de", "du") and _YEAR.match(w[k + 3])):
        n = _ORDINALS[w[k]]
        j = i + k + 3 + (not _YEAR.match(w[k + 2]))
        y = int(low[j - 1])
    else:
        n = 0
    if n:
        s = date(y, 3 * n - 2, 1)
        return Span(i, j, s, date(y + (n == 4), (3 * n) % 12 + 1, 1))
    # "l'an 2000", "l'année 2019", "the year 2019", "année 2019"
    k = 1 if w[0] in ("l'", "the") else 0
    if w[k] in ("an", "année", "year") and _YEAR.match(w[k + 1]):
        y = int(w[k + 1])
        return Span(i, i + k + 2, date(y, 1, 1), date(y + 1, 1, 1))
    # "le mois d'avril 2022", "the month of April 2022"
    k = 1 if w[0] in ("le", "the") else 0
    if w[k] in ("mois", "month") and w[k + 1] in ("d'", "de", "of") and w[k + 2] in MONTHS:
        inner = _absolute(toks, low, i + k + 2, lang, clock)
        if inner is not None:
            return Span(i, inner.j, inner.start, inner.end)
    # decades: "the 1990s", "the 90s", "the '90s", "les années 90", "les années 1990"
    k = 1 if w[0] in ("the", "les") else 0
    m = _DECADE.match(w[k])
    if m:
        return _decade(i, i + k + 1, m.group(1))
    if w[k] == "années" and re.match(r"^(\d0|1[89]\d0|20\d0)$", w[k + 1]):
        return _decade(i, i + k + 2, w[k + 1])
    return None


_ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "last": 4, "premier": 1,
             "deuxième": 2, "second": 2, "troisième": 3, "quatrième": 4, "dernier": 4}
_DECADE = re.compile(r"^'?(\d0|1[89]\d0|20\d0)'?s$")


def _decade(i: int, j: int, digits: str) -> Span:
    """[first year, first year + 10) of a decade; two digits are 19xx from 30 up, else 20xx."""
    y = int(digits)
    if y < 100:
        y += 1900 if y >= 30 else 2000
    return Span(i, j, date(y, 1, 1), date(y + 10, 1, 1))


def _bare_month(low: list[str], i: int, clock: datetime) -> Span | None:
    """A month named without a year ("since January", "depuis janvier"): the
    latest such month that has begun by the clock (June 2026: January ->
    January 2026, December -> December 2025); "may" alone is never read (modal verb)."""
    m = FULL_MONTHS.get(low[i])
    if m is None or (i + 1 < len(low) and (_YEAR.match(low[i + 1]) or _DAYNUM.match(low[i + 1]))):
        return None
    today = clock.date()
    y = today.year if m <= today.month else today.year - 1
    s = date(y, m, 1)
    return Span(i, i + 1, s, _month_end(s))


def _after_cue(low: list[str], i: int, clock: datetime, lang: str = "en") -> Span | None:
    """Phrases that are dates only after a date cue: "depuis deux ans" (N units:
    [clock - N units, tomorrow), so "since" takes its start), "since Monday" /
    "depuis lundi" (the latest such day before today), "le mois d'avril" (a month
    alone)."""
    today = clock.date()
    w = low[i:i + 4] + [""] * 4
    if _NUM.match(w[0]) and w[1] in _UNITS and w[2] != "ago":
        return Span(i, i + 2, _back(today, _NUM.value(w[0]), _UNITS[w[1]]), today + timedelta(1))
    k = 1 if w[0] in ("le", "last", "the") and w[1] in WEEKDAYS else 0
    if w[k] in WEEKDAYS:
        d = today - timedelta((today.weekday() - WEEKDAYS[w[k]] - 1) % 7 + 1)
        return Span(i, i + k + 1, d, d + timedelta(1))
    # "before the end of 2026", "avant fin 2026", "after the start of March 2027": a point in
    # time (a span of no length), so "before"/"until" and "after"/"since" all take that point
    k = 1 if w[0] in ("the", "la", "le") else 0
    edge = {"end": "end", "fin": "end", "start": "start", "beginning": "start", "début": "start"}.get(w[k])
    if edge:
        k += 1 + (w[k + 1] in ("of", "de", "d'", "du"))
        inner = _absolute(low, low, i + k, lang, clock)
        if inner is not None:
            p = inner.end if edge == "end" else inner.start
            return Span(i, inner.j, p, p)
    k = 1 if w[0] in ("le", "the") else 0
    if w[k] in ("mois", "month") and w[k + 1] in ("d'", "de", "of"):
        inner = _bare_month(low, i + k + 2, clock)
        if inner is not None:
            return Span(i, inner.j, inner.start, inner.end)
    return None


def date_at(toks: list[str], low: list[str], i: int, lang: str, clock: datetime,
            after_cue: bool = False) -> Span | None:
    """The date phrase that starts at token ``i``, or None.  A leading French
    article belongs to the phrase ("le 14 juillet 2019", "le mois dernier").
    ``after_cue``: the word before is a date cue (since, in, depuis...), so a
    month named alone is a date too (see :func:`_bare_month`)."""
    if i >= len(low):
        return None
    got = _relative(low, i, lang, clock) or _absolute(toks, low, i, lang, clock) \
        or (_bare_month(low, i, clock) if after_cue else None) \
        or (_after_cue(low, i, clock, lang) if after_cue else None)
    if got is None and low[i] in ("le", "the", "on", "d'") and i + 1 < len(low):
        inner = _relative(low, i + 1, lang, clock) or _absolute(toks, low, i + 1, lang, clock)
        if inner is not None:
            got = Span(i, inner.j, inner.start, inner.end)
    return got
