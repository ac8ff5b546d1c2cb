"""``loupe bulk`` and ``audit``: acting on every result of a search, and the
record of those actions."""

from __future__ import annotations

import json
import re
from typing import Any

import click

from ..bulk.actions import ACTIONS, BulkError, ConfirmationRequired, by_match_rule
from ..bulk.words import bulk_sentence
from ..terminal import echo, term
from .context import _Ctx, _assets, _emit_json
from .options import _filter_options, _filter_tree
from .users import _access_call


#: The shape of a confirmation (:func:`loupe.bulk.actions.confirmation_of`):
#: the count, a colon, 16 lowercase hex digits of the ids' digest.
_CONFIRMATION = re.compile(r"(0|[1-9][0-9]{0,8}):[0-9a-f]{16}")


def _confirmation(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    """``--confirm``'s value, checked before anything is searched: only the
    COUNT:DIGEST a refused run or a dry run printed (the value itself is not
    echoed: it comes from outside).

    Raises:
        click.BadParameter: anything else.
    """
    if value is None or _CONFIRMATION.fullmatch(value):
        return value
    raise click.BadParameter("takes the COUNT:DIGEST that a refused run or --dry-run "
                             "printed (e.g. 12:0123456789abcdef)")


def _no_yes(_ctx: click.Context, _param: click.Parameter, value: bool) -> bool:
    """``--yes`` confirms nothing: a confirmation names the set it confirms.

    Raises:
        click.UsageError: whenever ``--yes`` is given.
    """
    if value:
        raise click.UsageError("--yes confirms nothing: confirm the very set with "
                               "--confirm COUNT:DIGEST (a refused run or --dry-run prints it)")
    return value


def _repeat(confirmation: str, dry_run: bool = False) -> str:
    """How to apply the action to exactly the set ``confirmation`` names
    (``"COUNT:DIGEST"``), in one sentence for the terminal."""
    count = int(confirmation.split(":", 1)[0])
    how = "without --dry-run, with" if dry_run else "with"
    return (f"The action would change {_assets(count)} (confirmation {confirmation}). "
            f"To apply it to exactly those, repeat the command {how} --confirm {confirmation}")


def _refusal(exc: ConfirmationRequired) -> dict[str, Any]:
    """What a refused run says: the counts, the confirmation and the
    sentence with how to repeat it, as ``{"confirmation_required": True,
    "changed", "verdict", "total", "total_exact", "reachable", "match",
    "matched_all_terms", "count", "confirmation", "message"}``; ``count`` is
    the number of assets the action would change now."""
    conf = exc.confirmation or "0:"
    head = ("the result changed since you confirmed it" if exc.changed else str(exc))
    return {"confirmation_required": True, "changed": exc.changed, "verdict": exc.verdict,
            "total": exc.total, "total_exact": exc.total_exact, "reachable": exc.reachable,
            "match": exc.match, "matched_all_terms": exc.matched_all_terms,
            "count": int(conf.split(":", 1)[0]), "confirmation": exc.confirmation,
            "message": f"not applied: {head}.\n{_repeat(conf)}"}


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
@click.option("--dry-run", is_flag=True,
              help="Only count: change nothing; print the set's confirmation.")
@click.option("--confirm", "confirmation", metavar="COUNT:DIGEST", callback=_confirmation,
              help="Apply only to this very set (as a refused run or --dry-run printed it), "
                   "even when the result is not proven complete; if the set changed, "
                   "nothing is applied.")
@click.option("--yes", is_flag=True, hidden=True, expose_value=False, callback=_no_yes)
@_filter_options
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def bulk(obj: _Ctx, action: str, value: str, query: str, scope: tuple[str, ...],
         lang: str | None, any_term: bool, dry_run: bool, confirmation: str | None,
         as_json: bool, **filter_kw) -> None:
    """Apply ACTION with VALUE to the assets the search finds that hold every
    query term (--any-term: every asset it ranks), narrowed by the filters
    of 'loupe search' (--where JSON, --keyword, --captured ...), in one
    transaction, recorded in the audit log. On a truncated or unknown result
    nothing happens: Loupe prints the count and the confirmation (COUNT:DIGEST
    of the assets' ids) to repeat the command with --confirm; it then applies
    only if the set is still that one, else it prints the new count and
    confirmation and changes nothing (exit 1). Dates: YYYY-MM-DD ('' clears)."""
    filter_kw.pop("facets")
    try:
        tree = _filter_tree(filter_kw)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from exc
    with obj.open() as lib:
        try:
            out = lib.bulk(action, value, query=query, scope=list(scope) or None, lang=lang,
                           confirm=confirmation is not None, any_term=any_term,
                           dry_run=dry_run, confirmation=confirmation, filters=tree)
        except ConfirmationRequired as exc:
            refused = _refusal(exc)
            if as_json:
                _emit_json(refused)
            raise click.ClickException(refused["message"]) from exc
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
    if out["dry_run"]:
        echo(_repeat(out["confirmation"], dry_run=True))


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
