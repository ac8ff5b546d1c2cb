"""Scoped lexical search with guaranteed bands (see :mod:`loupe.scopes.queries`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import psycopg

from ..access.viewer import OWNER, Viewer
from ..lexical.search import query_terms, suggest_corrections
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


def collection_id(conn: psycopg.Connection, tenant_id: int, path: str) -> int:
    """The collection at ``path`` (as ingested: 'animals/mammals').

    Raises:
        UnknownScope: no such collection, or the path names several (in
            different sources).
    """
    rows = conn.execute(q.COLLECTION_BY_PATH, {"tenant_id": tenant_id,
                                               "path": path.strip("/")}).fetchall()
    if not rows:
        raise UnknownScope(f"no collection {path!r} in this library")
    if len(rows) > 1:
        raise UnknownScope(f"{path!r} names collections in several sources: use its id")
    return rows[0][0]


def scope_collections(conn: psycopg.Connection, tenant_id: int, coll_id: int) -> list[int]:
    """The ids of a collection and of all its sub-collections."""
    return list(conn.execute(q.SUB_COLLECTIONS, {"tenant_id": tenant_id,
                                                 "collection_id": coll_id}).fetchone()[0])


def scope_size(conn: psycopg.Connection, tenant_id: int, collections: list[int],
               viewer: Viewer = OWNER) -> int:
    """How many members of the scope ``viewer`` may read, counted up to
    DEEP_MAX + 1 (a larger scope reads as DEEP_MAX + 1: no band needs more)."""
    return conn.execute(q.SCOPE_SIZE, {"tenant_id": tenant_id, "collections": collections,
                                       "deep_max": q.DEEP_MAX, **viewer.params()}).fetchone()[0]


def scoped_search(conn: psycopg.Connection, tenant_id: int, query: str, lang: str,
                  coll_id: int, *, limit: int = 20, offset: int = 0, raw_cap: int = 3000,
                  keep_cap: int = 1000, viewer: Viewer = OWNER) -> ScopedResult:
    """Search inside a collection (and its sub-collections): the lane's ranked
    rows that are members first, in the unscoped order, then the band.

    Verdict: ``complete`` when every matching member is in the result (direct
    regime always; deep regime when every term was read to its end; no band
    when the lane itself was complete), ``truncated`` otherwise, ``unknown``
    for the typo fallback.
    """
    terms = query_terms(conn, query, lang)
    colls = scope_collections(conn, tenant_id, coll_id)
    if not terms:
        size = scope_size(conn, tenant_id, colls, viewer)
        return ScopedResult([], size, regime_for(size), 0, 0, 0, True, "complete")
    params = {"tenant_id": tenant_id, "lang": lang, "terms": terms, "query": query,
              "raw_cap": raw_cap, "keep_cap": keep_cap, "limit": limit, "offset": offset,
              "fallback": False, "collections": colls, "direct_max": q.DIRECT_MAX,
              "deep_max": q.DEEP_MAX,
              "deep_cap": q.DEEP_CAP, **viewer.params()}
    stmt = q.SCOPED_LANE if viewer.see_all else q.SCOPED_LANE_MEMBER
    rows = conn.execute(stmt, params).fetchall()
    corrections: dict[str, str] = {}
    if rows[0][0] == 0:
        corrections = suggest_corrections(conn, tenant_id, lang, terms, viewer)
        if corrections:
            terms = sorted({corrections.get(t, t) for t in terms})
            rows = conn.execute(stmt, {**params, "terms": terms,
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


def scoped_fused_search(conn: psycopg.Connection, params: dict, lanes: list, coll_id: int,
                        viewer: Viewer = OWNER) -> ScopedFusedResult:
    """Run the fused statement inside collection ``coll_id``.

    ``params`` are the fused statement's (see
    :func:`loupe.fusion.search.fused_search`); the members (readable by
    ``viewer``), the regime and the deep cap are added here. Each hit is
    ``{"rank", "asset_id", "rrf", "bonus", "in_band", "lexical_rank",
    "lexical_score", "lanes": {name: {"rank", "distance"}}}``.
    """
    import numpy as np

    from ..fusion.search import VEC_CAP

    colls = scope_collections(conn, params["tenant_id"], coll_id)
    p = {**params, **viewer.params(), "collections": colls, "direct_max": q.DIRECT_MAX,
         "deep_max": q.DEEP_MAX,
         "deep_cap": q.DEEP_CAP, "vec_cap": params.get("vec_cap", VEC_CAP)}
    for ln in lanes:
        p[f"qv_{ln.name}"] = np.asarray(ln.vector, dtype=np.float32)
        p[f"maxd_{ln.name}"] = float(ln.max_dist)
    rows = conn.execute(q.scoped_fused_statement(lanes, not viewer.see_all), p).fetchall()
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
