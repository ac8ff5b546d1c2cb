"""Threshold calibration (V4): each vector model's distance threshold per
query-length band checked against judged pairs, with the threshold that maximises
Youden's J (sensitivity + specificity - 1; Youden, Cancer 1950) proposed beside
it. Called by :meth:`loupe.eval.instrument.Evaluation.calibrate`."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from ..models import registry
from ..models.embedders import ModelError
from .common import VARIANTS, EvalError


def calibrate(ev, runs: list[str], *, unjudged_nonrelevant: bool = False) -> dict[str, Any]:
    """Propose per-model distance thresholds by query-length band (V4)
    from judged results of vector runs (systems ``image``, ``caption``,
    ``both``: they record each result's cosine distance).

    For each model and band (1, 2, 3-5, 6-10, 11+ words), the graded
    results (ground truth or judgements; relevant = grade ≥ 1) of the
    runs' queries in that band are the evidence. The proposal is the
    distance ``t`` (keep results with distance ≤ t) that maximises
    Youden's J = share of relevant kept − share of non-relevant kept
    (Youden, "Index for rating diagnostic tests", Cancer 1950), the
    largest such ``t`` on ties. A band without both a relevant and a
    non-relevant graded result gets no proposal. With
    ``unjudged_nonrelevant`` (for known-item truth without pooled
    judgements), a result without a grade counts as non-relevant — a
    pessimistic assumption the result reports (``unjudged_nonrelevant``).
    Runs of the ``text`` system count too. Nothing is changed:
    the result says what each proposal would keep and cut next to the
    threshold in force, and the command that applies it.

    Raises:
        EvalError: an unknown run, or a run without distances (hybrid).
    """
    evidence: dict[str, dict[str, list[tuple[float, bool]]]] = defaultdict(
        lambda: defaultdict(list))
    for name in runs:
        rr = ev.load_run(name)
        if rr.system not in VARIANTS + ("text",):
            raise EvalError(f"run {name!r} ({rr.system}) has no distances: calibrate "
                            "from runs of the text system or the image, caption or "
                            "both variants")
        qrels = ev.qrels(rr.query_set)
        texts = {qu.id: qu.text for qu in ev.queries(rr.query_set)}
        for qid, hs in rr.hits.items():
            band = _band(len(texts[qid].split()))
            for a, _s, d in hs:
                g = qrels.get(qid, {}).get(str(a))
                if g is None and unjudged_nonrelevant:
                    g = 0
                if g is not None and d is not None:
                    evidence[rr.model][band].append((d, g >= 1))
    out: dict[str, Any] = {}
    for model, bands in evidence.items():
        try:
            current = registry.get_model(ev.lib.home, model).config
        except ModelError:
            current = {}
        rows = []
        for band in registry.DEFAULT_THRESHOLDS:
            pairs = bands.get(band, [])
            n_rel = sum(r for _, r in pairs)
            n_non = len(pairs) - n_rel
            cur = registry.threshold_for(current, _band_words(band))
            row: dict[str, Any] = {"band": band, "relevant": n_rel, "non_relevant": n_non,
                                   "current": cur, "current_effect": _effect(pairs, cur),
                                   "proposed": None, "proposed_effect": None}
            if n_rel and n_non:
                best = max(sorted({d for d, _ in pairs}),
                           key=lambda t: (_youden(pairs, t), t))
                row["proposed"] = round(best, 4)
                row["proposed_effect"] = _effect(pairs, best)
            rows.append(row)
        proposals = " ".join(f"{r['band']}={r['proposed']}" for r in rows if r["proposed"])
        out[model] = {"bands": rows,
                      "apply": f"loupe models thresholds {model} {proposals}" if proposals else None}
    return {"runs": runs, "models": out, "unjudged_nonrelevant": unjudged_nonrelevant}


def _band(n_words: int) -> str:
    """The threshold band (keys of registry.DEFAULT_THRESHOLDS) of a query length."""
    if n_words <= 1:
        return "1"
    if n_words == 2:
        return "2"
    if n_words <= 5:
        return "3-5"
    return "6-10" if n_words <= 10 else "11+"


def _band_words(band: str) -> int:
    return {"1": 1, "2": 2, "3-5": 3, "6-10": 6, "11+": 11}[band]


def _effect(ev: list[tuple[float, bool]], t: float) -> dict[str, int]:
    """Relevant and non-relevant graded results kept (distance ≤ t) and cut."""
    return {"relevant_kept": sum(1 for d, r in ev if r and d <= t),
            "relevant_cut": sum(1 for d, r in ev if r and d > t),
            "non_relevant_kept": sum(1 for d, r in ev if not r and d <= t),
            "non_relevant_cut": sum(1 for d, r in ev if not r and d > t)}


def _youden(ev: list[tuple[float, bool]], t: float) -> float:
    e = _effect(ev, t)
    rel = e["relevant_kept"] + e["relevant_cut"]
    non = e["non_relevant_kept"] + e["non_relevant_cut"]
    return e["relevant_kept"] / rel - e["non_relevant_kept"] / non
