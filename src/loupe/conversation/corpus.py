"""Exact-match evaluation of the compiler on eval/conversation/corpus.jsonl.

A case matches when the turn's intent, filter (exact JSON equality), text,
unparsed list and contradiction flag (message present) all equal the expected
ones AND the state after the turn equals the expected state.  Rates are
reported per intent and per predicate type (a case counts for every predicate
type that appears in its expected filter or state).
"""
from __future__ import annotations

import json
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

from .parse import parse
from .state import State, apply


def _fields(node: Any, out: set[str]) -> set[str]:
    if isinstance(node, dict):
        for k, v in node.items():
            if k in ("all", "any"):
                for n in v:
                    _fields(n, out)
            elif k == "not":
                _fields(v, out)
            else:
                out.add(k)
    return out


def run_case(case: dict, clock: datetime) -> dict:
    """Compile one case; returns {"ok": bool, "got": {...}, "diff": [field, ...]}."""
    prev = case["previous"]
    state = State(prev["filter"], prev["text"]) if prev else State()
    turn = parse(case["sentence"], lang=case["lang"], clock=clock, has_previous=not state.empty(),
                 previous=state.filter)
    new, msg = apply(state, turn)
    got = {"intent": turn.intent, "filter": turn.filter, "text": turn.text,
           "unparsed": turn.unparsed, "contradiction": msg is not None}
    exp = case["expected"]
    diff = [k for k in exp if got[k] != exp[k]]
    if new.as_dict() != case["state"]:
        diff.append("state")
    got["state"] = new.as_dict()
    return {"ok": not diff, "got": got, "diff": diff}


def evaluate(path: str | Path) -> dict:
    """Evaluate the corpus: totals, per-intent and per-predicate rates, misses."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    clock = datetime.fromisoformat(header["clock"])
    by_intent: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    by_pred: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    by_lang: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    misses = []
    ok = 0
    cases = [json.loads(x) for x in lines[1:] if x.strip()]
    for c in cases:
        r = run_case(c, clock)
        ok += r["ok"]
        for bucket, key in ((by_intent, c["expected"]["intent"]), (by_lang, c["lang"])):
            bucket[key][0] += r["ok"]
            bucket[key][1] += 1
        for f in _fields(c["expected"]["filter"], set()) | _fields(c["state"]["filter"], set()):
            by_pred[f][0] += r["ok"]
            by_pred[f][1] += 1
        if not r["ok"]:
            misses.append({"id": c["id"], "sentence": c["sentence"], "diff": r["diff"],
                           "expected": {**c["expected"], "state": c["state"]}, "got": r["got"]})
    return {"cases": len(cases), "exact": ok, "rate": ok / len(cases) if cases else 0.0,
            "by_intent": {k: {"exact": a, "cases": b, "rate": a / b} for k, (a, b) in sorted(by_intent.items())},
            "by_predicate": {k: {"exact": a, "cases": b, "rate": a / b} for k, (a, b) in sorted(by_pred.items())},
            "by_language": {k: {"exact": a, "cases": b, "rate": a / b} for k, (a, b) in sorted(by_lang.items())},
            "misses": misses}


def markdown(name: str, r: dict) -> str:
    """The report of :func:`evaluate` as Markdown tables plus every miss."""
    out = [f"### {name}: {r['exact']}/{r['cases']} exact ({r['rate']:.3f})", ""]
    for title, key in (("intent", "by_intent"), ("predicate type", "by_predicate"),
                       ("language", "by_language")):
        out += [f"| {title} | exact | cases | rate |", "|---|---:|---:|---:|"]
        out += [f"| {k} | {v['exact']} | {v['cases']} | {v['rate']:.3f} |" for k, v in r[key].items()]
        out.append("")
    if r["misses"]:
        out += ["Every miss (field: expected → got; the state then differs accordingly):", ""]
        for m in r["misses"]:
            diffs = [f"{k}: `{json.dumps(m['expected'][k], ensure_ascii=False)}` → "
                     f"`{json.dumps(m['got'][k], ensure_ascii=False)}`"
                     for k in m["diff"] if k != "state" or m["diff"] == ["state"]]
            out.append(f"- **{m['id']}** “{m['sentence']}” — " + "; ".join(diffs))
        out.append("")
    return "\n".join(out)


if __name__ == "__main__":   # python -m loupe.conversation.corpus FILE.jsonl ...
    import sys

    for arg in sys.argv[1:]:
        print(markdown(Path(arg).name, evaluate(arg)))
