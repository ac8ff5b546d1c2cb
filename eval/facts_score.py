"""Score the judging of queries made only of machine facts.

Usage (from the repository root; no library or database is needed)::

    python eval/facts_score.py

Reads two rounds of pooled graded judging by pixels-only judges:

- ``eval/judgements/style/examples/``: the issue's three example queries
  (``queries.jsonl``: x1 "cut-out on white", x2 "black and white line
  drawing", x3 "red flower close-up"), the top 10 of the hybrid then
  (``runs/ex-hybrid.trec.gz``), graded by j12 and j13;
- ``eval/judgements/style/facts/``: x1, x2 and the two tune-split blind
  queries the change of :mod:`loupe.search.facts` reorders ("photo on white
  background", b-p069-s and b-p089-s), the top 10 of the hybrid before
  (``runs/head-fr``) and after (``runs/facts-fr``) that change, the pairs no
  earlier grade covered, graded by j14 and j15.

Each round's ``key.jsonl`` maps (sheet, item) to (query id, content SHA-256);
the grades combine by the lower median (:func:`loupe.eval.metrics.pooled_qrels`),
after the known items of the tune queries and the first round's qrels
(``eval/judgements/qrels-demo-blind-judge.txt``). Prints the judges'
agreement, each query's grades of its top 10 in rank order for every run
(``-`` = not graded), and recall@10 / nDCG@10 of each query (ranx,
:func:`loupe.eval.metrics.per_query`): four queries give no interval worth
printing, so none is.
"""
from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from style_score import FIRST_ROUND, _grades, _jsonl, read_run  # noqa: E402

from loupe.eval import metrics as mx  # noqa: E402

STYLE = Path(__file__).resolve().parent / "judgements" / "style"
ROUNDS = (STYLE / "examples", STYLE / "facts")
RUNS = (("examples", STYLE / "examples" / "runs" / "ex-hybrid.trec.gz"),
        ("before", STYLE / "facts" / "runs" / "head-fr.trec.gz"),
        ("after", STYLE / "facts" / "runs" / "facts-fr.trec.gz"))


def qrels() -> tuple[dict[str, dict[str, int]], dict[str, str], dict[str, dict]]:
    """(qrels, query texts, every judge's grades by (qid, sha256))."""
    queries = {q["id"]: q for d in ROUNDS for q in _jsonl(d / "queries.jsonl")}
    truth: dict[str, dict[str, int]] = defaultdict(dict)
    for q in queries.values():
        for t in q.get("truth", []):
            truth[q["id"]][t["sha256"]] = int(t["grade"])
    for line in FIRST_ROUND.read_text(encoding="utf-8").splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[0] in queries:
            truth[parts[0]].setdefault(parts[2], int(parts[3]))
    by_judge: dict[str, dict] = {}
    for d in ROUNDS:
        by_judge.update(_grades(d))
    grades: dict[tuple[str, str], list[int]] = defaultdict(list)
    for gs in by_judge.values():
        for pair, g in gs.items():
            grades[pair].append(g)
    return mx.pooled_qrels(dict(truth), dict(grades)), \
        {k: q["text"] for k, q in queries.items()}, by_judge


def main() -> None:
    qr, text, by_judge = qrels()
    print("agreement (Cohen's kappa, unweighted / linear):")
    for a in mx.judge_agreement(by_judge):
        print(f"  {a['judges'][0]}–{a['judges'][1]}: {a['pairs']} pairs, same grade "
              f"{a['agree']:.3f}, kappa {a['kappa']:.3f} / {a['kappa_linear']:.3f}")
    runs = {name: read_run(path) for name, path in RUNS}
    for qid in sorted(text):
        print(f"\n{qid} “{text[qid]}”")
        for name, run in runs.items():
            if qid not in run:
                continue
            top = sorted(run[qid], key=lambda d: -run[qid][d])[:10]
            seq = " ".join(str(qr.get(qid, {}).get(d, "-")) for d in top)
            figs = mx.per_query({qid: qr[qid]}, run, ("recall@10", "ndcg@10")) \
                if any(g > 0 for g in qr.get(qid, {}).values()) else None
            tail = (f"  recall@10 {figs['recall@10'][qid]:.3f}  nDCG@10 {figs['ndcg@10'][qid]:.3f}"
                    if figs else "")
            print(f"  {name:9s} grades by rank: {seq}{tail}")


if __name__ == "__main__":
    main()
