"""The web UI: server-rendered pages (Jinja2) over the same service layer as
the API. Without JavaScript every page works by links and forms; with it the
search box answers as one types (the ``/results`` fragment) and the grid
loads further pages as one scrolls."""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Annotated
from urllib.parse import urlencode

import anyio
from fastapi import APIRouter, Form, HTTPException, Query, Request
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse
from fastapi.templating import Jinja2Templates

from ..library import Library
from . import browse, service
from .admission import Busy
from .auth import SESSION_COOKIE, SESSION_TTL_S, issue_token, revoke_token, UserLib
from .auth import login as check_login
from .security import CSRF_FIELD, LOGIN_CSRF_COOKIE, csrf_token_for
from .throttle import Throttled
from .words import ACTION_LABELS, explain_sentences
from ..filters.words import sentence

router = APIRouter(include_in_schema=False)
templates = Jinja2Templates(directory=str(Path(__file__).parent / "templates"))
PAGE_SIZE = 24


def _safe_next(target: str | None) -> str:
    """Only same-site paths are followed after login (no open redirect)."""
    if target and target.startswith("/") and not target.startswith("//") and "\\" not in target:
        return target
    return "/"


def _render(request: Request, template: str, status: int = 200, **ctx) -> HTMLResponse:
    """A page; every form on it carries ``csrf`` (the session's CSRF token,
    ``security.csrf_token_for``) as the field ``csrf_field``, and scripts
    read it from ``<meta name="csrf-token">``."""
    ctx.setdefault("principal", getattr(request.state, "principal", None))
    session = request.cookies.get(SESSION_COOKIE)
    ctx.setdefault("csrf", csrf_token_for(session) if session else "")
    ctx.setdefault("csrf_field", CSRF_FIELD)
    return templates.TemplateResponse(request, template, ctx, status_code=status)


def _login_page(request: Request, status: int = 200, **ctx) -> HTMLResponse:
    """The login page with its double-submit token: the pre-login cookie's
    value (a new random one when absent), in the cookie and in the form."""
    token = request.cookies.get(LOGIN_CSRF_COOKIE) or secrets.token_urlsafe(32)
    resp = _render(request, "login.html", status=status, csrf=token, **ctx)
    resp.set_cookie(LOGIN_CSRF_COOKIE, token, httponly=True, samesite="strict", path="/login",
                    secure=request.url.scheme == "https")
    return resp


@router.get("/favicon.ico")
async def favicon() -> FileResponse:
    """The icon, for clients that ask for ``/favicon.ico`` without reading
    the page's ``<link rel="icon">`` (the same SVG)."""
    return FileResponse(Path(__file__).parent / "static" / "favicon.svg",
                        media_type="image/svg+xml")


@router.get("/login", response_class=HTMLResponse)
async def login_form(request: Request, next: str = "/") -> HTMLResponse:
    """The login page: no database, rendered on the event loop, so it needs
    no worker thread and answers while a flood of requests holds them all."""
    return _login_page(request, next=_safe_next(next), error=None)


@router.post("/login", response_class=HTMLResponse)
async def login(request: Request, name: Annotated[str, Form(max_length=200)],
                password: Annotated[str, Form(max_length=1000)],
                next: Annotated[str, Form(max_length=2000)] = "/"):
    """The login form: throttled like ``POST /api/tokens`` (429), the
    password check waits for a hashing slot on the event loop (503 when
    none comes free in time); a user keeps at most
    ``max_sessions_per_user`` live sessions, the oldest giving way."""
    try:
        user = await check_login(request, name, password)
    except Throttled as exc:
        resp = _login_page(request, status=429, next=_safe_next(next),
                           error=f"{exc.why[:1].upper()}{exc.why[1:]}: try again in "
                                 f"{exc.retry_after} s.", name=name)
        resp.headers["Retry-After"] = str(exc.retry_after)
        return resp
    except Busy as exc:
        resp = _login_page(request, status=503, next=_safe_next(next),
                           error=f"The server is busy checking other logins: try again in "
                                 f"{exc.retry_after} s.", name=name)
        resp.headers["Retry-After"] = str(exc.retry_after)
        return resp
    if user is None:
        return _login_page(request, status=401, next=_safe_next(next),
                           error="Wrong user name or password.", name=name)
    keep = request.app.state.limits.max_sessions_per_user

    def issue() -> dict:
        with request.app.state.pool.lend() as lib:
            return issue_token(lib, user["id"], "session", ttl_s=SESSION_TTL_S, keep=keep)
    session = await anyio.to_thread.run_sync(issue)
    resp = RedirectResponse(_safe_next(next), status_code=303)
    resp.set_cookie(SESSION_COOKIE, session["token"], max_age=SESSION_TTL_S, httponly=True,
                    samesite="lax", secure=request.url.scheme == "https")
    return resp


@router.post("/logout")
def logout(request: Request):
    token = request.cookies.get(SESSION_COOKIE)
    if token and "\x00" not in token:
        with request.app.state.pool.lend() as lib:
            revoke_token(lib, token)
    resp = RedirectResponse("/login", status_code=303)
    resp.delete_cookie(SESSION_COOKIE)
    return resp


def _named(collections: list[dict]) -> list[dict]:
    """Collections for the scope menu: one whose path another shares is
    chosen by its id (``scope_name`` ``id:N``) and shown by its full path."""
    seen: dict[str, int] = {}
    for c in collections:
        seen[c["path"]] = seen.get(c["path"], 0) + 1
    return [{**c, "scope_name": f"id:{c['id']}" if seen[c["path"]] > 1 else None}
            for c in collections]


def _scopes(values: list[str]) -> list[str]:
    """The non-empty ``scope`` values of a request (several: their union)."""
    return [v.replace("\x00", "") for v in values if v.strip()]


def _label(node: dict) -> str:
    """A filter node as a chip's words: ``creator: Jane Doe``; a date range
    or a compound node in words (:func:`loupe.filters.words.sentence`:
    ``captured in 2019``, ``not (format png or colour red)``), never its
    JSON; the page escapes them."""
    (key, val), = node.items()
    if key in ("all", "any", "not") or isinstance(val, dict):
        return sentence(node)
    return f"{key}: {val}"


def _filter_ui(base: dict, tree: dict | None, facets: dict | None) -> dict:
    """The active filter as chips (each with the URL without it) and the
    facet values as links narrowing the result (the current tree AND the
    value's node), all plain links."""
    import json

    parts = ([] if tree is None else tree["all"] if set(tree) == {"all"} else [tree])

    def url(nodes: list) -> str:
        f = ({} if not nodes else {"filters": json.dumps(
            nodes[0] if len(nodes) == 1 else {"all": nodes}, ensure_ascii=False)})
        return "/?" + urlencode({**base, **f}, doseq=True)

    chips = [{"label": _label(p), "remove": url(parts[:i] + parts[i + 1:])}
             for i, p in enumerate(parts)]
    side = []
    for name, values in (facets or {}).get("facets", {}).items():
        links = [{"value": v["value"], "count": v["count"], "active": v["filter"] in parts,
                  "url": url(parts + [v["filter"]])} for v in values]
        if links:
            side.append({"name": name, "values": links})
    return {"chips": chips, "facet_groups": side,
            "facets_exact": (facets or {}).get("exact", True)}


def _browse_filter(scope: list[str]) -> str:
    """A scope without query text, browsed: the collection filter of it
    (their union), so the grid, the chips and the total are the filtered
    set's (docs/filters.md)."""
    nodes = [{"collection": s} for s in scope]
    return json.dumps(nodes[0] if len(nodes) == 1 else {"any": nodes}, ensure_ascii=False)


def _search_ctx(lib: Library, q: str, scope: list[str], lang: str | None, page: int,
                filters: str = "", facets: bool = True) -> dict:
    """What the search page (or its results fragment) shows. With query
    text or a filter: that search. With neither: the library itself
    (:func:`loupe.web.browse.browse_library`), newest first, with the
    facets of the whole readable library; a scope alone is browsed as its
    collection filter."""
    browsing = not q.strip() and not filters.strip()
    if browsing and scope:
        filters, scope = _browse_filter(scope), []
        browsing = False
    ctx = {"q": q, "scope": scope[0] if scope else "", "scopes": scope, "lang": lang or "",
           "page": page, "result": None, "error": None, "page_size": PAGE_SIZE,
           "filters": filters, "chips": [], "facet_groups": [], "browsing": browsing}
    try:
        if browsing:
            res = browse.browse_library(lib, limit=PAGE_SIZE, offset=(page - 1) * PAGE_SIZE)
            if facets:
                res.facets = browse.library_facets(lib, res.total)
        else:
            res = service.run_search(lib, q, scope=scope or None, lang=lang or None,
                                     limit=PAGE_SIZE, offset=(page - 1) * PAGE_SIZE,
                                     filters=filters.strip() or None, facets=facets)
    except HTTPException as exc:
        ctx["error"] = exc.detail
        return ctx
    ctx["result"] = service.search_payload(
        res, (scope[0] if len(scope) == 1 else scope) or None, lib)
    if browsing:
        n = res.total
        ctx["result"]["verdict_text"] = (
            "Nothing to show yet: no asset you may read." if n == 0 else
            f"All {n:,} asset{'s' if n != 1 else ''} you may read, newest first.")
    last = max(1, -(-min(res.reachable, res.total) // PAGE_SIZE))
    keep = {"q": q, **({"scope": scope} if scope else {}), **({"lang": lang} if lang else {})}
    ctx.update(_filter_ui(keep, res.filter, res.facets))
    base = {**keep, **({"filters": filters} if filters.strip() else {})}
    ctx["pages"] = last
    ctx["prev_url"] = (f"/?{urlencode({**base, 'page': page - 1}, doseq=True)}"
                       if page > 1 else None)
    ctx["next_url"] = (f"/?{urlencode({**base, 'page': page + 1}, doseq=True)}"
                       if page < last else None)
    ctx["more_url"] = (f"/results?{urlencode({**base, 'page': page + 1}, doseq=True)}"
                       if page < last else None)
    ctx["asset_qs"] = urlencode({"q": q, **({"lang": lang} if lang else {})})
    return ctx


def _browse_ctx(lib: Library, lang: str) -> dict:
    """The home page's ways to browse: the timeline and the collection tree."""
    collections = _named(lib.collections())
    return {"collections": collections, "timeline": browse.timeline(lib, lang),
            "tree": browse.collection_tree(collections, lang)}


@router.get("/", response_class=HTMLResponse)
def search_page(request: Request, lib: UserLib,
                q: Annotated[str, Query(max_length=1000)] = "",
                scope: Annotated[list[Annotated[str, Query(max_length=1000)]],
                                 Query(max_length=100)] = [],
                lang: Annotated[str, Query(max_length=20)] = "",
                page: Annotated[int, Query(ge=1, le=100_000)] = 1,
                filters: Annotated[str, Query(max_length=20_000)] = "") -> HTMLResponse:
    lang = lang.replace("\x00", "")
    ctx = _search_ctx(lib, q.replace("\x00", ""), _scopes(scope), lang, page,
                      filters.replace("\x00", ""))
    return _render(request, "search.html", languages=lib.languages(), actions=ACTION_LABELS,
                   **_browse_ctx(lib, lang), **ctx)


@router.get("/results", response_class=HTMLResponse)
def results_fragment(request: Request, lib: UserLib,
                     q: Annotated[str, Query(max_length=1000)] = "",
                     scope: Annotated[list[Annotated[str, Query(max_length=1000)]],
                                      Query(max_length=100)] = [],
                     lang: Annotated[str, Query(max_length=20)] = "",
                     page: Annotated[int, Query(ge=1, le=100_000)] = 1,
                     grid_only: bool = False,
                     filters: Annotated[str, Query(max_length=20_000)] = "") -> HTMLResponse:
    """The results region (or, with ``grid_only``, just the next page's tiles)."""
    ctx = _search_ctx(lib, q.replace("\x00", ""), _scopes(scope),
                      lang.replace("\x00", ""), page, filters.replace("\x00", ""),
                      facets=not grid_only)
    return _render(request, "_tiles.html" if grid_only else "_results.html",
                   actions=ACTION_LABELS, **ctx)


@router.get("/assets/{asset_id}", response_class=HTMLResponse)
def asset_page(request: Request, asset_id: int, lib: UserLib,
               q: Annotated[str, Query(max_length=1000)] = "",
               lang: Annotated[str, Query(max_length=20)] = "",
               why: Annotated[str, Query(max_length=300)] = "") -> HTMLResponse:
    try:
        asset = service.asset_payload(lib, asset_id)
    except HTTPException:
        return _render(request, "error.html", status=404, title="Not found",
                       message=f"There is no asset {asset_id} you can see.")
    q, lang, why_code = q.replace("\x00", ""), lang.replace("\x00", ""), why
    doc_lang = lang or lib.languages()[0]
    why = service.why_matched(lib, asset, q, lang or None)
    doc = next((d for d in asset["documents"] if d["lang"] == doc_lang),
               asset["documents"][0] if asset["documents"] else None)
    return _render(request, "asset.html", asset=asset, doc=doc, q=q, why=why,
                   ranking=explain_sentences(why_code) if q else [],
                   back=f"/?{urlencode({'q': q})}" if q else "/")


@router.post("/bulk", response_class=HTMLResponse)
def bulk_page(request: Request, lib: UserLib,
              action: Annotated[str, Form(max_length=40)],
              q: Annotated[str, Form(max_length=1000)],
              value: Annotated[str, Form(max_length=500)] = "",
              scope: Annotated[list[Annotated[str, Form(max_length=1000)]],
                               Form(max_length=100)] = [],
              lang: Annotated[str, Form(max_length=20)] = "",
              confirm: Annotated[str, Form(max_length=10)] = "",
              confirmation: Annotated[str, Form(max_length=100)] = "",
              any_term: Annotated[str, Form(max_length=10)] = "",
              filters: Annotated[str, Form(max_length=20_000)] = "") -> HTMLResponse:
    if action not in ACTION_LABELS:
        return _render(request, "error.html", status=400, title="Unknown action",
                       message=f"{action!r} is not a bulk action.")
    scopes = [v for v in scope if v.strip()]
    fields = {"action": action, "value": value, "q": q, "scope": scopes[0] if scopes else "",
              "lang": lang, "any_term": any_term, "filters": filters}
    if any("\x00" in v for v in [*fields.values(), *scopes]):
        return _render(request, "error.html", status=400, title="Bad input",
                       message="The form holds NUL characters.")
    fields["scopes"] = scopes
    try:
        out = service.run_bulk(lib, action, value or None, q=q, scope=scopes or None,
                               lang=lang or None, confirm=confirm == "yes",
                               any_term=any_term == "yes", filters=filters.strip() or None,
                               confirmation=confirmation or None)
    except HTTPException as exc:
        return _render(request, "error.html", status=exc.status_code, title="Not applied",
                       message=str(exc.detail))
    back = "/?" + urlencode({"q": q, **({"scope": scopes} if scopes else {}),
                             **({"filters": filters} if filters.strip() else {})}, doseq=True)
    if out.get("confirmation_required"):
        return _render(request, "bulk_confirm.html", status=409, out=out, fields=fields,
                       label=ACTION_LABELS[action], back=back)
    return _render(request, "bulk_done.html", out=out, back=back)


@router.get("/upload", response_class=HTMLResponse)
def upload_page(request: Request, lib: UserLib) -> HTMLResponse:
    return _render(request, "upload.html")


@router.get("/status", response_class=HTMLResponse)
def status_page(request: Request, lib: UserLib) -> HTMLResponse:
    bg = request.app.state.background
    return _render(request, "status.html", status=200,
                   s=service.status_payload(lib, bg.state() if bg is not None else None))
