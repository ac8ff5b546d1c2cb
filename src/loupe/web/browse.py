"""The library without a query, as the home page shows it: the viewer's
readable assets as a grid (newest first, paged), a timeline of capture
dates by year and month whose counts are exactly the totals its links
show, and the collections as a tree. Each function takes a user-bound
:class:`loupe.Library`: a member is shown, counted and offered only what
it may read (the filtered set's read tests, :mod:`loupe.filters.queries`)."""

from __future__ import annotations

import calendar
import json
from typing import Any
from urllib.parse import urlencode

from ..filters import facets as filter_facets
from ..library import Library
from ..queries import HIT_DETAILS
from ..search.result import Hit, SearchResult
from . import queries as wq

#: The newest assets whose values the home page's facets count; past this
#: many readable assets the counts are lower bounds and say so ("≥").
HOME_FACET_ASSETS = 5_000


def browse_library(lib: Library, *, limit: int, offset: int) -> SearchResult:
    """Page ``[offset, offset + limit)`` of the viewer's readable assets,
    newest (highest id, the latest stored) first, as a complete result:
    ``total`` is the exact number of assets the viewer may read, ``lanes``
    is ``["browse"]``, ``query`` is empty and every hit's ``explain`` is
    ``{"browse": True}``. Titles are in the first library language (the
    search's rule for hits)."""
    rows = lib.conn.execute(wq.BROWSE_ALL, {"tenant_id": lib.tenant_id, "limit": limit,
                                            "offset": offset, **lib.viewer.params()}).fetchall()
    total = rows[0][0]
    ids = [r[1] for r in rows if r[1] is not None]
    lang = lib.languages()[0]
    info: dict[int, tuple[str, str]] = {}
    if ids:
        for r in lib.conn.execute(HIT_DETAILS, {"tenant_id": lib.tenant_id, "lang": lang,
                                                "ids": ids, **lib.viewer.params()}):
            info[r[0]] = (r[1], r[2])
    hits = [Hit(rank=offset + i + 1, asset_id=a, score=None, bonus=0,
                title=info.get(a, ("", ""))[0], path=info.get(a, ("", ""))[1],
                explain={"browse": True}) for i, a in enumerate(ids)]
    return SearchResult(query="", lang=lang, terms=[], total=total, total_exact=True,
                        verdict="complete", reachable=total, limit=limit, offset=offset,
                        hits=hits, lanes=["browse"], langs=lib.languages())


def library_facets(lib: Library, total: int) -> dict[str, Any]:
    """Facets of the whole readable library (the shape of
    :func:`loupe.filters.facets.facets`), counted over its newest
    :data:`HOME_FACET_ASSETS` assets: exact when that is all of them
    (``total`` at most that), lower bounds otherwise."""
    rows = lib.conn.execute(wq.BROWSE_ALL, {"tenant_id": lib.tenant_id, "offset": 0,
                                            "limit": HOME_FACET_ASSETS,
                                            **lib.viewer.params()}).fetchall()
    ids = [r[1] for r in rows if r[1] is not None]
    return filter_facets.facets(lib.conn, lib.tenant_id, lib.viewer, ids,
                                exact=total <= HOME_FACET_ASSETS)


def month_range(year: int, month: int | None) -> dict[str, str]:
    """The ``captured`` filter value of a calendar month (``month`` None:
    the year): half-open ``{"from", "to"}`` ISO dates, UTC.

        >>> month_range(2019, 12)
        {'from': '2019-12-01', 'to': '2020-01-01'}
    """
    if month is None:
        return {"from": f"{year:04d}-01-01", "to": f"{year + 1:04d}-01-01"}
    nxt = (year + 1, 1) if month == 12 else (year, month + 1)
    return {"from": f"{year:04d}-{month:02d}-01", "to": f"{nxt[0]:04d}-{nxt[1]:02d}-01"}


def filter_json(node: dict[str, Any]) -> str:
    """A filter node as the ``filters`` parameter of a browsing link (the page
    compares it with its own to mark the link of what it shows)."""
    return json.dumps(node, ensure_ascii=False)


def _filter_url(node: dict[str, Any], lang: str = "") -> str:
    return "/?" + urlencode({"filters": filter_json(node), **({"lang": lang} if lang else {})})


def timeline(lib: Library, lang: str = "") -> dict[str, Any]:
    """The viewer's readable assets by capture year and month (UTC), newest
    first: ``{"years": [{"year", "count", "url", "filters", "months":
    [{"month", "name", "count", "url", "filters"}]}], "undated": int}``
    (``filters``: the link's filter JSON). Each ``url`` is the home
    page filtered to that year or month (``{"captured": month_range(...)}``),
    whose total is exactly ``count``: an asset counts in a month when a file
    the viewer may read was captured then (so one asset may count in two
    months, and the months of a year may add up to more than the year).
    ``undated``: readable assets with no capture date the viewer may read."""
    years: list[dict[str, Any]] = []
    undated = 0
    for y, m, n in lib.conn.execute(wq.TIMELINE, {"tenant_id": lib.tenant_id,
                                                  **lib.viewer.params()}):
        if y is None:
            undated = n
        elif m is None:
            node = {"captured": month_range(y, None)}
            years.append({"year": y, "count": n, "months": [], "filters": filter_json(node),
                          "url": _filter_url(node, lang)})
        else:
            node = {"captured": month_range(y, m)}
            years[-1]["months"].append({
                "month": m, "name": calendar.month_abbr[m], "count": n,
                "filters": filter_json(node), "url": _filter_url(node, lang)})
    return {"years": years, "undated": undated}


def collection_tree(collections: list[dict[str, Any]], lang: str = "") -> list[dict[str, Any]]:
    """The viewer's collections (:meth:`loupe.Library.collections`, each
    with ``scope_name`` from the page's menu) as a forest: each node is the
    collection's dict plus ``name`` (the last part of its path), ``url``
    (the home page filtered to it, sub-collections included) and
    ``children``, siblings by name. A collection whose parent the viewer
    does not see is a root."""
    nodes = {c["id"]: {**c, "name": c["path"].rsplit("/", 1)[-1], "children": [],
                       "url": _filter_url({"collection": c.get("scope_name") or c["path"]},
                                          lang)}
             for c in collections}
    roots = []
    for node in nodes.values():
        parent = nodes.get(node["parent_id"])
        (parent["children"] if parent else roots).append(node)
    for node in nodes.values():
        node["children"].sort(key=lambda c: c["name"].lower())
    return sorted(roots, key=lambda c: c["name"].lower())
