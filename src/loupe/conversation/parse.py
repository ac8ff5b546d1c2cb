"""Sentence -> turn: a deterministic compiler from English or French to the
filter tree of the shared contract (notes/roster.md) plus free text.

No remote service and no model: a tokenizer, the phrase tables of
:mod:`loupe.conversation.lexicon`, the date grammar of
:mod:`loupe.conversation.dates` (calendar arithmetic by ``dateparser``) and the
intent rules below.  What a cue introduced but could not be read, and negated
free text (which no predicate can express), is listed in ``unparsed``; every
other word the grammar does not consume stays in ``text`` for the search lanes.

Intent rules (docs/conversation.md "Intents"), with a previous state:
1. an "also / too / aussi / ajoute" cue -> ``add``;
2. a sentence that starts with a negation ("not", "without", "sauf", "pas",
   "enlève"...) -> ``remove`` (the turn's filter is the set taken out);
3. a restrictive cue ("only", "just", "seulement"...) or an anaphora at the
   start ("the red ones", "those", "celles", "which") -> ``refine``;
4. a sentence with no free text (only constraints) -> ``refine``;
5. otherwise -> ``replace``.  Without a previous state the intent is ``replace``.
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..filters.words import rating_words
from . import lexicon as L
from .dates import Span, date_at

MAX_SENTENCE_CHARS = 1000   # a sentence longer than this is refused before any work
MAX_TOKENS = 120

_TOKEN = re.compile(r'"[^"]*"|«[^»]*»|“[^”]*”|‘[^’]*’|(?<![\w\'])\'[^\']+\'(?![\w\'])|[,;!?:()]'
                    r'|[^\s,;!?:()"«»“”]+')
_ELISION = re.compile(r"^(l|d|qu|j|n|s|c)'(.+)$", re.IGNORECASE)
_MEDIA = re.compile(r"^(image|video|application|audio)/[a-z0-9][a-z0-9.+-]{0,60}$")
_QUOTES = "\"«»“”‘"


class SentenceError(ValueError):
    """The sentence breaks a bound (length, token count) or is empty."""


@dataclass
class Turn:
    """One compiled sentence, in the contract's turn-result shape.

    ``filter``: a filter-tree node (dict) or None; ``text``: free text for the
    search lanes; ``unparsed``: phrases not understood; ``message``: None or a
    clear sentence (a contradiction).  ``as_dict()`` gives exactly the contract's
    JSON object.
    """
    intent: str
    filter: dict | None
    text: str
    unparsed: list[str] = field(default_factory=list)
    message: str | None = None
    removed: dict | None = None   # for "remove": the set taken out (same as filter)

    def as_dict(self) -> dict[str, Any]:
        return {"intent": self.intent, "filter": self.filter, "text": self.text,
                "unparsed": list(self.unparsed), "message": self.message}


def tokenize(sentence: str) -> list[str]:
    """Tokens of a sentence: quoted phrases stay whole (with their quotes),
    French elisions are split ("l'année" -> "l'", "année"), punctuation that
    separates clauses becomes ",", trailing dots are dropped."""
    out: list[str] = []
    for t in _TOKEN.findall(sentence.replace("’", "'").replace("‘", "'")):
        if t[0] in _QUOTES or (len(t) > 2 and t[0] == t[-1] == "'" and " " in t):
            out.append(t)
            continue
        if t in (";", "!", "?", ":", "(", ")"):
            out.append(",")
            continue
        t = t.rstrip(".")
        if not t:
            continue
        m = _ELISION.match(t)
        if re.fullmatch(r"\w{2,}'s", t, re.UNICODE):    # "last year's", "Maria's": the possessive apart
            out += [t[:-2], "'s"]
            continue
        if m and t.lower() != "aujourd'hui":
            out += [m.group(1) + "'", m.group(2)]
        else:
            out.append(t)
    return out


def _leaf_fields(node: Any) -> set[str]:
    """Fields named anywhere in a filter tree (``all``/``any``/``not`` walked)."""
    out: set[str] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, dict):
            for k, v in n.items():
                if k in ("all", "any"):
                    stack.extend(v)
                elif k == "not":
                    stack.append(v)
                else:
                    out.add(k)
    return out


def _is_cap(t: str) -> bool:
    return bool(t) and t[0].isalpha() and t[0].isupper()


def _unquote(t: str) -> str | None:
    if t and (t[0] in _QUOTES or (len(t) > 2 and t[0] == t[-1] == "'" and " " in t)):
        return t[1:-1].strip()
    return None


class _Scan:
    """Left-to-right reading of one sentence (one instance per sentence)."""

    def __init__(self, sentence: str, lang: str, clock: datetime,
                 previous: dict | None = None, has_previous: bool = False):
        self.toks = tokenize(sentence)
        self.has_previous = has_previous or previous is not None
        self.prev_fields = _leaf_fields(previous)
        self.low = [t.lower() for t in self.toks]
        self.n = len(self.toks)
        self.lang = lang
        self.clock = clock
        self.role: list[str] = ["text"] * self.n      # text | used | filler | conn | neg
        self.items: list[dict] = []                    # {"node", "neg", "i", "j", "field"}
        self.unparsed: list[str] = []
        self.add_cue = self.restrict_seen = self.replace_cue = False

    # -- value readers -----------------------------------------------------
    def name_run(self, i: int, digits: bool = False) -> int:
        """End of a run of capitalised words starting at i (particles inside)."""
        j = i
        while j < self.n:
            t = self.toks[j]
            if _unquote(t) is None and _is_cap(t) and self.low[j] not in L.MONTHS:
                j += 1
            elif digits and j > i and t.isdigit():
                j += 1
            elif (j > i and self.low[j] in L.NAME_PARTICLES and j + 1 < self.n
                  and _is_cap(self.toks[j + 1])):
                j += 1
            else:
                break
        return j

    def lower_run(self, i: int) -> int:
        stop = (L.PLACE_CUES - L.NAME_PARTICLES) | L.NEGATE | L.RESTRICT | L.CONNECT | L.CONNECT_OR \
            | {"tagged", "with", "since", "before", "after", "between", "on", "added", ","}
        j = i
        while j < self.n and j - i < 4 and self.low[j] not in stop and date_at(
                self.toks, self.low, j, self.lang, self.clock) is None:
            j += 1
        while j > i and self.low[j - 1] in L.NAME_PARTICLES:
            j -= 1
        return j

    def phrase(self, i: int, table) -> int:
        """Length of the longest phrase of ``table`` starting at i (0 if none)."""
        for k in range(min(6, self.n - i), 0, -1):
            if tuple(self.low[i:i + k]) in table:
                return k
        return 0

    # -- matchers: each returns the end index or 0 ----------------------------
    def emit(self, node: dict, i: int, j: int, neg: int | None) -> int:
        for k in range(i, j):
            self.role[k] = "used"
        self.items.append({"node": node, "neg": neg, "i": i, "j": j, "field": next(iter(node))})
        return j

    def m_collection(self, i: int, neg: int | None) -> int:
        k = i
        while k < self.n and self.low[k] in L.COLLECTION_LEAD:
            k += 1
        if k >= self.n:
            return 0
        if self.low[k] in L.COLLECTION_NOUNS and k + 1 < self.n:      # collection Lisbonne
            q = _unquote(self.toks[k + 1])
            if q:
                return self.emit({"collection": q}, i, k + 2, neg)
            e = self.name_run(k + 1, digits=True)
            if e > k + 1:
                # a name may go on in lower case ("collection Charte graphique"): up to
                # three more words that no matcher, cue or filler reads, to the clause's end
                x = e
                while x < self.n and x - e < 3 and self.plain_word(x):
                    x += 1
                if x == self.n or self.low[x] == "," or not self.plain_word(x):
                    e = x
                return self.emit({"collection": " ".join(self.toks[k + 1:e])}, i, e, neg)
            return 0
        q = _unquote(self.toks[k])
        e = k + 1 if q else self.name_run(k, digits=True)
        if e > k and e < self.n and self.low[e] in L.COLLECTION_NOUNS and (k > i or self.low[i] != "the"):
            return self.emit({"collection": q or " ".join(self.toks[k:e])}, i, e + 1, neg)
        return 0

    def misspelt_month(self, x: int) -> bool:
        """Whether the capitalised word at x looks like a month name mistyped
        (difflib's ratio >= 0.75 to an English or French month, "Febtember"),
        said in a date's place: after a capture verb and its cue ("shot in") or
        before a year ("in Octobar 2019").  Not a country."""
        w = self.low[x]
        if w in L.MONTHS or w in L.countries() or len(w) < 4:
            return False
        dated = (x >= 2 and self.low[x - 2] in L.DATE_VERBS) or (
            x + 1 < self.n and re.fullmatch(r"\d{4}", self.toks[x + 1]) is not None)
        return dated and bool(difflib.get_close_matches(w, L.FULL_MONTHS, 1, 0.75))

    def plain_word(self, x: int) -> bool:
        """A lower-case word that is no cue, filler, connector, place cue or phrase,
        and starts no date (a word a name may go on with)."""
        return self.toks[x] == self.low[x] and self.unread_word(x)

    def unread_word(self, x: int) -> bool:
        """:meth:`plain_word` in any case: a word no table reads at x."""
        w = self.low[x]
        if not w[:1].isalnum() or _unquote(self.toks[x]) is not None:
            return False
        if w in L.FILLERS | L.NEGATE | L.RESTRICT | L.ADD | L.CONNECT | L.CONNECT_OR | L.PLACE_CUES \
                | L.CREATOR_CUES | L.PERSON_CUES | L.ADDED_CUES or w in L.AMBIGUOUS:
            return False
        if any(self.phrase(x, t) for t in (L.PHRASES, L.NEGATE_PHRASES, L.ADD_PHRASES,
                                           L.RESTRICT_PHRASES, L.KEYWORD_CUES, L.FILLER_PHRASES,
                                           L.EXPIRING, L.CREATOR_STRONG, L.PERSON_PHRASES)):
            return False
        if w in L.CREATOR_SIGNED and x + 1 < self.n and self.name_run(x + 1) > x + 1:
            return False                    # "signées Anne Roy": the creator cue reads it
        return date_at(self.toks, self.low, x, self.lang, self.clock) is None

    def age_at(self, i: int) -> int:
        """Length of an age cue at i followed by a number and a unit ("more than 5 years",
        "plus de 5 ans", "older than two years", "moins de 3 jours"), 0 if none."""
        for words in L.AGE_CUES:
            k = len(words)
            if tuple(self.low[i:i + k]) == words and i + k + 1 < self.n \
                    and date_at(self.toks, self.low, i + k, self.lang, self.clock, after_cue=True) \
                    and self.low[i + k + 1] in ("years", "year", "ans", "an", "months", "month", "mois",
                                                "weeks", "week", "semaines", "days", "day", "jours"):
                return k
        return 0

    def day_range(self, i: int, j: int) -> tuple[dict, int] | None:
        """A range whose first end lacks what the second gives: "entre le 1er et le 15 mars
        2024", "du 1er mars au 15 avril 2024", "from 3 to 10 May 2024" -> ([first day,
        day after the second), end index).  ``j``: the token after the range cue."""
        from datetime import date as _date
        k = j + (j < self.n and self.low[j] in ("le", "the"))
        month = None
        if k + 1 < self.n and (self.low[k] in L.FULL_MONTHS or self.low[k] == "may"):   # March 3
            month, k = L.FULL_MONTHS.get(self.low[k], 5), k + 1
        m = re.fullmatch(r"(\d{1,2})(st|nd|rd|th|er)?", self.low[k]) if k < self.n else None
        if not m:
            return None
        day, k = int(m.group(1)), k + 1
        if month is None and k < self.n and (self.low[k] in L.FULL_MONTHS or self.low[k] in ("may", "mai")):
            month, k = L.FULL_MONTHS.get(self.low[k], 5), k + 1
        if k >= self.n or self.low[k] not in ("and", "et", "to", "à", "au", "until", "-"):
            return None
        second = date_at(self.toks, self.low, k + 1, self.lang, self.clock, after_cue=True)
        if second is None or (second.end - second.start).days != 1:
            return None
        try:
            first = _date(second.start.year, month or second.start.month, day)
        except ValueError:
            return None
        if first >= second.end:
            return None
        return {"from": first.isoformat(), "to": second.end.isoformat()}, second.j

    def m_date(self, i: int, neg: int | None) -> int:
        j, fld = i, "captured"
        if self.low[j] in L.ADDED_CUES:
            fld, j = "added", j + 1
        if j >= self.n:
            return 0
        lead = self.low[j]
        mod = {"since": "since", "depuis": "since", "before": "before", "avant": "before",
               "after": "after", "après": "after", "until": "until", "till": "until",
               "jusqu'à": "until", "jusqu'en": "until", "between": "between",
               "entre": "between"}.get(lead)
        age = self.age_at(j)
        if mod is None and age:
            # "more than 5 years old": captured before clock - 5 years; "less than": since
            mod = L.AGE_CUES[tuple(self.low[j:j + age])]
            j += age - 1
        if mod is None:    # two- and three-word cues: "prior to", "à partir de", "up to"
            for words, m in L.DATE_CUE_PHRASES.items():
                if tuple(self.low[j:j + len(words)]) == words:
                    mod, j = m, j + len(words) - 1
                    break
        span: Span | None = None
        if mod == "between" or (mod is None and lead in ("from", "du", "de")):
            got = self.day_range(i, j + 1)
            if got:
                return self.emit({fld: got[0]}, i, got[1], neg)
        if mod:
            span = date_at(self.toks, self.low, j + 1, self.lang, self.clock, after_cue=True)
            if span is None:
                if fld != "captured" or j + 1 >= self.n or self.low[j + 1] == ",":
                    return 0
                # a date cue whose value no grammar reads ("since the thaw"): said, with
                # its value as typed, and not searched as words
                e = j + 2 + (j + 2 < self.n and self.low[j + 1] in L.DETERMINERS | {"le", "la", "l'"}
                             and self.low[j + 2] != ",")
                self.unparsed.append(" ".join(self.toks[j:e]))
                for x in range(i, e):
                    self.role[x] = "used"
                return e
        else:
            if lead in ("in", "en", "on", "from", "de", "du", "d'", "during", "pendant", "of", "taken", "au",
                        "over", "within", "durant", "dans", "around", "circa", "vers", "environ",
                        "about", "c."):
                k = j + 1 + (j + 1 < self.n and self.low[j + 1] in ("around", "circa", "vers",
                                                                    "environ", "about"))
                span = date_at(self.toks, self.low, k, self.lang, self.clock, after_cue=True)
            if span is None:
                span = date_at(self.toks, self.low, j, self.lang, self.clock)
            if span is None:
                return 0
        if span.start >= span.end and mod in (None, "between"):
            return 0           # "the end of 2019" is a point: a date only after before/since/after/until
        rng = {"from": span.start.isoformat(), "to": span.end.isoformat()}
        end = span.j
        if age and end < self.n and self.low[end] == "old":     # "more than 5 years old"
            end += 1
        if mod == "since":
            rng = {"from": span.start.isoformat()}
        elif mod == "before":
            rng = {"to": span.start.isoformat()}
        elif mod == "after":
            rng = {"from": span.end.isoformat()}
        elif mod == "until":
            rng = {"to": span.end.isoformat()}
        if (mod == "between" or (mod is None and lead in ("from", "de", "du"))) and end < self.n \
                and self.low[end] in ("and", "et", "to", "à", "au", "until", "-"):
            second = date_at(self.toks, self.low, end + 1, self.lang, self.clock, after_cue=True)
            if second is not None:
                start = span.start
                if start >= second.end and span.j - span.i == 1 and self.low[span.i] in L.FULL_MONTHS:
                    # "entre mars et mai 2024": the month named alone takes the year of the second
                    start = start.replace(year=second.start.year)
                    if start >= second.end:
                        start = start.replace(year=start.year - 1)
                if start >= second.end:      # "between 2021 and 2019": said, not searched
                    self.unparsed.append(" ".join(self.toks[i:second.j]))
                    return second.j              # the words stay free text
                rng = {"from": start.isoformat(), "to": second.end.isoformat()}
                end = second.j
        return self.emit({fld: rng}, i, end, neg)

    def m_expiring(self, i: int, neg: int | None) -> int:
        k = self.phrase(i, L.EXPIRING)
        if not k:
            return 0
        span = date_at(self.toks, self.low, i + k, self.lang, self.clock, after_cue=True)
        if span is None:
            # said once, and its words consumed (they are no date and no search words)
            e = min(i + k + 1, self.n)
            self.unparsed.append(" ".join(self.toks[i:e]))
            for x in range(i, e):
                self.role[x] = "used"
            return e
        start = span.start
        if span.j - span.i == 1 and self.low[span.i] in L.FULL_MONTHS and start <= self.clock.date():
            # an expiry is ahead: "expiring before December" is the next December,
            # not the latest one begun (the rule for capture dates)
            start = start.replace(year=start.year + 1)
        return self.emit({"rights": {"expiring_before": start.isoformat()}}, i, span.j, neg)

    def m_keyword(self, i: int, neg: int | None) -> int:
        k = self.phrase(i, L.KEYWORD_CUES)
        if not k:
            return 0
        if i + k + 1 < self.n and self.low[i + k] in ("is", "est", ",", "=", "either", "soit") \
                and self.low[i + k + 1] != ",":
            k += 1                       # "whose keyword is X", "keyword: X", "tagged either X or Y"
        if i + k >= self.n or self.toks[i + k] == ",":
            self.unparsed.append(" ".join(self.toks[i:i + k]))
            return 0
        v = _unquote(self.toks[i + k]) or self.toks[i + k]
        if len(v) > 2 and v[0] == v[-1] == "'":       # tagged 'holiday'
            v = v[1:-1]
        e = self.emit({"keyword": v}, i, i + k + 1, neg)
        # "tagged beach or sea", "with the keywords dog and cat": more values of the cue
        while e + 1 < self.n and self.low[e] in L.CONNECT_OR | {"and", "et"} and (
                _unquote(self.toks[e + 1]) is not None or self.keyword_word(e + 1)):
            self.role[e] = "conn"
            v = _unquote(self.toks[e + 1]) or self.toks[e + 1]
            e = self.emit({"keyword": v}, e + 1, e + 2, neg)
        return e

    def keyword_word(self, x: int) -> bool:
        """A word that can be one more keyword after "tagged a and": read by no table
        and not the start of another predicate (a place, a name, a date)."""
        return self.unread_word(x) and not _is_cap(self.toks[x])

    def m_creator(self, i: int, neg: int | None) -> int:
        k = self.phrase(i, L.CREATOR_STRONG)
        if k:
            e = self.name_run(i + k) if i + k < self.n else i + k
            if e == i + k:
                e = self.lower_run(i + k)
            if e == i + k:
                self.unparsed.append(" ".join(self.toks[i:i + k]))
                return 0
            return self.emit({"creator": " ".join(self.toks[i + k:e])}, i, e, neg)
        if _is_cap(self.toks[i]) and i > 0 and self.low[i - 1] in ("that", "which", "what", "que", "qu'"):
            e = self.name_run(i)
            v = e + (e < self.n and self.low[e] in ("a", "has", "had", "ont"))
            if e > i and v < self.n and self.low[v] in L.CREATOR_VERBS:
                return self.emit({"creator": " ".join(self.toks[i:e])}, i, v + 1, neg)
        if (self.low[i] in L.CREATOR_CUES or self.low[i] in L.CREATOR_SIGNED) and i + 1 < self.n:
            e = self.name_run(i + 1)
            if e > i + 1:
                return self.emit({"creator": " ".join(self.toks[i + 1:e])}, i, e, neg)
        if self.low[i] in L.CREATOR_ANAPHOR and i + 2 < self.n and self.low[i + 1] in ("de", "d'"):
            e = self.name_run(i + 2)
            if e > i + 2:
                name = " ".join(self.toks[i + 2:e])
                c = L.countries().get(name.lower())
                # "celles de X" is the creator, unless the conversation filters by place
                # and not by creator ("et aussi celles de Porto" after a city)
                fld = "location" if "location" in self.prev_fields and "creator" not in \
                    self.prev_fields else "creator"
                return self.emit({"country": c} if c else {fld: name}, i, e, neg)
        return 0

    def m_person(self, i: int, neg: int | None) -> int:
        k = self.phrase(i, L.PERSON_PHRASES) or (1 if self.low[i] in L.PERSON_CUES else 0)
        if k and i + k < self.n:
            e = self.name_run(i + k)
            if e > i + k:
                return self.emit({"person": " ".join(self.toks[i + k:e])}, i, e, neg)
        return 0

    def m_place(self, i: int, neg: int | None) -> int:
        if self.low[i] == "of" and i + 1 < self.n:
            # "pictures of Paris": a country, or one capitalised word, is a place;
            # "of Ana Silva" (two words or more) is a person unless its first word
            # starts place names ("New", "San", "Saint"...)
            e = self.name_run(i + 1)
            name = " ".join(self.toks[i + 1:e])
            c = L.countries().get(name.lower()) if e > i + 1 else None
            if c:
                return self.emit({"country": c}, i, e, neg)
            if e == i + 2 and i > 0 and self.low[i - 1] in L.FILLERS:
                return self.emit({"location": name}, i, e, neg)
            if e >= i + 3 and i > 0 and self.low[i - 1] in L.FILLERS \
                    and self.low[i + 1] not in L.PLACE_PREFIXES:
                # "photos of Ana Silva": a first and last name is a person
                # ("pictures of New York", "of San Sebastián" stay places)
                return self.emit({"person": name}, i, e, neg)
            if e >= i + 3 and i > 0 and self.low[i - 1] in L.FILLERS:
                return self.emit({"location": name}, i, e, neg)
            return 0
        if self.low[i] not in L.PLACE_CUES or i + 1 >= self.n:
            return 0
        nxt = self.toks[i + 1]
        if self.phrase(i + 1, L.PHRASES) and self.low[i + 1] not in L.countries() \
                and (not _is_cap(nxt) or nxt.isupper()):
            return 0                    # "pas de PNG", "in PNG", "en JPEG": a format, not a place
        if self.low[i + 1] in ("la", "le", "l'", "les", "the") and i + 2 < self.n:
            # "de la Norvège", "from the Netherlands", "in the UK": a country after its article
            for k in range(min(4, self.n - i - 2), 0, -1):
                c = L.countries().get(" ".join(self.low[i + 1:i + 2 + k])) or \
                    L.countries().get(" ".join(self.low[i + 2:i + 2 + k]))
                if c and (k > 1 or _is_cap(self.toks[i + 2]) or self.low[i + 2] in L.countries()):
                    return self.emit({"country": c}, i, i + 2 + k, neg)
            e = self.name_run(i + 2)
            if e > i + 2 and self.low[i] in ("at", "near", "in", "from", "à", "près") \
                    and not (e < self.n and self.low[e] in L.COLLECTION_NOUNS) \
                    and not self.misspelt_month(i + 2):
                # "at the Louvre", "in the Alps": a named place after its article
                return self.emit({"location": " ".join(self.toks[i + 2:e])}, i, e, neg)
        e = self.name_run(i + 1)
        if e == i + 2 and self.misspelt_month(i + 1):
            # "shot in Febtember", "en Octobar 2019": a date nobody can read, not a place
            s0 = i - 1 if i > 0 and self.low[i - 1] in L.DATE_VERBS else i
            if e < self.n and re.fullmatch(r"\d{4}", self.toks[e]):
                e += 1
            self.unparsed.append(" ".join(self.toks[s0:e]))
            for k in range(s0, e):
                self.role[k] = "used"
            return e
        if e > i + 1:
            name = " ".join(self.toks[i + 1:e])
            c = L.countries().get(name.lower())
            if not c and self.low[i] in ("de", "d'") and e >= i + 3 and i > 0 \
                    and self.low[i - 1] in L.IMAGE_NOUNS and self.low[i + 1] not in L.PLACE_PREFIXES:
                # "des photos de Léa Roux": like "photos of Ana Silva", a person
                return self.emit({"person": name}, i, e, neg)
            return self.emit({"country": c} if c else {"location": name}, i, e, neg)
        c = L.countries().get(self.low[i + 1])        # a lower-case country name
        if c:
            return self.emit({"country": c}, i, i + 2, neg)
        return 0

    def alone_in_clause(self, i: int, j: int) -> bool:
        """Whether tokens i..j are the only words of their clause besides cue words,
        determiners and fillers (the clause ends at a comma or the sentence's end).
        A word before i that no table read counts as a word of the clause whether it
        is plain text or negated text (role ``negtext``): in "except those captioned
        Omar Haddad" the name is not alone, "captioned" is said with it."""
        free = L.FILLERS | L.NEGATE | L.RESTRICT | L.ADD | L.CONNECT | L.REPLACE_WORDS
        k = i - 1
        while k >= 0 and self.low[k] != ",":
            if self.role[k] in ("text", "negtext") and self.low[k] not in free:
                return False
            k -= 1
        k = j
        while k < self.n and self.low[k] != ",":
            step = max(self.phrase(k, t) for t in (L.ADD_PHRASES, L.NEGATE_PHRASES,
                                                   L.RESTRICT_PHRASES, L.FILLER_PHRASES))
            if not step and self.low[k] not in free:
                return False
            k += step or 1
        return True

    def has_cue(self) -> bool:
        """Whether the sentence holds a negation, restriction or add cue word or phrase."""
        words = L.NEGATE | L.RESTRICT | L.ADD
        tables = (L.NEGATE_PHRASES, L.RESTRICT_PHRASES, L.ADD_PHRASES)
        return any(w in words for w in self.low) or any(
            self.phrase(k, t) for k in range(self.n) for t in tables)

    def m_bare_name(self, i: int, neg: int | None) -> int:
        """A name with no cue, alone in its clause of a follow-up turn ("add Spain
        too", "et Hugo Petit aussi", "retire l'Italie"): a country name (en or fr,
        any case) is the country; a capitalised name is the person, creator or
        place field the conversation already filters by (first of person,
        creator, location), a first and last name with none of them the person.
        In a first turn, without a cue ("Spain" after "boats" may start a new
        search), or beside other words, a name stays free text."""
        if not self.has_previous or _unquote(self.toks[i]) is not None or not self.has_cue():
            return 0
        e = self.name_run(i)
        c = L.countries().get(" ".join(self.low[i:e if e > i else i + 1]))
        if c and self.alone_in_clause(i, e if e > i else i + 1):
            return self.emit({"country": c}, i, e if e > i else i + 1, neg)
        if e == i or not self.alone_in_clause(i, e):
            return 0
        name = " ".join(self.toks[i:e])
        fld = next((f for f in ("person", "creator", "location") if f in self.prev_fields), None)
        if fld is None and e - i >= 2:
            fld = "person"
        return self.emit({fld: name}, i, e, neg) if fld else 0

    def m_media(self, i: int, neg: int | None) -> int:
        k = 2 if self.low[i:i + 2] in (["au", "format"], ["media", "type"], ["mime", "type"],
                                       ["type", "mime"], ["de", "type"], ["of", "type"]) \
            else (1 if self.low[i] in ("format", "type") else 0)
        if i + k < self.n and _MEDIA.match(self.low[i + k]):
            return self.emit({"media_type": self.low[i + k]}, i, i + k + 1, neg)
        return 0

    def m_camera(self, i: int, neg: int | None) -> int:
        """A camera maker after a cue ("from the Canon", "shot on a Nikon")."""
        k = self.phrase(i, L.CAMERA_PHRASES)
        if k:
            return self.emit(dict(L.CAMERA_PHRASES[tuple(self.low[i:i + k])]), i, i + k, neg)
        return 0

    def m_phrase(self, i: int, neg: int | None) -> int:
        k = self.phrase(i, L.PHRASES)
        if k:
            return self.emit(dict(L.PHRASES[tuple(self.low[i:i + k])]), i, i + k, neg)
        return 0

    def more_in_clause(self, i: int) -> bool:
        """Whether words other than fillers follow i before the clause ends (a comma,
        a connector or the end).  Under a negation, "not the photos in black and
        white" names what is taken out after the generic noun "photos"; "not the
        photos" names photos.  (After "only", "only photos of dogs" stays kind photo.)"""
        for k in range(i, self.n):
            if self.low[k] == "," or self.low[k] in L.CONNECT or self.low[k] in L.CONNECT_OR:
                return False
            if self.low[k] not in L.FILLERS:
                return True
        return False

    # -- the scan ----------------------------------------------------------
    def run(self) -> None:
        neg_at: int | None = None       # index of the active negation word
        neg_end = 0                     # end of that negation phrase
        neg_used = False
        restrict = False
        neg_text: list[int] = []
        i = 0

        def close_neg():
            nonlocal neg_at, neg_used, neg_text
            cue = self.toks[neg_at:neg_end] if neg_at is not None else []
            # negated free text is reported without its negation word, and without the
            # function words a read predicate left behind ("not the ones from before 2015")
            words = [self.toks[k] for k in neg_text if self.low[k] not in L.NEG_LEFTOVERS]
            if neg_at is not None and words:
                self.unparsed.append(" ".join(words))
            elif neg_at is not None and not neg_used:
                self.unparsed.append(" ".join(cue))
            neg_at, neg_used, neg_text = None, False, []

        def start_neg(k: int) -> None:
            nonlocal neg_at, neg_end
            if neg_at is not None and not neg_used and not neg_text:
                # "sans rien qui", "exclude none of": one negation said twice
                for x in range(i, i + k):
                    self.role[x] = "filler"
                return
            close_neg()
            self.role[i] = "neg"
            for x in range(i + 1, i + k):
                self.role[x] = "filler"
            neg_at, neg_end = i, i + k

        while i < self.n:
            low = self.low[i]
            if low == ",":
                self.role[i] = "filler"
                close_neg()
                restrict = False
                i += 1
                continue
            neg: int | None = neg_at
            if low in L.ANSWER_WORDS and (i + 1 == self.n or self.low[i + 1] == ","):
                # "no, just the yellow ones": an answer to the last turn, not a removal
                self.role[i] = "filler"
                i += 1
                continue
            # removal phrases first ("get rid of", "no more", "plus de", "je ne veux plus")
            k = self.phrase(i, L.NEGATE_PHRASES)
            if k and self.phrase(i, L.RESTRICT_PHRASES) > k:
                k = 0                          # "rien que les détourées" keeps, "rien" alone removes
            if not k and low == "plus" and (any(x in ("ne", "n'") for x in self.low[:i]) or (
                    i + 1 < self.n and self.low[i + 1] in ("de", "d'"))) and not self.age_at(i):
                k = 1                          # "je n'en veux plus", "plus de détourées"
            if k:
                start_neg(k)
                i += k
                continue
            k = self.phrase(i, L.FILLER_PHRASES)
            if k:
                for x in range(i, i + k):
                    self.role[x] = "filler"
                i += k
                continue
            k = self.phrase(i, L.REPLACE_PHRASES)
            if k:                               # "forget that, ...": a new search
                for x in range(i, i + k):
                    self.role[x] = "filler"
                self.replace_cue = True
                i += k
                continue
            k = self.phrase(i, L.RESTRICT_PHRASES)
            if k:
                for x in range(i, i + k):
                    self.role[x] = "filler"
                restrict = self.restrict_seen = True
                i += k
                continue
            if self.phrase(i, L.ADD_PHRASES) and not self.age_at(i):   # "de plus de 5 ans" is an age
                k = self.phrase(i, L.ADD_PHRASES)
                for x in range(i, i + k):
                    self.role[x] = "filler"
                self.add_cue = True
                i += k
                continue
            j = 0
            for m in (self.m_camera, self.m_collection, self.m_expiring, self.m_date, self.m_keyword,
                      self.m_creator, self.m_person, self.m_place, self.m_media, self.m_phrase,
                      self.m_bare_name):
                j = m(i, neg)
                if j:
                    break
            if j:
                neg_used = neg_used or neg is not None
                restrict = False
                i = j
                continue
            p = i - 1
            while p > 0 and self.role[p] == "filler" and self.low[p] in ("the", "la", "le", "l'", "les"):
                p -= 1
            if p >= 1 and self.role[p] == "conn" and self.items and self.items[-1]["j"] == p \
                    and self.items[-1]["field"] in ("creator", "person", "location", "country",
                                                    "collection") and self.name_run(i) > i:
                # "by Ana Costa or Luis Silva", "in Lyon and Lille": the same field again
                e = self.name_run(i)
                name = " ".join(self.toks[i:e])
                c = L.countries().get(name.lower())
                fld = self.items[-1]["field"]
                self.emit({"country": c} if c and fld in ("country", "location") else {fld: name},
                          i, e, neg)
                neg_used = neg_used or neg is not None
                i = e
                continue
            if low in L.FIELD_NOUNS and i + 1 < self.n and self.unread_word(i + 1) \
                    and (i + 2 >= self.n or not self.unread_word(i + 2)):
                # "a licence glorbique", "format A9": a field named with a value no table
                # knows is said, never searched as words
                self.unparsed.append(" ".join(self.toks[i:i + 2]))
                self.role[i] = self.role[i + 1] = "used"
                neg_used = neg_used or neg is not None
                i += 2
                continue
            if low in L.AMBIGUOUS and (restrict or neg is not None or self.add_cue) and not (
                    neg is not None and not restrict and L.AMBIGUOUS[low] == {"kind": "photo"}
                    and self.more_in_clause(i + 1)):
                self.emit(dict(L.AMBIGUOUS[low]), i, i + 1, neg)
                neg_used = neg_used or neg is not None
                restrict = False
                i += 1
                continue
            if low in L.NEGATE:
                start_neg(1)
            elif low in L.RESTRICT:
                self.role[i] = "filler"
                restrict = self.restrict_seen = True
            elif low in L.ADD:
                self.role[i] = "filler"
                self.add_cue = True
            elif low in L.CONNECT_OR and self.has_previous and all(
                    r in ("filler", "conn") for r in self.role[:i]):
                self.role[i] = "filler"        # "or yellow", "ou en PNG": a follow-up widens
                self.add_cue = True
            elif low in L.CONNECT or low in L.CONNECT_OR:
                self.role[i] = "conn"
            elif low in L.FILLERS or (neg is not None and low in L.NEG_FILLERS):
                self.role[i] = "filler"
            elif neg is not None:
                self.role[i] = "negtext"
                neg_text.append(i)
            else:
                restrict = False
            i += 1
        close_neg()

    # -- results -----------------------------------------------------------
    def text(self) -> str:
        words = []
        for k, r in enumerate(self.role):
            if r == "text":
                words.append(_unquote(self.toks[k]) or self.toks[k])
            elif r == "conn" and 0 < k < self.n - 1 and self.role[k - 1] == "text" \
                    and self.role[k + 1] == "text":
                words.append(self.toks[k])
        return " ".join(words)

    def nodes(self) -> list[dict]:
        """Predicates in sentence order; "a or b" of one field become any[...],
        negated ones are wrapped in not (a negated any stays one not)."""
        out: list[tuple[dict, bool]] = []
        items = self.items
        k = 0
        while k < len(items):
            group = [items[k]]
            while k + 1 < len(items) and items[k + 1]["field"] == group[-1]["field"] \
                    and items[k + 1]["neg"] == group[-1]["neg"] \
                    and any(self.role[x] == "conn" and (self.low[x] in L.CONNECT_OR or (
                        self.low[x] in ("and", "et", "&") and group[-1]["field"] in L.ONE_VALUE))
                            for x in range(group[-1]["j"], items[k + 1]["i"])) \
                    and all(self.role[x] in ("conn", "filler")
                            for x in range(group[-1]["j"], items[k + 1]["i"])):
                group.append(items[k + 1])
                k += 1
            node = group[0]["node"] if len(group) == 1 else {"any": [g["node"] for g in group]}
            out.append((node, group[0]["neg"]))
            k += 1
        # the predicates under one negation word are one set taken out:
        # "not the cut-outs from last month" = not (cut-out and last month)
        res: list[dict] = []
        k = 0
        while k < len(out):
            node, neg = out[k]
            if neg is None:
                res.append(node)
                k += 1
                continue
            same = [node]
            while k + 1 < len(out) and out[k + 1][1] == neg:
                same.append(out[k + 1][0])
                k += 1
            res.append({"not": same[0] if len(same) == 1 else {"all": same}})
            k += 1
        return res

    def leading(self) -> str | None:
        """The first cue word of the sentence: 'neg', 'refine' or None."""
        for k, low in enumerate(self.low):
            if self.role[k] == "neg":          # before the connectors: "but not" is one cue
                return "neg"
            if low in L.REPLACE_WORDS or low in ("and", "et", "but", "mais", "then", "puis"):
                continue
            if low in L.RESTRICT or low in L.ANAPHORA or (low in ("the", "les") and "ones" in self.low):
                return "refine"
            if self.role[k] == "filler":     # "I don't want...", "show me only..."
                continue
            return None
        return None

    def unknown_verb(self) -> list[str] | None:
        """Words that look like a command verb no table knows: the sentence's
        only free text is a run of one or two words at its very start, right
        before a determiner, and the rest was read as predicates ("nuke the
        cut-outs", "zappe les détourées").  Whether such a verb keeps, adds or
        removes cannot be told, and guessing ``replace`` could invert the request."""
        s = 0
        while s < self.n and self.role[s] in ("filler", "conn"):   # "please", "can you", "and"
            s += 1
        k = s
        while k < self.n and self.role[k] == "text" and k - s < 2:
            k += 1
        if k == s or k >= self.n or self.low[k] not in L.DETERMINERS:
            return None
        if any(r == "text" for r in self.role[k:]) or not self.items:
            return None
        return self.toks[s:k]


def conjuncts(node: dict | None) -> list[dict]:
    """Top-level conjuncts of a filter tree (``all`` flattened one level)."""
    if node is None:
        return []
    return list(node["all"]) if "all" in node else [node]


def join_all(nodes: list[dict]) -> dict | None:
    """The canonical tree for a conjunction: None, the node itself, or all[...]."""
    if not nodes:
        return None
    return nodes[0] if len(nodes) == 1 else {"all": list(nodes)}


def contradiction(nodes: list[dict]) -> str | None:
    """A clear message when a predicate and its negation are both required."""
    for n in nodes:
        if "not" in n and n["not"] in nodes:
            return (f"Contradictory: {describe(n['not'])} is both asked for and excluded, "
                    "so nothing could match; the search was not changed.")
        if "not" in n and "any" in n["not"] and any(x in nodes for x in n["not"]["any"]):
            hit = next(x for x in n["not"]["any"] if x in nodes)
            return (f"Contradictory: {describe(hit)} is both asked for and excluded, "
                    "so nothing could match; the search was not changed.")
    return None


def describe(node: dict) -> str:
    """Short human words for a node ("colour red", "captured 2019-01-01 to 2020-01-01")."""
    if "all" in node:
        return " and ".join(describe(n) for n in node["all"])
    if "any" in node:
        return " or ".join(describe(n) for n in node["any"])
    if "not" in node:
        return "not " + describe(node["not"])
    (k, v), = node.items()
    if k == "rating":
        return rating_words(v)
    if isinstance(v, dict):
        if "expiring_before" in v:
            return f"rights expiring before {v['expiring_before']}"
        parts = ([f"from {v['from']}"] if "from" in v else []) + ([f"before {v['to']}"] if "to" in v else [])
        return f"{k} " + " ".join(parts)
    if v is True:
        return k
    return f"{k} {v}"


def parse(sentence: str, *, lang: str = "en", clock: datetime,
          has_previous: bool = False, previous: dict | None = None) -> Turn:
    """Compile one sentence into a :class:`Turn` (no state applied).

    ``lang``: "en" or "fr" (cue words of both languages are always read; lang
    picks dateparser's language).  ``clock``: the time "now" for relative
    dates (aware or naive UTC).  ``has_previous``: whether a conversation state
    exists (decides the intent).  ``previous``: the state's filter tree, or None;
    its fields decide what a bare name alone in a follow-up means (a person
    after a person filter, a place after a place filter).  Raises :class:`SentenceError` for an empty
    sentence, one over ``MAX_SENTENCE_CHARS`` characters or ``MAX_TOKENS`` tokens.
    """
    if not isinstance(sentence, str) or not sentence.strip():
        raise SentenceError("the sentence is empty")
    if "\x00" in sentence:
        raise SentenceError("the sentence holds a NUL character")
    if len(sentence) > MAX_SENTENCE_CHARS:
        raise SentenceError(f"the sentence has {len(sentence)} characters; the limit is {MAX_SENTENCE_CHARS}")
    if lang not in ("en", "fr"):
        raise SentenceError(f"language {lang!r} is not supported (en, fr)")
    s = _Scan(sentence, lang, clock, previous, has_previous)
    if s.n > MAX_TOKENS:
        raise SentenceError(f"the sentence has {s.n} words; the limit is {MAX_TOKENS}")
    s.run()
    nodes = s.nodes()
    text = s.text()
    lead = s.leading()
    unknown = s.unknown_verb() if has_previous and not s.add_cue and lead is None \
        and not s.restrict_seen and not s.replace_cue else None
    if unknown:
        words = " ".join(unknown)
        return Turn("refine", join_all(nodes), text, s.unparsed + [words],
                    f"Unclear: I could not tell whether “{words}” asks to keep only, add or "
                    "remove what follows; the search was not changed (say “only …”, “also …” "
                    "or “not …”, or edit the chips).")
    if not has_previous or s.replace_cue:
        intent = "replace"
    elif lead == "neg":                 # "retire aussi les icônes", "also drop the gifs"
        intent = "remove"
    elif s.add_cue:
        intent = "add"
    elif lead == "refine" or s.restrict_seen or not text:
        intent = "refine"
    else:
        intent = "replace"
    if intent == "remove":
        taken = [n["not"] if "not" in n else n for n in nodes]
        flt = taken[0] if len(taken) == 1 else ({"any": taken} if taken else None)
        return Turn(intent, flt, text, s.unparsed, None, removed=flt)
    flt = join_all(nodes)
    return Turn(intent, flt, text, s.unparsed, contradiction(nodes))
