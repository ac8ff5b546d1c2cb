"""``loupe init``, ``ingest``, ``failures``, ``enrich`` and ``hash``: building
and enriching the library."""

from __future__ import annotations

from typing import Any

import click
from rich.markup import escape
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TaskProgressColumn, TextColumn,
                           TimeElapsedColumn, TimeRemainingColumn)
from rich.table import Table

from ..access.users import AccessError
from ..jobs.queue import QueueFull
from ..terminal import echo
from ..library import Library
from .context import _Ctx, _emit_json, console, err_console
from .people import _ingest_faces


@click.command()
@click.option("--languages", "-l", help="Comma-separated library languages, e.g. en,fr,de.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def init(obj: _Ctx, languages: str | None, as_json: bool) -> None:
    """Create the library (database, schema, tenant) and set its languages."""
    with obj.open(create=True) as lib:
        try:
            info = lib.init(languages=languages.split(",") if languages is not None else None)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--languages") from exc
    if as_json:
        _emit_json(info)
    else:
        console.print(f"Library ready in [bold]{escape(str(info['home']))}[/] — tenant "
                      f"[bold]{escape(str(info['tenant']))}[/], languages "
                      f"{escape(', '.join(info['languages']))}", markup=True)


@click.command()
@click.argument("path", type=click.Path(exists=True, file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("--max-pixels", type=click.IntRange(1, 1_000_000_000),
              help="Refuse images with more pixels than this (default 150,000,000).")
@click.option("--faces", is_flag=True, help="Then find and cluster faces of new assets "
                                            "(loupe faces); said plainly when not installed.")
@click.option("--enqueue", is_flag=True, help="Queue one job per file for 'loupe worker' "
                                              "processes instead of ingesting here.")
@click.pass_obj
def ingest(obj: _Ctx, path: str, as_json: bool, max_pixels: int | None,
           faces: bool = False, enqueue: bool = False) -> None:
    """Ingest every image under PATH (incremental: unchanged files are skipped;
    a second ingest of the same folder waits for the first). With --enqueue,
    queue the files for workers; files gone from PATH are then left to a
    plain ingest."""
    if enqueue:
        _enqueue(obj, path, as_json, max_pixels)
        return
    with obj.open() as lib:
        columns = [TextColumn("ingest"), BarColumn(), MofNCompleteColumn(), TaskProgressColumn(),
                   TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), TimeRemainingColumn()]
        with Progress(*columns, console=err_console, disable=as_json or not err_console.is_terminal,
                      transient=False) as bar:
            task = bar.add_task("ingest", total=None, rate="")

            def progress(done: int, total: int) -> None:
                speed = bar.tasks[0].speed
                bar.update(task, completed=done, total=total,
                           rate=f"{speed:.1f} files/s" if speed else "")

            def on_wait(message: str) -> None:
                echo(message + "…", err=True)

            summary = lib.ingest(path, progress=progress, max_pixels=max_pixels,
                                 on_wait=on_wait)
        waiting = lib.vectors_waiting()
        found = _ingest_faces(lib, as_json) if faces else None
    if as_json:
        _emit_json(summary.as_dict() if found is None else {**summary.as_dict(), "faces": found})
        return
    s = summary
    rate = (s.new_assets + s.duplicates + s.updated + s.moved) / s.seconds if s.seconds else 0.0
    console.print(f"Ingested [bold]{escape(str(s.root))}[/] in {s.seconds:.1f} s"
                  + (f" ({rate:.1f} files/s)" if rate else ""), markup=True)
    table = Table(show_header=False, box=None, padding=(0, 2))
    for label, value in [("files seen", s.files_seen), ("new assets", s.new_assets),
                         ("duplicates (same bytes, another path)", s.duplicates),
                         ("updated", s.updated),
                         ("moved (asset kept, old path gone)", s.moved),
                         ("unchanged (skipped)", s.unchanged),
                         ("removed files", s.removed_files), ("removed assets", s.removed_assets),
                         ("failed", s.failed), ("warnings", len(s.warnings)),
                         ("not read (not a supported format)", len(s.skipped))]:
        table.add_row(label, f"{value:,}")
    console.print(table)
    if s.failures:
        console.print(f"[red]{s.failed} file(s) could not be ingested:[/]", markup=True)
        for f in s.failures:
            console.print(f"  {f.path}: {f.reason}", markup=False, highlight=False)
    if s.warnings:
        console.print(f"[yellow]{len(s.warnings)} file(s) ingested with a warning:[/]",
                      markup=True)
        for w in s.warnings:
            console.print(f"  {w.path}: {w.reason}", markup=False, highlight=False)
    if s.skipped:
        console.print(f"[yellow]{len(s.skipped)} file(s) not read:[/]", markup=True)
        for k in s.skipped:
            console.print(f"  {k.path}: {k.reason}", markup=False, highlight=False)
    for lane, n in waiting.items():
        console.print(f"{n:,} assets wait for {lane}-lane vectors: run 'loupe embed'",
                      highlight=False)
    if found is not None:
        console.print(f"faces: {found['error']}" if "error" in found else
                      f"faces: {found['faces']:,} found in {found['scanned']:,} assets, "
                      f"{found['people']:,} new people", markup=False, highlight=False)


def _enqueue(obj: _Ctx, path: str, as_json: bool, max_pixels: int | None) -> None:
    """``loupe ingest --enqueue``: :meth:`loupe.Library.enqueue_ingest`."""
    with obj.open() as lib:
        try:
            out = lib.enqueue_ingest(path, max_pixels=max_pixels)
        except (QueueFull, AccessError) as exc:
            raise click.ClickException(str(exc)) from exc
    if as_json:
        _emit_json(out)
        return
    console.print(f"Queued {out['queued']:,} files of {escape(out['root'])} as ingest run "
                  f"{out['run_id']}: start 'loupe worker' (anywhere that reaches the database, "
                  f"the files and the library home); 'loupe status' shows the progress",
                  markup=True, highlight=False)
    for folder in out["skipped"]:
        console.print(f"  folder not walked (too deep): {folder}", markup=False,
                      highlight=False)


@click.command()
@click.option("--run", "run_id", type=int, help="Ingest run id (default: the latest).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def failures(obj: _Ctx, run_id: int | None, as_json: bool) -> None:
    """List the files an ingest run could not ingest, ingested with a warning, or did not
    read (not a supported format), each with the reason."""
    with obj.open() as lib:
        rows = lib.failures(run_id)
    if as_json:
        _emit_json(rows)
        return
    if not rows:
        echo("No failed, warned or skipped files.")
    for r in rows:
        echo(f"{r['severity']}\t{r['path']}\t{r['kind']}\t{r['reason']}")


@click.command("enrich")
@click.option("--ocr", type=click.Choice(["on", "off"]),
              help="Read the text in images for this library from now on (off by default: "
                   "about 0.3-2 s an image on a CPU).")
@click.option("--ocr-budget-ms", type=int, help="Time budget of OCR per image, 100-60000 ms (3000).")
@click.option("--ocr-min-score", type=float, help="Drop OCR lines scored below this, 0-1 (0.7).")
@click.option("--settings-only", is_flag=True, help="Change the settings, compute nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def enrich_cmd(obj: _Ctx, ocr, ocr_budget_ms, ocr_min_score, settings_only, as_json) -> None:
    """Compute the machine words from the pixels (kind, colours, background,
    cut-out, shape, size; OCR when on) that assets are missing. Resumable."""
    changes = {k: v for k, v in {"ocr": None if ocr is None else ocr == "on",
                                 "ocr_budget_ms": ocr_budget_ms,
                                 "ocr_min_score": ocr_min_score}.items() if v is not None}
    with obj.open() as lib:
        try:
            opts = lib.set_machine_settings(**changes) if changes else lib.machine_settings()
        except ValueError as exc:
            raise click.ClickException(str(exc)) from exc
        out: dict[str, Any] = {"settings": opts}
        if not settings_only:
            columns = [TextColumn("enrich"), BarColumn(), MofNCompleteColumn(),
                       TimeElapsedColumn(), TimeRemainingColumn()]
            with Progress(*columns, console=err_console,
                          disable=as_json or not err_console.is_terminal, transient=True) as bar:
                task = bar.add_task("enrich", total=None)
                out |= lib.enrich(progress=lambda d, t: bar.update(task, completed=d, total=t))
    if as_json:
        _emit_json(out)
        return
    echo(f"OCR {'on' if opts['ocr'] else 'off'} (budget {opts['ocr_budget_ms']} ms, "
               f"min score {opts['ocr_min_score']:g})")
    if not settings_only:
        echo(f"computed {out['computed']:,}, warnings {out['warnings']:,}, "
                   f"OCR read text in {out['ocr_read']:,}, pending {out['pending']:,}")
        if out.get("skipped"):
            echo(f"skipped {out['skipped']:,}: no file of theirs holds the bytes ingested "
                       f"(pending until 'loupe ingest' sees them again; facts of an older "
                       f"version are removed):")
            for reason in out["skipped_reasons"]:
                echo(f"  {reason}")


def _hash_backfill(lib: Library, quiet: bool) -> dict[str, int]:
    """Hash assets ingested before perceptual hashes existed, with a progress bar."""
    columns = [TextColumn("hash"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TimeRemainingColumn()]
    with Progress(*columns, console=err_console, disable=quiet or not err_console.is_terminal,
                  transient=True) as bar:
        task = bar.add_task("hash", total=None)
        return lib.hash(progress=lambda done, total: bar.update(task, completed=done, total=total))


@click.command("hash")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def hash_cmd(obj: _Ctx, as_json: bool) -> None:
    """Compute perceptual hashes for assets ingested before Loupe kept them."""
    with obj.open() as lib:
        out = _hash_backfill(lib, as_json)
    if as_json:
        _emit_json(out)
    else:
        console.print(f"hashed {out['hashed']:,}, failed {out['failed']:,}, "
                      f"pending {out['pending']:,}", highlight=False)
