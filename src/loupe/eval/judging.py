"""The blind judging page (E6, E7) as a FastAPI ``APIRouter``, and a
small standalone app for ``loupe eval judge`` (the web app can mount the
same router).

A judge sees the query and the picture only. Nothing the page, its HTML or
its requests carry names the asset, its files, its caption, the system or
the rank: pairs and pictures are addressed by the pool item's random token
(migration 0006), pictures are served as the asset's thumbnail bytes with
no file name, and the pool order is the seeded shuffle of
:meth:`Evaluation.pool`. Keys ``0``, ``1``, ``2`` (or the buttons) record
no / near miss / satisfies and move on; progress is shown.

Routes (prefix ``/judge``)::

    GET  /judge/{pool}/?judge=NAME        the page
    GET  /judge/{pool}/next?judge=NAME    {"token", "query", "done", "total"} or {"finished": true, ...}
    POST /judge/{pool}/grade              {"token", "judge", "grade"} -> the next pair
    GET  /judge/{pool}/picture/{token}    the picture's bytes
    GET  /judge/judging.js, judging.css   the page's script and style (no inline script)

Who may see what (P1): every route answers through the viewer of the
:class:`Evaluation`'s library. In the web app that is the logged-in user:
pairs whose asset it may not read are skipped, not counted in its progress,
and their tokens answer like unknown ones; the judge's name is the user's
name (``?judge=`` and the body's ``judge`` are ignored). The standalone
page of ``loupe eval judge`` is the library owner's local tool: it sees
every pair and takes the judge's name from the page's ``?judge=``; it
answers only requests whose path starts with its random key
(``/KEY/judge/...``, the printed address) to a local host name
(:class:`KeyGate`). Every
not-found answer is the same bytes, ``{"detail": "not found"}``.
"""

# no "from __future__ import annotations": FastAPI reads the local Annotated
# aliases of judging_router at decoration time
import html
from urllib.parse import quote
from collections.abc import Callable
from typing import Annotated

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Query, Request
from fastapi.responses import HTMLResponse, Response
from pydantic import BaseModel, Field

from ..web.security import SESSION_COOKIE, csrf_token_for
from .instrument import EvalError, Evaluation
from ..web.security import Guard, WebLimits

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="referrer" content="no-referrer">
<title>Blind judging</title>
<link rel="stylesheet" href="__ROOT__/judge/judging.css">
<script src="__ROOT__/judge/judging.js" defer></script>
</head>
<body data-base="__BASE__" data-judge="__JUDGE__" data-csrf="__CSRF__">
<div id="progress" aria-live="polite"></div>
<div id="query"></div>
<img id="picture" alt="picture to judge">
<div>
 <button class="g0" data-grade="0">0 · no</button>
 <button class="g1" data-grade="1">1 · near miss</button>
 <button class="g2" data-grade="2">2 · satisfies</button>
</div>
<p>Keys: <b>0</b> no, <b>1</b> near miss, <b>2</b> satisfies. Judge what you see only.</p>
</body></html>
"""

#: The page's style and script, served as files of their own so that the
#: Content-Security-Policy can forbid inline script and style.
CSS = """
body{font-family:sans-serif;margin:0;background:#111;color:#eee;text-align:center}
#query{font-size:1.6em;margin:.8em 1em}
#picture{height:60vh;max-width:90vw;object-fit:contain;background:#222}
button{font-size:1.2em;margin:.6em;padding:.5em 1.2em;border-radius:.4em;border:0;cursor:pointer}
.g0{background:#a33;color:#fff}.g1{background:#c93;color:#000}.g2{background:#3a5;color:#fff}
#progress{opacity:.8}
"""

SCRIPT = """
(function () {
"use strict";
const base = document.body.dataset.base, judge = document.body.dataset.judge;
let current = null, busy = false;
function show(item) {
  const q = document.getElementById('query'), p = document.getElementById('progress');
  const img = document.getElementById('picture');
  if (item.total === undefined) { current = null; q.textContent = 'Not found.'; img.hidden = true; return; }
  p.textContent = item.done + ' / ' + item.total + ' judged';
  if (item.finished) { current = null; q.textContent = 'Done, thank you.'; img.removeAttribute('src'); img.hidden = true; return; }
  current = item.token; q.textContent = item.query;
  img.hidden = false; img.src = base + 'picture/' + encodeURIComponent(item.token);
}
async function load() {
  const r = await fetch(base + 'next?judge=' + encodeURIComponent(judge), {credentials: 'same-origin'});
  show(await r.json());
}
async function grade(g) {
  if (current === null || busy) return;
  busy = true;
  try {
    const r = await fetch(base + 'grade', {method: 'POST', credentials: 'same-origin',
      headers: {'Content-Type': 'application/json', 'X-CSRF-Token': document.body.dataset.csrf},
      body: JSON.stringify({token: current, judge: judge, grade: g})});
    show(await r.json());
  } finally { busy = false; }
}
document.addEventListener('keydown', e => { if (['0','1','2'].includes(e.key)) grade(Number(e.key)); });
document.querySelectorAll('button[data-grade]').forEach(b => b.addEventListener('click', () => grade(Number(b.dataset.grade))));
load();
})();
"""

#: The one answer to every judging request for something that is not there
#: or not the viewer's to see (an unknown pool, a pool of which the viewer
#: may read no pair, an unknown or hidden token, a missing picture): the same
#: bytes, naming nothing (P1).
NOT_FOUND = "not found"


class Grade(BaseModel):
    """A judgement posted by the page. ``judge`` is used by the standalone
    page only; the web app records the logged-in user's name."""

    token: str = Field(min_length=1, max_length=64)
    judge: str = Field(default="", max_length=100)
    grade: int = Field(ge=0, le=2)


def _item(ev: Evaluation, pool: str, judge: str) -> dict:
    item = ev.next_item(pool, judge)
    if item is None:
        return {"finished": True, **ev.progress(pool, judge)}
    return item


def judging_router(get_evaluation: Callable[[], Evaluation],
                   get_judge: Callable[..., str] | None = None) -> APIRouter:
    """The judging routes.

    Args:
        get_evaluation: a FastAPI dependency giving the :class:`Evaluation`
            of the request's library; its viewer decides which pairs are
            shown, counted, graded and pictured (P1).
        get_judge: a FastAPI dependency giving the judge's name (the web app:
            the logged-in user's name; a ``judge`` query parameter or body
            field is then ignored). None (the standalone ``loupe eval judge``
            page, run by the library owner): the name is the ``judge``
            query parameter / body field.
    """
    router = APIRouter(prefix="/judge")
    Ev = Annotated[Evaluation, Depends(get_evaluation)]
    standalone = get_judge is None

    def _query_judge(judge: Annotated[str, Query(min_length=1, max_length=100)]) -> str:
        return judge

    def _no_judge() -> str:
        return ""

    Judge = Annotated[str, Depends(_query_judge if standalone else get_judge)]
    # the grade's judge: the body's field on the standalone page, else the user
    GradeJudge = Annotated[str, Depends(_no_judge if standalone else get_judge)]

    def _missing() -> HTTPException:
        return HTTPException(status_code=404, detail=NOT_FOUND)

    def _guard(fn, *args):
        try:
            return fn(*args)
        except EvalError:
            raise _missing() from None

    def _pool(ev: Evaluation, pool: str) -> None:
        """404 unless the pool exists and the viewer may read one of its pairs."""
        _guard(ev.pool_id, pool)
        if not ev.lib.viewer.see_all and ev.progress(pool, "")["total"] == 0:
            raise _missing()

    @router.get("/judging.js", include_in_schema=False)
    def script() -> Response:
        return Response(SCRIPT, media_type="text/javascript",
                        headers={"Cache-Control": "no-cache"})

    @router.get("/judging.css", include_in_schema=False)
    def style() -> Response:
        return Response(CSS, media_type="text/css", headers={"Cache-Control": "no-cache"})

    @router.get("/{pool}/", response_class=HTMLResponse)
    def page(pool: str, judge: Judge, ev: Ev, request: Request) -> HTMLResponse:
        _pool(ev, pool)
        # under the standalone page's key prefix, its links carry the key
        root = request.scope.get("root_path", "")
        base = f"{root}/judge/{quote(pool, safe='')}/"
        # the grade requests' CSRF token (the web app's Guard checks it)
        session = request.cookies.get(SESSION_COOKIE)
        csrf = csrf_token_for(session) if session else ""
        body = (PAGE.replace("__ROOT__", html.escape(root, quote=True))
                .replace("__BASE__", html.escape(base, quote=True))
                .replace("__JUDGE__", html.escape(judge, quote=True))
                .replace("__CSRF__", csrf))
        return HTMLResponse(body, headers={"Cache-Control": "no-store"})

    @router.get("/{pool}/next")
    def next_pair(pool: str, judge: Judge, ev: Ev) -> dict:
        _pool(ev, pool)
        return _guard(_item, ev, pool, judge)

    @router.post("/{pool}/grade")
    def grade(pool: str, body: Grade, user: GradeJudge, ev: Ev) -> dict:
        _pool(ev, pool)
        judge = body.judge if standalone else user
        _guard(ev.judge, pool, body.token, judge, body.grade)
        return _item(ev, pool, judge)

    @router.get("/{pool}/picture/{token}")
    def picture(pool: str, token: str, ev: Ev) -> Response:
        _pool(ev, pool)
        path = _guard(ev.item_image, pool, token)
        try:
            data = path.read_bytes()
        except OSError:
            raise _missing() from None
        media = {"webp": "image/webp", "png": "image/png", "gif": "image/gif"}.get(
            path.suffix.lower().lstrip("."), "image/jpeg")
        return Response(data, media_type=media, headers={"Cache-Control": "no-store"})

    return router


#: Host names the standalone page answers (plus the address it listens on).
LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "[::1]", "::1"})


class KeyGate:
    """ASGI middleware of the standalone judging page: it serves the owner's whole pool, private pictures
    included, and has no login, so every request's path must start with the
    page's random key — ``/KEY/judge/...``, the address ``loupe eval judge``
    prints; the key is stripped and becomes the request's ``root_path``, so
    the page's own links carry it — and its ``Host`` must be one of
    ``hosts`` (None: any), so a DNS-rebinding page is refused before it could
    try. The key is never put in a cookie: a browser sends a host's cookies
    to every port of that host, so another local account's server on
    127.0.0.1 would receive it. Another account on the machine, or a page of
    another site, knows the key only if given the address. Refusals: 421 for
    a host, 403 for a missing or wrong key (compared in constant time)."""

    def __init__(self, app, key: str, hosts: frozenset[str] | None):
        self.app, self.key, self.hosts = app, key, hosts

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        import hmac

        headers = {k.lower(): v for k, v in scope.get("headers", [])}
        host = headers.get(b"host", b"").decode("latin-1").strip().lower()
        name = host.split("]")[0] + "]" if host.startswith("[") else host.rsplit(":", 1)[0]
        if self.hosts is not None and name not in self.hosts:
            return await _plain(send, 421, b"unknown host")
        path = scope.get("path", "")
        given, _, rest = path.removeprefix("/").partition("/")
        if not (given and hmac.compare_digest(given.encode("utf-8", "replace"),
                                              self.key.encode())):
            return await _plain(send, 403, b"this judging page needs its key: open the address "
                                            b"'loupe eval judge' printed")
        prefix = "/" + self.key
        raw = scope.get("raw_path")
        scope = {**scope, "path": "/" + rest,
                 "root_path": scope.get("root_path", "") + prefix}
        if raw is not None:
            scope["raw_path"] = raw[len(prefix):] if raw.startswith(prefix.encode()) else raw
        return await self.app(scope, receive, send)


async def _plain(send, status: int, body: bytes) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode()),
                            (b"cache-control", b"no-store")]})
    await send({"type": "http.response.body", "body": body})


def standalone_app(ev: Evaluation, pool: str | None = None, *, key: str | None = None,
                   hosts: frozenset[str] | None = LOCAL_HOSTS) -> FastAPI:
    """A FastAPI app serving the judging router for one library (``loupe eval
    judge``); ``/`` redirects nowhere and says where the page is. Run by the
    library owner: it sees every pair and takes the judge's name from
    ``?judge=``; :class:`loupe.web.security.Guard` adds the security headers
    and refuses cross-origin posts, and :class:`KeyGate` admits only requests
    that carry ``key`` (None: a fresh random one, 128 bits in hex; read it
    back as ``app.state.judge_key``) to one of ``hosts``."""
    import secrets  # noqa: PLC0415

    app = FastAPI(title="Loupe blind judging", docs_url=None, redoc_url=None, openapi_url=None)
    app.include_router(judging_router(lambda: ev))
    # the owner's local tool has no login, but gets the same headers, Origin
    # check (no other page may post grades) and body limit as the web app,
    # behind its own key
    app.add_middleware(Guard, limits=WebLimits(), authenticated=lambda scope: True)
    app.state.judge_key = key or secrets.token_hex(16)
    app.add_middleware(KeyGate, key=app.state.judge_key, hosts=hosts)

    @app.get("/", response_class=HTMLResponse)
    def index(request: Request) -> str:
        root = request.scope.get("root_path", "")
        target = f"{root}/judge/{quote(pool or 'POOL', safe='')}/?judge=YOUR-NAME"
        return f"<!doctype html><p>Open <code>{html.escape(target)}</code></p>"

    return app
