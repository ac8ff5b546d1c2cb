"""Conversational search on the web (X4): the REST endpoints under
``/api/conversations`` and the ``/ask`` page, where what a sentence was
understood to say is shown as editable chips (remove one, change its value).

A conversation is its user's: another user's id answers 404 like a missing
one.  The state is searched through the same ``Library.search`` as every
search, and the result goes through the same payload (verdict sentence,
members' relative paths) as ``/api/search``.  No bulk action is offered on
this page: the bulk form acts on a query, not on a conversation's filter.
"""
from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, Form, HTTPException, Path, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from pydantic import BaseModel, Field

from ..conversation import SentenceError
from ..conversation import search as csearch
from ..conversation.parse import conjuncts, describe, join_all
from ..conversation.store import ConversationNotFound
from ..filters import FilterError
from ..library import Library
from . import service
from .auth import user_library
from .pages import _render

api_router = APIRouter(prefix="/api", tags=["conversations"])
page_router = APIRouter(include_in_schema=False)
UserLib = Annotated[Library, Depends(user_library)]
ConvId = Annotated[int, Path(ge=1, le=2**62)]
PAGE_SIZE = 24
ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"description": "Bad input (the reason is in `detail`)"},
    401: {"description": "No valid bearer token or session"},
    404: {"description": "No such conversation of yours"},
}
#: Fields whose chip value is one free text (the rest: dates, fixed values).
TEXT_CHIPS = {"creator", "keyword", "collection", "media_type", "format", "colour", "country",
              "location", "person", "kind", "orientation", "background"}


class AskIn(BaseModel):
    sentence: str = Field(min_length=1, max_length=1000, description="English or French")
    lang: str | None = Field(default=None, max_length=2, description="en or fr (dates)")
    limit: int = Field(default=24, ge=1, le=200)
    offset: int = Field(default=0, ge=0, le=1_000_000)


class StateIn(BaseModel):
    filter: dict | None = Field(description="a filter tree (docs/filters.md) or null")
    text: str = Field(default="", max_length=1000)
    limit: int = Field(default=24, ge=1, le=200)
    offset: int = Field(default=0, ge=0, le=1_000_000)


def chips(state: dict) -> list[dict[str, Any]]:
    """The state's top-level conjuncts as chips: ``{"k", "label" (the whole
    conjunct in words), "shown" (without its "not"), "field", "negated",
    "value" | "from"/"to", "editable"}``."""
    out = []
    for k, node in enumerate(conjuncts(state.get("filter"))):
        neg = "not" in node and len(node) == 1
        inner = node["not"] if neg else node
        field = next(iter(inner)) if len(inner) == 1 and not {"all", "any", "not"} & set(inner) \
            else None
        chip: dict[str, Any] = {"k": k, "label": describe(node), "shown": describe(inner),
                                "field": field, "negated": neg, "editable": False}
        if field in TEXT_CHIPS:
            chip.update(value=inner[field], editable=True)
        elif field in ("captured", "added"):
            chip.update(**{"from": inner[field].get("from", ""), "to": inner[field].get("to", "")},
                        editable=True)
        elif field == "rights" and isinstance(inner[field], dict):
            chip.update(value=inner[field]["expiring_before"], editable=True)
        out.append(chip)
    return out


def _answer(lib: Library, out: dict, limit: int, offset: int) -> dict[str, Any]:
    res, notices = csearch.result(lib, out["state"], limit=limit, offset=offset)
    return {**{k: out[k] for k in ("conversation", "n", "turn", "state")},
            "chips": chips(out["state"]),
            "search": service.search_payload(res, None, lib) if res is not None else None,
            "notices": notices,
            # the viewer's least recently used conversations deleted to make room (store.create)
            "dropped": out.get("dropped", [])}


def _call(fn):
    try:
        return fn()
    except ConversationNotFound as exc:
        raise HTTPException(404, str(exc)) from exc
    except (SentenceError, FilterError, ValueError) as exc:
        raise HTTPException(400, str(exc)) from exc


# -- REST ----------------------------------------------------------------------

@api_router.post("/conversations", responses=ERRORS)
def start(body: AskIn, lib: UserLib) -> dict:
    """Start a conversation with a sentence: the turn result (intent, filter,
    text, unparsed, message), the state, its chips and the search result."""
    out = _call(lambda: lib.ask(body.sentence, lang=body.lang, run=False))
    return _answer(lib, out, body.limit, body.offset)


@api_router.post("/conversations/{cid}/turns", responses=ERRORS)
def turn(cid: ConvId, body: AskIn, lib: UserLib) -> dict:
    """The next sentence of one of your conversations (replace, refine, add
    or remove relative to its state)."""
    out = _call(lambda: lib.ask(body.sentence, conversation=cid, lang=body.lang, run=False))
    return _answer(lib, out, body.limit, body.offset)


@api_router.put("/conversations/{cid}/state", responses=ERRORS)
def set_state(cid: ConvId, body: StateIn, lib: UserLib) -> dict:
    """Replace the state by hand (chips removed or edited)."""
    out = _call(lambda: lib.edit_conversation(cid, filter=body.filter, text=body.text, run=False))
    return _answer(lib, out, body.limit, body.offset)


@api_router.get("/conversations", responses=ERRORS)
def listing(lib: UserLib) -> list[dict]:
    """Your conversations, most recent first (at most 50)."""
    return lib.conversations()


@api_router.get("/conversations/{cid}", responses=ERRORS)
def show(cid: ConvId, lib: UserLib) -> dict:
    """One of your conversations with its turns."""
    return _call(lambda: lib.conversation(cid))


@api_router.delete("/conversations/{cid}", status_code=204, responses=ERRORS)
def remove(cid: ConvId, lib: UserLib) -> None:
    """Delete one of your conversations."""
    _call(lambda: lib.delete_conversation(cid))


# -- the page --------------------------------------------------------------------

def _page(request: Request, lib: Library, cid: int | None, page: int, error: str | None = None,
          status: int = 200) -> HTMLResponse:
    ctx: dict[str, Any] = {"cid": cid, "conv": None, "last": None, "chips": [], "result": None,
                           "notices": [], "error": error, "page": page, "asset_qs": ""}
    if cid is not None:
        try:
            conv = lib.conversation(cid)
        except ConversationNotFound:
            return _render(request, "error.html", status=404, title="Not found",
                           message=f"There is no conversation {cid} of yours.")
        ctx.update(conv=conv, last=conv["history"][-1] if conv["history"] else None,
                   chips=chips(conv["state"]))
        res, notices = csearch.result(lib, conv["state"], limit=PAGE_SIZE,
                                      offset=(page - 1) * PAGE_SIZE)
        ctx["notices"] = notices
        if res is not None:
            ctx["result"] = service.search_payload(res, None, lib)
            last = max(1, -(-min(res.reachable, res.total) // PAGE_SIZE))
            ctx["pages"] = last
            ctx["prev_url"] = f"/ask?{urlencode({'c': cid, 'page': page - 1})}" if page > 1 else None
            ctx["next_url"] = f"/ask?{urlencode({'c': cid, 'page': page + 1})}" if page < last else None
            ctx["asset_qs"] = urlencode({"q": conv["state"]["text"]})
    return _render(request, "ask.html", status=status, **ctx)


@page_router.get("/ask", response_class=HTMLResponse)
def ask_page(request: Request, lib: UserLib,
             c: Annotated[int | None, Query(ge=1, le=2**62)] = None,
             page: Annotated[int, Query(ge=1, le=100_000)] = 1) -> HTMLResponse:
    return _page(request, lib, c, page)


@page_router.post("/ask", response_class=HTMLResponse)
def ask_post(request: Request, lib: UserLib,
             sentence: Annotated[str, Form(max_length=1000)],
             c: Annotated[str, Form(max_length=20)] = "",
             new: Annotated[str, Form(max_length=10)] = ""):
    cid = int(c) if c.isdigit() and not new else None
    if "\x00" in sentence:
        return _page(request, lib, cid, 1, "The sentence holds NUL characters.", 400)
    try:
        out = lib.ask(sentence, conversation=cid, run=False)
    except ConversationNotFound:
        return _render(request, "error.html", status=404, title="Not found",
                       message=f"There is no conversation {cid} of yours.")
    except SentenceError as exc:
        return _page(request, lib, cid, 1, str(exc), 400)
    return RedirectResponse(f"/ask?c={out['conversation']}", status_code=303)


def _edited(form: dict[str, str], state: dict) -> tuple[dict | None, str]:
    """The state after the chip form: a chip removed (``remove`` = its k) or
    values changed (``v{k}``, ``from{k}``/``to{k}``), and the free text."""
    nodes = []
    remove = form.get("remove", "")
    for chip, node in zip(chips(state), conjuncts(state.get("filter"))):
        k = chip["k"]
        if remove == str(k):
            continue
        if chip["editable"]:
            f = chip["field"]
            if f in ("captured", "added"):
                rng = {e: form.get(f"{e}{k}", "").strip() for e in ("from", "to")}
                pred = {f: {e: v for e, v in rng.items() if v}}
            elif f == "rights":
                pred = {f: {"expiring_before": form.get(f"v{k}", "").strip()}}
            else:
                pred = {f: form.get(f"v{k}", "").strip()}
            node = {"not": pred} if chip["negated"] else pred
        nodes.append(node)
    return join_all(nodes), form.get("text", state.get("text", "")).strip()


@page_router.post("/ask/{cid}/chips", response_class=HTMLResponse)
async def chips_post(request: Request, cid: ConvId, lib: UserLib):
    form = await request.form()
    if len(form) > 200:
        return _page(request, lib, cid, 1, "The form has more than 200 fields.", 400)
    values = {k: str(v)[:1000] for k, v in form.items() if isinstance(v, str)}
    if any("\x00" in v for v in values.values()):
        return _page(request, lib, cid, 1, "The form holds NUL characters.", 400)
    try:
        state = lib.conversation(cid)["state"]
        flt, text = _edited(values, state)
        lib.edit_conversation(cid, filter=flt, text=text, run=False)
    except ConversationNotFound:
        return _render(request, "error.html", status=404, title="Not found",
                       message=f"There is no conversation {cid} of yours.")
    except (FilterError, ValueError) as exc:
        return _page(request, lib, cid, 1, f"Not changed: {exc}", 400)
    return RedirectResponse(f"/ask?c={cid}", status_code=303)
