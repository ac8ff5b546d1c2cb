"""``loupe faces`` and ``people``: faces found in the pictures and the people
they are grouped into."""

from __future__ import annotations

from typing import Any

import click
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                           TimeRemainingColumn)
from rich.table import Table
from rich.text import Text

from ..access.users import AccessError
from ..terminal import term
from ..library import Library
from .context import _Ctx, _emit_json, console, err_console
from ..faces.detect import FacesUnavailable
from ..faces.people import PeopleError


def _ingest_faces(lib: Library, quiet: bool) -> dict[str, Any]:
    """``loupe ingest --faces``: Library.faces after the ingest, or the plain
    reason it cannot run (the ingest itself has succeeded either way)."""
    try:
        with Progress(TextColumn("faces"), BarColumn(), MofNCompleteColumn(),
                      console=err_console, disable=quiet or not err_console.is_terminal,
                      transient=True) as bar:
            task = bar.add_task("faces", total=None)
            return lib.faces(progress=lambda d, t: bar.update(task, completed=d, total=t))
    except (FacesUnavailable, AccessError) as exc:
        return {"error": str(exc)}

def _people_call(fn):
    """Run a people call, turning its errors into CLI errors (a missing face
    model is said plainly, with how to install it)."""
    try:
        return fn()
    except (PeopleError, AccessError, FacesUnavailable) as exc:
        raise click.ClickException(str(exc)) from exc


@click.command("faces")
@click.option("--limit", type=click.IntRange(min=1), help="Scan at most this many assets.")
@click.option("--status", is_flag=True, help="Only say whether face detection is installed, "
                                             "and the counts.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def faces_cmd(obj: _Ctx, limit: int | None, status: bool, as_json: bool) -> None:
    """Find and cluster the faces of assets not scanned yet, on this machine
    (resumable: run again to go on). Tiny pictures and clip art are skipped.
    Faces get no name until a person gives one (loupe people name)."""
    with obj.open() as lib:
        if status:
            out = lib.faces_status()
        else:
            quiet = as_json
            columns = [TextColumn("faces"), BarColumn(), MofNCompleteColumn(),
                       TimeElapsedColumn(), TimeRemainingColumn()]
            with Progress(*columns, console=err_console,
                          disable=quiet or not err_console.is_terminal, transient=True) as bar:
                task = bar.add_task("faces", total=None)
                out = _people_call(lambda: lib.faces(
                    limit=limit,
                    progress=lambda done, total: bar.update(task, completed=done, total=total)))
    if as_json:
        _emit_json(out)
    elif status:
        console.print(f"face detection: {out['detector'] or 'not installed'}"
                      + (f" ({out['reason']})" if out["reason"] else "")
                      + f"; scanned {out['scanned']:,} assets ({out['skipped']:,} skipped), "
                        f"{out['faces']:,} faces, {out['people']:,} people", markup=False, highlight=False)
    else:
        console.print(f"scanned {out['scanned']:,} assets: {out['faces']:,} faces, "
                      f"{out['skipped']:,} skipped by rule, {out['failed']:,} unreadable, "
                      f"{out['people']:,} new people; pending {out['pending']:,}",
                      markup=False, highlight=False)


@click.group()
def people() -> None:
    """People found in the pictures: list, show, name (only people name them),
    merge, split, hide, and "not this person"."""


@people.command("list")
@click.option("--hidden", is_flag=True, help="Include hidden people (owner and admins).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def people_list(obj: _Ctx, hidden: bool, as_json: bool) -> None:
    """People with faces on assets you may read; counts are of those assets only."""
    with obj.open() as lib:
        out = lib.people(hidden=hidden)
    if as_json:
        _emit_json(out)
        return
    if not out:
        console.print("No people yet (run 'loupe faces').", markup=False, highlight=False)
        return
    table = Table("id", "person", "assets", "faces", "to confirm", "hidden")
    for p in out:
        table.add_row(str(p["id"]), Text(term(p["label"])), str(p["assets"]), str(p["faces"]),
                      str(p["unconfirmed"]), "yes" if p["hidden"] else "")
    console.print(table)


@people.command("show")
@click.argument("person_id", type=int)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def people_show(obj: _Ctx, person_id: int, as_json: bool) -> None:
    """One person: its assets and faces you may read."""
    with obj.open() as lib:
        out = _people_call(lambda: lib.person(person_id))
    if as_json:
        _emit_json(out)
        return
    console.print(f"{out['label']} (#{out['number']}): {len(out['assets'])} assets, "
                  f"{len(out['faces'])} faces", markup=False, highlight=False)
    for f in out["faces"]:
        console.print(f"  face {f['id']} in asset {f['asset_id']}"
                      f"{'' if f['confirmed'] else ' (to confirm)'}", markup=False, highlight=False)


@people.command("name")
@click.argument("person_id", type=int)
@click.argument("name", required=False)
@click.option("--remove", is_flag=True, help="Remove the name (the person becomes unnamed).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def people_name(obj: _Ctx, person_id: int, name: str | None, remove: bool,
                as_json: bool) -> None:
    """Confirm NAME for a person: every face it holds is confirmed and the name
    becomes searchable on all its pictures at once (again to confirm faces
    that joined since)."""
    if remove == (name is not None):
        raise click.UsageError("give either NAME or --remove")
    with obj.open() as lib:
        out = _people_call(lambda: lib.name_person(person_id, None if remove else name))
    if as_json:
        _emit_json(out)
    else:
        console.print(f"person {out['id']} is now {out['label']!r} on {out['assets']:,} assets",
                      markup=False, highlight=False)


@people.command("merge")
@click.argument("source", type=int)
@click.argument("target", type=int)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def people_merge(obj: _Ctx, source: int, target: int, as_json: bool) -> None:
    """Merge person SOURCE into TARGET (they are one person)."""
    with obj.open() as lib:
        out = _people_call(lambda: lib.merge_people(source, target))
    if as_json:
        _emit_json(out)
    else:
        console.print(f"merged into person {out['id']} ({out['label']}): {out['assets']:,} "
                      f"assets", markup=False, highlight=False)


@people.command("split")
@click.argument("person_id", type=int)
@click.argument("face_ids", type=int, nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def people_split(obj: _Ctx, person_id: int, face_ids: tuple[int, ...], as_json: bool) -> None:
    """Move FACE_IDS of a person to a new unnamed person."""
    with obj.open() as lib:
        out = _people_call(lambda: lib.split_person(person_id, list(face_ids)))
    if as_json:
        _emit_json(out)
    else:
        console.print(f"{out['faces']} faces moved to person {out['id']} ({out['label']})",
                      markup=False, highlight=False)


@people.command("hide")
@click.argument("person_id", type=int)
@click.option("--show", "unhide", is_flag=True, help="Show a hidden person again.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def people_hide(obj: _Ctx, person_id: int, unhide: bool, as_json: bool) -> None:
    """Hide a person from lists and search documents (--show: undo)."""
    with obj.open() as lib:
        out = _people_call(lambda: lib.hide_person(person_id, not unhide))
    if as_json:
        _emit_json(out)
    else:
        console.print(f"person {out['id']} ({out['label']}) "
                      f"{'hidden' if out['hidden'] else 'shown'}", markup=False, highlight=False)


@people.command("reject")
@click.argument("face_id", type=int)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def people_reject(obj: _Ctx, face_id: int, as_json: bool) -> None:
    """"Not this person": FACE_ID leaves its person for good and stays
    without one (clustering leaves it alone)."""
    with obj.open() as lib:
        out = _people_call(lambda: lib.reject_face(face_id))
    if as_json:
        _emit_json(out)
    else:
        console.print(f"face {out['face_id']} now belongs to no person (not clustered again)",
                      markup=False, highlight=False)
