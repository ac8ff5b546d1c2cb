"""``loupe search``, ``show``, ``analyze``, ``thumbnail``, ``original`` and
``collections``: finding assets and looking at them."""

from __future__ import annotations

import json

import click
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ..terminal import echo, term
from ..library import AssetNotFound
from .context import _Ctx, _assets, _emit_json, console
from .options import _filter_options, _filter_tree
from ..filters.words import sentence
from ..search.entry import search_languages


def _print_facets(facets: dict) -> None:
    bound = "" if facets["exact"] else "at least "
    console.print("facets" + ("" if facets["exact"] else " (counts are lower bounds: the "
                              "result is not complete)") + ":", highlight=False)
    for name, values in facets["facets"].items():
        if values:
            console.print(f"  {name}: " + ", ".join(f"{v['value']} ({bound}{v['count']:,})"
                                                     for v in values),
                          highlight=False, markup=False)


@click.command()
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
    if result.filter is not None:   # words for people; the JSON is in --json

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
        _print_related(result)
        return
    if not result.hits:
        _print_related(result)
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
    _print_related(result)


def _print_related(result) -> None:
    """The pictures shown apart (V8): related by meaning, not counted."""
    if not result.related:
        return
    console.print("related by meaning, not counted among the results:", highlight=False)
    table = Table(box=None, padding=(0, 1))
    for col in ("#", "asset"):
        table.add_column(col, justify="right", no_wrap=True)
    table.add_column("title", overflow="fold")
    table.add_column("path", overflow="fold")
    for h in result.related:
        table.add_row(str(h.rank), str(h.asset_id), Text(term(h.title)), Text(term(h.path)))
    console.print(table)


@click.command("explain")
@click.argument("asset_id", type=int)
@click.option("--query", "-q", required=True, help="The query to explain the asset against.")
@click.option("--lang", help="Search only the documents of this library language.")
@click.option("--in", "scope", metavar="COLLECTION", multiple=True,
              help="The scope the search ran in (repeat for several).")
@click.option("--where", "where", metavar="JSON", help="The filter tree the search ran with.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def explain_cmd(obj: _Ctx, asset_id: int, query: str, lang: str | None,
                scope: tuple[str, ...], where: str | None, as_json: bool) -> None:
    """Why ASSET_ID is or is not in the results of QUERY (C7): its rank,
    the words matched per language and field, the missing ones, each vector
    lane's distance against its cut-off, and the scope, filter or cap that
    left it out. An asset you may not read is answered as a missing one."""
    with obj.open() as lib:
        try:
            got = lib.why(asset_id, query, lang=lang, scope=list(scope) or None,
                          filters=where)
        except AssetNotFound as exc:
            raise click.ClickException(str(exc)) from exc
        except (ValueError, LookupError) as exc:
            raise click.ClickException(str(exc)) from exc
    if as_json:
        _emit_json(got)
        return
    for r in got["reasons"]:
        console.print(f"{r['reason']}: {r['text']}", highlight=False, markup=False)
    if got["words"]["shown"]:
        for lg, terms in got["words"]["matched"].items():
            for t, fields in terms.items():
                console.print(f"word {t} ({lg}): {', '.join(fields)}", highlight=False,
                              markup=False)
    for name, info in got["lanes"].items():
        d = "no vector yet" if info["distance"] is None else f"{info['distance']:.3f}"
        console.print(f"{name} lane: distance {d}, cut-off {info['cut_off']:.3f}",
                      highlight=False, markup=False)


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


@click.command()
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
    if m:  # apart from what people wrote: measured in the pixels
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


@click.command()
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


@click.command()
@click.argument("asset_id", type=int)
@click.option("--out", "-o", type=click.Path(dir_okay=False, writable=True),
              help="Copy the thumbnail to this file (default: print its path).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def thumbnail(obj: _Ctx, asset_id: int, out: str | None, as_json: bool) -> None:
    """The thumbnail (WebP, longest side 384 px) of an asset you may read."""
    _asset_file(obj, asset_id, "thumbnail", out, as_json)


@click.command()
@click.argument("asset_id", type=int)
@click.option("--out", "-o", type=click.Path(dir_okay=False, writable=True),
              help="Copy the original file to this file (default: print its path).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def original(obj: _Ctx, asset_id: int, out: str | None, as_json: bool) -> None:
    """The original file of an asset you may read (its first path on disk)."""
    _asset_file(obj, asset_id, "original", out, as_json)


# -- users, groups, grants (P1) ----------------------------------------------------


@click.command()
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
