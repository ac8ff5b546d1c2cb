"""Metrics with uncertainty (E3, E6, E8), computed by ranx.

Per-query values come from ``ranx.evaluate`` (Bassani, "ranx: A Blazing-Fast
Python Library for Ranking Evaluation and Comparison", ECIR 2022), never
from our own formula: ``recall@10``, ``ndcg@10`` (trec_eval's linear gain:
gain = grade, log2 discount; Järvelin & Kekäläinen 2002) and ``mrr``
(reciprocal rank of the first relevant result, full depth). A result counts
as relevant for recall and MRR when its grade is ≥ 1 (ranx's default,
trec_eval's too); nDCG uses the grades 0/1/2 (E6).

Queries whose qrels hold no relevant asset are left out of every mean (the
figure is undefined for them) and counted in ``unjudged``.

Confidence intervals: percentile bootstrap over queries (Efron & Tibshirani,
*An Introduction to the Bootstrap*, 1993, ch. 13): ``B`` = 2,000 resamples of
the per-query values with replacement from a seeded ``numpy`` generator, the
2.5th and 97.5th percentiles of the resampled means. Same seed, same
intervals. A 95 % interval narrower than ±0.05 needs roughly 400 queries for
a recall near 0.5 (√(0.25/400)·1.96 ≈ 0.049; seed 000's arithmetic), so a
table with intervals that overlap says which differences it cannot resolve.

Paired significance: ``ranx.compare`` with Fisher's randomization test
(Smucker, Allan and Carterette, CIKM 2007), reported with its Monte Carlo
standard error, and the paired Student t-test beside it.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

METRICS = ("recall@10", "ndcg@10", "mrr")
BOOTSTRAP_RESAMPLES = 2000
#: Half-width past which a figure cannot resolve differences of a few points
#: (seed 000: ±0.05 under about 400 queries).
RESOLVE_HALF_WIDTH = 0.05


@dataclass
class Figure:
    """A metric's mean over ``n`` queries with its 95 % bootstrap interval."""

    mean: float
    lo: float
    hi: float
    n: int

    @property
    def half_width(self) -> float:
        return (self.hi - self.lo) / 2

    def as_dict(self) -> dict[str, Any]:
        return {"mean": self.mean, "lo": self.lo, "hi": self.hi, "n": self.n}

    def __str__(self) -> str:
        return f"{self.mean:.3f} [{self.lo:.3f}, {self.hi:.3f}]"


@dataclass
class Row:
    """One row of a metrics table: a group (``all``, ``register``,
    ``provenance``, ``stratum:<label>``), its value, and one figure per metric."""

    group: str
    value: str
    figures: dict[str, Figure] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"group": self.group, "value": self.value,
                "figures": {m: f.as_dict() for m, f in self.figures.items()}}


def bootstrap(values: np.ndarray, *, resamples: int = BOOTSTRAP_RESAMPLES,
              seed: int = 0) -> Figure:
    """Mean of per-query ``values`` with a 95 % percentile-bootstrap interval
    (see the module docstring). ``values`` shape (n,), n ≥ 1.

    Raises:
        ValueError: no values.
    """
    values = np.asarray(values, dtype=np.float64)
    n = len(values)
    if n == 0:
        raise ValueError("no queries to measure")
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(resamples, n))
    means = values[idx].mean(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return Figure(float(values.mean()), float(lo), float(hi), n)


def relevant_only(qrels: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    """The qrels of queries that have at least one asset of grade ≥ 1."""
    return {q: dict(d) for q, d in qrels.items() if any(g > 0 for g in d.values())}


def per_query(qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]],
              metrics: tuple[str, ...] = METRICS) -> dict[str, dict[str, float]]:
    """Per-query metric values by ranx: ``{metric: {qid: value}}`` over the
    queries of ``qrels`` that have a relevant asset (a query missing from the
    run scores 0). ``run`` maps qid → {docno: score}, higher score first."""
    from ranx import Qrels, Run, evaluate

    rel = relevant_only(qrels)
    if not rel:
        raise ValueError("no query has a relevant asset: nothing to measure")
    full_run = {q: dict(run.get(q, {})) for q in rel}
    # ranx refuses an empty result list: a query with no results gets a
    # placeholder docno that is in no qrels (it scores 0, as it should)
    for docs in full_run.values():
        if not docs:
            docs["-"] = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba's uint64 cast notice
        scores = evaluate(Qrels(rel), Run(full_run), list(metrics), return_mean=False)
    if len(metrics) == 1:
        scores = {metrics[0]: scores}
    qids = list(Qrels(rel).keys())
    return {m: {q: float(v) for q, v in zip(qids, scores[m])} for m in metrics}


def table(qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]],
          labels: dict[str, dict[str, str]], *, metrics: tuple[str, ...] = METRICS,
          seed: int = 0) -> list[Row]:
    """Metrics overall and per group value. ``labels`` maps qid →
    {group: value} (e.g. ``{"register": "objects", "stratum:category": "animals"}``).
    Rows: ``all`` first, then groups and values in sorted order."""
    pq = per_query(qrels, run, metrics)
    qids = list(next(iter(pq.values())).keys())
    groups: dict[tuple[str, str], list[str]] = {("all", "all"): qids}
    for q in qids:
        for g, v in sorted(labels.get(q, {}).items()):
            groups.setdefault((g, v), []).append(q)
    rows = []
    for (g, v) in [("all", "all")] + sorted(k for k in groups if k != ("all", "all")):
        members = groups[(g, v)]
        rows.append(Row(g, v, {m: bootstrap(np.array([pq[m][q] for q in members]), seed=seed)
                               for m in metrics}))
    return rows


def resolution_warnings(rows: list[tuple[str, Figure]], metric: str) -> list[str]:
    """Warnings for figures shown side by side: each figure wider than
    ±0.05, and each pair whose intervals overlap (the query count cannot
    resolve that difference)."""
    out = []
    for name, f in rows:
        if f.half_width > RESOLVE_HALF_WIDTH:
            out.append(f"{metric} {name}: ±{f.half_width:.3f} over {f.n} queries — differences "
                       f"smaller than that cannot be resolved (about 400 queries give ±0.05)")
    for i, (a, fa) in enumerate(rows):
        for b, fb in rows[i + 1:]:
            if fa.mean != fb.mean and fa.lo <= fb.hi and fb.lo <= fa.hi:
                out.append(f"{metric} {a} vs {b}: {fa.mean:.3f} vs {fb.mean:.3f} — the "
                           f"intervals overlap; {min(fa.n, fb.n)} queries cannot resolve "
                           f"this difference")
    return out


def compare(qrels: dict[str, dict[str, int]], run_a: dict[str, dict[str, float]],
            run_b: dict[str, dict[str, float]], *, names: tuple[str, str] = ("a", "b"),
            metrics: tuple[str, ...] = METRICS, permutations: int = 10000,
            seed: int = 42) -> dict[str, Any]:
    """Paired comparison of two runs over the same queries: each metric's
    means, the paired difference b − a with its bootstrap interval, and the
    p-value of ranx's Fisher randomization test (``permutations``) with its
    Monte Carlo standard error √(p(1−p)/permutations) (p clamped to
    [1/permutations, 1 − 1/permutations], so it is never 0) — ranx seeds its
    generator but runs the permutations in parallel threads the seed does
    not reach, so repeated runs differ within that error — and the
    (deterministic) p-value of ranx's paired Student t-test.
    Returns ``{metric: {a, b, diff, diff_lo, diff_hi, p, p_se, p_student}}`` and ``n``."""
    from ranx import Qrels, Run
    from ranx import compare as ranx_compare

    pa = per_query(qrels, run_a, metrics)
    pb = per_query(qrels, run_b, metrics)
    rel = relevant_only(qrels)

    def fill(run):
        r = {q: dict(run.get(q, {})) for q in rel}
        for docs in r.values():
            if not docs:
                docs["-"] = 0.0
        return r

    ra, rb = Run(fill(run_a), name=names[0]), Run(fill(run_b), name=names[1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fisher = ranx_compare(Qrels(rel), [ra, rb], list(metrics), stat_test="fisher",
                              n_permutations=permutations, random_seed=seed).to_dict()
        student = ranx_compare(Qrels(rel), [ra, rb], list(metrics),
                               stat_test="student").to_dict()
    out: dict[str, Any] = {"n": len(rel), "test": "fisher randomization (ranx)",
                           "permutations": permutations, "seed": seed}
    for m in metrics:
        qids = list(pa[m])
        diff = bootstrap(np.array([pb[m][q] - pa[m][q] for q in qids]), seed=seed)
        p = float(fisher[names[0]]["comparisons"][names[1]][m])
        # the error is never 0: p = 0 means "below about 1/permutations"
        pc = min(max(p, 1 / permutations), 1 - 1 / permutations)
        out[m] = {names[0]: float(np.mean(list(pa[m].values()))),
                  names[1]: float(np.mean(list(pb[m].values()))),
                  "diff": diff.mean, "diff_lo": diff.lo, "diff_hi": diff.hi,
                  "p": p, "p_se": math.sqrt(pc * (1 - pc) / permutations),
                  "p_student": float(student[names[0]]["comparisons"][names[1]][m])}
    return out


def pooled_qrels(truth: dict[str, dict[str, int]],
                 grades: dict[tuple[str, str], list[int]]) -> dict[str, dict[str, int]]:
    """Graded qrels ``{qid: {docno: grade}}`` from a query set's agreed truth
    and its pooled judgements (E6). ``grades`` maps (qid, docno) to every
    judge's grade of that pair. The truth wins where it names the pair; else
    several judges' grades give their *lower median* (the sorted grades'
    element ``(n - 1) // 2``, so a tie between 1 and 2 gives 1: a pair is not
    called more relevant than half its judges found it)."""
    out = {qid: dict(d) for qid, d in truth.items()}
    for (qid, doc), gs in grades.items():
        if gs:
            out.setdefault(qid, {}).setdefault(doc, sorted(gs)[(len(gs) - 1) // 2])
    return out


def judge_agreement(by_judge: dict[str, dict[Any, int]]) -> list[dict[str, Any]]:
    """Inter-judge agreement on the pairs two judges both graded. ``by_judge``
    maps a judge's name to ``{pair: grade}`` (grades 0..2). For each pair of
    judges (names in sorted order) with a pair in common: the count, the
    share of identical grades, and Cohen's kappa, unweighted and linearly
    weighted (scikit-learn's ``cohen_kappa_score``; Cohen 1960, 1968); kappa
    is None where it is undefined (both judges gave one single grade
    throughout)."""
    from sklearn.metrics import cohen_kappa_score

    judges = sorted(by_judge)
    out = []
    for i, ja in enumerate(judges):
        for jb in judges[i + 1:]:
            common = sorted(set(by_judge[ja]) & set(by_judge[jb]))
            if not common:
                continue
            ga = [by_judge[ja][c] for c in common]
            gb = [by_judge[jb][c] for c in common]
            undefined = len(set(ga) | set(gb)) < 2
            out.append({
                "judges": [ja, jb], "pairs": len(common),
                "agree": sum(x == y for x, y in zip(ga, gb)) / len(common),
                "kappa": None if undefined else float(cohen_kappa_score(ga, gb)),
                "kappa_linear": None if undefined else float(
                    cohen_kappa_score(ga, gb, labels=[0, 1, 2], weights="linear"))})
    return out
