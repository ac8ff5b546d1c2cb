"""One system at two haystack sizes, paired over the same queries (E9).

Usage (from the repository root; no library needed)::

    python eval/e9_compare.py QUERYSET.jsonl SMALL.trec LARGE.trec DISTRACTORS.jsonl \\
        [--qrels FILE] [--json]

``SMALL.trec`` and ``LARGE.trec`` (or ``.trec.gz``) are the same system's run of the same query
set on the demo library and on the demo library plus distractors, written by
``loupe eval export-run`` (TREC, docno = the asset's content SHA-256, so the
two homes' asset ids never need to agree). ``DISTRACTORS.jsonl`` is the
manifest ``eval/e9_distractors.py`` wrote (one JSON object per distractor,
with its ``sha256``; ``.gz`` read compressed); a distractor whose bytes are also a demo asset's (its
SHA-256 is in the small run's library) is the same asset and counts as a
demo asset: pass the demo's SHA-256s with ``--demo FILE`` (one per line) to
exclude them.

Truth: the known item of each query (the query set's ``truth``), or with
``--qrels`` a TREC qrels file (e.g. ``eval/judgements/qrels-demo-blind-judge.txt``,
the pooled graded judgements): then only the queries it names are measured.
**Unjudged results count as not relevant** (ranx's and trec_eval's rule); a
distractor in a top 10 is never in the demo's judged pool, so graded figures
at the larger size are a pessimistic reading, and ``judged@10`` says how much
of each run the truth covers.

For every group (all queries, each register, each stratum value) and each
metric (recall@10, nDCG@10, by ranx through :func:`loupe.eval.metrics.per_query`):
the mean at each size with its 95 % percentile-bootstrap interval and the
paired difference LARGE − SMALL with its own interval (seed 0, 2,000
resamples: :func:`loupe.eval.metrics.bootstrap`, as ``eval/compare_strata.py``).
Beside them: judged@10 of each run (share of its top-10 slots whose docno the
truth grades, 0 included), the share of the large run's top-10 slots taken by
distractors (slots counted out of 10 per query), and how many queries found a
relevant item in the top 10 at one size and not the other.

Runs are ranked by their TREC rank column (the order the system returned),
not by the printed score, so that scores equal at six decimals cannot reorder
a top 10.
"""
from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import numpy as np

METRICS = ("recall@10", "ndcg@10")
GROUPS = ("register", "stratum:source", "stratum:kind", "stratum:text_in_image")
DEPTH = 10


def _read_text(path: str | Path) -> str:
    """A UTF-8 file's text, gunzipped first when its name ends in ``.gz``."""
    raw = Path(path).read_bytes()
    return (gzip.decompress(raw) if str(path).endswith(".gz") else raw).decode("utf-8")


def read_trec_ranked(path: str | Path) -> dict[str, list[str]]:
    """A TREC run ``qid Q0 docno rank score tag`` (gzip-compressed when the
    name ends in ``.gz``) as ``{qid: [docno, …]}`` in rank order.

    Raises:
        ValueError: a line without six fields or with a rank that is not a whole number.
    """
    out: dict[str, list[tuple[int, str]]] = {}
    for n, line in enumerate(_read_text(path).splitlines(), 1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 6:
            raise ValueError(f"{path}:{n}: expected 'qid Q0 docno rank score tag'")
        try:
            rank = int(parts[3])
        except ValueError as exc:
            raise ValueError(f"{path}:{n}: rank must be a whole number") from exc
        out.setdefault(parts[0], []).append((rank, parts[2]))
    return {q: [d for _, d in sorted(v)] for q, v in out.items()}


def read_queryset(path: str | Path) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, str]]]:
    """Known-item qrels ``{qid: {sha256: grade}}`` and labels ``{qid: {group: value}}``
    (register and ``stratum:<key>``) of a query-set JSONL (docs/evaluation.md §1);
    lines starting with ``#`` are the header."""
    qrels: dict[str, dict[str, int]] = {}
    labels: dict[str, dict[str, str]] = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        r = json.loads(line)
        qrels[r["id"]] = {t["sha256"]: int(t.get("grade", 2)) for t in r.get("truth", [])}
        labels[r["id"]] = {"register": r.get("register", ""),
                           **{f"stratum:{k}": str(v) for k, v in r.get("strata", {}).items()}}
    return qrels, labels


def _scored(ranked: dict[str, list[str]]) -> dict[str, dict[str, float]]:
    """Rank order as ranx scores: the first of ``n`` gets ``n``, the last 1."""
    return {q: {d: float(len(ds) - i) for i, d in enumerate(ds)} for q, ds in ranked.items()}


def compare_sizes(qrels: dict[str, dict[str, int]], labels: dict[str, dict[str, str]],
                  small: dict[str, list[str]], large: dict[str, list[str]],
                  distractors: set[str]) -> dict:
    """The table of the module docstring over the queries of ``qrels`` that
    have a relevant docno (grade ≥ 1). Shapes: ``qrels`` {qid: {docno: grade}},
    ``small``/``large`` {qid: [docno, …] best first}, ``distractors`` a set of
    docnos. Returns ``{"n", "rows": [{"group", "value", "n", "recall@10":
    {"small", "large", "diff"}, "ndcg@10": …}], "judged@10": {"small",
    "large"}, "distractor_share": [mean, lo, hi], "distractor_share_small",
    "hits_lost", "hits_gained"}``; each figure ``[mean, lo, hi]``.

    Raises:
        ValueError: no query has a relevant docno.
    """
    from loupe.eval import metrics as mx

    ps = mx.per_query(qrels, _scored(small), METRICS)
    pl = mx.per_query(qrels, _scored(large), METRICS)
    qids = list(ps[METRICS[0]].keys())
    groups: dict[tuple[str, str], list[str]] = {("all", "all"): qids}
    for q in qids:
        for g in GROUPS:
            if g in labels.get(q, {}):
                groups.setdefault((g, labels[q][g]), []).append(q)

    def fig(values) -> list[float]:
        f = mx.bootstrap(np.asarray(values, dtype=float))
        return [round(f.mean, 3), round(f.lo, 3), round(f.hi, 3)]

    rows = []
    for key in [("all", "all")] + sorted(k for k in groups if k != ("all", "all")):
        members = groups[key]
        row: dict = {"group": key[0], "value": key[1], "n": len(members)}
        for m in METRICS:
            a = np.array([ps[m][q] for q in members])
            b = np.array([pl[m][q] for q in members])
            row[m] = {"small": fig(a), "large": fig(b), "diff": fig(b - a)}
        rows.append(row)

    def judged(run: dict[str, list[str]]) -> float:
        slots = [d in qrels[q] for q in qids for d in run.get(q, [])[:DEPTH]]
        return round(sum(slots) / len(slots), 3) if slots else 0.0

    def share(run: dict[str, list[str]]) -> list[float]:
        return [sum(d in distractors for d in run.get(q, [])[:DEPTH]) / DEPTH for q in qids]

    hit_s = {q for q in qids if ps["recall@10"][q] > 0}
    hit_l = {q for q in qids if pl["recall@10"][q] > 0}
    return {"n": len(qids), "rows": rows,
            "judged@10": {"small": judged(small), "large": judged(large)},
            "distractor_share": fig(share(large)),
            "distractor_share_small": round(float(np.mean(share(small))), 3),
            "hits_lost": sorted(hit_s - hit_l), "hits_gained": sorted(hit_l - hit_s)}


def _fmt(t: list[float], sign: bool = False) -> str:
    f = "{:+.3f}" if sign else "{:.3f}"
    return f"{f.format(t[0])} [{f.format(t[1])}, {f.format(t[2])}]"


def main(argv: list[str]) -> None:
    args = [x for x in argv if not x.startswith("--")]
    opts: dict[str, str] = {}
    for flag in ("--qrels", "--demo"):
        if flag in argv:
            opts[flag] = argv[argv.index(flag) + 1]
            args.remove(opts[flag])
    if len(args) != 4:
        sys.exit(__doc__)
    qset, small_path, large_path, manifest = args
    qrels, labels = read_queryset(qset)
    truth = f"known item of {qset}"
    if "--qrels" in opts:
        from loupe.eval.queryset import read_qrels
        qrels = read_qrels(opts["--qrels"])
        truth = f"qrels file {opts['--qrels']} (unjudged = not relevant)"
    distractors = {json.loads(x)["sha256"] for x in _read_text(manifest).splitlines() if x.strip()}
    if "--demo" in opts:
        distractors -= set(Path(opts["--demo"]).read_text().split())
    small, large = read_trec_ranked(small_path), read_trec_ranked(large_path)
    out = compare_sizes(qrels, labels, small, large, distractors)
    out.update({"truth": truth, "small": small_path, "large": large_path,
                "distractors": len(distractors)})
    if "--json" in argv:
        print(json.dumps(out, indent=1))
        return
    print(f"small = {small_path}, large = {large_path}; truth: {truth}; {out['n']} queries")
    print(f"judged@10 small {out['judged@10']['small']:.3f}, large {out['judged@10']['large']:.3f}; "
          f"top-10 slots taken by distractors: {_fmt(out['distractor_share'])} "
          f"(small {out['distractor_share_small']:.3f}); relevant-in-top-10 lost "
          f"{len(out['hits_lost'])}, gained {len(out['hits_gained'])}")
    print("| group | queries | recall@10 small | recall@10 large | large − small "
          "| nDCG@10 small | nDCG@10 large | large − small |")
    print("|---|---|---|---|---|---|---|---|")
    for r in out["rows"]:
        g = r["value"] if r["group"] == "all" else f"{r['group'].removeprefix('stratum:')}={r['value']}"
        rc, nd = r["recall@10"], r["ndcg@10"]
        print(f"| {g} | {r['n']} | {_fmt(rc['small'])} | {_fmt(rc['large'])} | "
              f"{_fmt(rc['diff'], True)} | {_fmt(nd['small'])} | {_fmt(nd['large'])} | "
              f"{_fmt(nd['diff'], True)} |")


if __name__ == "__main__":
    main(sys.argv[1:])
