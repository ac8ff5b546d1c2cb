"""Scoped lexical search with guaranteed bands (see :mod:`loupe.scopes.queries`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import psycopg

from ..access.viewer import OWNER, Viewer
from ..lexical.search import query_terms_in
from . import queries as q


class UnknownScope(LookupError):
    """The collection to search in does not exist in this tenant."""


@dataclass
class ScopedHit:
    """A row of a scoped result; ``in_band`` marks a member the lane's caps had
    left out, placed after every ranked row."""

    rank: int
    asset_id: int
    score: float
    bonus: int
    in_band: bool


@dataclass
class ScopedResult:
    """A page of a scoped search, with the regime used and the verdict."""

    terms: list[str]
    members: int
    regime: str
    ranked: int
    band: int
    total: int
    total_exact: bool
    verdict: str
    hits: list[ScopedHit] = field(default_factory=list)
    corrections: dict[str, str] = field(default_factory=dict)


def regime_for(members: int) -> str:
    """``direct`` / ``deep`` / ``none`` by scope size (C3)."""
    if members <= q.DIRECT_MAX:
        return "direct"
    if members <= q.DEEP_MAX:
        return "deep"
    return "none"


#: Most collections one search may be scoped to (each is expanded to its
#: sub-collections; the scope's member count is bounded by DEEP_MAX anyway).
MAX_SCOPES = 100


def _candidates(rows: list[tuple]) -> str:
    return ", ".join(f"id:{r[0]} ({r[2] or r[1] + ', hand-made'})" for r in rows)


def collection_id(conn: psycopg.Connection, tenant_id: int, spec: str, *,
                  see_all: bool = True) -> int:
    """The collection ``spec`` names, as written by a user:

    * ``id:42`` — the collection with id 42 (``loupe collections`` lists ids);
    * ``/photos/2024/travel`` — a full path: a source's root folder, then the
      collection's path inside it;
    * ``travel`` or ``animals/mammals`` — the path as ingested, relative to
      its source (or a hand-made collection's name);
    * ``42`` — the path "42" if a collection has it, else the id 42.

    ``see_all``: whether the error for an ambiguous path may list the
    candidates' full paths (only to a viewer who sees every collection).

    Raises:
        UnknownScope: no such collection, or the path names several (in
            different sources): the message says how to name one.
    """
    text = str(spec).strip()
    if not text:
        raise UnknownScope("an empty collection name: give a path or id:N")
    if text.lower().startswith("id:"):
        num = text[3:].strip()
        if not num.isdigit() or not 0 < int(num) < 2**63:
            raise UnknownScope(f"{text!r} is not a collection id (id:N, N a positive "
                               f"number; see 'loupe collections')")
        row = conn.execute(q.COLLECTION_BY_ID, {"tenant_id": tenant_id, "id": int(num)}).fetchone()
        if row is None:
            raise UnknownScope(f"no collection with id {int(num)} in this library")
        return row[0]
    if text.startswith("/") and len(text) > 1:
        full = "/" + text.strip("/")
        ids = [r[0] for r in conn.execute(q.COLLECTION_BY_FULL_PATH,
                                          {"tenant_id": tenant_id, "full": full})]
        if len(ids) == 1:
            return ids[0]
        if len(ids) > 1:
            raise UnknownScope(f"{text!r} names {len(ids)} collections (nested sources): "
                               f"use one of " + ", ".join(f"id:{i}" for i in ids))
        # not a full path: perhaps a relative path written with a leading slash
    rows = conn.execute(q.COLLECTION_BY_PATH, {"tenant_id": tenant_id,
                                               "path": text.strip("/")}).fetchall()
    if not rows and text.isdigit() and 0 < int(text) < 2**63:
        row = conn.execute(q.COLLECTION_BY_ID, {"tenant_id": tenant_id, "id": int(text)}).fetchone()
        if row is not None:
            return row[0]
    if not rows:
        raise UnknownScope(f"no collection {text!r} in this library")
    if len(rows) > 1:
        which = (": " + _candidates(rows)) if see_all else " (see 'loupe collections')"
        raise UnknownScope(f"{text!r} names collections in several sources: name one by "
                           f"its id (id:N) or its full path{which}")
    return rows[0][0]


def scope_collections(conn: psycopg.Connection, tenant_id: int,
                      coll: int | Sequence[int]) -> list[int]:
    """The ids of one or several collections and of all their
    sub-collections (each id once, sorted)."""
    roots = [coll] if isinstance(coll, int) else list(coll)
    out: set[int] = set()
    for coll_id in roots:
        out.update(conn.execute(q.SUB_COLLECTIONS, {"tenant_id": tenant_id,
                                                    "collection_id": coll_id}).fetchone()[0])
    return sorted(out)


@dataclass
class Scope:
    """Where a search looks: the union of one or several collections, each
    with its sub-collections (SPEC C1). ``label`` names it for notices and
    the audit log; ``roots`` are the collections as named (ids)."""

    label: str
    roots: list[int]
    names: list[str] = field(default_factory=list)

    @property
    def quoted(self) -> str:
        """The names as a notice shows them: 'travel' + 'work'."""
        return " + ".join(repr(n) for n in self.names) or repr(self.label)


def resolve_scope(conn: psycopg.Connection, tenant_id: int, specs: str | Sequence[str],
                  *, see_all: bool = True) -> Scope:
    """Resolve one or several collection names (see :func:`collection_id`)
    into a :class:`Scope`: their **union**, sub-collections included.

    Raises:
        UnknownScope: a name resolves to no collection or to several, or
            more than :data:`MAX_SCOPES` are given.
    """
    names = [specs] if isinstance(specs, str) else list(specs)
    if not names:
        raise UnknownScope("no collection given")
    if len(names) > MAX_SCOPES:
        raise UnknownScope(f"{len(names):,} collections given: a search may be scoped to "
                           f"{MAX_SCOPES} at most")
    roots: list[int] = []
    for name in names:
        cid = collection_id(conn, tenant_id, name, see_all=see_all)
        if cid not in roots:
            roots.append(cid)
    label = names[0] if len(names) == 1 else " + ".join(names)
    return Scope(label=label, roots=roots, names=names)


def scope_size(conn: psycopg.Connection, tenant_id: int, collections: list[int],
               viewer: Viewer = OWNER) -> int:
    """How many members of the scope ``viewer`` may read, counted up to
    DEEP_MAX + 1 (a larger scope reads as DEEP_MAX + 1: no band needs more)."""
    return conn.execute(q.SCOPE_SIZE, {"tenant_id": tenant_id, "collections": collections,
                                       "deep_max": q.DEEP_MAX, **viewer.params()}).fetchone()[0]


def filtered_size(conn: psycopg.Connection, filt: Any, tenant_id: int,
                  viewer: Viewer = OWNER) -> int:
    """How many assets a compiled filter tree accepts that ``viewer`` may
    read, counted up to DEEP_MAX + 1 (like :func:`scope_size`)."""
    return conn.execute("SELECT count(*) FROM (" + filt.members_sql() + ") x",
                        {**filt.params, "tenant_id": tenant_id, **viewer.params()}).fetchone()[0]


def scoped_search(conn: psycopg.Connection, tenant_id: int, query: str, lang: str | list[str],
                  coll_id: int | Sequence[int], *, limit: int = 20, offset: int = 0,
                  raw_cap: int = 3000,
                  keep_cap: int = 1000, viewer: Viewer = OWNER,
                  filt: Any = None) -> ScopedResult:
    """Search inside a collection (and its sub-collections), or the union of
    several (``coll_id`` a list of ids): the lane's ranked
    rows that are members first, in the unscoped order, then the band.

    Verdict: ``complete`` when every matching member is in the result (direct
    regime always; deep regime when every term was read to its end; no band
    when the lane itself was complete), ``truncated`` otherwise, ``unknown``
    for the typo fallback.

    ``filt``: a compiled filter tree (:class:`loupe.filters.Compiled`,
    issue 17) whose set is the scope instead of ``coll_id``'s (a search
    inside collections and a filter passes both as one tree).
    """
    qt = query_terms_in(conn, query, lang)
    terms = qt.terms
    colls = scope_collections(conn, tenant_id, coll_id) if filt is None else []
    if not terms:
        size = (scope_size(conn, tenant_id, colls, viewer) if filt is None
                else filtered_size(conn, filt, tenant_id, viewer))
        return ScopedResult([], size, regime_for(size), 0, 0, 0, True, "complete")
    params = {"tenant_id": tenant_id, **qt.params(), "query": query,
              "raw_cap": raw_cap, "keep_cap": keep_cap, "limit": limit, "offset": offset,
              "fallback": False, "collections": colls, "direct_max": q.DIRECT_MAX,
              "deep_max": q.DEEP_MAX,
              "deep_cap": q.DEEP_CAP, **viewer.params()}
    if filt is None:
        stmt = q.SCOPED_LANE if viewer.see_all else q.SCOPED_LANE_MEMBER
    else:
        params.update(filt.params)
        stmt = q.scoped_lane(not viewer.see_all, filt.members_sql(), filt.where("k.asset_id"))
    rows = conn.execute(stmt, params).fetchall()
    corrections: dict[str, str] = {}
    if rows[0][0] == 0:
        fixed, corrections = qt.corrected(conn, tenant_id, viewer)
        if corrections:
            terms = fixed.terms
            rows = conn.execute(stmt, {**params, **fixed.params(),
                                       "fallback": True}).fetchall()
    (candidates, kept, _read, _max_df, all_read, members, ranked, band, deep_all_read) = rows[0][:9]
    regime = rows[0][14]
    if corrections:
        verdict, exact = "unknown", False
    elif regime == "direct":
        verdict, exact = "complete", True
    elif regime == "deep":
        verdict = "complete" if deep_all_read else "truncated"
        exact = bool(deep_all_read)
    else:
        complete = bool(all_read) and candidates <= keep_cap
        verdict, exact = ("complete" if complete else "truncated"), complete
    hits = [ScopedHit(rank=r[9], asset_id=r[10], score=float(r[11]), bonus=r[12], in_band=r[13])
            for r in rows if r[10] is not None]
    return ScopedResult(terms=terms, members=members, regime=regime, ranked=ranked, band=band,
                        total=ranked + band, total_exact=exact, verdict=verdict, hits=hits,
                        corrections=corrections)


@dataclass
class ScopedFusedResult:
    """A page of a scoped search with the vector lanes (see
    :func:`loupe.scopes.queries.scoped_fused_statement`).

    ``waiting``: members of a direct-regime scope that lack a vector of some
    lane (the exact scan cannot see them). ``lexical`` holds the lexical
    lane's counts (candidates, kept, postings_read, max_df, all_read).
    """

    members: int
    regime: str
    ranked: int
    band: int
    deep_all_read: bool
    waiting: int
    lexical: dict
    hits: list[dict] = field(default_factory=list)


def scoped_fused_search(conn: psycopg.Connection, params: dict, lanes: list,
                        coll_id: int | Sequence[int],
                        viewer: Viewer = OWNER, filt: Any = None) -> ScopedFusedResult:
    """Run the fused statement inside collection ``coll_id`` (or the union of
    several, sub-collections included).

    ``params`` are the fused statement's (see
    :func:`loupe.fusion.search.fused_search`); the members (readable by
    ``viewer``), the regime and the deep cap are added here. ``filt``: a
    compiled filter tree whose set is the scope (see :func:`scoped_search`). Each hit is
    ``{"rank", "asset_id", "rrf", "bonus", "in_band", "lexical_rank",
    "lexical_score", "lanes": {name: {"rank", "distance"}}}``.
    """
    import numpy as np

    from ..fusion.search import FUSION_DEFAULTS, VEC_CAP

    colls = scope_collections(conn, params["tenant_id"], coll_id) if filt is None else []
    p = {**(filt.params if filt is not None else {}), **FUSION_DEFAULTS, **params, **viewer.params(), "collections": colls, "direct_max": q.DIRECT_MAX,
         "deep_max": q.DEEP_MAX,
         "deep_cap": q.DEEP_CAP, "vec_cap": params.get("vec_cap", VEC_CAP)}
    for ln in lanes:
        p[f"qv_{ln.name}"] = np.asarray(ln.vector, dtype=np.float32)
        p[f"maxd_{ln.name}"] = float(ln.max_dist)
    stmt = (q.scoped_fused_statement(lanes, not viewer.see_all) if filt is None else
            q.scoped_fused_statement(lanes, not viewer.see_all, filt.members_sql(),
                                     filt.where("k.asset_id")))
    rows = conn.execute(stmt, p).fetchall()
    first = rows[0]
    hits = []
    for r in rows:
        if r[11] is None:
            continue
        lane_vals = {}
        for i, ln in enumerate(lanes):
            rank, dist = r[17 + 2 * i], r[18 + 2 * i]
            lane_vals[ln.name] = {"rank": rank, "distance": None if dist is None else float(dist)}
        hits.append({"rank": r[10], "asset_id": r[11], "rrf": float(r[12]), "bonus": r[13],
                     "in_band": r[14], "lexical_rank": r[15],
                     "lexical_score": None if r[16] is None else float(r[16]),
                     "lanes": lane_vals})
    return ScopedFusedResult(
        members=first[5], regime=first[17 + 2 * len(lanes)], ranked=first[6], band=first[7],
        deep_all_read=bool(first[8]), waiting=int(first[9]),
        lexical={"candidates": first[0], "kept": first[1], "postings_read": first[2],
                 "max_df": first[3], "all_read": first[4]}, hits=hits)
