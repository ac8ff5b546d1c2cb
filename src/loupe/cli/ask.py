"""``loupe ask`` and ``conversations``: searching in sentences, turn by turn."""

from __future__ import annotations

from typing import Any

import click

from .context import _Ctx, _emit_json, console
from .search import describe_total
from ..conversation.parse import conjuncts, describe
from ..conversation import SentenceError
from ..conversation.store import ConversationNotFound


def _understood(turn: dict, state: dict) -> list[str]:
    """What a turn was understood to say, as lines of text."""
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


@click.command()
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


@click.command()
@click.argument("conversation", type=int, required=False)
@click.option("--delete", is_flag=True, help="Delete the conversation ID.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def conversations(obj: _Ctx, conversation: int | None, delete: bool, as_json: bool) -> None:
    """List your conversations, or show (or --delete) the conversation ID with
    its turns. A conversation is visible only to the user who started it."""
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
