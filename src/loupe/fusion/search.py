"""Fusion (F1–F3, V4–V6): the lexical lane and the vector lanes in one
SQL statement, combined by reciprocal rank fusion.

    rrf(d) = Σ_lanes w_lane / (k + rank_lane(d))      (absent from a lane: 0)

(Cormack, Clarke and Büttcher, "Reciprocal Rank Fusion outperforms
Condorcet and individual Rank Learning Methods", SIGIR 2009: every w = 1
and k = 60, the defaults.) The weights (``w_lexical``, ``w_text``,
``w_image``) and k (``rrf_k``) are the library's fusion settings
(``loupe settings``, migration 0016), passed as statement parameters. Ordered by phrase bonus ▸ RRF ▸ asset id. A vector lane keeps at
most ``vec_cap`` neighbours within the model's distance threshold for the
query's word count (V4).

One-word rule (V5): a one-word query keeps only the rows the lexical lane
found, since neighbours exist for any word; vector lanes only reorder them.
When the word is in no document at all, the metadata-text lane (vectors of
the words people wrote) may bridge the gap with rows within its one-word
threshold — never the image lane alone. So ``madrid`` returns nothing in a
library where nobody wrote Madrid or anything close to it, while ``lorry``
can still find what was described as a truck; such a bridge is a fallback
and its verdict is ``unknown``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from psycopg import sql

from ..search.facts import facts_first
from ..lexical.queries import best_bonus, lexical_ctes, title_band_cte
from ..vector.queries import vector_cte

if TYPE_CHECKING:
    from ..search.clause import AssetClause

#: RRF's rank constant (Cormack et al. 2009): the default of the ``rrf_k`` setting.
RRF_K = 60
#: The fusion settings' defaults (weights 1, k 60: plain RRF), used when a
#: caller passes none (see :func:`rrf_term`).
FUSION_DEFAULTS = {"w_lexical": 1.0, "w_text": 1.0, "w_image": 1.0, "rrf_k": RRF_K}


def rrf_term(lane: str, rank: sql.Composable) -> sql.Composed:
    """One lane's RRF contribution, ``w_<lane> · 1 / (k + rank)``, 0 when the
    row is absent from the lane; weight and k are the parameters
    ``%(w_<lane>)s`` and ``%(rrf_k)s``. In numeric, as the plain sum was, so a
    weight of 1 gives exactly the plain RRF value."""
    return sql.SQL("coalesce({w}::numeric * (1.0 / ({k} + {rank})), 0)").format(
        w=sql.Placeholder(f"w_{lane}"), k=sql.Placeholder("rrf_k"), rank=rank)
#: Vector neighbours per lane (F3).
VEC_CAP = 200


@dataclass(frozen=True)
class VectorLane:
    """A vector lane to fuse: its name in the statement (``text``/``image``), the
    model's id, name, width and threshold config, and the query vector."""

    name: str
    lane: str
    model_id: int
    model: str
    dims: int
    max_dist: float
    vector: np.ndarray

    @property
    def words(self) -> bool:
        """Whether the lane's vectors encode written words (the text lane)."""
        return self.lane == "text"


#: A page of ``rows`` (ranked rows, then band rows: ``in_band``), ordered by
#: phrase bonus ▸ the machine facts the query names (:mod:`loupe.search.facts`)
#: ▸ RRF ▸ asset id within each (C2: page 1 holds ranked rows).
BANDED_PAGE = """page AS (
    SELECT r.*, row_number() OVER (ORDER BY r.in_band, r.bonus DESC, r.facts DESC, r.rrf DESC,
                                            r.asset_id) AS rank
    FROM (SELECT r0.*, """ + facts_first("r0.asset_id") + """ AS facts FROM rows r0) r
    ORDER BY r.in_band, r.bonus DESC, r.facts DESC, r.rrf DESC, r.asset_id
    LIMIT %(limit)s OFFSET %(offset)s
)"""


def rrf_join(base: str, lanes: list[VectorLane], cte: str,
             alias: str) -> tuple[sql.Composable, sql.Composable, sql.Composable, sql.Composable]:
    """The RRF join, written once (fused rows and a scope's band rows alike).

    ``base`` is the lexical relation's alias (a fixed name, with columns
    ``asset_id`` and ``rank``); each vector lane's relation is the CTE
    ``<cte><lane name>`` joined as ``<alias><lane name>`` (columns
    ``asset_id``, ``rank``, ``dist``). Returns ``(key, joins, cols, rrf)``:
    the asset id over the FULL OUTER JOIN of all of them, the joins, the
    columns ``, <a>.rank AS <lane>_rank, <a>.dist AS <lane>_dist`` of each
    lane, and the RRF sum Σ w_lane / (k + rank_lane) (:func:`rrf_term`)."""
    assert base in ("l", "lb") and cte in ("vec_", "vband_") and alias in ("v_", "vb_")
    key: sql.Composable = sql.SQL(f"{base}.asset_id")
    joins, cols = [], []
    rrf = [rrf_term("lexical", sql.SQL(f"{base}.rank"))]
    for lane in lanes:
        a = sql.Identifier(f"{alias}{lane.name}")
        joins.append(sql.SQL("\n    FULL OUTER JOIN {cte} {a} ON {a}.asset_id = {key}").format(
            cte=sql.Identifier(f"{cte}{lane.name}"), a=a, key=key))
        key = sql.SQL("coalesce({key}, {a}.asset_id)").format(key=key, a=a)
        cols.append(sql.SQL(",\n           {a}.rank AS {r}, {a}.dist AS {d}").format(
            a=a, r=sql.Identifier(f"{lane.name}_rank"), d=sql.Identifier(f"{lane.name}_dist")))
        rrf.append(rrf_term(lane.lane, sql.SQL("{a}.rank").format(a=a)))
    return key, sql.SQL("").join(joins), sql.SQL("").join(cols), \
        sql.SQL("\n           + ").join(rrf)


def fused_ctes(lanes: list[VectorLane], member: bool = False,
               clause: "AssetClause | None" = None, head: str = "") -> sql.Composed:
    """``WITH`` the lexical lane's CTEs, one CTE per vector lane, and:

    * ``lex``: the lexical lane's kept rows ranked by score;
    * ``fused``: the lanes joined on asset id, with each lane's rank and
      distance and the RRF score;
    * ``fkept``: the fused rows the one-word rule keeps, with the phrase bonus.

    Composed from fixed parts (lane names, model ids and widths are literals
    of the registry, never user input). ``member``: for a viewer who does not
    see everything (:func:`loupe.lexical.queries.lexical_ctes`); ``clause``:
    a condition on assets, applied to the lexical candidates and inside each
    vector lane (:mod:`loupe.search.clause`).

    Contract: needs the parameters of :func:`~loupe.lexical.queries.lexical_ctes`
    and :func:`~loupe.vector.queries.vector_cte`, ``one_word``, ``w_<lane>``,
    ``rrf_k``; provides their CTEs and ``lex``, ``fused`` (asset_id, lex_rank,
    lex_score, <lane>_rank, <lane>_dist, rrf), ``fkept`` (fused + bonus).
    The RRF join of the lanes is built here and only here. ``head``: CTEs
    written first, ending with a comma (a filter's materialised scope,
    :func:`loupe.scopes.queries.filter_head`; the vector lanes then scan its
    members exactly in the direct regime, :func:`~loupe.vector.queries.vector_cte`)."""
    ctes = [sql.SQL("WITH ") + sql.SQL(head) + sql.SQL(lexical_ctes(member, clause))]
    for lane in lanes:
        ctes.append(sql.SQL(",") + vector_cte(lane.name, lane.model_id, lane.lane, lane.dims,
                                              clause, exact_scope=bool(head)))
    lex = sql.SQL("""
lex AS (
    SELECT asset_id, score, row_number() OVER (ORDER BY score DESC, asset_id) AS rank
    FROM final
)""")
    key, joins, lane_cols, rrf = rrf_join("l", lanes, "vec_", "v_")
    fused = sql.SQL("""
fused AS (
    SELECT {key} AS asset_id, l.rank AS lex_rank, l.score AS lex_score{lane_cols},
           {rrf} AS rrf
    FROM lex l{joins}
),
fkept AS (
    SELECT f.*, """ + best_bonus("f", member) + """ AS bonus
    FROM fused f
    CROSS JOIN phrase ph
    WHERE NOT %(one_word)s OR f.lex_rank IS NOT NULL
       OR (NOT EXISTS (SELECT 1 FROM cand){word_lanes})
)""").format(key=key, lane_cols=lane_cols, rrf=rrf, joins=joins,
             word_lanes=sql.SQL(" AND (false{})").format(sql.SQL("").join(
                 sql.SQL(" OR f.{r} IS NOT NULL").format(r=sql.Identifier(f"{ln.name}_rank"))
                 for ln in lanes if ln.words)))
    return sql.Composed(ctes + [sql.SQL(","), lex, sql.SQL(","), fused])


def lane_columns(lanes: list[VectorLane], prefix: str = "p.") -> sql.Composable:
    """``, p.<lane>_rank, p.<lane>_dist`` for each lane, in order."""
    return sql.SQL("").join(
        sql.SQL(", {p}{r}, {p}{d}").format(p=sql.SQL(prefix),
                                           r=sql.Identifier(f"{ln.name}_rank"),
                                           d=sql.Identifier(f"{ln.name}_dist")) for ln in lanes)


def fused_statement(lanes: list[VectorLane], member: bool = False,
                    clause: "AssetClause | None" = None) -> sql.Composed:
    """The fused statement for these vector lanes: :func:`fused_ctes`, then a
    page ordered by phrase bonus ▸ RRF ▸ asset id, with the lexical lane's
    counts and each vector lane's count of neighbours kept (``<lane>_kept``);
    ``clause``: a condition on assets (:mod:`loupe.search.clause`)."""
    # each lane's neighbours kept and its nearest one's distance, and the
    # fused rows no query word matched: answerability's evidence
    # (loupe.search.answer), page-independent
    lane_counts = sql.SQL("").join(
        sql.SQL(", (SELECT count(*) FROM {cte}) AS {name}, (SELECT min(dist) FROM {cte}) AS {best}"
                ).format(cte=sql.Identifier(f"vec_{ln.name}"),
                         name=sql.Identifier(f"{ln.name}_kept"),
                         best=sql.Identifier(f"{ln.name}_best"))
        for ln in lanes)
    tail = sql.SQL(",") + sql.SQL(title_band_cte("fkept", member, clause)) + sql.SQL(""",
rows AS (
    SELECT k.asset_id, k.rrf, k.bonus, false AS in_band, k.lex_rank, k.lex_score{lane_cols}
    FROM fkept k
    UNION ALL
    SELECT t.asset_id, 0, t.bonus, true, NULL, NULL{lane_nulls}
    FROM tband t
),
""" + BANDED_PAGE + """
SELECT c.candidates, c.kept, c.postings_read, c.max_df, c.all_read,
       (SELECT count(*) FROM fkept) + tc.band AS fused_total,
       (SELECT count(*) FROM fkept WHERE lex_rank IS NULL) AS meaning_rows{lane_counts},
       p.rank, p.asset_id, p.rrf, p.bonus, p.lex_rank, p.lex_score{lane_out}, tc.band,
       tc.unreached, p.in_band
FROM counts c
CROSS JOIN tcounts tc
LEFT JOIN page p ON true
ORDER BY p.rank
""").format(lane_counts=lane_counts, lane_out=lane_columns(lanes),
            lane_cols=lane_columns(lanes, "k."),
            lane_nulls=sql.SQL("").join(sql.SQL(", NULL, NULL") for _ in lanes))
    return fused_ctes(lanes, member, clause) + tail
