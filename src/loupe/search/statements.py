"""The four search statements, composed, run and read back by column name.

=================  =========================================================
kind               statement
=================  =========================================================
``lexical``        :data:`loupe.lexical.queries.LEXICAL_LANE` (library-wide,
                   no vector lane): the lane, then the title band (C2)
``fused``          :func:`loupe.fusion.search.fused_statement`: the lane and
                   the vector lanes joined by RRF, then the title band
``scoped``         :func:`loupe.scopes.queries.scoped_lane`: the lane's rows
                   that are scope members, then the scope's band (C2, C3)
``scoped_fused``   :func:`loupe.scopes.queries.scoped_fused_statement`
=================  =========================================================

Each is built from the lexical lane's CTEs (:func:`loupe.lexical.queries.lexical_ctes`)
and, for the fused kinds, one CTE per vector lane; :func:`compose` is the
one place a statement is chosen and composed for a search, and
:func:`parameters` the one place its parameters are gathered: a new clause
that must hold in every statement (a filter) is added in these two
functions and in the fragments they name. :func:`execute` runs one and
returns an :class:`Outcome`: the count columns (what the verdict is
decided from, :mod:`loupe.search.verdict`) and the page's rows, read by
column name (``psycopg.rows.dict_row``), never by position.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import psycopg
from psycopg import sql
from psycopg.rows import dict_row

from ..access.viewer import OWNER, Viewer
from ..db.plans import fetch_generic
from ..fusion.search import FUSION_DEFAULTS, VEC_CAP, VectorLane, fused_statement
from ..lexical import compounds as cp
from ..lexical import queries as lq
from ..scopes import queries as sq
from .clause import AssetClause
from .facts import NO_FACTS, QueryFacts

LEXICAL = "lexical"
FUSED = "fused"
SCOPED = "scoped"
SCOPED_FUSED = "scoped_fused"
KINDS = (LEXICAL, FUSED, SCOPED, SCOPED_FUSED)

#: The count columns each kind reports on every row (the verdict's inputs).
COUNT_COLUMNS = {
    LEXICAL: ("candidates", "kept", "postings_read", "max_df", "all_read", "band", "unreached"),
    FUSED: ("candidates", "kept", "postings_read", "max_df", "all_read", "fused_total",
            "meaning_rows", "band", "unreached"),
    SCOPED: ("candidates", "kept", "postings_read", "max_df", "all_read", "members", "ranked",
             "band", "deep_all_read", "regime"),
    SCOPED_FUSED: ("candidates", "kept", "postings_read", "max_df", "all_read", "members",
                   "ranked", "band", "deep_all_read", "waiting", "regime"),
}


def kind_for(scoped: bool, fused: bool) -> str:
    """The statement kind for a search inside a scope or not, with vector lanes or not."""
    if scoped:
        return SCOPED_FUSED if fused else SCOPED
    return FUSED if fused else LEXICAL


def compose(kind: str, lanes: list[VectorLane], member: bool,
            clause: AssetClause | None = None) -> str | sql.Composed:
    """The statement of ``kind`` for these vector lanes (none for the
    lexical kinds), for a viewer who sees everything or (``member``) one
    who does not, restricted to the assets that satisfy ``clause`` (a
    filter: :mod:`loupe.search.clause` lists where it enters). Lane names,
    model ids and widths are registry literals; nothing here comes from
    user input.

    Raises:
        ValueError: an unknown kind, or vector lanes given to a lexical kind.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown statement kind {kind!r}")
    if lanes and kind in (LEXICAL, SCOPED):
        raise ValueError(f"the {kind} statement has no vector lane")
    if kind == LEXICAL:
        if clause is not None:
            return lq.lexical_lane(member, clause)
        return lq.LEXICAL_LANE_MEMBER if member else lq.LEXICAL_LANE
    if kind == SCOPED:
        if clause is not None:
            return sq.scoped_lane(member, clause)
        return sq.SCOPED_LANE_MEMBER if member else sq.SCOPED_LANE
    if kind == FUSED:
        return fused_statement(lanes, member, clause)
    return sq.scoped_fused_statement(lanes, member, clause)


def parameters(*, tenant_id: int, terms: dict[str, Any], query: str, raw_cap: int,
               keep_cap: int, limit: int, offset: int, viewer: Viewer = OWNER,
               fallback: bool = False, one_word: bool | None = None,
               title_band: bool = False, fusion: dict[str, Any] | None = None,
               lanes: list[VectorLane] = (), collections: list[int] | None = None,
               vec_cap: int = VEC_CAP, clause: AssetClause | None = None,
               facts: QueryFacts = NO_FACTS) -> dict[str, Any]:
    """Every parameter of every kind (unused ones are ignored by psycopg):

    ``terms``: :meth:`loupe.lexical.search.QueryTerms.params`; caps in
    postings (``raw_cap``) and assets (``keep_cap``); the page (``limit``,
    ``offset``); the viewer's ``see_all``/``principals`` (P1); ``fallback``
    (typo fallback, L2); ``one_word`` (V5; default: the query has at most
    one word); ``title_band`` (C2) and its cap; the fusion settings
    (default :data:`loupe.fusion.search.FUSION_DEFAULTS`); each lane's query
    vector ``qv_<name>`` and threshold ``maxd_<name>`` (V4) and ``vec_cap``;
    the scope's ``collections`` (ids, sub-collections included) and the
    regime bounds (C3); the ``clause``'s own parameters; the machine
    ``facts`` the query names, ranked first (:mod:`loupe.search.facts`).
    """
    # (the phrase bonus reads the query as its terms do: a file name typed
    # whole is its name without the extension, as the document holds it)
    p = {"tenant_id": tenant_id, **terms, "query": cp.without_file_extensions(query),
         "raw_cap": raw_cap,
         "keep_cap": keep_cap, "limit": limit, "offset": offset, **viewer.params(),
         "fallback": fallback,
         "one_word": len(query.split()) <= 1 if one_word is None else one_word,
         "title_band": title_band, "title_band_cap": lq.TITLE_BAND_CAP,
         **FUSION_DEFAULTS, **(fusion or {}), "vec_cap": vec_cap,
         "direct_max": sq.DIRECT_MAX, "deep_max": sq.DEEP_MAX, "deep_cap": sq.DEEP_CAP,
         **facts.params()}
    if collections is not None:
        p["collections"] = collections
    return {**p, **lane_parameters(lanes), **(clause.params() if clause else {})}


def lane_parameters(lanes: list[VectorLane]) -> dict[str, Any]:
    """Each vector lane's query vector ``qv_<name>`` (float32) and distance
    threshold ``maxd_<name>`` (V4)."""
    p: dict[str, Any] = {}
    for lane in lanes:
        p[f"qv_{lane.name}"] = np.asarray(lane.vector, dtype=np.float32)
        p[f"maxd_{lane.name}"] = float(lane.max_dist)
    return p


def scope_parameters(collections: list[int]) -> dict[str, Any]:
    """A scope's collections (ids, sub-collections included) and the regime bounds (C3)."""
    return {"collections": collections, "direct_max": sq.DIRECT_MAX, "deep_max": sq.DEEP_MAX,
            "deep_cap": sq.DEEP_CAP}


@dataclass
class Row:
    """One row of a page, the same for every kind.

    ``score``: BM25F for the lexical kinds (None for a title-band row),
    the RRF score for the fused kinds; ``lexical_rank``/``lexical_score``:
    the row's place in the lexical lane (None: not in it, or a band row of
    the library-wide lexical statement); ``lanes``: each vector lane's
    ``{"rank", "distance"}`` (None: not in that lane); ``in_band``: a band
    row (C2), after every ranked row."""

    rank: int
    asset_id: int
    score: float | None
    bonus: int
    in_band: bool
    lexical_rank: int | None
    lexical_score: float | None
    lanes: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass
class Outcome:
    """What one statement returned: its count columns (by name, see
    :data:`COUNT_COLUMNS`, plus ``<lane>_kept`` and ``<lane>_best``, its
    nearest neighbour's distance, per vector lane of the ``fused`` kind)
    and the page's rows."""

    kind: str
    counts: dict[str, Any]
    rows: list[Row]


def _float(x: Any) -> float | None:
    return None if x is None else float(x)


def execute(conn: psycopg.Connection, kind: str, lanes: list[VectorLane],
            params: dict[str, Any], clause: AssetClause | None = None) -> Outcome:
    """Run the statement of ``kind`` (see :func:`compose`; the viewer is
    ``params["see_all"]``; ``params`` hold the ``clause``'s) and read it back
    by column name. Without a ``clause`` the statement is prepared on the
    connection and run from its generic plan
    (:func:`loupe.db.plans.fetch_generic`)."""
    stmt = compose(kind, lanes, not params["see_all"], clause)
    if clause is None:
        # one text per kind, viewer and lanes, run again and again: prepared,
        # and run from its generic plan (planning cost more than the run
        # itself for most queries: loupe.db.plans)
        records = fetch_generic(conn, stmt, params, row_factory=dict_row)
    else:
        # a filter's statement is text compiled for that filter, and its
        # plan depends on how many assets the filter's values select: it is
        # planned for its values
        with conn.cursor(row_factory=dict_row) as cur:
            records = cur.execute(stmt, params).fetchall()
    first = records[0]
    names = list(COUNT_COLUMNS[kind]) + ([n for ln in lanes
                                         for n in (f"{ln.name}_kept", f"{ln.name}_best")]
                                        if kind == FUSED else [])
    counts = {n: first[n] for n in names}
    rows = []
    for r in records:
        if r["asset_id"] is None:
            continue   # the counts row of an empty page
        vec = {ln.name: {"rank": r[f"{ln.name}_rank"],
                         "distance": _float(r[f"{ln.name}_dist"])} for ln in lanes}
        if kind in (FUSED, SCOPED_FUSED):
            rows.append(Row(r["rank"], r["asset_id"], float(r["rrf"]), r["bonus"], r["in_band"],
                            r["lex_rank"], _float(r["lex_score"]), vec))
        elif kind == LEXICAL:
            rows.append(Row(r["rank"], r["asset_id"], _float(r["score"]), r["bonus"],
                            r["in_band"], None if r["in_band"] else r["rank"],
                            _float(r["score"])))
        else:
            rows.append(Row(r["rank"], r["asset_id"], float(r["score"]), r["bonus"],
                            r["in_band"], r["rank"], float(r["score"])))
    return Outcome(kind, counts, rows)
