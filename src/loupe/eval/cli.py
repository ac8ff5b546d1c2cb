"""``loupe eval …``: the evaluation instrument's commands, one per method of
:class:`loupe.eval.Evaluation` (see docs/evaluation.md)."""

from __future__ import annotations

import json
import sys
from contextlib import contextmanager
from typing import Any

import click

from ..models.embedders import ModelError
from ..terminal import echo
from .instrument import LEAK_MARGIN, POOL_DEPTH, SYSTEMS, EvalError, Evaluation
from .queryset import QuerySetError
from ..web.cli import exit_on_sigterm


def _emit_json(data: Any) -> None:
    echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))


@contextmanager
def _instrument(obj):
    """The Evaluation of the library the global options name; bad input
    becomes a clean CLI error."""
    with obj.open() as lib:
        try:
            yield Evaluation(lib)
        except (EvalError, QuerySetError, ModelError, FileNotFoundError) as exc:
            raise click.ClickException(str(exc)) from exc


def _fig(f: dict[str, Any]) -> str:
    return f"{f['mean']:.3f} [{f['lo']:.3f}, {f['hi']:.3f}]"


@click.group("eval")
def eval_group() -> None:
    """Measure search honestly: blind queries, pooled judging, metrics, leak check."""


@eval_group.command("import-queries")
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.option("--name", help="Query set name (default: the file name without extension).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def import_queries(obj, path: str, name: str | None, as_json: bool) -> None:
    """Import a JSONL query set (format in docs/evaluation.md)."""
    with _instrument(obj) as ev:
        info = ev.import_queries(path, name=name)
    if as_json:
        return _emit_json(info)
    echo(f"{info['query_set']}: {info['queries']} queries ({info['blind']} blind, "
               f"{info['caption-derived']} caption-derived)")
    if info["truth_unresolved"]:
        echo(f"warning: {info['truth_unresolved']} ground-truth reference(s) match no "
                   "asset of this library", err=True)


@eval_group.command("export-queries")
@click.argument("query_set")
@click.argument("path", type=click.Path(dir_okay=False))
@click.pass_obj
def export_queries(obj, query_set: str, path: str) -> None:
    """Write a query set back to a JSONL file."""
    with _instrument(obj) as ev:
        n = ev.export_queries(query_set, path)
    echo(f"{n} queries written to {path}")


@eval_group.command("queries")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def query_sets(obj, as_json: bool) -> None:
    """List the query sets."""
    with _instrument(obj) as ev:
        rows = ev.query_sets()
    if as_json:
        return _emit_json(rows)
    if not rows:
        echo("No query sets.")
    for r in rows:
        echo(f"{r['query_set']}\t{r['queries']} queries\t{r['blind']} blind\t"
                   f"{r['caption-derived']} caption-derived")


@eval_group.command("build-variants")
@click.argument("model")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def build_variants(obj, model: str, as_json: bool) -> None:
    """Build the image / caption / both vector sets of an image-text model (writes)."""
    with _instrument(obj) as ev:
        info = ev.build_variants(model)
    if as_json:
        return _emit_json(info)
    echo(", ".join(f"{k}: {v:,} vectors written" for k, v in info.items())
               + " (image vectors already computed are kept)")


@eval_group.command("run")
@click.argument("query_set")
@click.argument("system", type=click.Choice(SYSTEMS))
@click.option("--name", help="Run name (default: SYSTEM-QUERY_SET).")
@click.option("-k", "k", type=click.IntRange(1, 1000), default=10, show_default=True,
              help="Results kept per query.")
@click.option("--model", help="Model of a variant system (default: the image lane's); "
                             "for 'peer', its dense encoder (default: the text lane's).")
@click.option("--max-distance", type=click.FloatRange(0, 2), default=None,
              help="Cosine distance cut-off of a vector system (default: 'text' uses the "
                   "model's thresholds in force, variants 2 = none).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def run(obj, query_set: str, system: str, name: str | None, k: int, model: str | None,
        max_distance: float | None, as_json: bool) -> None:
    """Run a system over a query set, read-only, and store the run.

    SYSTEM: hybrid (the production search), lexical / text (one of its lanes
    alone), image / caption / both (index
    variants of an image-text model), peer (reference: Tantivy BM25 over the
    plain English fields + brute-force dense, plain RRF k=60)."""
    with _instrument(obj) as ev:
        info = ev.run(query_set, system, name=name, k=k, model=model, max_distance=max_distance)
    if as_json:
        return _emit_json(info)
    echo(f"run {info['run']}: {info['queries']} queries, {info['hits']} results "
               f"({info['system']}{' / ' + info['model'] if info['model'] else ''}, k={k})")


@eval_group.command("runs")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def runs(obj, as_json: bool) -> None:
    """List the stored runs."""
    with _instrument(obj) as ev:
        rows = ev.runs()
    if as_json:
        return _emit_json(rows)
    if not rows:
        echo("No runs.")
    for r in rows:
        echo(f"{r['run']}\t{r['query_set']}\t{r['system']}\t{r['model'] or ''}\tk={r['k']}")


@eval_group.command("export-run")
@click.argument("run_name")
@click.argument("path", type=click.Path(dir_okay=False))
@click.pass_obj
def export_run(obj, run_name: str, path: str) -> None:
    """Write a run in TREC format (docno = the asset's content sha256)."""
    with _instrument(obj) as ev:
        n = ev.export_run(run_name, path)
    echo(f"{n} lines written to {path}")


@eval_group.command("qrels")
@click.argument("query_set")
@click.argument("path", type=click.Path(dir_okay=False))
@click.pass_obj
def qrels(obj, query_set: str, path: str) -> None:
    """Write a query set's graded qrels (ground truth + judgements) in TREC format."""
    with _instrument(obj) as ev:
        n = ev.export_qrels(query_set, path)
    echo(f"{n} judged pairs written to {path}")


@eval_group.command("metrics")
@click.argument("run_name")
@click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed.")
@click.option("--per-query", is_flag=True, help="Also list each query: pass/fail, recall, RR.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def metrics(obj, run_name: str, seed: int, per_query: bool, as_json: bool) -> None:
    """recall@10, nDCG@10, MRR with 95% intervals, per provenance, register, stratum."""
    with _instrument(obj) as ev:
        info = ev.metrics(run_name, seed=seed)
    if as_json:
        return _emit_json(info)
    judged = info["judged@10"]
    echo(f"run {info['run']} ({info['system']}) over {info['query_set']}: "
               f"{info['measured']} of {info['queries']} queries measured; judged@10 "
               f"{'-' if judged is None else f'{judged:.3f}'}")
    echo(f"{'group':<22}{'value':<18}{'n':>5}  {'recall@10':<22}{'nDCG@10':<22}MRR")
    for r in info["rows"]:
        f = r["figures"]
        echo(f"{r['group']:<22}{r['value']:<18}{f['mrr']['n']:>5}  {_fig(f['recall@10']):<22}"
                   f"{_fig(f['ndcg@10']):<22}{_fig(f['mrr'])}")
    if per_query:
        for p in info["per_query"]:
            echo(f"{'PASS' if p['pass'] else 'FAIL'}\t{p['id']}\trecall@10 "
                       f"{p['recall@10']:.2f}\tRR {p['rr']:.3f}\t{p['text']}")
    _warnings(info["warnings"])


def _warnings(warns: list[str], limit: int = 12) -> None:
    for w in warns[:limit]:
        echo(f"warning: {w}", err=True)
    if len(warns) > limit:
        echo(f"warning: … and {len(warns) - limit} more (see --json)", err=True)


@eval_group.command("compare")
@click.argument("run_a")
@click.argument("run_b")
@click.option("--seed", type=int, default=42, show_default=True)
@click.option("--permutations", type=int, default=10000, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def compare(obj, run_a: str, run_b: str, seed: int, permutations: int, as_json: bool) -> None:
    """Paired comparison of two runs (Fisher randomization and paired t-test, via ranx)."""
    with _instrument(obj) as ev:
        info = ev.compare(run_a, run_b, seed=seed, permutations=permutations)
    if as_json:
        return _emit_json(info)
    echo(f"{run_a} vs {run_b} over {info['query_set']} ({info['n']} queries; "
               f"{info['test']}, {permutations} permutations)")
    for m in ("recall@10", "ndcg@10", "mrr"):
        d = info[m]
        echo(f"{m:<10} {d[run_a]:.3f} → {d[run_b]:.3f}  diff {d['diff']:+.3f} "
                   f"[{d['diff_lo']:+.3f}, {d['diff_hi']:+.3f}]  p={d['p']:.4f} "
                   f"(±{d['p_se']:.4f})  t-test p={d['p_student']:.4f}")


@eval_group.command("leak-check")
@click.argument("query_sets", nargs=-1, required=True)
@click.option("--model", help="Image-text model (default: the image lane's).")
@click.option("--margin", type=float, default=LEAK_MARGIN, show_default=True,
              help="Largest allowed recall@10 gap, caption-derived minus blind.")
@click.option("--no-hybrid", is_flag=True, help="Leave the production search out of the table.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def leak_check(obj, query_sets: tuple[str, ...], model: str | None, margin: float,
               no_hybrid: bool, as_json: bool) -> None:
    """Fail (exit 1) when the image index finds caption-derived queries better than blind ones."""
    with _instrument(obj) as ev:
        info = ev.leak_check(list(query_sets), model=model, margin=margin,
                             hybrid=not no_hybrid)
    if as_json:
        _emit_json(info)
    else:
        echo(f"recall@10 by index variant × query set (model {info['model']}; 95% intervals)")
        echo(f"{'variant':<10}{'blind':<26}{'caption-derived':<26}")
        for v, row in info["table"].items():
            echo(f"{v:<10}{_fig(row['blind']):<26}{_fig(row['caption-derived']):<26}")
        verdict = "PASS" if info["passed"] else "FAIL"
        echo(f"{verdict}: image recall@10 caption-derived − blind = {info['gap']:+.3f} "
                   f"(margin {info['margin']:.3f})")
        for w in info["warnings"]:
            echo(f"warning: {w}", err=True)
    if not info["passed"]:
        sys.exit(1)


@eval_group.command("pool")
@click.argument("pool_name")
@click.argument("runs", nargs=-1, required=True)
@click.option("--depth", type=click.IntRange(1, 100), default=POOL_DEPTH, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True, help="Shuffle seed.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def pool(obj, pool_name: str, runs: tuple[str, ...], depth: int, seed: int,
         as_json: bool) -> None:
    """Pool the top results of runs for blind judging (again: only new finds are queued)."""
    with _instrument(obj) as ev:
        info = ev.pool(pool_name, list(runs), depth=depth, seed=seed)
    if as_json:
        return _emit_json(info)
    echo(f"pool {info['pool']}: round {info['round']}, {info['runs_added']} run(s) added, "
               f"{info['new_pairs']} new pair(s) to judge, {info['pairs']} in all")


@eval_group.command("agreement")
@click.argument("pool_name")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def agreement(obj, pool_name: str, as_json: bool) -> None:
    """Agreement between judges on the pairs both judged (Cohen's kappa)."""
    with _instrument(obj) as ev:
        info = ev.agreement(pool_name)
    if as_json:
        return _emit_json(info)
    if not info["judgements"]:
        echo(f"No judgements in pool {pool_name} yet.")
        return
    echo("judgements: " + ", ".join(f"{j} {n}" for j, n in info["judgements"].items()))
    if not info["pairs"]:
        echo("No pair was judged by two judges yet.")
    for p in info["pairs"]:
        k = "undefined" if p["kappa"] is None else f"{p['kappa']:.3f}"
        kl = "undefined" if p["kappa_linear"] is None else f"{p['kappa_linear']:.3f}"
        echo(f"{p['judges'][0]} / {p['judges'][1]}: {p['pairs']} pairs, agree "
                   f"{p['agree']:.3f}, kappa {k}, linear-weighted kappa {kl}")


@eval_group.command("judge")
@click.argument("pool_name")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=int, default=8765, show_default=True)
@click.pass_obj
def judge(obj, pool_name: str, host: str, port: int) -> None:
    """Serve the blind judging page of a pool (pictures and queries only)."""
    from urllib.parse import quote

    import uvicorn

    from .judging import LOCAL_HOSTS, standalone_app

    with _instrument(obj) as ev:
        ev.pool_id(pool_name)
        # any host name when listening on every interface; else the local names and --host
        hosts = None if host in ("0.0.0.0", "::") else LOCAL_HOSTS | {host.lower()}
        app = standalone_app(ev, pool_name, hosts=hosts)
        echo(f"judging pool {pool_name} at http://{host}:{port}/{app.state.judge_key}"
                   f"/judge/{quote(pool_name, safe='')}/?judge=YOUR-NAME"
                   " (Ctrl-C to stop; the key admits whoever has the address)")
        exit_on_sigterm()
        uvicorn.run(app, host=host, port=port, log_level="warning", proxy_headers=False)


@eval_group.command("calibrate")
@click.argument("runs", nargs=-1, required=True)
@click.option("--unjudged-nonrelevant", is_flag=True,
              help="Count results without a grade as non-relevant (known-item truth "
                   "without pooled judgements: a pessimistic assumption).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def calibrate(obj, runs: tuple[str, ...], unjudged_nonrelevant: bool, as_json: bool) -> None:
    """Propose distance thresholds per query-length band from judged vector runs."""
    with _instrument(obj) as ev:
        info = ev.calibrate(list(runs), unjudged_nonrelevant=unjudged_nonrelevant)
    if as_json:
        return _emit_json(info)
    for model, m in info["models"].items():
        echo(f"model {model}")
        echo(f"{'words':<7}{'rel':>5}{'non':>5}  {'in force':<10}{'keeps rel/non':<15}"
                   f"{'proposed':<10}keeps rel/non")
        for b in m["bands"]:
            ce, pe = b["current_effect"], b["proposed_effect"]
            echo(f"{b['band']:<7}{b['relevant']:>5}{b['non_relevant']:>5}  "
                       f"{b['current']:<10}{ce['relevant_kept']}/{ce['non_relevant_kept']:<13}"
                       f"{'-' if b['proposed'] is None else b['proposed']:<10}"
                       f"{'-' if pe is None else str(pe['relevant_kept']) + '/' + str(pe['non_relevant_kept'])}")
        echo(f"apply with: {m['apply']}" if m["apply"] else
                   "no proposal: judge more results (each band needs relevant and non-relevant ones)")


@eval_group.command("absent")
@click.argument("runs", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def absent(obj, runs: tuple[str, ...], as_json: bool) -> None:
    """Rows returned and verdicts of runs, truth or not: for a set of absent
    subjects (things the library does not hold) every row is a false alarm."""
    with _instrument(obj) as ev:
        rows = ev.absent(list(runs))
    if as_json:
        return _emit_json(rows)
    echo("run\tqueries\twith rows\tmean rows\tmedian\tmeaning only\tverdicts")
    for r in rows:
        mean = "-" if r["mean_rows"] is None else f"{r['mean_rows']:.1f}"
        med = "-" if r["median_rows"] is None else f"{r['median_rows']:.0f}"
        verdicts = ", ".join(f"{k} {v}" for k, v in r["verdicts"].items()) or "-"
        echo(f"{r['run']}\t{r['queries']}\t{r['with_rows']}\t{mean}\t{med}\t"
                   f"{r['meaning_only']}\t{verdicts}")


@eval_group.command("report")
@click.argument("runs", nargs=-1, required=True)
@click.option("--out", "out", required=True, type=click.Path(dir_okay=False),
              help="Output path; writes OUT.html and OUT.json.")
@click.option("--leak", "leak_sets", multiple=True,
              help="Query set for the leak-check table (repeat: blind and caption-derived).")
@click.option("--model", help="Model of the leak check (default: the image lane's).")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--tradeoff", "tradeoff", multiple=True, metavar="BLIND_RUN:ABSENT_RUN",
              help="A configuration's run over blind queries and its run over absent "
                   "subjects, for the trade-off table (repeat per configuration).")
@click.pass_obj
def report(obj, runs: tuple[str, ...], out: str, leak_sets: tuple[str, ...],
           model: str | None, seed: int, tradeoff: tuple[str, ...]) -> None:
    """Write a self-contained HTML report and its JSON."""
    pairs = []
    for item in tradeoff:
        blind, sep, absent = item.partition(":")
        if not sep or not blind or not absent:
            raise click.BadParameter(f"{item!r}: expected BLIND_RUN:ABSENT_RUN",
                                     param_hint="--tradeoff")
        pairs.append((blind, absent))
    with _instrument(obj) as ev:
        info = ev.report(list(runs), out, leak_sets=list(leak_sets) or None, model=model,
                         seed=seed, tradeoff=pairs or None)
    echo(f"wrote {info['html']} and {info['json']}")
