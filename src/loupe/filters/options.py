"""Readable options (CLI flags, web form fields) turned into a filter tree.

Imports :mod:`.tree` (the nodes) and :mod:`.dates` (the date ranges), which
import nothing from here.
"""

from __future__ import annotations

from typing import Any

from .dates import date_range
from .tree import DATE_FIELDS, FilterError, All, Node, bbox_option, near_option, parse, rating_option


#: Readable options (CLI, web form) → the field they name; repeated values
#: of one option are alternatives (OR), different options all hold (AND).
OPTION_FIELDS = ("creator", "keyword", "collection", "media_type", "format", "orientation",
                 "country", "location", "kind", "colour", "background", "person",
                 "camera", "make", "lens", "label", "city")


def tree_from_options(options: dict[str, Any], *, where: Any = None,
                      all_collections: bool = False, now: Any = None) -> Node | None:
    """A tree from readable options: ``{"creator": ["Jane"], "captured":
    "2019", "cutout": True, "monochrome": False, "rights": "expired", "expiring_before": "2027-01-01",
    "rating": "4+", "near": "38.72,-9.14", "within": 5, "bbox": "38,-10,39,-9", ...}`` (lists: alternatives, OR; ``captured`` / ``added`` read by
    :func:`loupe.filters.dates.date_range` against ``now``), AND-ed with the
    JSON tree ``where``. Several collections are their union unless
    ``all_collections`` (then every one must hold: their intersection).
    None when nothing was given.

    Raises:
        FilterError: a value that is not valid (named as its option).
    """
    parts: list[Any] = []
    if where is not None and where != "":
        parts.append(parse(where))
    for name in OPTION_FIELDS:
        vals = options.get(name) or []
        vals = [vals] if isinstance(vals, str) else list(vals)
        if not vals:
            continue
        nodes = [{name: v} for v in vals]
        if len(nodes) == 1:
            parts.append(nodes[0])
        elif name == "collection" and all_collections:
            parts.append({"all": nodes})
        else:
            parts.append({"any": nodes})
    for name in DATE_FIELDS:
        if options.get(name):
            parts.append({name: date_range(options[name], now=now, path=f"--{name}")})
    for flag in ("cutout", "monochrome"):
        if options.get(flag) is not None:
            parts.append({flag: bool(options[flag])})
    for state in ("embargoed", "expired"):
        if options.get(state):
            parts.append({"rights": state})
    if options.get("expiring_before"):
        parts.append({"rights": {"expiring_before": options["expiring_before"]}})
    if options.get("rating") not in (None, ""):
        r = options["rating"]
        parts.append({"rating": rating_option(r) if isinstance(r, str) else r})
    if options.get("near"):
        parts.append({"near": near_option(options["near"], options.get("within"))})
    elif options.get("within") not in (None, ""):
        raise FilterError("--within", "a distance needs --near LAT,LON")
    if options.get("bbox"):
        parts.append({"bbox": bbox_option(options["bbox"])})
    if not parts:
        return None
    nodes = [parse(p) for p in parts]
    return nodes[0] if len(nodes) == 1 else All(tuple(nodes))
