"""Score the style register's pooled judging from its committed files.

Usage (from the repository root; no library or database is needed)::

    python eval/style_score.py [DIR] [--qrels-out FILE] [--json]
    python eval/style_score.py --registers      # objects and questions must not drop
    python eval/style_score.py --round eval/judgements/style/lang [--round ...]   # later rounds

``DIR`` defaults to ``eval/judgements/style``. It reads:

- ``demo-blind-style.jsonl``: the 65 queries and each one's known item
  (grade 2, the agreed truth);
- ``eval/judgements/qrels-demo-blind-judge.txt``: the first round's graded
  qrels, kept for the same query ids (the sheets left those pairs out, so
  they were not judged twice);
- ``key.jsonl`` and ``grades-<judge>.jsonl``: each judge's grade of a
  (sheet, item) mapped through the key to (query id, content SHA-256);
- ``runs/*.trec.gz``: the *before* and *after* runs (docno = SHA-256).

It prints:

1. the judges' agreement on the pairs two of them graded
   (:func:`loupe.eval.metrics.judge_agreement`);
2. the qrels: truth and first round first, then the lower median of the
   judges' grades (:func:`loupe.eval.metrics.pooled_qrels`, the rule of
   :meth:`loupe.eval.Evaluation.qrels`), written with ``--qrels-out``;
3. for each lane (hybrid, lexical, text), recall@10 and nDCG@10 before and
   after with 95 % bootstrap intervals, and the paired difference
   after − before with its interval and Fisher's randomization p
   (:func:`loupe.eval.metrics.compare`, ranx), over the queries with a
   relevant asset; and Judged@10 of each run (the share of its top 10 that
   has a grade; unjudged rows count as not relevant, so a run with
   Judged@10 < 1 is measured as a lower bound);
4. the same before/after comparison against the known item alone, the
   truth the blind set had before pooling.

``--registers`` compares the hybrid before and after over the whole test
split (195 queries; ``runs/{before,after}-hybrid-test-all.trec.gz``, the
same homes, rebuilt: their style queries' top 10 are the style runs' to the
row), per register, against the known item alone and against the pooled
qrels where a query was judged (this round for style, the first round's
20 objects and 20 question queries), so that a gain in style is not paid
for by the other registers.

``--round ROUND`` adds a later round of judging (``ROUND/key.jsonl``,
``ROUND/grades-*.jsonl``: the pairs of a new run that no earlier grade
covered, the known item again as a control) to the qrels and compares, on
the style queries and these larger qrels, the *before* and *after* hybrids
again and the *after* hybrid with the round's run (``ROUND/runs/*.trec.gz``).
The before/after pool alone fully judges only those two runs; with the
round added, all three are (Judged@10 is printed).

Recall@10 here is relative to what is known to be relevant: the known item,
the first round's grades and this pool (the top 10 of the *before* and
*after* hybrid runs). Both hybrid runs are fully judged (Judged@10 = 1); a
relevant picture neither run found counts for neither.
"""
from __future__ import annotations

import gzip
import json
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from loupe.eval import metrics as mx  # noqa: E402

FIRST_ROUND = REPO / "eval/judgements/qrels-demo-blind-judge.txt"
LANES = {"hybrid": "hybrid", "lexical": "lex", "text": "text"}


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()
            if x.strip() and not x.startswith("#")]


def read_run(path: Path) -> dict[str, dict[str, float]]:
    """A TREC run as ``{qid: {docno: score}}``; the score is ``-rank`` so that
    the order is the file's ranks, whatever scores it wrote."""
    run: dict[str, dict[str, float]] = defaultdict(dict)
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            qid, _q0, doc, rank, *_ = line.split()
            run[qid][doc] = -float(rank)
    return dict(run)


def _grades(d: Path) -> dict[str, dict[tuple[str, str], int]]:
    """Each judge's grades in ``d`` (``grades-<judge>.jsonl``) by (qid, sha256),
    mapped through ``d/key.jsonl``; a later line for one item replaces an
    earlier one."""
    key = {(k["sheet"], int(k["item"])): (k["qid"], k["sha256"]) for k in _jsonl(d / "key.jsonl")}
    by_judge: dict[str, dict[tuple[str, str], int]] = defaultdict(dict)
    for f in sorted(d.glob("grades-*.jsonl")):
        judge = f.stem.removeprefix("grades-")
        for r in _jsonl(f):
            g = int(r["grade"])
            if g not in (0, 1, 2):
                raise ValueError(f"{f}: grade {g} outside 0..2")
            by_judge[judge][key[(r["sheet"], int(r["item"]))]] = g
    return by_judge


def build(d: Path, rounds: tuple[Path, ...] = ()) -> tuple[dict, dict, dict, dict]:
    """(qrels, known, by_judge, counts): the merged qrels, the known items
    alone, every judge's grades by (qid, sha256), and how many pairs each
    source gave."""
    queries = _jsonl(d / "demo-blind-style.jsonl")
    qids = {q["id"] for q in queries}
    truth: dict[str, dict[str, int]] = defaultdict(dict)
    for q in queries:
        for t in q["truth"]:
            truth[q["id"]][t["sha256"]] = int(t["grade"])
    known = {qid: dict(d) for qid, d in truth.items()}
    first = 0
    for line in FIRST_ROUND.read_text(encoding="utf-8").splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[0] in qids:
            truth[parts[0]].setdefault(parts[2], int(parts[3]))
            first += 1
    by_judge = _grades(d)
    for extra in rounds:
        for judge, gs in _grades(extra).items():
            if judge in by_judge:
                raise ValueError(f"judge {judge} is in two rounds: name each round's judges apart")
            by_judge[judge] = gs
    grades: dict[tuple[str, str], list[int]] = defaultdict(list)
    for d_ in by_judge.values():
        for pair, g in d_.items():
            grades[pair].append(g)
    qrels = mx.pooled_qrels(dict(truth), dict(grades))
    return qrels, known, by_judge, {"first_round": first, "judged_pairs": len(grades),
                             "known_items": sum(len(q["truth"]) for q in queries)}


def judged_at_10(qrels: dict, run: dict) -> float:
    """Judged@10 by ir-measures: the mean share of a run's top 10 that has a
    grade (as ``eval/score_judged.py`` computes it)."""
    import ir_measures
    from ir_measures import Judged

    return float(ir_measures.calc_aggregate([Judged @ 10], qrels, run)[Judged @ 10])


def registers(d: Path) -> None:
    """Before → after of the hybrid per register over the whole test split."""
    queries = [json.loads(x) for x in (REPO / "eval/e9/demo-blind-test.jsonl").read_text(
        encoding="utf-8").splitlines() if x.strip() and not x.startswith("#")]
    known = {q["id"]: {t["sha256"]: int(t["grade"]) for t in q["truth"]} for q in queries}
    pooled = {qid: dict(v) for qid, v in known.items()}
    judged: set[str] = set()
    for f in (FIRST_ROUND, d / "qrels-style.txt"):
        for line in f.read_text(encoding="utf-8").splitlines():
            parts = line.split()
            if len(parts) == 4 and parts[0] in pooled:
                pooled[parts[0]].setdefault(parts[2], int(parts[3]))
                judged.add(parts[0])
    before = read_run(d / "runs/before-hybrid-test-all.trec.gz")
    after = read_run(d / "runs/after-hybrid-test-all.trec.gz")
    register = {q["id"]: q["register"] for q in queries}
    print("| truth | register | n | metric | before | after | after − before | p (Fisher) |")
    print("|---|---|---|---|---|---|---|---|")
    for label, qrels, only_judged in (("known item", known, False),
                                      ("pooled, judged queries", pooled, True)):
        for reg in ("objects", "style", "question"):
            sub = {q: g for q, g in qrels.items()
                   if register[q] == reg and (q in judged or not only_judged)}
            c = mx.compare(sub, before, after, names=("before", "after"),
                           metrics=("recall@10", "ndcg@10"))
            for m in ("recall@10", "ndcg@10"):
                print(f"| {label} | {reg} | {c['n']} | {m} | {c[m]['before']:.3f} | "
                      f"{c[m]['after']:.3f} | {c[m]['diff']:+.3f} [{c[m]['diff_lo']:+.3f}, "
                      f"{c[m]['diff_hi']:+.3f}] | {c[m]['p']:.3f} |")


def round_compare(d: Path, extras: tuple[Path, ...]) -> None:
    """The *after* hybrid against later rounds' runs, on the merged qrels."""
    qrels, known, by_judge, counts = build(d, extras)
    for extra in extras:
        new_judges = sorted(_grades(extra))
        print(f"round {extra}: judges {new_judges}, "
              f"{ {j: len(by_judge[j]) for j in new_judges} } grades")
        for a in mx.judge_agreement({j: by_judge[j] for j in new_judges}):
            print(f"  {a['judges'][0]}-{a['judges'][1]}: {a['pairs']} pairs, agree "
                  f"{a['agree']:.3f}, kappa {a['kappa']:.3f}, linear kappa "
                  f"{a['kappa_linear']:.3f}")
    after = read_run(d / "runs/after-hybrid.trec.gz")
    print("| run | recall@10 | nDCG@10 | judged@10 |")
    print("|---|---|---|---|")
    runs = {"after": after, "before": read_run(d / "runs/before-hybrid.trec.gz")}
    for extra in extras:
        for f in sorted((extra / "runs").glob("*.trec.gz")):
            runs[f.name.removesuffix(".trec.gz")] = read_run(f)
    for name, run in runs.items():
        pq = mx.per_query(qrels, run, ("recall@10", "ndcg@10"))
        r, n = (mx.bootstrap(list(pq[m].values())) for m in ("recall@10", "ndcg@10"))
        print(f"| {name} | {r} | {n} | {judged_at_10(qrels, run):.3f} |")
    for name, run in list(runs.items())[1:]:
        a, b = (run, after) if name == "before" else (after, run)
        names = ("before", "after") if name == "before" else ("after", name)
        c = mx.compare(qrels, a, b, names=names, metrics=("recall@10", "ndcg@10"))
        for m in ("recall@10", "ndcg@10"):
            print(f"{names[1]} − {names[0]}, {m}: {c[m]['diff']:+.3f} [{c[m]['diff_lo']:+.3f}, "
                  f"{c[m]['diff_hi']:+.3f}], p {c[m]['p']:.3f} ({c['n']} queries)")


def main(argv: list[str]) -> None:
    if "--round" in argv:
        extras, rest = [], []
        it = iter(argv)
        for a in it:
            if a == "--round":
                extras.append(Path(next(it)))
            else:
                rest.append(a)
        return round_compare(Path(rest[0]) if rest else REPO / "eval/judgements/style",
                             tuple(extras))
    if "--registers" in argv:
        argv.remove("--registers")
        return registers(Path(argv[0]) if argv else REPO / "eval/judgements/style")
    as_json = "--json" in argv
    argv = [a for a in argv if a != "--json"]
    out_path = None
    if "--qrels-out" in argv:
        i = argv.index("--qrels-out")
        out_path = argv[i + 1]
        argv = argv[:i] + argv[i + 2:]
    d = Path(argv[0]) if argv else REPO / "eval/judgements/style"
    qrels, known, by_judge, counts = build(d)
    result: dict = {"counts": counts,
                    "judgements": {j: len(v) for j, v in sorted(by_judge.items())},
                    "agreement": mx.judge_agreement(by_judge),
                    "relevant_queries": len(mx.relevant_only(qrels)),
                    "grades": {g: sum(v == g for d_ in qrels.values() for v in d_.values())
                               for g in (0, 1, 2)},
                    "lanes": {}}
    if out_path:
        with open(out_path, "w", encoding="utf-8") as f:
            for qid in sorted(qrels):
                for doc in sorted(qrels[qid]):
                    f.write(f"{qid} 0 {doc} {qrels[qid][doc]}\n")
    for lane, stem in LANES.items():
        before = read_run(d / "runs" / f"before-{stem}.trec.gz")
        after = read_run(d / "runs" / f"after-{stem}.trec.gz")
        cmp = mx.compare(qrels, before, after, names=("before", "after"),
                         metrics=("recall@10", "ndcg@10"))
        fig = {}
        for name, run in (("before", before), ("after", after)):
            pq = mx.per_query(qrels, run, ("recall@10", "ndcg@10"))
            fig[name] = {m: mx.bootstrap(list(pq[m].values())).as_dict() for m in pq}
            fig[name]["judged@10"] = judged_at_10(qrels, run)
        result["lanes"][lane] = {"figures": fig, "compare": cmp,
                                 "known_item": mx.compare(known, before, after,
                                                          names=("before", "after"),
                                                          metrics=("recall@10", "ndcg@10"))}
    if as_json:
        print(json.dumps(result, indent=1))
        return
    print(f"sources: {counts}; judgements per judge: {result['judgements']}")
    print(f"qrels: {result['relevant_queries']} queries with a relevant asset; "
          f"grades 0/1/2: {result['grades']}")
    for a in result["agreement"]:
        print(f"  {a['judges'][0]}-{a['judges'][1]}: {a['pairs']} pairs, agree {a['agree']:.3f}, "
              f"kappa {a['kappa']:.3f}, linear kappa {a['kappa_linear']:.3f}")
    print("| lane | metric | before | after | after − before | p (Fisher) |")
    print("|---|---|---|---|---|---|")
    for lane, r in result["lanes"].items():
        for m in ("recall@10", "ndcg@10"):
            b, a, c = r["figures"]["before"][m], r["figures"]["after"][m], r["compare"][m]
            print(f"| {lane} | {m} | {b['mean']:.3f} [{b['lo']:.3f}, {b['hi']:.3f}] | "
                  f"{a['mean']:.3f} [{a['lo']:.3f}, {a['hi']:.3f}] | {c['diff']:+.3f} "
                  f"[{c['diff_lo']:+.3f}, {c['diff_hi']:+.3f}] | {c['p']:.3f} |")
        print(f"| {lane} | judged@10 | {r['figures']['before']['judged@10']:.3f} | "
              f"{r['figures']['after']['judged@10']:.3f} | | |")
    print(f"queries measured: {result['lanes']['hybrid']['compare']['n']}")
    print("known item alone:")
    print("| lane | metric | before | after | after − before | p (Fisher) |")
    print("|---|---|---|---|---|---|")
    for lane, r in result["lanes"].items():
        for m in ("recall@10", "ndcg@10"):
            c = r["known_item"][m]
            print(f"| {lane} | {m} | {c['before']:.3f} | {c['after']:.3f} | {c['diff']:+.3f} "
                  f"[{c['diff_lo']:+.3f}, {c['diff_hi']:+.3f}] | {c['p']:.3f} |")


if __name__ == "__main__":
    main(sys.argv[1:])
