"""Shape check of a filter tree (the shared JSON contract, notes/roster.md),
for trees that come from outside (a hand-edited chip, an API body).

This checks the *shape* only (keys, value types, enumerations, ISO dates,
bounds); which values exist in the library is the search's business.
"""
from __future__ import annotations

import re
from typing import Any

MAX_NODES = 64          # predicates + operators in one tree
MAX_DEPTH = 8
MAX_VALUE_CHARS = 200

ENUMS = {
    "kind": {"photo", "illustration", "clipart", "lineart", "screenshot", "document", "icon"},
    "orientation": {"portrait", "landscape", "square", "panorama"},
    "background": {"transparent", "white", "black", "uniform", "scene"},
}
TEXT_FIELDS = {"creator", "keyword", "collection", "media_type", "format", "colour", "country",
               "location", "person"}
DATE_FIELDS = {"captured", "added"}
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


class TreeError(ValueError):
    """The tree does not have the contract's shape (the message names the part)."""


def _date(v: Any, where: str) -> str:
    from datetime import date

    if not isinstance(v, str) or not _DATE.match(v):
        raise TreeError(f"{where}: {v!r} is not a date YYYY-MM-DD")
    try:
        date.fromisoformat(v)
    except ValueError:
        raise TreeError(f"{where}: {v!r} is not a calendar date") from None
    return v


def check(node: Any) -> dict | None:
    """Return ``node`` if it is None or a valid tree; raise :class:`TreeError`
    naming the offending part and the bound otherwise."""
    if node is None:
        return None
    count = [0]

    def walk(n: Any, depth: int, where: str) -> None:
        count[0] += 1
        if count[0] > MAX_NODES:
            raise TreeError(f"the filter has more than {MAX_NODES} nodes")
        if depth > MAX_DEPTH:
            raise TreeError(f"the filter is nested deeper than {MAX_DEPTH} levels")
        if not isinstance(n, dict) or len(n) != 1:
            raise TreeError(f"{where}: a node is an object with exactly one key")
        (k, v), = n.items()
        if k in ("all", "any"):
            if not isinstance(v, list) or not v:
                raise TreeError(f"{where}.{k}: a non-empty list of nodes is required")
            for i, c in enumerate(v):
                walk(c, depth + 1, f"{where}.{k}[{i}]")
        elif k == "not":
            walk(v, depth + 1, f"{where}.not")
        elif k in DATE_FIELDS:
            if not isinstance(v, dict) or not v or set(v) - {"from", "to"}:
                raise TreeError(f"{where}.{k}: an object with 'from' and/or 'to' is required")
            for e, d in v.items():
                _date(d, f"{where}.{k}.{e}")
        elif k in ENUMS:
            if v not in ENUMS[k]:
                raise TreeError(f"{where}.{k}: {v!r} is not one of {sorted(ENUMS[k])}")
        elif k == "cutout":
            if v is not True:
                raise TreeError(f"{where}.cutout: only true is allowed")
        elif k == "rights":
            if isinstance(v, dict):
                if set(v) != {"expiring_before"}:
                    raise TreeError(f"{where}.rights: only {{'expiring_before': date}} is allowed")
                _date(v["expiring_before"], f"{where}.rights.expiring_before")
            elif v not in ("embargoed", "expired"):
                raise TreeError(f"{where}.rights: {v!r} is not 'embargoed', 'expired' or an expiry")
        elif k in TEXT_FIELDS:
            if not isinstance(v, str) or not v.strip():
                raise TreeError(f"{where}.{k}: a non-empty text value is required")
            if len(v) > MAX_VALUE_CHARS:
                raise TreeError(f"{where}.{k}: the value has {len(v)} characters; the limit is "
                                f"{MAX_VALUE_CHARS}")
        else:
            raise TreeError(f"{where}: unknown field {k!r}")

    walk(node, 0, "filter")
    return node
