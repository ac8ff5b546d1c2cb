"""A filter tree in words, for people: what the CLI and the web
page print where they used to print the tree's JSON, e.g.

    {"all": [{"captured": {"from": "2019-01-01", "to": "2020-01-01"}},
             {"kind": "photo"}, {"not": {"colour": "red"}}]}
    -> captured in 2019, kind photo, not colour red

Pure (no database). The JSON stays the contract (``--json``, the API's
``filter``, the audit log); these words are only shown. Text values people
wrote (creator, keyword, collection, place, person) are quoted “…” so a
comma or an "or" inside a value cannot read as part of the sentence; the
page escapes the sentence like any other text (Jinja autoescape) and the CLI
prints it without markup.
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

from .tree import All, Any_, Node, Not, Pred, parse

MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December")

#: Fields whose value is free text, shown quoted, with the words before it.
_TEXT = {"creator": "creator", "keyword": "keyword", "collection": "in collection",
         "country": "country", "location": "location", "person": "person"}
#: Fields whose value is a word of a fixed list (or a format), shown as is.
_PLAIN = {"kind": "kind", "colour": "colour", "background": "background",
          "orientation": "orientation", "media_type": "media type", "format": "format"}


def sentence(tree: Any) -> str:
    """The tree (JSON or parsed) as words: the conjuncts of a top-level
    ``all`` joined by ", ", an ``any`` by " or ", a nested ``all`` by " and "
    (a nested compound in parentheses), ``not`` as "not …"."""
    node = parse(tree)
    if isinstance(node, All):
        return ", ".join(_words(c, nested=True) for c in node.children)
    return _words(node, nested=False)


def _words(n: Node, nested: bool) -> str:
    if isinstance(n, (All, Any_)):
        sep = " and " if isinstance(n, All) else " or "
        text = sep.join(_words(c, nested=True) for c in n.children)
        return f"({text})" if nested and len(n.children) > 1 else text
    if isinstance(n, Not):
        return "not " + _words(n.child, nested=True)
    assert isinstance(n, Pred)
    return _pred(n.field, n.value)


def _quote(v: str) -> str:
    return f"“{v.strip()}”"


def _pred(f: str, v: Any) -> str:
    if f in _TEXT:
        return f"{_TEXT[f]} {_quote(v)}"
    if f in _PLAIN:
        return f"{_PLAIN[f]} {v}"
    if f in ("captured", "added"):
        return f"{f} {when(v)}"
    if f == "cutout":
        return "a cut-out" if v else "not a cut-out"
    if f == "monochrome":
        return "black and white" if v else "in colour"
    if f == "rights":
        if isinstance(v, dict):
            return f"rights expiring before {v['expiring_before']}"
        return "under embargo" if v == "embargoed" else "rights expired"
    # a field added later (e.g. by the conversational compiler) still reads
    return f"{f.replace('_', ' ')} {v}"


def when(rng: dict[str, str]) -> str:
    """A half-open date range [from, to) in words: "in 2019", "in 2018–2019",
    "in May 2019", "on 2019-05-01", "since 2019-05-01", "before 2020-01-01",
    or "from 2019-01-01 through 2019-03-31" (the last day included)."""
    lo = date.fromisoformat(rng["from"]) if "from" in rng else None
    hi = date.fromisoformat(rng["to"]) if "to" in rng else None
    if lo is None:
        return f"before {hi.isoformat()}"
    if hi is None:
        return f"since {lo.isoformat()}"
    if lo.month == lo.day == 1 and hi.month == hi.day == 1:
        return f"in {lo.year}" if hi.year == lo.year + 1 else f"in {lo.year}–{hi.year - 1}"
    nxt = date(lo.year + lo.month // 12, lo.month % 12 + 1, 1)
    if lo.day == 1 and hi == nxt:
        return f"in {MONTHS[lo.month - 1]} {lo.year}"
    if hi == lo + timedelta(days=1):
        return f"on {lo.isoformat()}"
    return f"from {lo.isoformat()} through {(hi - timedelta(days=1)).isoformat()}"
