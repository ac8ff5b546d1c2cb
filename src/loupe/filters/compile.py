"""Compile a filter tree into SQL clauses over the asset row (pure).

:func:`compile_tree` returns a :class:`Compiled`:

* ``test`` — a boolean SQL expression over the row of ``asset`` aliased
  ``a`` (``FROM asset a``), to AND into a statement's WHERE;
* ``driver`` — a SELECT of asset ids a filtered set is enumerated from
  (see :mod:`loupe.filters.queries`), or the tenant's assets when the tree
  has no positive predicate to start from;
* ``residual`` — the part of ``test`` the driver does not guarantee, which
  the enumeration runs on each driven asset: an exact driver (every one but
  ``person``'s) guarantees its predicate, so e.g. a year AND an orientation
  enumerated from the capture-time index tests only the orientation per
  asset (the re-test of each member's capture date was most of a
  filtered lexical search's time). ``"true"`` when nothing is left;
* ``params`` — the values, bound as ``%(flt_N)s`` parameters (never written
  into the text), plus ``filter_limit``.

Nothing of a value reaches the text: the text depends only on the tree's
shape and field names (from a fixed list). The statements using it must
also bind ``tenant_id``, ``see_all`` and ``principals`` (the viewer's).

Dates: ``captured`` and ``added`` ranges are half-open [from, to) in UTC,
from midnight UTC of ``from`` to midnight UTC of ``to`` (an open end is
unbounded; an asset without a capture date matches no ``captured`` range).
``rights`` compare with the context's clock: ``embargoed`` — the embargo
ends after now; ``expired`` — the rights expired at or before now;
``expiring_before`` — the rights are still valid now and expire before
midnight UTC of that date.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from ..scopes.queries import DEEP_MAX
from . import queries as q
from .dates import utc_bounds
from .tree import FORMATS, All, Any_, FilterError, Node, Not, Pred, parse

#: Rows of a filtered set enumerated at most (the scopes' DEEP_MAX + 1: enough
#: to choose a regime; beyond it a count reads "at least").
FILTER_LIMIT = DEEP_MAX + 1

_NEG_INF = datetime(1, 1, 1, tzinfo=timezone.utc)
_POS_INF = datetime(9999, 12, 31, tzinfo=timezone.utc)

#: Which fields a driver may start from, most selective kind first.
_DRIVER_ORDER = ("person", "collection", "creator", "keyword", "location", "country", "captured",
                 "added", "media_type", "format", "rights", "kind", "colour", "background",
                 "orientation", "cutout", "monochrome")
MACHINE_FIELDS = ("kind", "colour", "background", "cutout", "monochrome")


@dataclass
class Context:
    """What compiling needs besides the tree.

    Attributes:
        now: the clock ``rights`` are compared with (UTC).
        collections: each ``collection`` value of the tree → the ids of that
            collection and its sub-collections (resolved beforehand:
            :func:`loupe.filters.search.resolve_collections`).
        see_all: whether the viewer sees everything (rights predicates
            ``embargoed`` / ``expired`` are refused to others: they never
            see such assets).
        machine: whether ``asset_machine`` (machine words) exists.
    """

    now: datetime
    collections: dict[str, list[int]] = field(default_factory=dict)
    see_all: bool = True
    machine: bool = False


@dataclass
class Compiled:
    """A compiled tree: ``test`` over ``asset a``, ``driver`` (a SELECT of
    asset ids), ``values`` (the bound parameters, also :meth:`params`) and
    the tree itself. It is a :class:`loupe.search.clause.AssetClause` whose
    set is the search's scope (:meth:`scope_members`)."""

    tree: Node
    test: str
    driver: str
    values: dict[str, Any]
    residual: str = "true"

    def members_sql(self) -> str:
        """The filtered set's readable assets (``asset_id``), at most
        ``%(filter_limit)s``: the driver's assets that pass the residual
        test (and the tenant and read tests)."""
        return q.MEMBERS.format(driver=self.driver, test=self.residual)

    # -- loupe.search.clause.AssetClause: how the search pipeline applies it --

    def sql(self, asset: str) -> str:
        """The test on the asset whose id is the column ``asset`` of a search
        statement (an entry point of :mod:`loupe.search.clause`)."""
        return self.where(asset)

    def params(self) -> dict[str, Any]:  # type: ignore[no-redef]
        """(A method for the pipeline; the values are ``self.values``.)"""
        return self.values

    def scope_members(self) -> str:
        """The filtered set as the statement's scope (see
        :func:`loupe.scopes.queries.readable_members`): regime, bands and
        the exact vector scan read it."""
        return self.members_sql()

    def where(self, alias: str) -> str:
        """The test for an asset id column ``alias`` of another statement
        (``k.asset_id``: a name from that statement, never user input)."""
        assert alias.replace(".", "").replace("_", "").isalnum()
        return q.ROW_TEST.format(test=self.test, alias=alias)


#: Fields tested on the asset row itself (cheapest), on asset_machine, and
#: on the asset's files (a probe and a function of the metadata per file).
_ASSET_FIELDS = ("media_type", "format", "orientation", "added", "rights")


def _cost(n: Node) -> int:
    """A rank of how much a node's test costs per row: its AND / OR
    operands are written cheapest first (evaluation stops at the first that
    decides), so a test run for every row of an HNSW walk or a kept list
    probes files only for rows the asset's own columns let through."""
    if isinstance(n, Pred):
        return 0 if n.field in _ASSET_FIELDS else 1 if n.field in MACHINE_FIELDS else 2
    if isinstance(n, Not):
        return _cost(n.child)
    return max(_cost(c) for c in n.children) + 1


class _Compiler:
    def __init__(self, ctx: Context):
        self.ctx = ctx
        self.params: dict[str, Any] = {}

    def bind(self, value: Any) -> str:
        name = f"flt_{len(self.params)}"
        self.params[name] = value
        return f"%({name})s"

    # (test, driver or None, residual or None) of a node: the residual is
    # what an asset of the driver must still pass (None: the driver is exact,
    # each of its assets passes the node's test)
    def node(self, n: Node, path: str) -> tuple[str, str | None, str | None]:
        if isinstance(n, All):
            parts = [self.node(c, f"{path}.all[{i}]") for i, c in enumerate(n.children)]
            order = sorted(range(len(parts)), key=lambda i: _cost(n.children[i]))
            test = "(" + " AND ".join(parts[i][0] for i in order) + ")"
            drivers = [(self._rank(n.children[i]), i) for i in range(len(parts)) if parts[i][1]]
            if not drivers:
                return test, None, test
            chosen = min(drivers)[1]
            rest = [parts[i][2] if i == chosen else parts[i][0] for i in order]
            rest = [t for t in rest if t is not None]
            return test, parts[chosen][1], "(" + " AND ".join(rest) + ")" if rest else None
        if isinstance(n, Any_):
            parts = [self.node(c, f"{path}.any[{i}]") for i, c in enumerate(n.children)]
            test = "(" + " OR ".join(t for _, (t, _, _) in sorted(
                zip(n.children, parts), key=lambda x: _cost(x[0]))) + ")"
            if all(d for _, d, _ in parts):
                exact = all(r is None for _, _, r in parts)
                return test, " UNION ALL ".join(f"({d})" for _, d, _ in parts), \
                    None if exact else test
            return test, None, test
        if isinstance(n, Not):
            t, _, _ = self.node(n.child, f"{path}.not")
            t = f"(NOT coalesce({t}, false))"
            return t, None, t
        assert isinstance(n, Pred)
        test, driver = self.pred(n, f"{path}.{n.field}")
        # every driver of loupe.filters.queries is exact but the person's
        return test, driver, test if n.field == "person" else None

    def _rank(self, n: Node) -> int:
        if isinstance(n, Pred) and n.field in _DRIVER_ORDER:
            return _DRIVER_ORDER.index(n.field)
        return len(_DRIVER_ORDER)

    def pred(self, p: Pred, path: str) -> tuple[str, str | None]:
        f, v = p.field, p.value
        if f in ("creator", "location", "country", "keyword"):
            prefix, val = self.bind(f + ":"), self.bind(v)
            test = q.TEST[f].format(p=prefix, v=val)
            driver = q.DRIVER["file_token"].format(p=prefix, v=val)
            if f == "keyword":
                test = f"({test} OR {q.TEST['asset_keyword'].format(v=val)})"
                driver = f"{driver} UNION ALL {q.DRIVER['asset_keyword'].format(v=val)}"
            return test, driver
        if f in ("captured", "added"):
            lo, hi = utc_bounds(v)
            a, b = self.bind(lo or _NEG_INF), self.bind(hi or _POS_INF)
            return q.TEST[f].format(v=a, w=b), q.DRIVER[f].format(v=a, w=b)
        if f == "collection":
            if v not in self.ctx.collections:
                raise FilterError(path, f"collection {v!r} was not resolved")
            ids = self.bind(list(self.ctx.collections[v]))
            return q.TEST["collection"].format(v=ids), q.DRIVER["collection"].format(v=ids)
        if f in ("media_type", "format"):
            mt = v.lower() if f == "media_type" else FORMATS[v.lower().lstrip(".")]
            b = self.bind(mt)
            return q.TEST["media_type"].format(v=b), q.DRIVER["media_type"].format(v=b)
        if f == "orientation":
            b = self.bind(v)
            return q.TEST["orientation"].format(v=b), q.DRIVER["orientation"].format(v=b)
        if f == "rights":
            now = self.bind(self.ctx.now)
            if isinstance(v, dict):
                until = self.bind(utc_bounds({"from": v["expiring_before"]})[0])
                return (q.TEST["expiring"].format(v=now, w=until),
                        q.DRIVER["expiring"].format(v=now, w=until))
            if not self.ctx.see_all:
                raise FilterError(path, f"only the owner and admins may filter by rights "
                                        f"{v!r}: a member sees no {v} asset")
            return q.TEST[v].format(v=now), q.DRIVER[v].format(v=now)
        if f in MACHINE_FIELDS:
            if not self.ctx.machine:
                raise FilterError(path, f"{f} filters need machine words, which this library "
                                        f"does not have yet ('loupe enrich')")
            b = self.bind(v)
            return q.TEST[f].format(v=b), q.DRIVER[f].format(v=b)
        if f == "person":
            b = self.bind(v)
            return q.TEST["person"].format(v=b), q.DRIVER["person"].format(v=b)
        raise FilterError(path, f"unknown field {f!r}")  # pragma: no cover - parse refuses it


def compile_tree(tree: Any, ctx: Context) -> Compiled:
    """Compile ``tree`` (JSON or a parsed node) for the context (see module
    docstring). Pure: no database access.

    Raises:
        FilterError: the tree is not valid, names a collection the context
            did not resolve, or a predicate the viewer or library cannot use
            (rights states for members, machine words in a library that has none yet).
    """
    node = parse(tree)
    c = _Compiler(ctx)
    test, driver, residual = c.node(node, "$")
    c.params["filter_limit"] = FILTER_LIMIT
    if driver is None:
        driver, residual = q.UNIVERSE, test
    return Compiled(tree=node, test=test, driver=driver, values=c.params,
                    residual=residual or "true")
