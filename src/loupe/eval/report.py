"""A self-contained HTML report (tables and inline SVG, no scripts, no
external resources) of what the instrument measured, next to its JSON."""

from __future__ import annotations

import html
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .common import VARIANTS

CSS = """
body{font-family:sans-serif;margin:2em;color:#222;max-width:70em}
table{border-collapse:collapse;margin:.5em 0 1.5em}
th,td{border:1px solid #ccc;padding:.25em .6em;text-align:right}
th:first-child,td:first-child,td.l{text-align:left}
.warn{color:#a40}.fail{color:#b00;font-weight:bold}.pass{color:#070;font-weight:bold}
"""


def _e(x: Any) -> str:
    return html.escape(str(x))


def _fig(f: dict[str, Any]) -> str:
    return f"{f['mean']:.3f} <small>[{f['lo']:.3f}, {f['hi']:.3f}]</small>"


def interval_chart(rows: list[tuple[str, dict[str, Any]]], title: str) -> str:
    """An inline SVG of means (dots) with 95 % intervals (bars) on a 0–1 axis,
    one line per labelled figure."""
    w, left, line = 560, 200, 22
    h = 30 + line * len(rows)
    x = lambda v: left + v * (w - left - 20)
    parts = [(f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
              f'role="img" aria-label="{_e(title)}">'),
             f'<text x="4" y="14" font-size="12" font-weight="bold">{_e(title)}</text>']
    for v in (0, 0.25, 0.5, 0.75, 1):
        parts.append(f'<line x1="{x(v):.1f}" y1="20" x2="{x(v):.1f}" y2="{h - 4}" '
                     f'stroke="#ddd"/><text x="{x(v) - 6:.1f}" y="{h}" font-size="9">{v}</text>')
    for i, (label, f) in enumerate(rows):
        y = 32 + i * line
        parts.append(f'<text x="4" y="{y + 4}" font-size="11">{_e(label)}</text>'
                     f'<line x1="{x(f["lo"]):.1f}" y1="{y}" x2="{x(f["hi"]):.1f}" y2="{y}" '
                     f'stroke="#369" stroke-width="3"/>'
                     f'<circle cx="{x(f["mean"]):.1f}" cy="{y}" r="4" fill="#c33"/>')
    parts.append("</svg>")
    return "".join(parts)


def render(data: dict[str, Any]) -> str:
    """The HTML page of a report dict (as :meth:`Evaluation.report` builds it)."""
    out = [(f"<!doctype html><html lang='en'><head><meta charset='utf-8'>"
            f"<title>Loupe evaluation report</title><style>{CSS}</style></head><body>"),
           "<h1>Loupe evaluation report</h1>",
           (f"<p>Generated {_e(data['generated_at'])}. Intervals: 95 % percentile bootstrap "
            f"over queries (seed {data['seed']}, 2,000 resamples).</p>")]
    leak = data.get("leak_check")
    if leak:
        cls = "pass" if leak["passed"] else "fail"
        out.append("<h2>Leak check (index variant × query set, recall@10)</h2>")
        out.append("<table><tr><th>variant</th><th>blind</th><th>caption-derived</th></tr>")
        for v, row in leak["table"].items():
            out.append(f"<tr><td>{_e(v)}</td><td>{_fig(row['blind'])}</td>"
                       f"<td>{_fig(row['caption-derived'])}</td></tr>")
        out.append(f"</table><p class='{cls}'>{'PASS' if leak['passed'] else 'FAIL'}: "
                   f"image caption-derived − blind = {leak['gap']:+.3f} "
                   f"(margin {leak['margin']:.3f}, model {_e(leak['model'])})</p>")
        out.append(interval_chart([(f"{v} / {p}", f) for v, row in leak["table"].items()
                                   for p, f in row.items()], "recall@10 by variant × query set"))
    trade = data.get("tradeoff")
    if trade:
        out.append("<h2>Absent subjects: recall on blind queries vs rows returned for things "
                   "the library does not hold</h2>")
        out.append("<table><tr><th>blind run</th><th>recall@10</th><th>nDCG@10</th>"
                   "<th>absent run</th><th>absent queries with rows</th>"
                   "<th>mean rows returned</th><th>median</th><th>verdicts</th></tr>")
        for t in trade:
            a = t["absent"]
            mean = "-" if a["mean_rows"] is None else f"{a['mean_rows']:.1f}"
            med = "-" if a["median_rows"] is None else f"{a['median_rows']:.0f}"
            verdicts = ", ".join(f"{k} {v}" for k, v in a["verdicts"].items()) or "-"
            out.append(f"<tr><td class='l'>{_e(t['blind_run'])}</td><td>{_fig(t['recall@10'])}</td>"
                       f"<td>{_fig(t['ndcg@10'])}</td><td class='l'>{_e(t['absent_run'])}</td>"
                       f"<td>{a['with_rows']} of {a['queries']}</td><td>{mean}</td><td>{med}</td>"
                       f"<td class='l'>{_e(verdicts)}</td></tr>")
        out.append("</table><p>Every row returned for an absent subject is a false alarm; "
                   "rows that only meaning-based lanes found are approximate.</p>")
    for m in data["runs"]:
        judged = m["judged@10"]
        out.append(f"<h2>Run {_e(m['run'])}</h2><p>system {_e(m['system'])}"
                   f"{' / ' + _e(m['model']) if m['model'] else ''}, query set "
                   f"{_e(m['query_set'])}: {m['measured']} of {m['queries']} queries measured; "
                   f"judged@10 {'-' if judged is None else f'{judged:.3f}'}</p>")
        out.append("<table><tr><th>group</th><th>value</th><th>n</th><th>recall@10</th>"
                   "<th>nDCG@10</th><th>MRR</th></tr>")
        for r in m["rows"]:
            f = r["figures"]
            out.append(f"<tr><td>{_e(r['group'])}</td><td class='l'>{_e(r['value'])}</td>"
                       f"<td>{f['mrr']['n']}</td><td>{_fig(f['recall@10'])}</td>"
                       f"<td>{_fig(f['ndcg@10'])}</td><td>{_fig(f['mrr'])}</td></tr>")
        out.append("</table>")
        for metric in ("recall@10", "ndcg@10"):
            out.append(interval_chart([(f"{r['group']}={r['value']}", r["figures"][metric])
                                       for r in m["rows"]], f"{m['run']}: {metric}"))
        if m["warnings"]:
            out.append("<ul>" + "".join(f"<li class='warn'>{_e(w)}</li>" for w in m["warnings"])
                       + "</ul>")
        out.append("<details><summary>Per query</summary><table><tr><th>id</th><th>query</th>"
                   "<th>pass</th><th>recall@10</th><th>RR</th></tr>")
        for p in m["per_query"]:
            out.append(f"<tr><td>{_e(p['id'])}</td><td class='l'>{_e(p['text'])}</td>"
                       f"<td>{'pass' if p['pass'] else 'FAIL'}</td><td>{p['recall@10']:.2f}</td>"
                       f"<td>{p['rr']:.3f}</td></tr>")
        out.append("</table></details>")
    cal = data.get("calibration")
    if cal:
        out.append("<h2>Distance thresholds proposed from judged results</h2>")
        for model, info in cal["models"].items():
            out.append(f"<h3>{_e(model)}</h3><table><tr><th>words</th><th>relevant</th>"
                       "<th>non-relevant</th><th>in force</th><th>keeps rel / non-rel</th>"
                       "<th>proposed</th><th>keeps rel / non-rel</th></tr>")
            for b in info["bands"]:
                ce, pe = b["current_effect"], b["proposed_effect"]
                out.append(
                    f"<tr><td>{_e(b['band'])}</td><td>{b['relevant']}</td>"
                    f"<td>{b['non_relevant']}</td><td>{b['current']}</td>"
                    f"<td>{ce['relevant_kept']} / {ce['non_relevant_kept']}</td>"
                    f"<td>{'-' if b['proposed'] is None else b['proposed']}</td>"
                    f"<td>{'-' if pe is None else str(pe['relevant_kept']) + ' / ' + str(pe['non_relevant_kept'])}</td></tr>")
            out.append("</table>")
            if info["apply"]:
                out.append(f"<p>To apply: <code>{_e(info['apply'])}</code></p>")
    out.append("</body></html>")
    return "\n".join(out)


def write_report(ev, runs: list[str], path: str | Path, *,
                 leak_sets: list[str] | None = None, model: str | None = None,
                 seed: int = 0, tradeoff: list[tuple[str, str]] | None = None) -> dict[str, Any]:
    """Write ``<path>.html`` (self-contained: tables and inline SVG, no
    scripts or external resources) and ``<path>.json`` with the metrics of
    ``runs``, the leak check over ``leak_sets`` (when given), the
    absent-subject trade-off of ``tradeoff`` pairs (blind run, absent run;
    see :meth:`~loupe.eval.instrument.Evaluation.tradeoff`) and the
    threshold calibration of the runs that have distances. Returns the
    report dict (what the JSON holds) with ``html`` and ``json`` paths.

    Raises:
        EvalError: an unknown run or query set.
    """
    data: dict[str, Any] = {"generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
                            "seed": seed, "runs": [ev.metrics(r, seed=seed) for r in runs]}
    if leak_sets:
        data["leak_check"] = ev.leak_check(leak_sets, model=model, seed=seed)
    if tradeoff:
        data["tradeoff"] = ev.tradeoff(tradeoff, seed=seed)
    vector_runs = [m["run"] for m in data["runs"] if m["system"] in VARIANTS]
    if vector_runs:
        data["calibration"] = ev.calibrate(vector_runs)
    base = Path(path)
    html_path, json_path = base.with_suffix(".html"), base.with_suffix(".json")
    html_path.write_text(render(data), encoding="utf-8")
    json_path.write_text(json.dumps(data, indent=2, default=str), encoding="utf-8")
    return {**data, "html": str(html_path), "json": str(json_path)}
