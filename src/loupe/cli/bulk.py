"""``loupe bulk`` and ``audit``: acting on every result of a search, and the
record of those actions."""

from __future__ import annotations

import json

import click

from ..bulk.actions import ACTIONS, BulkError, ConfirmationRequired, by_match_rule
from ..bulk.words import bulk_sentence
from ..terminal import echo, term
from .context import _Ctx, _assets, _emit_json
from .options import _filter_options, _filter_tree
from .users import _access_call


@click.command()
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
@_filter_options
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def bulk(obj: _Ctx, action: str, value: str, query: str, scope: tuple[str, ...],
         lang: str | None, any_term: bool, dry_run: bool, confirm: bool, as_json: bool,
         **filter_kw) -> None:
    """Apply ACTION with VALUE to the assets the search finds that hold every
    query term (--any-term: every asset it ranks), narrowed by the filters
    of 'loupe search' (--where JSON, --keyword, --captured ...), in one
    transaction, recorded in the audit log. On a truncated or unknown result
    nothing happens unless --yes is given. Dates: YYYY-MM-DD ('' clears)."""
    filter_kw.pop("facets")
    try:
        tree = _filter_tree(filter_kw)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from exc
    with obj.open() as lib:
        try:
            out = lib.bulk(action, value, query=query, scope=list(scope) or None, lang=lang,
                           confirm=confirm, any_term=any_term, dry_run=dry_run, filters=tree)
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
        said = bulk_sentence(action, out["value"], would, dry_run=True)
        echo(f"dry run: {said.removesuffix('; nothing changed.')} (result {out['verdict']}, "
             f"{total}); nothing changed")
    else:
        said = bulk_sentence(action, out["value"], out["count"]).removesuffix(".")
        echo(f"{said} (result {out['verdict']}, {total}; audit #{out['audit_id']})")
    echo(f"match rule: {rule} — {out['matched_all_terms']:,} hold every term, "
               f"{out['matched_any']:,} ranked")


@click.command()
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
