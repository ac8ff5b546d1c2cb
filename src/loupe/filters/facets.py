"""Facets of a result: the most common values of each facet
among the assets of a result, with counts.

Computed by one statement over the result's asset ids (at most the bulk
ceiling, :data:`loupe.library.BULK_MAX`): no second scan of the library.
Counts are **exact** when the result is complete (every matching asset is
among the ids); otherwise each count is a lower bound ("at least"). A
member's counts come only from assets and files it may read, so a hidden
asset never moves a count.
"""

from __future__ import annotations

from typing import Any

import psycopg

from ..access.viewer import Viewer
from . import queries as q
from .search import MACHINE_TABLE

#: Facets in the order they are shown.
FACETS = ("collection", "creator", "keyword", "year", "format", "orientation", "country",
          "kind", "colour")
#: Values kept per facet by default, and at most.
TOP = 10
TOP_MAX = 100


def _filter(facet: str, key: str) -> dict[str, Any]:
    """The filter node that narrows a result to one facet value."""
    if facet == "collection":
        return {"collection": f"id:{key}"}
    if facet == "year":
        y = int(key)
        return {"captured": {"from": f"{y:04d}-01-01", "to": f"{y + 1:04d}-01-01"}}
    if facet == "format":
        return {"media_type": key}
    return {facet: key}


def check_top(top: Any) -> None:
    """Raises ValueError unless ``top`` is a whole number in [1, TOP_MAX]."""
    if isinstance(top, bool) or not isinstance(top, int) or not 1 <= top <= TOP_MAX:
        raise ValueError(f"top = {top!r} is out of range: it must be within 1 and {TOP_MAX}")


def facets(conn: psycopg.Connection, tenant_id: int, viewer: Viewer, ids: list[int], *,
           exact: bool, top: int = TOP) -> dict[str, Any]:
    """Top ``top`` values per facet among assets ``ids`` (a result's rows).

    Returns ``{"exact": bool, "facets": {facet: [{"value", "key", "count",
    "filter"}, ...]}}``: ``value`` as written (the first spelling by
    sort order), ``key`` the normalised value, ``count`` the assets holding
    it (a lower bound unless ``exact``), ``filter`` the node narrowing the
    result to it. Every facet of :data:`FACETS` is present (kind and colour
    only with machine words), possibly empty.

    Raises:
        ValueError: ``top`` outside [1, TOP_MAX].
    """
    check_top(top)
    machine = bool(conn.execute(MACHINE_TABLE).fetchone()[0])
    out: dict[str, list] = {f: [] for f in FACETS if machine or f not in ("kind", "colour")}
    if ids:
        stmt = q.FACETS.replace("{machine}", q.FACETS_MACHINE if machine else "")
        for facet, key, label, n in conn.execute(stmt, {"ids": list(ids), "tenant_id": tenant_id,
                                                        "top": top, **viewer.params()}):
            value = label.split("/", 1)[1] if facet == "format" else label
            out[facet].append({"value": value, "key": key, "count": n,
                               "filter": _filter(facet, key)})
    return {"exact": exact, "facets": out}
