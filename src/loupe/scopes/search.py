"""Scoped lexical search with guaranteed bands (see :mod:`loupe.scopes.queries`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import psycopg

from ..access.viewer import OWNER, Viewer
from ..lexical.search import searched_terms
from . import queries as q
from ..search import statements as st
from ..search import verdict as vd
from ..search.fallback import execute_with_fallback
from ..fusion.search import FUSION_DEFAULTS, VEC_CAP
from ..search.facts import NO_FACTS


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
                  viewer: Viewer = OWNER) -> int:
    """The collection ``spec`` names, as written by a user:

    * ``id:42`` — the collection with id 42 (``loupe collections`` lists ids);
    * ``/photos/2024/travel`` — a full path: a source's root folder, then the
      collection's path inside it;
    * ``travel`` or ``animals/mammals`` — the path as ingested, relative to
      its source (or a hand-made collection's name);
    * ``42`` — the path "42" if a collection has it, else the id 42.

    ``viewer``: whose view the name is resolved in. A member resolves only
    the collections it may see (``q.COLLECTION_VISIBLE``), never by a full
    server path, and its error for an ambiguous path lists no paths: a
    hidden collection answers exactly as one that does not exist.

    Raises:
        UnknownScope: no such collection, or the path names several (in
            different sources): the message says how to name one.
    """
    text = str(spec).strip()
    see = {"see_all": viewer.see_all, "principals": list(viewer.principals)}
    see_all = viewer.see_all
    if not text:
        raise UnknownScope("an empty collection name: give a path or id:N")
    if text.lower().startswith("id:"):
        num = text[3:].strip()
        if not num.isdigit() or not 0 < int(num) < 2**63:
            raise UnknownScope(f"{text!r} is not a collection id (id:N, N a positive "
                               f"number; see 'loupe collections')")
        row = conn.execute(q.COLLECTION_BY_ID, {"tenant_id": tenant_id, "id": int(num),
                                                **see}).fetchone()
        if row is None:
            raise UnknownScope(f"no collection with id {int(num)} in this library")
        return row[0]
    if see_all and text.startswith("/") and len(text) > 1:
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
                                               "path": text.strip("/"), **see}).fetchall()
    if not rows and text.isdigit() and 0 < int(text) < 2**63:
        row = conn.execute(q.COLLECTION_BY_ID, {"tenant_id": tenant_id, "id": int(text),
                                                **see}).fetchone()
        if row is not None:
            return row[0]
    if not rows:
        near = [r[0] for r in conn.execute(q.COLLECTIONS_ENDING_IN, {
            "tenant_id": tenant_id, "path": text.strip("/"), **see})]
        hint = ""
        if near:
            shown = ", ".join(repr(p) for p in near[:5]) + (", …" if len(near) > 5 else "")
            hint = f" (collections ending in it: {shown})"
        raise UnknownScope(f"no collection {text!r} in this library{hint}")
    if len(rows) > 1:
        if see_all:
            raise UnknownScope(f"{text!r} names collections in several sources: name one by "
                               f"its id (id:N) or its full path: {_candidates(rows)}")
        raise UnknownScope(f"{text!r} names several collections: name one by its id "
                           f"(id:N, see 'loupe collections')")
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
    with its sub-collections (C1). ``label`` names it for notices and
    the audit log; ``roots`` are the collections as named (ids)."""

    label: str
    roots: list[int]
    names: list[str] = field(default_factory=list)

    @property
    def quoted(self) -> str:
        """The names as a notice shows them: 'travel' + 'work'."""
        return " + ".join(repr(n) for n in self.names) or repr(self.label)


def resolve_scope(conn: psycopg.Connection, tenant_id: int, specs: str | Sequence[str],
                  *, viewer: Viewer = OWNER) -> Scope:
    """Resolve one or several collection names (see :func:`collection_id`,
    in ``viewer``'s view) into a :class:`Scope`: their **union**,
    sub-collections included.

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
        cid = collection_id(conn, tenant_id, name, viewer=viewer)
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


def scoped_search(conn: psycopg.Connection, tenant_id: int, query: str, lang: str | list[str],
                  coll_id: int | Sequence[int], *, limit: int = 20, offset: int = 0,
                  raw_cap: int = 3000,
                  keep_cap: int = 1000, viewer: Viewer = OWNER) -> ScopedResult:
    """Search inside a collection (and its sub-collections), or the union of
    several (``coll_id`` a list of ids): the lane's ranked
    rows that are members first, in the unscoped order, then the band.

    Verdict: ``complete`` when every matching member is in the result (direct
    regime always; deep regime when every term was read to its end; no band
    when the lane itself was complete), ``truncated`` otherwise, ``unknown``
    for the typo fallback.
    """
    qt, _stems = searched_terms(conn, tenant_id, query, lang, viewer)
    terms = qt.terms
    colls = scope_collections(conn, tenant_id, coll_id)
    if not terms:
        size = scope_size(conn, tenant_id, colls, viewer)
        return ScopedResult([], size, regime_for(size), 0, 0, 0, True, "complete")
    def params(terms, _lanes: list, fallback: bool) -> dict:
        return st.parameters(tenant_id=tenant_id, terms=terms.params(), query=query,
                             raw_cap=raw_cap, keep_cap=keep_cap, limit=limit, offset=offset,
                             viewer=viewer, fallback=fallback, collections=colls)

    run = execute_with_fallback(conn, tenant_id, viewer, st.SCOPED, [], qt, params)
    c = run.outcome.counts
    v = vd.decide(vd.Counts(candidates=c["candidates"], all_read=bool(c["all_read"]),
                            keep_cap=keep_cap, rows=c["ranked"] + c["band"],
                            regime=c["regime"], deep_all_read=bool(c["deep_all_read"]),
                            corrected=bool(run.corrections)))
    hits = [ScopedHit(rank=r.rank, asset_id=r.asset_id, score=r.score, bonus=r.bonus,
                      in_band=r.in_band) for r in run.outcome.rows]
    return ScopedResult(terms=run.terms.terms, members=c["members"], regime=c["regime"],
                        ranked=c["ranked"], band=c["band"], total=v.total, total_exact=v.exact,
                        verdict=v.verdict, hits=hits, corrections=run.corrections)


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
                        viewer: Viewer = OWNER) -> ScopedFusedResult:
    """Run the fused statement inside collection ``coll_id`` (or the union of
    several, sub-collections included).

    ``params`` are the fused statement's (see
    :func:`loupe.fusion.search.fused_search`); the members (readable by
    ``viewer``), the regime and the deep cap are added here. Each hit is
    ``{"rank", "asset_id", "rrf", "bonus", "in_band", "lexical_rank",
    "lexical_score", "lanes": {name: {"rank", "distance"}}}``.
    """
    colls = scope_collections(conn, params["tenant_id"], coll_id)
    p = {**FUSION_DEFAULTS, **NO_FACTS.params(), **params, **viewer.params(),
         **st.scope_parameters(colls),
         "vec_cap": params.get("vec_cap", VEC_CAP), **st.lane_parameters(lanes)}
    out = st.execute(conn, st.SCOPED_FUSED, lanes, p)
    c = out.counts
    hits = [{"rank": r.rank, "asset_id": r.asset_id, "rrf": r.score, "bonus": r.bonus,
             "in_band": r.in_band, "lexical_rank": r.lexical_rank,
             "lexical_score": r.lexical_score, "lanes": r.lanes} for r in out.rows]
    return ScopedFusedResult(
        members=c["members"], regime=c["regime"], ranked=c["ranked"], band=c["band"],
        deep_all_read=bool(c["deep_all_read"]), waiting=int(c["waiting"]),
        lexical={k: c[k] for k in ("candidates", "kept", "postings_read", "max_df",
                                   "all_read")}, hits=hits)
