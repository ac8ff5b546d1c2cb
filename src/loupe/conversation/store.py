"""Conversations as owned server-side objects (migration 0021).

A conversation belongs to the viewer that created it (``viewer.user_id``; None
is the tenant's local owner).  Every read and write goes through
:mod:`.queries`, bound to tenant and owner: another user's conversation is
"not found", exactly like one that does not exist.
"""
from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from ..filters import FilterError, parse as parse_tree
from ..lexical.search import QueryTooLong, query_terms
from . import queries as q
from .parse import SentenceError, parse
from .state import State, apply

MAX_TURNS = 200          # turns in one conversation; the 201st is refused
MAX_LISTED = 50          # conversations listed at once
# Bounds of what one user may store (200 turns of a growing
# state were 3.8 MB, and conversations per user had no limit); each is checked
# before the turn is stored or searched.
MAX_CONVERSATIONS = 50   # per user: creating one more drops the least recently used
MAX_TURNS_KEPT = 30      # turn rows kept per conversation (older ones are deleted)
MAX_STATE_CHARS = 8_000  # the state (filter tree + text) as JSON; the tree also
                         # keeps the filter tree's own bounds (loupe.filters.parse:
                         # 64 predicates, 16 levels, 200 characters a value)
MAX_TEXT_CHARS = 1_000   # the state's free text


class ConversationNotFound(LookupError):
    """No conversation with this id belongs to the viewer."""


class StateTooLarge(SentenceError):
    """The state a turn (or an edit) would leave breaks a bound: the filter
    tree's (predicates, depth, value length), ``MAX_STATE_CHARS`` or
    ``MAX_TEXT_CHARS``. Nothing is stored."""


def check_state(state: dict[str, Any], cid: int | None = None) -> None:
    """Raise :class:`StateTooLarge` when ``state`` (``{"filter", "text"}``)
    breaks a bound; the message names the conversation, the bound and the value."""
    where = f"conversation {cid}" if cid is not None else "the conversation"
    advice = "; the turn was not applied: remove some chips or start a new conversation"
    if state.get("filter") is not None:
        try:
            parse_tree(state["filter"])
        except FilterError as exc:
            raise StateTooLarge(f"{where}: its filter would break a bound ({exc}){advice}") from None
    text = state.get("text") or ""
    if len(text) > MAX_TEXT_CHARS:
        raise StateTooLarge(f"{where}: its free text would have {len(text):,} characters; the "
                            f"limit is {MAX_TEXT_CHARS:,}{advice}")
    size = len(json.dumps(state, ensure_ascii=False))
    if size > MAX_STATE_CHARS:
        raise StateTooLarge(f"{where}: its state would be {size:,} characters of JSON; the "
                            f"limit is {MAX_STATE_CHARS:,}{advice}")


def _row(r) -> dict[str, Any]:
    return {"id": r[0], "lang": r[1], "state": r[2], "turns": r[3],
            "created_at": r[4].isoformat(), "updated_at": r[5].isoformat()}


def _owner(tenant_id: int, viewer) -> dict[str, Any]:
    return {"tenant_id": tenant_id, "owner_id": viewer.user_id}


def create(conn: psycopg.Connection, tenant_id: int, viewer, lang: str) -> dict[str, Any]:
    """A new, empty conversation owned by ``viewer``.  When the viewer already
    has ``MAX_CONVERSATIONS``, the least recently used ones are deleted first
    so that the new one is the MAX_CONVERSATIONS-th (their ids are in the
    returned row's ``"dropped"``)."""
    if lang not in ("en", "fr"):
        raise SentenceError(f"language {lang!r} is not supported (en, fr)")
    dropped = [r[0] for r in conn.execute(
        q.DROP_OLDEST, {**_owner(tenant_id, viewer), "keep": MAX_CONVERSATIONS - 1})]
    row = _row(conn.execute(q.CREATE, {**_owner(tenant_id, viewer), "lang": lang}).fetchone())
    row["dropped"] = sorted(dropped)
    return row


def get(conn: psycopg.Connection, tenant_id: int, viewer, cid: int) -> dict[str, Any]:
    """The conversation with its turns. Raises :class:`ConversationNotFound`."""
    p = {**_owner(tenant_id, viewer), "id": cid}
    r = conn.execute(q.GET, p).fetchone()
    if r is None:
        raise ConversationNotFound(f"no conversation {cid} of yours")
    out = _row(r)
    out["history"] = [{"n": t[0], "sentence": t[1], "result": t[2], "state": t[3],
                       "at": t[4].isoformat()} for t in conn.execute(q.TURNS, p)]
    return out


def listing(conn: psycopg.Connection, tenant_id: int, viewer) -> list[dict[str, Any]]:
    """The viewer's conversations, most recent first (at most MAX_LISTED)."""
    return [_row(r) for r in conn.execute(q.LIST, {**_owner(tenant_id, viewer),
                                                   "limit": MAX_LISTED})]


def delete(conn: psycopg.Connection, tenant_id: int, viewer, cid: int) -> None:
    """Delete one of the viewer's conversations. Raises :class:`ConversationNotFound`."""
    if conn.execute(q.DELETE, {**_owner(tenant_id, viewer), "id": cid}).rowcount != 1:
        raise ConversationNotFound(f"no conversation {cid} of yours")


def _check_terms(conn, text: str, lang: str, cid: int) -> None:
    """Raise :class:`StateTooLarge` when the state's free text is past the
    lexical lane's query bounds (``MAX_QUERY_CHARS`` / ``MAX_QUERY_TERMS``,
    N3), before the turn is stored: a stored state the search then refuses
    would fail every later turn of the conversation."""
    if not text:
        return
    try:
        query_terms(conn, text, lang)
    except QueryTooLong as exc:
        raise StateTooLarge(f"conversation {cid}: its free text would be refused by the search "
                            f"({exc}); the turn was not applied: remove some words or start a "
                            f"new conversation") from None


def _record(conn, tenant_id, viewer, cid, sentence, result, state) -> dict[str, Any]:
    """Append a turn to a conversation locked by the caller's transaction."""
    p = {**_owner(tenant_id, viewer), "id": cid}
    r = conn.execute(q.GET_FOR_UPDATE, p).fetchone()
    if r is None:
        raise ConversationNotFound(f"no conversation {cid} of yours")
    if r[3] >= MAX_TURNS:
        raise SentenceError(f"conversation {cid} has {r[3]} turns; the limit is {MAX_TURNS}: "
                            f"start a new one")
    n = r[3] + 1
    check_state(state, cid)
    _check_terms(conn, state.get("text") or "", r[1], cid)
    conn.execute(q.DROP_OLD_TURNS, {"id": cid, "n": n, "keep": MAX_TURNS_KEPT})
    conn.execute(q.ADD_TURN, {"tenant_id": tenant_id, "id": cid, "n": n, "sentence": sentence,
                              "result": Jsonb(result), "state": Jsonb(state)})
    conn.execute(q.SET_STATE, {**p, "state": Jsonb(state), "n": n})
    return {"n": n}


def current(conn, tenant_id, viewer, cid: int, *, lock: bool = False) -> tuple[dict[str, Any], State]:
    """The conversation row and its state (owner-checked); with ``lock`` the
    row stays locked until the caller's transaction ends, so two turns sent
    at once apply one after the other instead of both to the same state."""
    r = conn.execute(q.GET_FOR_UPDATE if lock else q.GET,
                     {**_owner(tenant_id, viewer), "id": cid}).fetchone()
    if r is None:
        raise ConversationNotFound(f"no conversation {cid} of yours")
    row = _row(r)
    return row, State(row["state"].get("filter"), row["state"].get("text", ""))


def ask(conn: psycopg.Connection, tenant_id: int, viewer, sentence: str, *,
        conversation: int | None = None, lang: str | None = None,
        clock: datetime | None = None, default_lang: str = "en") -> dict[str, Any]:
    """Compile ``sentence`` as the next turn of a conversation (a new one when
    ``conversation`` is None) and store the turn and the new state.

    Returns ``{"conversation": id, "turn": <contract turn result>, "state":
    {"filter", "text"}, "n": turn number, "dropped": [ids of the viewer's
    oldest conversations deleted to make room, see :func:`create`]}``; a turn
    with a message (a contradiction) is stored but leaves the state unchanged.
    Raises :class:`SentenceError` (empty or too long sentence, too many turns),
    :class:`StateTooLarge` (the state after the turn breaks a bound; nothing is
    stored, a new conversation is not created) and :class:`ConversationNotFound`.
    """
    clock = clock or datetime.now(timezone.utc)
    with conn.transaction():
        if conversation is None:
            row = create(conn, tenant_id, viewer, lang or default_lang)
            state = State()
        else:
            row, state = current(conn, tenant_id, viewer, conversation, lock=True)
        turn = parse(sentence, lang=lang or row["lang"], clock=clock, has_previous=not state.empty(),
                 previous=state.filter)
        new, message = apply(state, turn)
        result = turn.as_dict()
        result["message"] = message
        rec = _record(conn, tenant_id, viewer, row["id"], sentence, result, new.as_dict())
    return {"conversation": row["id"], "turn": result, "state": new.as_dict(), "n": rec["n"],
            "dropped": row.get("dropped", [])}


def edit(conn: psycopg.Connection, tenant_id: int, viewer, cid: int, *,
         filter: dict | None, text: str) -> dict[str, Any]:
    """Set the state by hand (chips removed or edited); stored as a turn with
    no sentence.  The tree is checked by the filter tree's own parser
    (:func:`loupe.filters.parse`).  Raises :class:`loupe.filters.FilterError`
    naming the bad node, :class:`StateTooLarge` for a state past a bound (text
    over ``MAX_TEXT_CHARS``, JSON over ``MAX_STATE_CHARS``; checked once, by
    :func:`_record`, before it writes)."""
    if filter is not None:
        filter = parse_tree(filter).to_json()
    if not isinstance(text, str):
        raise ValueError("the free text must be a string")
    if "\x00" in text or (filter is not None and "\\u0000" in json.dumps(filter)):
        raise ValueError("the state holds a NUL character")
    new = State(filter, text.strip())
    result = {"intent": "replace", "filter": filter, "text": new.text, "unparsed": [],
              "message": None}
    with conn.transaction():
        rec = _record(conn, tenant_id, viewer, cid, None, result, new.as_dict())
    return {"conversation": cid, "turn": result, "state": new.as_dict(), "n": rec["n"]}
