"""Paired comparison of two runs per register and per stratum, with intervals.

Usage (from the repository root, the library's home in ``LOUPE_HOME``)::

    python eval/compare_strata.py RUN_A RUN_B [--qrels FILE] [--json]

For the queries of the runs' query set that have a relevant asset, the
per-query recall@10 and nDCG@10 of each run (ranx, through
:func:`loupe.eval.metrics.per_query`), then for every group — all queries,
each register and each stratum field's value (``source``, ``kind``,
``text_in_image``) — each run's mean with its 95 % percentile-bootstrap
interval (:func:`loupe.eval.metrics.bootstrap`, seed 0) and the paired
difference B − A with its own bootstrap interval over the same queries.

Truth: the query set's qrels in the library (known item plus any recorded
judgements; :meth:`loupe.eval.Evaluation.qrels`), or with ``--qrels`` a
TREC qrels file whose docno is the content SHA-256 (as
``eval/judgements/qrels-demo-blind-judge.txt``): then only the queries it
names are measured, the runs' assets are mapped to their SHA-256 first.
"""
from __future__ import annotations

import json
import sys
from collections import defaultdict

import numpy as np

METRICS = ("recall@10", "ndcg@10")
GROUPS = ("register", "stratum:source", "stratum:kind", "stratum:text_in_image")


def _read_qrels(path: str) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = defaultdict(dict)
    for line in open(path, encoding="utf-8"):
        parts = line.split()
        if len(parts) == 4:
            out[parts[0]][parts[2]] = int(parts[3])
    return dict(out)


def compare_groups(run_a: str, run_b: str, qrels_file: str | None = None) -> dict:
    """The per-group table described in the module docstring, as a dict:
    ``{"a", "b", "truth", "rows": [{"group", "value", "n", metric: {"a": [mean, lo, hi],
    "b": [...], "diff": [...]}}]}``.

    Raises:
        loupe.eval.EvalError: unknown runs or runs over different query sets.
    """
    from loupe import Library
    from loupe.eval import EvalError, Evaluation
    from loupe.eval import metrics as mx

    with Library.open() as lib:
        ev = Evaluation(lib)
        a, b = ev.load_run(run_a), ev.load_run(run_b)
        if a.query_set != b.query_set:
            raise EvalError(f"{run_a} and {run_b} are over different query sets")
        queries = ev.queries(a.query_set)
        labels = ev._labels(queries)
        ra, rb = a.ranx_run(), b.ranx_run()
        if qrels_file:
            qrels = _read_qrels(qrels_file)
            ids = sorted({int(x) for r in (ra, rb) for d in r.values() for x in d})
            sha = ev._sha256(ids)
            ra = {q: {sha[int(x)]: s for x, s in d.items()} for q, d in ra.items() if q in qrels}
            rb = {q: {sha[int(x)]: s for x, s in d.items()} for q, d in rb.items() if q in qrels}
            truth = f"qrels file {qrels_file}"
        else:
            qrels = ev.qrels(a.query_set)
            truth = f"qrels of query set {a.query_set} (known item + recorded judgements)"
    pa, pb = mx.per_query(qrels, ra, METRICS), mx.per_query(qrels, rb, METRICS)
    qids = list(pa[METRICS[0]].keys())
    groups: dict[tuple[str, str], list[str]] = {("all", "all"): qids}
    for q in qids:
        for g in GROUPS:
            if g in labels.get(q, {}):
                groups.setdefault((g, labels[q][g]), []).append(q)
    rows = []
    for key in [("all", "all")] + sorted(k for k in groups if k != ("all", "all")):
        members = groups[key]
        row: dict = {"group": key[0], "value": key[1], "n": len(members)}
        for m in METRICS:
            va = np.array([pa[m][q] for q in members])
            vb = np.array([pb[m][q] for q in members])
            fa, fb, fd = mx.bootstrap(va), mx.bootstrap(vb), mx.bootstrap(vb - va)
            row[m] = {k: [round(f.mean, 3), round(f.lo, 3), round(f.hi, 3)]
                      for k, f in (("a", fa), ("b", fb), ("diff", fd))}
        rows.append(row)
    return {"a": run_a, "b": run_b, "truth": truth, "rows": rows}


def _fmt(t: list[float], sign: bool = False) -> str:
    f = "{:+.3f}" if sign else "{:.3f}"
    return f"{f.format(t[0])} [{f.format(t[1])}, {f.format(t[2])}]"


def main(argv: list[str]) -> None:
    args = [x for x in argv if not x.startswith("--")]
    qrels = None
    if "--qrels" in argv:
        qrels = argv[argv.index("--qrels") + 1]
        args.remove(qrels)
    if len(args) != 2:
        sys.exit(__doc__)
    out = compare_groups(args[0], args[1], qrels)
    if "--json" in argv:
        print(json.dumps(out, indent=1))
        return
    print(f"A = {out['a']}, B = {out['b']}; truth: {out['truth']}")
    print("| group | queries | recall@10 A | recall@10 B | B − A | nDCG@10 A | nDCG@10 B | B − A |")
    print("|---|---|---|---|---|---|---|---|")
    for r in out["rows"]:
        g = r["value"] if r["group"] == "all" else f"{r['group'].removeprefix('stratum:')}={r['value']}"
        rc, nd = r["recall@10"], r["ndcg@10"]
        print(f"| {g} | {r['n']} | {_fmt(rc['a'])} | {_fmt(rc['b'])} | {_fmt(rc['diff'], True)} "
              f"| {_fmt(nd['a'])} | {_fmt(nd['b'])} | {_fmt(nd['diff'], True)} |")


if __name__ == "__main__":
    main(sys.argv[1:])
