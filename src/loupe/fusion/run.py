"""The fused search run on its own (benchmarks and tools): the fused
statement of :mod:`loupe.fusion.search` executed through
:mod:`loupe.search.statements`, its rows and counts returned as a
:class:`FusedResult`. The search pipeline (:mod:`loupe.search.pipeline`)
runs the same statement for every library search."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import psycopg

from ..access.viewer import OWNER
from ..lexical.queries import TITLE_BAND_CAP
from ..search import statements as st
from ..search.facts import NO_FACTS
from .search import FUSION_DEFAULTS, VEC_CAP, VectorLane


@dataclass
class FusedHit:
    """One fused row with each lane's rank and score/distance (None: absent);
    ``in_band``: a title-band row (C2), after every ranked row."""

    rank: int
    asset_id: int
    rrf: float
    bonus: int
    lexical_rank: int | None
    lexical_score: float | None
    lanes: dict[str, dict[str, float | int | None]] = field(default_factory=dict)
    in_band: bool = False


@dataclass
class FusedResult:
    """A page of fused results with the lexical lane's counts and each vector
    lane's count of neighbours kept (within threshold)."""

    total: int
    hits: list[FusedHit]
    lexical: dict[str, Any]
    lane_counts: dict[str, int]


def fused_search(conn: psycopg.Connection, params: dict[str, Any],
                 lanes: list[VectorLane]) -> FusedResult:
    """Run the fused statement. ``params`` holds the lexical lane's parameters
    (tenant_id, lang, langs, qlangs, qterms, terms, query, raw_cap, keep_cap, limit, offset,
    fallback: see :class:`loupe.lexical.search.QueryTerms`),
    ``one_word``, the fusion settings (``w_lexical``, ``w_text``, ``w_image``,
    ``rrf_k``; default :data:`FUSION_DEFAULTS`) and the viewer's ``see_all`` / ``principals`` (default: the
    owner, who sees everything); the lanes add their query vectors and thresholds."""
    p = {**OWNER.params(), "title_band": False, "title_band_cap": TITLE_BAND_CAP,
         **FUSION_DEFAULTS, **NO_FACTS.params(), **params, **st.lane_parameters(lanes)}
    p["vec_cap"] = p.get("vec_cap", VEC_CAP)
    out = st.execute(conn, st.FUSED, lanes, p)
    c = out.counts
    hits = [FusedHit(rank=r.rank, asset_id=r.asset_id, rrf=r.score, bonus=r.bonus,
                     lexical_rank=r.lexical_rank, lexical_score=r.lexical_score, lanes=r.lanes,
                     in_band=r.in_band) for r in out.rows]
    lexical = {"candidates": c["candidates"], "kept": c["kept"],
               "postings_read": c["postings_read"], "max_df": c["max_df"],
               "all_read": c["all_read"], "title_band": c["band"],
               "title_band_unreached": c["unreached"]}
    return FusedResult(total=int(c["fused_total"]), hits=hits, lexical=lexical,
                       lane_counts={ln.name: int(c[f"{ln.name}_kept"]) for ln in lanes})
