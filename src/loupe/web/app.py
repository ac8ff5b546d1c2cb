"""The application factory: one FastAPI app = the REST API (``/api``), the
pages, and the static files, over a :class:`LibraryPool` bound to one tenant.

    >>> app = create_app("~/.loupe", pool_size=4)          # doctest: +SKIP
    >>> uvicorn.run(app, host="127.0.0.1", port=8000)       # doctest: +SKIP
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from pathlib import Path

from typing import Annotated

import psycopg
import psycopg.errors

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles

from .. import __version__
from ..library import Library
from . import api, conversation, pages, people, similar
from . import queries as wq
from ..eval.instrument import Evaluation
from ..eval.judging import judging_router
from .admission import Busy, Gate, Gates
from .auth import HASH_SLOT_COUNT, LoginRequired, secret_is_live, user_library
from .pool import LibraryPool, PoolExhausted
from .security import Guard, WebLimits
from .throttle import LoginThrottle

STATIC = Path(__file__).parent / "static"


def _evaluation(lib: Annotated[Library, Depends(user_library)]) -> Evaluation:
    """FastAPI dependency: the evaluation instrument over the user's library."""
    return Evaluation(lib)


def _judge(lib: Annotated[Library, Depends(user_library)]) -> str:
    """FastAPI dependency: the judge's name is the logged-in user's name."""
    return lib.viewer.name


def _open_library(home: str | Path | None, database_url: str | None, tenant: str,
                  limits: WebLimits) -> Library:
    """A Library for the server: :meth:`Library.open`, with
    ``limits.statement_timeout_s`` as its connection's ``statement_timeout``."""
    lib = Library.open(home, database_url=database_url, tenant=tenant)
    try:
        lib.conn.execute(wq.SET_STATEMENT_TIMEOUT,
                         {"ms": str(max(1, round(limits.statement_timeout_s * 1000)))})
    except BaseException:
        lib.close()
        raise
    return lib


def create_app(home: str | Path | None = None, *, database_url: str | None = None,
               tenant: str = "default", pool_size: int = 4,
               pool: LibraryPool | None = None, limits: WebLimits | None = None) -> FastAPI:
    """Build the app. The pool opens ``pool_size`` Libraries of ``tenant``
    (in ``home``, or on ``database_url``) when the app starts, unless a
    ready ``pool`` is given. ``limits`` (default :class:`WebLimits`) bounds
    request bodies, uploads and failed logins; :class:`~loupe.web.security.Guard`
    checks origin, login and body size before any route reads a body, and
    adds the security headers (docs/security.md). ``app.state.gates``
    (:class:`~loupe.web.admission.Gates`) are the upload, decode and
    password-hashing slots, waited for on the event loop at most
    ``limits.slot_wait_s`` (then 503 with ``Retry-After``); the upload gate
    has as many slots as the pool has upload Libraries (``pool.long_tasks``,
    or ``limits.upload_slots`` for the pool the app opens).

    Raises (at start-up): the errors of :meth:`loupe.Library.open`.
    """

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        if getattr(app.state, "pool", None) is None:
            app.state.pool = LibraryPool(
                lambda: _open_library(home, database_url, tenant, app.state.limits), pool_size,
                long_tasks=app.state.limits.upload_slots)
            owned = True
        else:
            owned = False
        try:
            yield
        finally:
            if owned:
                app.state.pool.close()
                app.state.pool = None

    # No /docs or /redoc: their pages load scripts from a CDN, which a
    # self-hosted, possibly offline install must not depend on.
    app = FastAPI(title="Loupe", version=__version__, lifespan=lifespan,
                  docs_url=None, redoc_url=None,
                  description="Search an image library by its words and its pixels, and know "
                              "whether the results are all that match. Authenticate with "
                              "`POST /api/tokens`, then send `Authorization: Bearer TOKEN`.")
    app.state.pool = pool
    app.state.limits = limits or WebLimits()
    app.state.throttle = LoginThrottle(app.state.limits)
    lim = app.state.limits
    # the scarce slots, waited for on the event loop before a worker thread
    # or a pooled Library is taken
    app.state.gates = Gates(
        uploads=Gate("uploads", pool.long_tasks if pool is not None else lim.upload_slots,
                     lim.slot_wait_s, retry_after_s=5),
        decode=Gate("decoding a picture to search by", 1, lim.slot_wait_s, retry_after_s=5),
        hashing=Gate("checking passwords", HASH_SLOT_COUNT, lim.slot_wait_s, retry_after_s=2))
    app.add_middleware(Guard, limits=app.state.limits, authenticated=secret_is_live)
    app.include_router(api.router)
    app.include_router(similar.api_router)
    app.include_router(pages.router)
    app.include_router(similar.page_router)
    app.include_router(people.api_router)
    app.include_router(people.page_router)
    app.include_router(conversation.api_router)
    app.include_router(conversation.page_router)
    # the blind judging page of the evaluation instrument (E7), for logged-in
    # users: it shows each user only the pairs it may read, records grades
    # under the user's own name, and addresses pictures by the pool's random
    # tokens (loupe.eval.judging)
    app.include_router(judging_router(_evaluation, _judge), include_in_schema=False)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.exception_handler(LoginRequired)
    async def login_required(request: Request, exc: LoginRequired):
        if request.url.path.startswith("/api/"):
            return JSONResponse({"detail": "authentication required: POST /api/tokens for a "
                                           "bearer token"}, status_code=401,
                                headers={"WWW-Authenticate": "Bearer"})
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        from urllib.parse import quote  # noqa: PLC0415

        return RedirectResponse(f"/login?next={quote(target, safe='')}", status_code=303)

    @app.exception_handler(Busy)
    async def gate_busy(request: Request, exc: Busy):
        return JSONResponse({"detail": exc.detail}, status_code=503,
                            headers={"Retry-After": str(exc.retry_after)})

    @app.exception_handler(PoolExhausted)
    async def busy(request: Request, exc: PoolExhausted):
        return JSONResponse({"detail": str(exc)}, status_code=503, headers={"Retry-After": "1"})

    @app.exception_handler(psycopg.errors.QueryCanceled)
    async def too_slow(request: Request, exc: psycopg.errors.QueryCanceled):
        # statement_timeout (WebLimits.statement_timeout_s) cancelled a
        # statement: the connection is fine and goes back to the pool
        bound = request.app.state.limits.statement_timeout_s
        return JSONResponse({"detail": f"the request's database work took longer than "
                                       f"{bound:g} s (the server's bound on one statement): "
                                       f"stopped; narrow the request or try again later"},
                            status_code=503, headers={"Retry-After": "5"})

    @app.exception_handler(psycopg.OperationalError)
    async def database_lost(request: Request, exc: psycopg.OperationalError):
        # the connection broke during the request (the database restarted):
        # the pool replaces it at its next loan (LibraryPool.lend)
        return JSONResponse({"detail": "the database is unavailable; try again"},
                            status_code=503, headers={"Retry-After": "1"})

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError):
        errors = [{k: v for k, v in e.items() if k in ("loc", "msg", "type")}
                  for e in exc.errors()]
        return JSONResponse({"detail": errors}, status_code=422)

    return app
