"""Answerability's trade-off (V8, loupe.search.answer): for each pair of
cut-offs (the text lane's nearest neighbour's largest distance, the least
share of the query's words the library knows), what the absent subjects and
the blind queries get; and the stem check's cost on the blind set.

Every query is searched by the production search (``Library.search``, page
1 of 10) with the text model's cut-offs set to count every meaning-only row
("count"), then, where the search had meaning-only rows, with none ("apart":
such rows shown apart, uncounted). Both answers carry the evidence the
decision reads (the same in both). A configuration picks, per query, the
"count" answer when the evidence passes its cut-offs, else the "apart"
answer: exactly what the search returns under those cut-offs, since the
decision reads nothing else. The stem check's cost: the "count" answer
again with the check off, for the queries it changed.

Figures per configuration and split:

* absent subjects: queries with any counted row, mean counted rows (the
  search's total), meaning-only rows counted on page 1 (mean);
* blind queries: recall@10 and nDCG@10 (Evaluation.metrics: the set's truth
  and any imported judgements; 95 % bootstrap intervals), for the split.

The absent-subject set has no split of its own: its queries alternate, the
1st, 3rd, ... in the file are tune, the 2nd, 4th, ... test.

    export PYTHONPATH=src
    python eval/answerability.py --home H collect --set demo-absent --out absent.json
    python eval/answerability.py --home H collect --set demo-blind --split tune --out tune.json
    python eval/answerability.py --home H collect --set demo-blind --split test --out test.json
    python eval/answerability.py --home H table --blind tune.json test.json \\
        --absent absent.json --out table.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from loupe import Library
from loupe.eval.instrument import Evaluation, RunResult
from loupe.search import answer as ans

HERE = Path(__file__).parent
BLIND, ABSENT = "demo-blind", "demo-absent"
DISTANCES = [round(0.35 + 0.05 * i, 2) for i in range(8)]   # 0.35 .. 0.70
SHARES = [0.0, 0.5]


def collect(lib: Library, ev: Evaluation, query_set: str, split: str | None) -> dict[str, dict]:
    """qid -> {"text", "strata", "evidence", "stems", "count", "stems_off",
    "apart"} for the queries of ``query_set`` (of ``split`` only, when
    given). The cut-offs are set in this process only (the search reads them
    through :func:`loupe.search.answer.cutoffs_from`), never in the model's
    file, so several collections can run at once."""
    queries = [qu for qu in ev.queries(query_set)
               if split is None or qu.strata.get("split") == split]
    keep = ans.cutoffs_from
    out: dict[str, dict] = {}
    try:
        ans.cutoffs_from = lambda cfg: ans.Cutoffs(2.0, 0.0)      # every row counts
        for qu in queries:
            res = lib.search(qu.text, limit=10)
            page = [h.explain.get("lexical", {}).get("rank") is None for h in res.hits]
            out[qu.id] = {"text": qu.text, "strata": qu.strata, "evidence": res.evidence,
                          "stems": res.stems,
                          "count": {"ids": [h.asset_id for h in res.hits], "total": res.total,
                                    "meaning_on_page": sum(page)}}
        stems_off(lib, out)
        ans.cutoffs_from = lambda cfg: None                       # none counts
        for a in out.values():
            if a["evidence"] is None:
                a["apart"] = a["count"]
                continue
            res = lib.search(a["text"], limit=10)
            a["apart"] = {"ids": [h.asset_id for h in res.hits], "total": res.total,
                          "meaning_on_page": 0}
    finally:
        ans.cutoffs_from = keep
    return out


def stems_off(lib: Library, got: dict[str, dict]) -> None:
    """The "count" answer with the stem check off (every stem a match), for
    the queries the check changed (a collision left out, or assets
    excluded); the others' answer is the same by construction."""
    from loupe.lexical import forms

    keep = forms.collisions, forms.excluded
    forms.collisions, forms.excluded = (lambda m: set()), (lambda m: ())
    try:
        for a in got.values():
            if not any(m["kind"] == "collision" or m["excluded"] for m in a["stems"]):
                a["stems_off"] = a["count"]
                continue
            res = lib.search(a["text"], limit=10)
            a["stems_off"] = {"ids": [h.asset_id for h in res.hits], "total": res.total}
    finally:
        forms.collisions, forms.excluded = keep


def chosen(a: dict, cut: ans.Cutoffs | None, always: bool = False) -> dict:
    """The answer a query gets under ``cut`` (``always``: every meaning row counts)."""
    e = a["evidence"]
    if e is None or always:
        return a["count"]
    ok = ans.answerable(ans.Evidence(e["best_distance"], e["known_share"], e["meaning_rows"]),
                        cut)
    return a["count"] if ok else a["apart"]


def absent_figures(got: dict[str, dict], ids: list[str], pick) -> dict:
    rows = [pick(got[q]) for q in ids]
    return {"queries": len(rows), "with_counted_row": sum(r["total"] > 0 for r in rows),
            "mean_counted_rows": round(sum(r["total"] for r in rows) / len(rows), 2),
            "mean_meaning_rows_page1": round(sum(r.get("meaning_on_page", 0) for r in rows)
                                             / len(rows), 2)}


def blind_figures(ev: Evaluation, got: dict[str, dict], split: str, pick) -> dict:
    hits = {q: [(a, 1.0 / r, None) for r, a in enumerate(pick(x)["ids"], 1)]
            for q, x in got.items()}
    m = ev.metrics(RunResult("answerability", BLIND, "hybrid", None, 10, hits, {}))
    for row in m["rows"]:
        if row["group"] == "stratum:split" and row["value"] == split:
            f = row["figures"]
            return {k: [round(v, 4) for v in (f[k]["mean"], f[k]["lo"], f[k]["hi"])]
                    for k in ("recall@10", "ndcg@10")}
    raise SystemExit(f"no {split} split among the blind answers' strata")


def table(ev: Evaluation, blind: dict[str, dict], absent: dict[str, dict]) -> list[dict]:
    """The trade-off table: per configuration and split, the absent
    subjects' and the blind queries' figures."""
    absent_ids = list(absent)
    split_ids = {"tune": absent_ids[0::2], "test": absent_ids[1::2]}
    splits = sorted({a["strata"].get("split") for a in blind.values()} - {None})
    configs: list[tuple[str, object]] = [
        ("always (every meaning-only row counts)", lambda a: chosen(a, None, always=True)),
        ("never (no meaning-only row counts)", lambda a: chosen(a, None))]
    for d in DISTANCES:
        for k in SHARES:
            configs.append((f"max_distance {d:.2f}, min_known {k:.2f}",
                            lambda a, c=ans.Cutoffs(d, k): chosen(a, c)))
    configs.append(("always, stem check off", lambda a: a["stems_off"]))
    rows = []
    for label, pick in configs:
        row: dict = {"config": label}
        for split in splits:
            row[split] = {"blind": blind_figures(ev, blind, split, pick)}
            if "stem check off" not in label:
                row[split]["absent"] = absent_figures(absent, split_ids[split], pick)
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--home", required=True)
    sub = ap.add_subparsers(dest="step", required=True)
    c = sub.add_parser("collect", help="search one set (or one split of it), write JSON")
    c.add_argument("--set", required=True, choices=[BLIND, ABSENT])
    c.add_argument("--split", choices=["tune", "test"])
    c.add_argument("--out", required=True)
    t = sub.add_parser("table", help="the trade-off table from collected answers")
    t.add_argument("--blind", nargs="+", required=True, help="collected blind answers")
    t.add_argument("--absent", required=True, help="collected absent-subject answers")
    t.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    with Library.open(args.home) as lib:
        ev = Evaluation(lib)
        if args.step == "collect":
            ev.import_queries(HERE / "querysets" / f"{args.set}.jsonl")
            got = collect(lib, ev, args.set, args.split)
            Path(args.out).write_text(json.dumps(got, indent=1))
            return 0
        blind: dict[str, dict] = {}
        for f in args.blind:
            blind.update(json.loads(Path(f).read_text()))
        absent = json.loads(Path(args.absent).read_text())
        rows = table(ev, blind, absent)
        Path(args.out).write_text(json.dumps(rows, indent=1))
        for row in rows:
            for split in ("tune", "test"):
                if split in row:
                    t = row[split]
                    print(f"{split} {row['config']:<42} absent {t.get('absent')} "
                          f"blind {t['blind']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
