"""``loupe worker`` and ``loupe status``: the ingest queue's workers and what
the queue and the standbys are doing (docs/scaling.md)."""

from __future__ import annotations

import click
from rich.markup import escape
from rich.table import Table

from ..db import DatabaseUnavailable
from ..jobs.worker import run_worker
from ..library import default_home
from .context import _Ctx, _emit_json, console


@click.command("worker")
@click.option("--once", is_flag=True,
              help="Stop when the queue is empty (default: run until stopped).")
@click.pass_obj
def worker(obj: _Ctx, once: bool) -> None:
    """Run the ingest jobs queued by 'loupe ingest --enqueue', one file at a
    time, until stopped (Ctrl-C, SIGTERM: the running file is finished first).
    Start as many as you like, on any machine that reaches the database, the
    files and the library home at the same paths."""
    try:
        run_worker(obj.home or default_home(), obj.database_url, wait=not once)
    except DatabaseUnavailable as exc:
        raise click.ClickException(str(exc)) from exc


@click.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def status(obj: _Ctx, as_json: bool) -> None:
    """The ingest queue (jobs by state, the latest queued runs, live workers)
    and each read standby with its replay lag."""
    with obj.open() as lib:
        info = {"queue": lib.queue_status(), "standbys": lib.read_status()}
    if as_json:
        _emit_json(info)
        return
    q = info["queue"]
    jobs = ", ".join(f"{n:,} {state}" for state, n in q["jobs"].items()) or "none"
    console.print(f"ingest jobs: {jobs}; live workers: {q['workers']}", highlight=False)
    if q["runs"]:
        table = Table("run", "folder", "queued", "done", "new", "unchanged", "failed",
                      "finished", box=None)
        for r in q["runs"]:
            table.add_row(str(r["run_id"]), escape(str(r["root"])), f"{r['queued']:,}",
                          f"{r['done']:,}", f"{r['new_assets']:,}", f"{r['unchanged']:,}",
                          f"{r['failures']:,}", "yes" if r["finished"] else "no")
        console.print(table)
    for s in info["standbys"]:
        state = (f"replay lag {s['replay_lag_s']} s" if s["error"] is None
                 else f"not used: {s['error']}")
        console.print(f"standby {s['standby']}: {state}", markup=False, highlight=False)
