"""Absent-subject queries: queries whose subject no asset of the library
shows, where the right answer is nothing. For each run, how much it returned for
them; and the trade-off of a blind run's figures against its absent run's.
Called by :meth:`loupe.eval.instrument.Evaluation.absent` and
:meth:`~loupe.eval.instrument.Evaluation.tradeoff`."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np


def absent(ev, runs: list[str]) -> list[dict[str, Any]]:
    """What each run returned for its queries, truth or not — for a set
    of absent subjects (things the library does not hold) every row is a
    false alarm. Per run: ``{"run", "query_set",
    "system", "queries", "with_rows"`` (queries that got any row),
    ``"mean_rows"``, ``"median_rows"`` (rows returned in all, the search's
    total; None when the system records none), ``"mean_top_k"`` (rows in
    the top k), ``"meaning_only"`` (queries whose rows all came from
    vector lanes), ``"verdicts"`` ({verdict: queries})}.

    Raises:
        EvalError: an unknown run.
    """
    out = []
    for name in runs:
        rr = ev.load_run(name)
        totals = [a[0] for a in rr.answers.values() if a[0] is not None]
        verdicts: dict[str, int] = defaultdict(int)
        for _n, v, _mo in rr.answers.values():
            if v is not None:
                verdicts[v] += 1
        n = len(rr.hits)
        out.append({
            "run": name, "query_set": rr.query_set, "system": rr.system, "queries": n,
            "with_rows": sum(bool(hs) for hs in rr.hits.values()),
            "mean_rows": float(np.mean(totals)) if totals else None,
            "median_rows": float(np.median(totals)) if totals else None,
            "mean_top_k": float(np.mean([len(hs) for hs in rr.hits.values()])) if n else 0.0,
            "meaning_only": sum(bool(a[2]) for a in rr.answers.values()),
            "verdicts": dict(sorted(verdicts.items()))})
    return out


def tradeoff(ev, pairs: list[tuple[str, str]], *, seed: int = 0) -> list[dict[str, Any]]:
    """The trade-off of looser cut-offs: per
    configuration, a run over a set with truth (blind queries) and a run
    of the same configuration over absent subjects. Returns per pair
    ``{"blind_run", "absent_run", "recall@10", "ndcg@10"`` (figures with
    95 % intervals, see :meth:`metrics`), ``"absent"`` (:meth:`absent`'s row)}."""
    out = []
    for blind_run, absent_run in pairs:
        fig = ev.metrics(blind_run, seed=seed)["rows"][0]["figures"]
        out.append({"blind_run": blind_run, "absent_run": absent_run,
                    "recall@10": fig["recall@10"], "ndcg@10": fig["ndcg@10"],
                    "absent": ev.absent([absent_run])[0]})
    return out
