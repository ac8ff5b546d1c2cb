"""Filters against the database: resolve a tree's collections, compile it
for a viewer, list a filtered set without query text (browse), and say
why a filter leaves nothing."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import psycopg

from ..access.viewer import OWNER, Viewer
from ..scopes.search import collection_id, scope_collections
from . import queries as q
from .compile import FILTER_LIMIT, Compiled, Context, compile_tree
from .tree import All, FilterError, Node, Pred, parse
from .words import sentence
from ..scopes.search import UnknownScope
from .. import queries as lq
from ..search.context import SearchContext
from ..search.pipeline import SearchPipeline, SearchRequest
from ..search.result import Hit, SearchResult

#: Whether the machine-words table exists (migration 0019).
MACHINE_TABLE = "SELECT to_regclass('asset_machine') IS NOT NULL"


def resolve_collections(conn: psycopg.Connection, tenant_id: int, tree: Node, *,
                        viewer: Viewer = OWNER) -> dict[str, list[int]]:
    """Each ``collection`` value of ``tree`` → the ids of that collection and
    its sub-collections (names as :func:`loupe.scopes.search.collection_id`
    reads them in ``viewer``'s view: path, ``id:N``, full path; a collection
    the viewer may not see is named like a missing one).

    Raises:
        FilterError: a name resolves to no collection or to several (the
            message of :class:`loupe.scopes.search.UnknownScope`).
    """
    out: dict[str, list[int]] = {}
    for p in tree.predicates():
        if p.field == "collection" and p.value not in out:
            try:
                cid = collection_id(conn, tenant_id, p.value, viewer=viewer)
            except UnknownScope as exc:
                raise FilterError(f"collection {p.value!r}", str(exc)) from None
            out[p.value] = scope_collections(conn, tenant_id, cid)
    return out


def prepare(conn: psycopg.Connection, tenant_id: int, tree: Any, *, viewer: Viewer = OWNER,
            now: datetime | None = None) -> Compiled:
    """Parse, resolve and compile ``tree`` for ``viewer``; ``now`` is the
    clock of rights predicates (default: the current time, UTC).

    Raises:
        FilterError: see :func:`loupe.filters.compile.compile_tree`.
    """
    node = parse(tree)
    ctx = Context(now=now or datetime.now(timezone.utc),
                  collections=resolve_collections(conn, tenant_id, node, viewer=viewer),
                  see_all=viewer.see_all,
                  machine=bool(conn.execute(MACHINE_TABLE).fetchone()[0]))
    return compile_tree(node, ctx)


def statement_params(compiled: Compiled, tenant_id: int, viewer: Viewer) -> dict[str, Any]:
    """Every parameter a filter clause needs (its values, the tenant, the
    viewer's ``see_all`` / ``principals``, ``filter_limit``)."""
    return {**compiled.values, "tenant_id": tenant_id, **viewer.params()}


@dataclass
class Browse:
    """A page of a filtered set without query text: ``total`` assets (exact
    when ``total_exact``; at least ``total`` otherwise), newest first."""

    total: int
    total_exact: bool
    ids: list[int] = field(default_factory=list)


def browse(conn: psycopg.Connection, compiled: Compiled, tenant_id: int, viewer: Viewer, *,
           limit: int, offset: int) -> Browse:
    """The filtered set's page ``[offset, offset + limit)``, newest asset
    (highest id) first, and its size counted up to FILTER_LIMIT - 1 exactly
    (one more reads "at least")."""
    stmt = q.BROWSE.replace("{members}", compiled.members_sql()).format(
        driver=compiled.driver, test=compiled.residual)
    rows = conn.execute(stmt, {**statement_params(compiled, tenant_id, viewer),
                               "limit": limit, "offset": offset}).fetchall()
    n = rows[0][0]
    exact = n < FILTER_LIMIT
    return Browse(total=n if exact else FILTER_LIMIT - 1, total_exact=exact,
                  ids=[r[1] for r in rows if r[1] is not None])


def any_member(conn: psycopg.Connection, compiled: Compiled, tenant_id: int,
               viewer: Viewer) -> bool:
    """Whether any asset the viewer may read passes the filter."""
    stmt = q.ANY_MEMBER.format(members=compiled.members_sql())
    return bool(conn.execute(stmt, statement_params(compiled, tenant_id, viewer)).fetchone()[0])


def empty_notice(conn: psycopg.Connection, compiled: Compiled, tenant_id: int,
                 viewer: Viewer) -> str | None:
    """A sentence when the filter alone leaves no asset (so an empty result
    is never silent about why): which collections have nothing in common,
    else that no asset passes the filter. None when some asset passes it."""
    if any_member(conn, compiled, tenant_id, viewer):
        return None
    node = compiled.tree
    if isinstance(node, All):
        colls = [c.value for c in node.children
                 if isinstance(c, Pred) and c.field == "collection"]
        if len(colls) >= 2:
            return ("no asset is in every one of the collections " + ", ".join(
                repr(c) for c in colls) + " (their intersection is empty): search their "
                "union instead, or fewer of them")
    return "no asset passes the filter (" + sentence(node) + "), whatever the query"


def with_scope(tree: Any, scope: str | list[str] | None) -> Node:
    """``tree`` AND the scope's collections (their union), as one tree."""
    node = parse(tree)
    if scope is None or scope == [] or scope == ():
        return node
    names = [scope] if isinstance(scope, str) else list(scope)
    colls: Node = Pred("collection", names[0]) if len(names) == 1 else \
        parse({"any": [{"collection": n} for n in names]})
    return All((colls, node))


def browse_filtered(conn: psycopg.Connection, tenant_id: int, viewer: Viewer, tree: Any,
                    scope: Any, *, limit: int, offset: int) -> tuple[Browse, list[str], Node]:
    """What :meth:`loupe.Library.search` shows for filters and no query
    text: the filtered set (inside ``scope`` when given), newest first, with
    its size (exact up to FILTER_LIMIT - 1; beyond: at least that many), the
    notices (an empty set says why: :func:`empty_notice`) and the tree."""
    compiled = prepare(conn, tenant_id, with_scope(tree, scope), viewer=viewer)
    b = browse(conn, compiled, tenant_id, viewer, limit=limit, offset=offset)
    notices = []
    if b.total == 0:
        notices.append(empty_notice(conn, compiled, tenant_id, viewer)
                       or "no asset passes the filter")
    return b, notices, parse(tree)


def filtered_search(lib: SearchContext, query: str, langs: list[str], limit: int, offset: int,
                    scope: Any, tree: Any):
    """:meth:`loupe.Library.search` with a filter tree (limits checked by
    the caller). With query text: the search pipeline with the compiled tree
    as its clause and its scope (collections given as ``scope`` are AND-ed
    into the tree: one set), so every lane, band and count is of assets it
    accepts. Without: the filtered set itself (:func:`browse_filtered`),
    newest first. Either way ``result.filter`` is the tree's JSON, and an
    empty result says why.

    Raises:
        FilterError: a bad tree, or a collection it names does not exist.
    """
    node = parse(tree)
    if query.strip():
        compiled = prepare(lib.conn, lib.tenant_id, with_scope(node, scope), viewer=lib.viewer)
        res = SearchPipeline(lib).run(SearchRequest(query, langs, limit, offset, None, False,
                                                    compiled))
        if res.total == 0:
            why = empty_notice(lib.conn, compiled, lib.tenant_id, lib.viewer)
            if why is not None:
                # no readable asset passes the filter: nothing can match, and
                # that is proven whatever a lane would have bridged ("No results — not
                # proven" under "no asset passes" would contradict itself)
                res.verdict, res.total_exact = "complete", True
            res.notices.append(why or "nothing that passes the filter matches the query")
    else:
        b, notices, _ = browse_filtered(lib.conn, lib.tenant_id, lib.viewer, node, scope,
                                        limit=limit, offset=offset)
        info = {}
        if b.ids:
            for r in lib.conn.execute(lq.HIT_DETAILS, {"tenant_id": lib.tenant_id,
                                                       "lang": langs[0], "ids": b.ids,
                                                       **lib.viewer.params()}):
                info[r[0]] = (r[1], r[2])
        hits = [Hit(rank=offset + i + 1, asset_id=a, score=None, bonus=0,
                    title=info.get(a, ("", ""))[0], path=info.get(a, ("", ""))[1],
                    explain={"filter": True}) for i, a in enumerate(b.ids)]
        res = SearchResult(query=query, lang=langs[0], terms=[], total=b.total,
                           total_exact=b.total_exact,
                           verdict="complete" if b.total_exact else "truncated",
                           reachable=b.total, limit=limit, offset=offset, hits=hits,
                           lanes=["filter"], notices=notices, langs=list(langs))
    res.filter = node.to_json()
    return res
