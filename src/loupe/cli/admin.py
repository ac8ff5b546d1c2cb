"""``loupe stop``, ``stats``, ``settings`` and ``vocabulary``: the running
library, its ranking settings and its vocabularies."""

from __future__ import annotations

import click
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                           TimeRemainingColumn)

from ..db import DatabaseUnavailable
from ..terminal import echo
from ..library import Library
from .context import _Ctx, _emit_json, err_console
from ..db.server import ServerInUse
from ..document.vocabulary import VocabularyError


@click.command()
@click.option("--force", is_flag=True,
              help="Stop it even while other loupe processes use it (their sessions end).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def stop(obj: _Ctx, force: bool, as_json: bool) -> None:
    """Stop the library's embedded PostgreSQL server (it also stops by itself
    when the last loupe process using it exits). Processes that died without
    saying so (kill -9) are dropped from its list of users first."""
    try:
        info = Library.stop(obj.home, database_url=obj.database_url, force=force)
    except (ValueError, ServerInUse, DatabaseUnavailable) as exc:
        raise click.ClickException(str(exc)) from exc
    if as_json:
        _emit_json(info)
        return
    if info["stale_handles_removed"]:
        echo(f"Dropped {info['stale_handles_removed']} dead process(es) from the "
                   f"server's users.")
    if info["stopped"]:
        echo(f"Stopped the embedded PostgreSQL in {info['pgdata']}.")
    else:
        echo(f"The embedded PostgreSQL in {info['pgdata']} is not running.")


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def stats(obj: _Ctx, as_json: bool) -> None:
    """Counts of assets, files, collections and search documents."""
    with obj.open() as lib:
        info = lib.stats()
    if as_json:
        _emit_json(info)
        return
    echo(f"tenant {info['tenant']}: {info['assets']:,} assets, {info['files']:,} files, "
               f"{info['collections']:,} collections; documents "
               + ", ".join(f"{k}: {v:,}" for k, v in info["documents"].items()))


@click.command()
@click.option("--k1", type=float, help="BM25 term-frequency saturation (default 1.2).")
@click.option("--weights", help="Field-group weights title,keywords,description,other,machine "
                                "(default 3,2,1,0.5,0.5; 4 values keep the machine words' weight).")
@click.option("--b", "b_values", help="Length normalisation per group "
                                      "(default 0.75,0.75,0.75,0.75,0.75).")
@click.option("--vocab-decay", type=float, help="Weight factor per step up the vocabulary (0.5).")
@click.option("--raw-cap", type=int, help="Postings read per query term at most (3000).")
@click.option("--keep-cap", type=int, help="Assets kept by the lexical lane at most (1000).")
@click.option("--lexical-weight", "w_lexical", type=float,
              help="Weight of the lexical lane in RRF fusion, 0-10 (1).")
@click.option("--text-weight", "w_text", type=float,
              help="Weight of the text (metadata meaning) lane in RRF fusion, 0-10 (1).")
@click.option("--image-weight", "w_image", type=float,
              help="Weight of the image (pixels) lane in RRF fusion, 0-10 (1).")
@click.option("--rrf-k", "rrf_k", type=int, help="RRF's rank constant k, 1-1000 (60).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def settings(obj: _Ctx, k1, weights, b_values, vocab_decay, raw_cap, keep_cap, w_lexical,
             w_text, w_image, rrf_k, as_json) -> None:
    """Show or change the lexical lane's settings (changes re-index the lexicon)
    and the fusion settings: each lane's weight and RRF's k,
    rrf(d) = sum over lanes of weight / (k + rank)."""
    def floats(text: str | None, opt: str) -> list[float] | None:
        if text is None:
            return None
        try:
            return [float(x) for x in text.split(",")]
        except ValueError as exc:
            raise click.BadParameter("comma-separated numbers expected", param_hint=opt) from exc

    changes = {"k1": k1, "weights": floats(weights, "--weights"), "b": floats(b_values, "--b"),
               "vocab_decay": vocab_decay, "raw_cap": raw_cap, "keep_cap": keep_cap}
    changes = {k: v for k, v in changes.items() if v is not None}
    fusion = {k: v for k, v in {"w_lexical": w_lexical, "w_text": w_text, "w_image": w_image,
                                "rrf_k": rrf_k}.items() if v is not None}
    with obj.open() as lib:
        try:
            with lib.conn.transaction():   # a bad value changes nothing
                if fusion:
                    lib.set_fusion_settings(**fusion)
                info = lib.set_lexical_settings(**changes) if changes else lib.lexical_settings()
            info = {**info, **lib.fusion_settings()}
        except ValueError as exc:
            raise click.ClickException(str(exc)) from exc
    if as_json:
        _emit_json(info)
    else:
        for key, value in info.items():
            echo(f"{key}\t{value}")


@click.group()
def vocabulary() -> None:
    """Controlled vocabularies (taxonomies): import and list."""


@vocabulary.command("import")
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.option("--name", help="Vocabulary name (default: the file's own name or stem).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def vocabulary_import(obj: _Ctx, path: str, name: str | None, as_json: bool) -> None:
    """Import or replace a vocabulary from a JSON, CSV or SKOS (Turtle/RDF) file."""
    columns = [TextColumn("vocabulary"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TimeRemainingColumn()]
    with obj.open() as lib, Progress(*columns, console=err_console, transient=True,
                                     disable=as_json or not err_console.is_terminal) as bar:
        task = bar.add_task("vocabulary", total=None)
        try:
            info = lib.import_vocabulary(path, name=name, progress=lambda d, t: bar.update(
                task, completed=d, total=t))
        except VocabularyError as exc:
            raise click.ClickException(str(exc)) from exc
    if as_json:
        _emit_json(info)
    else:
        echo(f"vocabulary {info['vocabulary']}: {info['terms']:,} terms, "
                   f"{info['assets_tagged']:,} assets tagged, "
                   f"{info['documents_rebuilt']:,} search documents rebuilt")


@vocabulary.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def vocabulary_list(obj: _Ctx, as_json: bool) -> None:
    """List the vocabularies with their term and tagged-asset counts."""
    with obj.open() as lib:
        rows = lib.vocabularies()
    if as_json:
        _emit_json(rows)
        return
    if not rows:
        echo("No vocabularies.")
    for r in rows:
        echo(f"{r['vocabulary']}\t{r['terms']} terms\t{r['assets_tagged']} assets")
