"""The REST API under ``/api`` (OpenAPI at ``/openapi.json``).

Every endpoint but ``POST /api/tokens`` needs a bearer token (or the web
session cookie) and answers through the user's :meth:`Library.as_user` view:
an asset the user may not see is answered exactly like one that does not
exist (404), thumbnails and originals included.
"""

from __future__ import annotations

import mimetypes
from typing import Annotated, Any, Literal

from urllib.parse import quote

import anyio
from fastapi import APIRouter, File, HTTPException, Path, Query, Request, UploadFile
from fastapi.responses import FileResponse, JSONResponse, StreamingResponse
from pydantic import BaseModel, Field

from ..library import Library
from . import service, uploads
from ..access.users import AccessError, SelfAction, UnknownUser
from .auth import issue_token, login, presented_secret, revoke_token, UserLib
from .throttle import Throttled

router = APIRouter(prefix="/api", tags=["api"])


ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"description": "Bad input (the reason is in `detail`)"},
    401: {"description": "No valid bearer token or session"},
}
NOT_FOUND = {404: {"description": "No such asset visible to this user"}}


class HitOut(BaseModel):
    rank: int = Field(description="1-based rank over the whole result set")
    asset_id: int
    score: float | None = Field(description="BM25F (lexical only) or RRF score; null for a "
                                "row that is not scored (title band, a filtered list "
                                "without query text), and always null for a member "
                                "(scores would tell how many hidden assets hold a word)")
    bonus: int = Field(description="phrase bonus: 2 title holds the query, 1 the document does")
    title: str
    path: str
    thumbnail_url: str
    explain: dict[str, Any] = Field(description="each lane's rank and score or distance "
                                                "(a member's scores are null)")
    why: str = Field(description="the explain data as a short code for the asset page's ?why=")


class SearchOut(BaseModel):
    query: str
    lang: str
    langs: list[str] = Field(default_factory=list, description="the languages whose documents "
                             "were searched: the one asked for, else every library language "
                             "(or those the query reads as, said in notices)")
    scope: str | list[str] | None = Field(
        description="the collection searched in, or the list when several (their union)")
    terms: list[str]
    total: int = Field(description="matching assets: exact when total_exact, else a lower bound")
    total_exact: bool
    verdict: Literal["complete", "truncated", "unknown"]
    verdict_text: str = Field(description="the total and verdict in plain words")
    meaning_only: bool = Field(default=False, description="every row is a meaning-based "
                               "(vector) neighbour: no word matched; the rows are approximate")
    reachable: int
    limit: int
    offset: int
    hits: list[HitOut]
    corrections: dict[str, str]
    lanes: list[str]
    notices: list[str]
    filter: Any = Field(default=None, description="the filter tree searched within "
                        "(docs/filters.md), or null")
    related: list[HitOut] = Field(
        default_factory=list, description="pictures close in meaning that no query word "
        "matched and that the search could not show answer the query (V8): shown apart, "
        "never counted in total, never acted on by a bulk action; page 1 only")
    evidence: dict[str, Any] | None = Field(
        default=None, description="what answerability was decided from: best_distance (the "
        "text lane's nearest neighbour), known_share (of the query's words), meaning_rows")
    answerable: bool | None = Field(
        default=None, description="whether rows no query word matched counted as results "
        "(null: there were none)")
    stems: list[dict[str, Any]] = Field(
        default_factory=list, description="each query term the analyzer made by changing a "
        "query word and how it reaches the library: exact, form, collision (left out: the "
        "library writes that stem only in other words), unseen")
    facets: dict[str, Any] | None = Field(
        default=None, description='with facets=true: {"exact": bool, "facets": {facet: '
        '[{"value", "key", "count", "filter"}]}}; counts are lower bounds unless exact')


class TokenIn(BaseModel):
    name: str = Field(min_length=1, max_length=200)
    password: str = Field(min_length=1, max_length=1000)
    label: str = Field(default="", max_length=200)


class TokenOut(BaseModel):
    token: str = Field(description="the secret: shown once, stored only as a hash")
    id: int
    created_at: str
    expires_at: str | None
    revoked: int = Field(0, description="older API tokens of this user revoked by the cap "
                                        "on live tokens (the oldest give way)")


class BulkIn(BaseModel):
    action: Literal["add_keyword", "remove_keyword", "add_to_collection",
                    "remove_from_collection", "set_rights_expiry", "set_embargo"]
    value: str | None = Field(default=None, max_length=500,
                              description="keyword, hand-made collection name, or ISO date "
                                          "(null clears a date)")
    q: str = Field(max_length=1000)
    scope: str | list[Annotated[str, Field(max_length=1000)]] | None = Field(
        default=None, max_length=100,
        description="collection (path, id:N or full path), or a list: their union")
    lang: str | None = Field(default=None, max_length=20)
    confirm: bool = Field(default=False, description="apply although the verdict is not "
                          "complete: counts only with `confirmation`")
    confirmation: str | None = Field(default=None, max_length=100, description=(
        "what was confirmed: the `confirmation` of the 409 (or of a dry run), COUNT:DIGEST of "
        "the assets; the action applies only to that very set, else 409 again with the new "
        "count"))
    any_term: bool = Field(default=False, description="act on every ranked asset, not only "
                                                      "on those holding every query term")
    dry_run: bool = Field(default=False, description="only count: change nothing")
    filters: dict[str, Any] | None = Field(default=None, description="a filter tree "
                                           "(docs/filters.md): only assets it accepts")


class BulkOut(BaseModel):
    action: str
    value: Any = None
    count: int = Field(description="assets the action was applied to")
    match: Literal["all", "any"] = Field(description="the match rule: all = assets holding "
                                                     "every query term; any = every ranked asset")
    matched_all_terms: int = Field(description="assets of the result holding every query term")
    matched_any: int = Field(description="assets the search ranked")
    dry_run: bool
    verdict: str
    total: int
    total_exact: bool
    confirmed: bool
    audit_id: int | None
    confirmation: str | None = Field(default=None, description="COUNT:DIGEST of the assets "
                                     "the action changed (or, on a dry run, would change)")
    message: str


def _text(value: str | None, name: str) -> str | None:
    """Reject text PostgreSQL cannot hold (NUL) with a 400, not a 500."""
    if value is not None and "\x00" in value:
        raise HTTPException(400, f"{name} must not contain NUL characters")
    return value


def _scopes(values: list[str] | None) -> list[str] | None:
    """The non-empty collection names given (each checked), or None."""
    names = [_text(v, "scope") for v in (values or []) if v and v.strip()]
    if any(len(v) > 1000 for v in names):
        raise HTTPException(400, "a scope is at most 1,000 characters")
    return names or None


@router.post("/tokens", response_model=TokenOut,
             responses={401: ERRORS[401],
                        429: {"description": "Too many failed logins, or too many logins "
                                             "of this account: wait Retry-After seconds"},
                        503: {"description": "Every password-hashing slot stayed busy: "
                                             "wait Retry-After seconds"}})
async def create_token(body: TokenIn, request: Request) -> dict:
    """Exchange a user name and password for an API bearer token. Failed
    attempts are throttled per account and client and per client, and
    logins of one account (successes too) per minute (429 with
    ``Retry-After``); the password check waits for a hashing slot at most
    a few seconds (503 with ``Retry-After``). A user keeps at most
    ``max_api_tokens_per_user`` live API tokens: a new one revokes the
    oldest past it (``revoked``). See docs/security.md."""
    for name, value in (("name", body.name), ("password", body.password), ("label", body.label)):
        _text(value, name)
    try:
        user = await login(request, body.name, body.password)
    except Throttled as exc:
        raise HTTPException(429, str(exc), headers={"Retry-After": str(exc.retry_after)}) from None
    if user is None:
        raise HTTPException(401, "wrong user name or password")
    limits = request.app.state.limits

    def issue() -> dict:
        with request.app.state.pool.lend() as lib:
            return issue_token(lib, user["id"], "api", label=body.label,
                               keep=limits.max_api_tokens_per_user)
    return await anyio.to_thread.run_sync(issue)


@router.delete("/tokens/current", status_code=204, responses=ERRORS)
def revoke_current_token(request: Request, lib: UserLib) -> None:
    """Revoke the bearer token (or session) this request authenticated with."""
    revoke_token(lib, presented_secret(request))


@router.get("/me", responses=ERRORS)
def me(lib: UserLib) -> dict:
    """The authenticated user: ``{"id","name","admin","groups"}`` and the tenant."""
    return {**(lib.user or {}), "tenant": lib.tenant}


@router.get("/search", response_model=SearchOut, responses=ERRORS)
def search(lib: UserLib,
           q: Annotated[str, Query(max_length=1000, description="the query")] = "",
           scope: Annotated[list[str] | None, Query(
               max_length=100, description="collection to search in (path, id:N or full "
                                           "path); repeat the parameter for the union of "
                                           "several")] = None,
           lang: Annotated[str | None, Query(max_length=20)] = None,
           limit: Annotated[int, Query(ge=1, le=200)] = 24,
           offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
           filters: Annotated[str | None, Query(
               max_length=20_000, description="a filter tree as JSON (docs/filters.md), e.g. "
               '{"all": [{"creator": "Jane Doe"}, {"captured": {"from": "2019-01-01"}}]}; '
               "with no q, the assets that pass it, newest first")] = None,
           facets: Annotated[bool, Query(description="also the top values per facet of "
                                                     "the whole result")] = False) -> dict:
    """Search (C1–C5, X4): hits of one page, the honest total and the verdict.

    ``scope`` is the collection filter (sub-collections included) and
    ``filters`` a filter tree; both run inside the search statement (its
    members, bands and counts), so the total and the verdict stay exact. A
    bad tree is a 400 naming the node (``filter $.all[1].captured.from:
    ...``).
    """
    _text(q, "q"), _text(lang, "lang"), _text(filters, "filters")
    scopes = _scopes(scope)
    res = service.run_search(lib, q, scope=scopes, lang=lang or None, limit=limit,
                             offset=offset, filters=filters or None, facets=facets)
    return service.search_payload(res, scopes[0] if scopes and len(scopes) == 1 else scopes,
                                  lib)


@router.get("/assets/{asset_id}", responses={**ERRORS, **NOT_FOUND})
def asset(asset_id: int, lib: UserLib) -> dict:
    """Everything stored about a visible asset (pixels, files, metadata,
    collections, search documents), with its thumbnail and original URLs."""
    return service.asset_payload(lib, asset_id)


@router.get("/assets/{asset_id}/why", responses={**ERRORS, **NOT_FOUND})
def why(asset_id: int, lib: UserLib,
        q: Annotated[str, Query(min_length=1, max_length=1000, description="the query")],
        scope: Annotated[list[str] | None, Query(max_length=100)] = None,
        lang: Annotated[str | None, Query(max_length=20)] = None,
        filters: Annotated[str | None, Query(max_length=20_000)] = None) -> dict:
    """Why the asset is or is not in the results of ``q`` (C7): its rank,
    the words matched per language and field, the missing ones, each vector
    lane's distance against its cut-off, and the scope, filter or cap that
    left it out — from the search itself. 404 for an asset the user may not
    read, as for one that does not exist."""
    _text(q, "q"), _text(lang, "lang"), _text(filters, "filters")
    scopes = _scopes(scope)
    return service.why_payload(lib, asset_id, q, scope=scopes, lang=lang or None,
                               filters=filters or None)


@router.get("/assets/{asset_id}/thumbnail", response_class=FileResponse,
            responses={**ERRORS, **NOT_FOUND, 200: {"content": {"image/webp": {}}}})
def thumbnail(asset_id: int, lib: UserLib) -> FileResponse:
    """The asset's WebP thumbnail (404 when not visible to the user)."""
    path = service.thumbnail_path(lib, asset_id)
    return FileResponse(path, media_type=mimetypes.guess_type(path.name)[0] or "image/webp",
                        headers={"Cache-Control": "private, max-age=3600"})


@router.get("/assets/{asset_id}/original", response_class=FileResponse,
            responses={**ERRORS, **NOT_FOUND, 200: {"content": {"application/octet-stream": {}}}})
def original(asset_id: int, lib: UserLib) -> StreamingResponse:
    """The asset's original file (404 when not visible to the user, or when
    no file on disk holds its bytes any more), streamed from the descriptor
    that was checked (never re-opened by path)."""
    fh, path, media_type = service.open_original_file(lib, asset_id)

    def chunks():
        with fh:
            while chunk := fh.read(1 << 16):
                yield chunk

    disposition = "attachment; filename*=UTF-8''" + quote(path.name, safe="")
    return StreamingResponse(chunks(), media_type=media_type,
                             headers={"Content-Disposition": disposition})


@router.get("/collections", responses=ERRORS)
def collections(lib: UserLib) -> list[dict]:
    """Collections with the number of their assets visible to the user."""
    return lib.collections()


@router.post("/upload", responses={**ERRORS, 413: {"description": "Body over the request limit, "
                                                                 "too many or too large files, "
                                                                 "or over the user's quota"},
                                   503: {"description": "Every upload slot stayed busy: wait "
                                                        "Retry-After seconds"}})
async def upload(request: Request,
                 files: Annotated[list[UploadFile], File(description="image files")]) -> dict:
    """Store the files under ``HOME/uploads/<user>/<batch>/`` and ingest them;
    the new assets are granted to the uploader. Limits (body size, quotas,
    pixels) and what a member's reply holds: docs/security.md. An admin gets
    the ingest summary and the asset ids; a member ``{"folder",
    "files_seen", "stored", "failed", "failures"}``, the same whether or not
    the bytes were already in the library. The request gives its pooled
    Library back before ExifTool and the decoding run (``LibraryPool.outside``).
    It waits for one of the upload slots on the event loop, holding no
    worker thread and no database connection, at most ``slot_wait_s``
    (then 503 with ``Retry-After``): 80 uploads at once never stall other
    requests."""
    async with request.app.state.gates.uploads.slot():
        return await anyio.to_thread.run_sync(uploads.upload, request, files,
                                              request.app.state.limits)


@router.post("/bulk", response_model=BulkOut,
             responses={**ERRORS, 403: {"description": "Not an admin"},
                        409: {"description": "The result is not provably complete: "
                                             "repeat with confirm=true"}})
def bulk(body: BulkIn, lib: UserLib) -> Any:
    """Apply an action to the whole result set of ``q`` (C6). On a
    ``truncated`` or ``unknown`` result without ``confirm`` nothing is changed
    and the answer is 409 with the verdict, the total and ``confirmation``
    (COUNT:DIGEST of the assets it would change): send it back with
    ``confirm`` to apply to that very set; if the set changed meanwhile,
    nothing is applied and the answer is 409 again with the new count
    (``changed``). Admins only (403 for a
    member: a grant lets one read, not change)."""
    for name in ("value", "q", "lang"):
        _text(getattr(body, name), name)
    scopes = _scopes([body.scope] if isinstance(body.scope, str) else body.scope)
    out = service.run_bulk(lib, body.action, body.value, q=body.q, scope=scopes,
                           lang=body.lang or None, confirm=body.confirm,
                           any_term=body.any_term, dry_run=body.dry_run,
                           filters=body.filters, confirmation=body.confirmation)
    if out.get("confirmation_required"):
        return JSONResponse(status_code=409, content={
            "detail": out["message"], "confirmation": out["confirmation"],
            "count": out["count"], "changed": out["changed"],
            "verdict": out["verdict"], "total": out["total"],
            "total_exact": out["total_exact"], "match": out["match"],
            "matched_all_terms": out["matched_all_terms"], "matched_any": out["reachable"],
            "rule": out["rule_text"]})
    return out


@router.get("/audit", responses={**ERRORS, 403: {"description": "Not an admin"}})
def audit(lib: UserLib, limit: Annotated[int, Query(ge=1, le=1000)] = 50) -> list[dict]:
    """The latest bulk actions, newest first (admins only): who, what, on
    which query and scope, the verdict and the count."""
    try:
        return lib.audit_log(limit)
    except AccessError as exc:
        raise HTTPException(403, str(exc)) from exc


@router.get("/models", responses=ERRORS)
def models(lib: UserLib) -> list[dict]:
    """Installed models and the lanes each one serves."""
    return [{k: v for k, v in m.items() if k != "folder"} for m in lib.models()]


@router.get("/status", responses=ERRORS)
def status(lib: UserLib, request: Request) -> dict:
    """Which lanes are active (and how to turn on the others), vectors still
    waiting, recent ingest runs and the latest run's failed files with
    reasons; for admins, ``background``: what the server's background work
    is doing (``task``, ``done`` of ``total``; null when idle), or null when
    the server leaves that work to the commands."""
    bg = request.app.state.background
    return service.status_payload(lib, bg.state() if bg is not None else None)



# -- the user lifecycle (admins only, audited) -------------------------------

class PasswordIn(BaseModel):
    password: str = Field(min_length=1, max_length=1000)


UserName = Annotated[str, Path(min_length=1, max_length=64, description="a user name")]
ADMIN_ONLY = {**ERRORS, 403: {"description": "Not an admin, or an admin acting on itself"},
              404: {"description": "No such user"}}


def _manage_user(lib: Library, call) -> dict:
    """Run a Library user-lifecycle call for an admin: 403 for a member (or an
    admin disabling or deleting itself), 404 for an unknown user, 400 for bad input."""
    if not (lib.user or {}).get("admin"):
        raise HTTPException(403, "only an admin manages users")
    try:
        return call()
    except UnknownUser as exc:
        raise HTTPException(404, str(exc)) from exc
    except AccessError as exc:
        raise HTTPException(403 if isinstance(exc, SelfAction) else 400, str(exc)) from exc


@router.post("/users/{name}/password", responses=ADMIN_ONLY)
def user_password(name: UserName, body: PasswordIn, lib: UserLib) -> dict:
    """Set a user's password and end its login sessions (API tokens stay)."""
    _text(body.password, "password")
    return _manage_user(lib, lambda: lib.set_password(name, body.password))


@router.post("/users/{name}/disable", responses=ADMIN_ONLY)
def user_disable(name: UserName, lib: UserLib) -> dict:
    """Disable a user: no login, and its sessions and tokens stop working at once."""
    return _manage_user(lib, lambda: lib.disable_user(name))


@router.post("/users/{name}/enable", responses=ADMIN_ONLY)
def user_enable(name: UserName, lib: UserLib) -> dict:
    """Let a disabled user log in again."""
    return _manage_user(lib, lambda: lib.enable_user(name))


@router.post("/users/{name}/revoke-tokens", responses=ADMIN_ONLY)
def user_revoke_tokens(name: UserName, lib: UserLib) -> dict:
    """Revoke every login session and API token of a user."""
    return _manage_user(lib, lambda: lib.revoke_tokens(name))


@router.delete("/users/{name}", responses=ADMIN_ONLY)
def user_delete(name: UserName, lib: UserLib) -> dict:
    """Delete a user with its sessions, tokens, group memberships and grants."""
    return _manage_user(lib, lambda: lib.delete_user(name))
