"""Score TREC runs against the pooled judgements (eval/judgements/).

Usage:
    python eval/score_judged.py QRELS RUN.trec [RUN.trec ...]

For each run: nDCG@10 (graded qrels, ir-measures' nDCG@10: Järvelin &
Kekäläinen 2002 with the trec_eval gain) and Judged@10 (the share of the top
10 that was judged; unjudged results count as not relevant, so nDCG@10 is a
lower bound when Judged@10 < 1), over all queries and per register (the last
letter of the query id: o objects, s style, q question), each mean with a 95%
percentile bootstrap interval over queries (10,000 resamples, seed 0).
"""

from __future__ import annotations

import sys
from collections import defaultdict

import ir_measures
import numpy as np
from ir_measures import Judged, nDCG

REGISTERS = {"o": "objects", "s": "style", "q": "question"}


def bootstrap(values: list[float], n: int = 10_000, seed: int = 0) -> tuple[float, float, float]:
    """(mean, lo, hi): the mean and its 95% percentile bootstrap interval."""
    v = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    means = v[rng.integers(0, len(v), size=(n, len(v)))].mean(axis=1)
    return float(v.mean()), float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def main() -> None:
    qrels = list(ir_measures.read_trec_qrels(sys.argv[1]))
    print("| run | group | n | nDCG@10 | Judged@10 |")
    print("|---|---|---|---|---|")
    for path in sys.argv[2:]:
        run = list(ir_measures.read_trec_run(path))
        per = defaultdict(dict)
        for m in ir_measures.iter_calc([nDCG @ 10, Judged @ 10], qrels, run):
            per[m.query_id][str(m.measure)] = m.value
        qids = sorted({q.query_id for q in qrels})
        for group in ["all", *REGISTERS.values()]:
            ids = [q for q in qids if group == "all" or REGISTERS.get(q[-1]) == group]
            nd = bootstrap([per[q].get("nDCG@10", 0.0) for q in ids])
            jd = bootstrap([per[q].get("Judged@10", 0.0) for q in ids])
            print(f"| {path.rsplit('/', 1)[-1]} | {group} | {len(ids)} | {nd[0]:.3f} [{nd[1]:.2f}, "
                  f"{nd[2]:.2f}] | {jd[0]:.3f} [{jd[1]:.2f}, {jd[2]:.2f}] |")


if __name__ == "__main__":
    main()
