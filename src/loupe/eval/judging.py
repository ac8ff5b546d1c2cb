"""The blind judging page (SPEC E6, E7) as a FastAPI ``APIRouter``, and a
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
"""

# no "from __future__ import annotations": FastAPI reads the local Annotated
# aliases of judging_router at decoration time
import html
from collections.abc import Callable
from typing import Annotated

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Query
from fastapi.responses import HTMLResponse, Response
from pydantic import BaseModel, Field

from .instrument import EvalError, Evaluation

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="referrer" content="no-referrer">
<title>Blind judging</title>
<style>
 body{font-family:sans-serif;margin:0;background:#111;color:#eee;text-align:center}
 #query{font-size:1.6em;margin:.8em 1em}
 #picture{height:60vh;max-width:90vw;object-fit:contain;background:#222}
 button{font-size:1.2em;margin:.6em;padding:.5em 1.2em;border-radius:.4em;border:0;cursor:pointer}
 .g0{background:#a33;color:#fff}.g1{background:#c93;color:#000}.g2{background:#3a5;color:#fff}
 #progress{opacity:.8}
</style></head>
<body>
<div id="progress" aria-live="polite"></div>
<div id="query"></div>
<img id="picture" alt="picture to judge">
<div>
 <button class="g0" data-grade="0">0 · no</button>
 <button class="g1" data-grade="1">1 · near miss</button>
 <button class="g2" data-grade="2">2 · satisfies</button>
</div>
<p>Keys: <b>0</b> no, <b>1</b> near miss, <b>2</b> satisfies. Judge what you see only.</p>
<script>
const base = __BASE__, judge = __JUDGE__;
let current = null, busy = false;
function show(item) {
  const q = document.getElementById('query'), p = document.getElementById('progress');
  const img = document.getElementById('picture');
  p.textContent = item.done + ' / ' + item.total + ' judged';
  if (item.finished) { current = null; q.textContent = 'Done, thank you.'; img.removeAttribute('src'); img.hidden = true; return; }
  current = item.token; q.textContent = item.query;
  img.hidden = false; img.src = base + 'picture/' + encodeURIComponent(item.token);
}
async function load() {
  const r = await fetch(base + 'next?judge=' + encodeURIComponent(judge));
  show(await r.json());
}
async function grade(g) {
  if (current === null || busy) return;
  busy = true;
  try {
    const r = await fetch(base + 'grade', {method: 'POST', headers: {'Content-Type': 'application/json'},
      body: JSON.stringify({token: current, judge: judge, grade: g})});
    show(await r.json());
  } finally { busy = false; }
}
document.addEventListener('keydown', e => { if (['0','1','2'].includes(e.key)) grade(Number(e.key)); });
document.querySelectorAll('button[data-grade]').forEach(b => b.addEventListener('click', () => grade(Number(b.dataset.grade))));
load();
</script>
</body></html>
"""


class Grade(BaseModel):
    """A judgement posted by the page."""

    token: str = Field(min_length=1, max_length=64)
    judge: str = Field(min_length=1, max_length=100)
    grade: int = Field(ge=0, le=2)


def _item(ev: Evaluation, pool: str, judge: str) -> dict:
    item = ev.next_item(pool, judge)
    if item is None:
        return {"finished": True, **ev.progress(pool, judge)}
    return item


def judging_router(get_evaluation: Callable[[], Evaluation]) -> APIRouter:
    """The judging routes; ``get_evaluation`` is a FastAPI dependency that
    gives the :class:`Evaluation` of the request's library."""
    router = APIRouter(prefix="/judge")
    Ev = Annotated[Evaluation, Depends(get_evaluation)]
    Judge = Annotated[str, Query(min_length=1, max_length=100)]

    def _guard(fn, *args):
        try:
            return fn(*args)
        except EvalError as exc:
            raise HTTPException(status_code=404, detail=str(exc)) from exc

    @router.get("/{pool}/", response_class=HTMLResponse)
    def page(pool: str, judge: Judge, ev: Ev) -> HTMLResponse:
        _guard(ev.pool_id, pool)
        import json

        base = f"/judge/{pool}/"
        body = (PAGE.replace("__BASE__", html.escape(json.dumps(base), quote=False))
                .replace("__JUDGE__", html.escape(json.dumps(judge), quote=False)))
        return HTMLResponse(body, headers={"Cache-Control": "no-store"})

    @router.get("/{pool}/next")
    def next_pair(pool: str, judge: Judge, ev: Ev) -> dict:
        return _guard(_item, ev, pool, judge)

    @router.post("/{pool}/grade")
    def grade(pool: str, body: Grade, ev: Ev) -> dict:
        _guard(ev.judge, pool, body.token, body.judge, body.grade)
        return _item(ev, pool, body.judge)

    @router.get("/{pool}/picture/{token}")
    def picture(pool: str, token: str, ev: Ev) -> Response:
        path = _guard(ev.item_image, pool, token)
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise HTTPException(status_code=404, detail="picture unavailable") from exc
        media = {"webp": "image/webp", "png": "image/png", "gif": "image/gif"}.get(
            path.suffix.lower().lstrip("."), "image/jpeg")
        return Response(data, media_type=media, headers={"Cache-Control": "no-store"})

    return router


def standalone_app(ev: Evaluation, pool: str | None = None) -> FastAPI:
    """A FastAPI app serving the judging router for one library (``loupe eval
    judge``); ``/`` redirects nowhere and says where the page is."""
    app = FastAPI(title="Loupe blind judging", docs_url=None, redoc_url=None, openapi_url=None)
    app.include_router(judging_router(lambda: ev))

    @app.get("/", response_class=HTMLResponse)
    def index() -> str:
        target = f"/judge/{pool}/?judge=YOUR-NAME" if pool else "/judge/POOL/?judge=YOUR-NAME"
        return f"<!doctype html><p>Open <code>{html.escape(target)}</code></p>"

    return app
