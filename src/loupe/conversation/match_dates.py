"""The date matchers of the conversation's compiler: capture dates and rights
expiry, read through :mod:`.dates`. Each takes the sentence scan (``scan``:
:class:`loupe.conversation.parse._Scan`) and a token index and returns the index
after what it read; ``_Scan``'s methods of the same name call them."""

from __future__ import annotations

import difflib
import re

from . import lexicon as L
from .dates import Span, date_at
from .tokens import unquote as _unquote


def misspelt_month(scan, x: int) -> bool:
    """Whether the capitalised word at x looks like a month name mistyped
    (difflib's ratio >= 0.75 to an English or French month, "Febtember"),
    said in a date's place: after a capture verb and its cue ("shot in") or
    before a year ("in Octobar 2019").  Not a country."""
    w = scan.low[x]
    if w in L.MONTHS or w in L.countries() or len(w) < 4:
        return False
    dated = (x >= 2 and scan.low[x - 2] in L.DATE_VERBS) or (
        x + 1 < scan.n and re.fullmatch(r"\d{4}", scan.toks[x + 1]) is not None)
    return dated and bool(difflib.get_close_matches(w, L.FULL_MONTHS, 1, 0.75))


def plain_word(scan, x: int) -> bool:
    """A lower-case word that is no cue, filler, connector, place cue or phrase,
    and starts no date (a word a name may go on with)."""
    return scan.toks[x] == scan.low[x] and scan.unread_word(x)


def unread_word(scan, x: int) -> bool:
    """:meth:`plain_word` in any case: a word no table reads at x."""
    w = scan.low[x]
    if not w[:1].isalnum() or _unquote(scan.toks[x]) is not None:
        return False
    if w in L.FILLERS | L.NEGATE | L.RESTRICT | L.ADD | L.CONNECT | L.CONNECT_OR | L.PLACE_CUES \
            | L.CREATOR_CUES | L.PERSON_CUES | L.ADDED_CUES or w in L.AMBIGUOUS:
        return False
    if any(scan.phrase(x, t) for t in (L.PHRASES, L.NEGATE_PHRASES, L.ADD_PHRASES,
                                       L.RESTRICT_PHRASES, L.KEYWORD_CUES, L.FILLER_PHRASES,
                                       L.EXPIRING, L.CREATOR_STRONG, L.PERSON_PHRASES)):
        return False
    if w in L.CREATOR_SIGNED and x + 1 < scan.n and scan.name_run(x + 1) > x + 1:
        return False                    # "signées Anne Roy": the creator cue reads it
    return date_at(scan.toks, scan.low, x, scan.lang, scan.clock) is None


def age_at(scan, i: int) -> int:
    """Length of an age cue at i followed by a number and a unit ("more than 5 years",
    "plus de 5 ans", "older than two years", "moins de 3 jours"), 0 if none."""
    for words in L.AGE_CUES:
        k = len(words)
        if tuple(scan.low[i:i + k]) == words and i + k + 1 < scan.n \
                and date_at(scan.toks, scan.low, i + k, scan.lang, scan.clock, after_cue=True) \
                and scan.low[i + k + 1] in ("years", "year", "ans", "an", "months", "month", "mois",
                                            "weeks", "week", "semaines", "days", "day", "jours"):
            return k
    return 0


def day_range(scan, i: int, j: int) -> tuple[dict, int] | None:
    """A range whose first end lacks what the second gives: "entre le 1er et le 15 mars
    2024", "du 1er mars au 15 avril 2024", "from 3 to 10 May 2024" -> ([first day,
    day after the second), end index).  ``j``: the token after the range cue."""
    from datetime import date as _date
    k = j + (j < scan.n and scan.low[j] in ("le", "the"))
    month = None
    if k + 1 < scan.n and (scan.low[k] in L.FULL_MONTHS or scan.low[k] == "may"):   # March 3
        month, k = L.FULL_MONTHS.get(scan.low[k], 5), k + 1
    m = re.fullmatch(r"(\d{1,2})(st|nd|rd|th|er)?", scan.low[k]) if k < scan.n else None
    if not m:
        return None
    day, k = int(m.group(1)), k + 1
    if month is None and k < scan.n and (scan.low[k] in L.FULL_MONTHS or scan.low[k] in ("may", "mai")):
        month, k = L.FULL_MONTHS.get(scan.low[k], 5), k + 1
    if k >= scan.n or scan.low[k] not in ("and", "et", "to", "à", "au", "until", "-"):
        return None
    second = date_at(scan.toks, scan.low, k + 1, scan.lang, scan.clock, after_cue=True)
    if second is None or (second.end - second.start).days != 1:
        return None
    try:
        first = _date(second.start.year, month or second.start.month, day)
    except ValueError:
        return None
    if first >= second.end:
        return None
    return {"from": first.isoformat(), "to": second.end.isoformat()}, second.j


def m_date(scan, i: int, neg: int | None) -> int:
    j, fld = i, "captured"
    if scan.low[j] in L.ADDED_CUES:
        fld, j = "added", j + 1
    if j >= scan.n:
        return 0
    lead = scan.low[j]
    mod = {"since": "since", "depuis": "since", "before": "before", "avant": "before",
           "after": "after", "après": "after", "until": "until", "till": "until",
           "jusqu'à": "until", "jusqu'en": "until", "between": "between",
           "entre": "between"}.get(lead)
    age = scan.age_at(j)
    if mod is None and age:
        # "more than 5 years old": captured before clock - 5 years; "less than": since
        mod = L.AGE_CUES[tuple(scan.low[j:j + age])]
        j += age - 1
    if mod is None:    # two- and three-word cues: "prior to", "à partir de", "up to"
        for words, m in L.DATE_CUE_PHRASES.items():
            if tuple(scan.low[j:j + len(words)]) == words:
                mod, j = m, j + len(words) - 1
                break
    span: Span | None = None
    if mod == "between" or (mod is None and lead in ("from", "du", "de")):
        got = scan.day_range(i, j + 1)
        if got:
            return scan.emit({fld: got[0]}, i, got[1], neg)
    if mod:
        span = date_at(scan.toks, scan.low, j + 1, scan.lang, scan.clock, after_cue=True)
        if span is None:
            if fld != "captured" or j + 1 >= scan.n or scan.low[j + 1] == ",":
                return 0
            # a date cue whose value no grammar reads ("since the thaw"): said, with
            # its value as typed, and not searched as words
            e = j + 2 + (j + 2 < scan.n and scan.low[j + 1] in L.DETERMINERS | {"le", "la", "l'"}
                         and scan.low[j + 2] != ",")
            scan.unparsed.append(" ".join(scan.toks[j:e]))
            for x in range(i, e):
                scan.role[x] = "used"
            return e
    else:
        if lead in ("in", "en", "on", "from", "de", "du", "d'", "during", "pendant", "of", "taken", "au",
                    "over", "within", "durant", "dans", "around", "circa", "vers", "environ",
                    "about", "c."):
            k = j + 1 + (j + 1 < scan.n and scan.low[j + 1] in ("around", "circa", "vers",
                                                                "environ", "about"))
            span = date_at(scan.toks, scan.low, k, scan.lang, scan.clock, after_cue=True)
        if span is None:
            span = date_at(scan.toks, scan.low, j, scan.lang, scan.clock)
        if span is None:
            return 0
    if span.start >= span.end and mod in (None, "between"):
        return 0           # "the end of 2019" is a point: a date only after before/since/after/until
    rng = {"from": span.start.isoformat(), "to": span.end.isoformat()}
    end = span.j
    if age and end < scan.n and scan.low[end] == "old":     # "more than 5 years old"
        end += 1
    if mod == "since":
        rng = {"from": span.start.isoformat()}
    elif mod == "before":
        rng = {"to": span.start.isoformat()}
    elif mod == "after":
        rng = {"from": span.end.isoformat()}
    elif mod == "until":
        rng = {"to": span.end.isoformat()}
    if (mod == "between" or (mod is None and lead in ("from", "de", "du"))) and end < scan.n \
            and scan.low[end] in ("and", "et", "to", "à", "au", "until", "-"):
        second = date_at(scan.toks, scan.low, end + 1, scan.lang, scan.clock, after_cue=True)
        if second is not None:
            start = span.start
            if start >= second.end and span.j - span.i == 1 and scan.low[span.i] in L.FULL_MONTHS:
                # "entre mars et mai 2024": the month named alone takes the year of the second
                start = start.replace(year=second.start.year)
                if start >= second.end:
                    start = start.replace(year=start.year - 1)
            if start >= second.end:      # "between 2021 and 2019": said, not searched
                scan.unparsed.append(" ".join(scan.toks[i:second.j]))
                return second.j              # the words stay free text
            rng = {"from": start.isoformat(), "to": second.end.isoformat()}
            end = second.j
    return scan.emit({fld: rng}, i, end, neg)


def m_expiring(scan, i: int, neg: int | None) -> int:
    k = scan.phrase(i, L.EXPIRING)
    if not k:
        return 0
    span = date_at(scan.toks, scan.low, i + k, scan.lang, scan.clock, after_cue=True)
    if span is None:
        # said once, and its words consumed (they are no date and no search words)
        e = min(i + k + 1, scan.n)
        scan.unparsed.append(" ".join(scan.toks[i:e]))
        for x in range(i, e):
            scan.role[x] = "used"
        return e
    start = span.start
    if span.j - span.i == 1 and scan.low[span.i] in L.FULL_MONTHS and start <= scan.clock.date():
        # an expiry is ahead: "expiring before December" is the next December,
        # not the latest one begun (the rule for capture dates)
        start = start.replace(year=start.year + 1)
    return scan.emit({"rights": {"expiring_before": start.isoformat()}}, i, span.j, neg)
