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

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..filters.words import rating_words
from . import lexicon as L
from . import match_dates, match_names
from .dates import date_at
from .tokens import is_cap as _is_cap
from .tokens import tokenize as tokenize  # re-exported
from .tokens import unquote as _unquote

MAX_SENTENCE_CHARS = 1000   # a sentence longer than this is refused before any work
MAX_TOKENS = 120


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
        """Stage: :func:`loupe.conversation.match_names.m_collection`."""
        return match_names.m_collection(self, i, neg)

    def misspelt_month(self, x: int) -> bool:
        """Stage: :func:`loupe.conversation.match_dates.misspelt_month`."""
        return match_dates.misspelt_month(self, x)

    def plain_word(self, x: int) -> bool:
        """Stage: :func:`loupe.conversation.match_dates.plain_word`."""
        return match_dates.plain_word(self, x)

    def unread_word(self, x: int) -> bool:
        """Stage: :func:`loupe.conversation.match_dates.unread_word`."""
        return match_dates.unread_word(self, x)

    def age_at(self, i: int) -> int:
        """Stage: :func:`loupe.conversation.match_dates.age_at`."""
        return match_dates.age_at(self, i)

    def day_range(self, i: int, j: int) -> tuple[dict, int] | None:
        """Stage: :func:`loupe.conversation.match_dates.day_range`."""
        return match_dates.day_range(self, i, j)

    def m_date(self, i: int, neg: int | None) -> int:
        """Stage: :func:`loupe.conversation.match_dates.m_date`."""
        return match_dates.m_date(self, i, neg)

    def m_expiring(self, i: int, neg: int | None) -> int:
        """Stage: :func:`loupe.conversation.match_dates.m_expiring`."""
        return match_dates.m_expiring(self, i, neg)

    def m_keyword(self, i: int, neg: int | None) -> int:
        """Stage: :func:`loupe.conversation.match_names.m_keyword`."""
        return match_names.m_keyword(self, i, neg)

    def keyword_word(self, x: int) -> bool:
        """Stage: :func:`loupe.conversation.match_names.keyword_word`."""
        return match_names.keyword_word(self, x)

    def m_creator(self, i: int, neg: int | None) -> int:
        """Stage: :func:`loupe.conversation.match_names.m_creator`."""
        return match_names.m_creator(self, i, neg)

    def m_person(self, i: int, neg: int | None) -> int:
        """Stage: :func:`loupe.conversation.match_names.m_person`."""
        return match_names.m_person(self, i, neg)

    def m_place(self, i: int, neg: int | None) -> int:
        """Stage: :func:`loupe.conversation.match_names.m_place`."""
        return match_names.m_place(self, i, neg)

    def alone_in_clause(self, i: int, j: int) -> bool:
        """Stage: :func:`loupe.conversation.match_names.alone_in_clause`."""
        return match_names.alone_in_clause(self, i, j)

    def has_cue(self) -> bool:
        """Stage: :func:`loupe.conversation.match_names.has_cue`."""
        return match_names.has_cue(self)

    def m_bare_name(self, i: int, neg: int | None) -> int:
        """Stage: :func:`loupe.conversation.match_names.m_bare_name`."""
        return match_names.m_bare_name(self, i, neg)

    def m_media(self, i: int, neg: int | None) -> int:
        """Stage: :func:`loupe.conversation.match_names.m_media`."""
        return match_names.m_media(self, i, neg)

    def m_camera(self, i: int, neg: int | None) -> int:
        """A camera maker after a cue ("from the Canon", "shot on a Nikon")."""
        k = self.phrase(i, L.CAMERA_PHRASES)
        if k:
            return self.emit(dict(L.CAMERA_PHRASES[tuple(self.low[i:i + k])]), i, i + k, neg)
        return 0

    def m_phrase(self, i: int, neg: int | None) -> int:
        """Stage: :func:`loupe.conversation.match_names.m_phrase`."""
        return match_names.m_phrase(self, i, neg)

    def more_in_clause(self, i: int) -> bool:
        """Stage: :func:`loupe.conversation.match_names.more_in_clause`."""
        return match_names.more_in_clause(self, i)

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
