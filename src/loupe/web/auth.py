"""Who is asking: login sessions (cookie) and API bearer tokens.

Both are 32 random bytes (``secrets.token_urlsafe``) handed to the client
once; the database keeps only their SHA-256 (table ``web_token``, migration
0007). Passwords are checked by :meth:`loupe.Library.authenticate` (argon2).
Every request resolves its secret to a user of the server's tenant and works
through ``Library.as_user(name)``, so search, assets, thumbnails, originals,
collections and bulk actions all apply that user's visibility (P1, P3).
"""

from __future__ import annotations

import hashlib
import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Annotated

import anyio
from fastapi import Depends, Request

from argon2.exceptions import InvalidHashError, VerificationError

from ..access import queries as aq
from ..access.users import UnknownUser, _hasher
from ..library import Library
from . import queries as wq
from .security import SESSION_COOKIE, WebLimits  # noqa: F401 - SESSION_COOKIE: the cookie's name
from .pool import PoolExhausted
#: Login sessions last 14 days; API tokens until revoked unless given a TTL.
SESSION_TTL_S = 14 * 24 * 3600


class LoginRequired(Exception):
    """The request carries no live session or token (401 for the API, a
    redirect to the login page for pages)."""


@dataclass
class Principal:
    """The authenticated user of a request: ``user_id``, ``name``, ``admin``,
    and how it authenticated (``session`` or ``api``)."""

    user_id: int
    name: str
    admin: bool
    via: str


def hash_secret(secret: str) -> bytes:
    """SHA-256 of a presented secret (what ``web_token.token_sha256`` holds)."""
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).digest()


def token_cap(kind: str, limits: WebLimits | None = None) -> int:
    """How many live secrets of ``kind`` (``session`` or ``api``) a user may
    hold: ``limits.max_sessions_per_user`` or ``max_api_tokens_per_user``
    (default :class:`WebLimits`)."""
    limits = limits or WebLimits()
    return limits.max_sessions_per_user if kind == "session" else limits.max_api_tokens_per_user


def issue_token(lib: Library, user_id: int, kind: str, *, label: str = "",
                ttl_s: int | None = None, keep: int | None = None) -> dict:
    """Create a session (``kind='session'``) or API token for ``user_id``,
    then revoke that user's oldest live secrets of the same kind past
    ``keep`` (default :func:`token_cap`: 50 each) and its expired ones:
    a user's live tokens are capped, the oldest giving way (a correct password x150 made 150 tokens, uncapped).

    Returns ``{"token", "id", "created_at", "expires_at", "revoked"}``;
    ``token`` is the only copy of the secret, ``revoked`` how many older
    secrets of the user were revoked by the cap.
    """
    token = secrets.token_urlsafe(32)
    tid, created, expires = lib.conn.execute(wq.CREATE_TOKEN, {
        "tenant_id": lib.tenant_id, "user_id": user_id, "kind": kind, "label": label,
        "sha": hash_secret(token), "ttl_s": ttl_s}).fetchone()
    gone = lib.conn.execute(wq.TRIM_TOKENS, {
        "tenant_id": lib.tenant_id, "user_id": user_id, "kind": kind,
        "keep": token_cap(kind) if keep is None else max(1, keep)}).fetchall()
    return {"token": token, "id": tid, "created_at": created.isoformat(),
            "expires_at": expires.isoformat() if expires else None, "revoked": len(gone)}


def revoke_token(lib: Library, token: str) -> None:
    """Forget a session or token (logout)."""
    lib.conn.execute(wq.DELETE_TOKEN, {"tenant_id": lib.tenant_id, "sha": hash_secret(token)})


def presented_secret(request: Request) -> str | None:
    """The bearer token of the Authorization header, else the session cookie.

    A request whose Authorization header names the Bearer scheme is a bearer
    call, and only its token counts: a blank one is no login, never a fall
    back to the cookie. The Guard exempts bearer calls from the Origin and
    CSRF checks, and "Bearer <NBSP>" (a blank h11 does not strip) with the
    session cookie was a cookie login without them.
    Another scheme (a proxy's ``Basic``) leaves the cookie in use: the Guard
    checks such requests like cookie ones."""
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "bearer":
        return value.strip() or None
    return request.cookies.get(SESSION_COOKIE) or None


def user_library(request: Request) -> Iterator[Library]:
    """FastAPI dependency: a pooled Library bound to the request's user.

    Use it as :data:`UserLib`: the Library is given back as soon as the
    route function returns, before the response is sent, so a client that
    reads its response slowly (or never) holds no database connection.

    Raises:
        LoginRequired: no secret, or one that is unknown, expired or revoked.
    """
    with lend_user_library(request) as lib:
        yield lib


#: The route parameter of a user-bound pooled Library. ``scope="function"``:
#: the Library goes back when the route function returns, not after the
#: response has been sent (FastAPI's default for a dependency with
#: ``yield``), so a download streams, and a slow reader waits, without a
#: connection (else four unread downloads of one member hold the four pooled
#: connections and every other user is answered 503). A route must
#: therefore finish its database work before it returns; what it streams is
#: opened (and checked) inside it.
UserLib = Annotated[Library, Depends(user_library, scope="function")]


@contextmanager
def lend_user_library(request: Request) -> Iterator[Library]:
    """:func:`user_library` as a context manager, for a route that gives the
    pooled Library back before its long part (the upload). Sets
    ``request.state.owner`` (the unrestricted pooled Library, for server
    policy such as upload grants) and ``request.state.principal``.

    The Library is taken within the user's share of the pool
    (:meth:`loupe.web.pool.LibraryPool.admit`): one user's requests never
    hold every pooled connection.

    Raises:
        LoginRequired: no secret, or one that is unknown, expired or revoked.
        loupe.web.pool.UserBusy: the user's other requests held its share
            for the pool's whole wait (503).
    """
    secret = presented_secret(request)
    if not secret or "\x00" in secret or len(secret) > 200:
        raise LoginRequired()

    def who(base: Library) -> int:
        row = base.conn.execute(wq.TOKEN_USER, {"tenant_id": base.tenant_id,
                                                "sha": hash_secret(secret)}).fetchone()
        if row is None:
            raise LoginRequired()
        request.state.token_row = row
        return row[0]

    with request.app.state.pool.admit(who) as (base, _user_id):
        row = request.state.token_row
        try:
            lib = base.as_user(row[1])
        except UnknownUser:
            raise LoginRequired() from None
        request.state.owner = base  # for server policy acting as the owner (upload grants)
        request.state.principal = Principal(user_id=row[0], name=row[1],
                                            admin=bool((lib.user or {}).get("admin")), via=row[2])
        yield lib


def secret_is_live(scope: dict) -> bool | None:
    """Whether the request of ASGI ``scope`` presents a live session or token
    (blocking: one indexed look-up on a pooled connection). Used by
    :class:`loupe.web.security.Guard` before a request body is read. When
    every connection is busy (or the database is down) it answers None: not
    known, and the Guard answers 503 before the body. It used to answer True
    and let the route answer, so while the pool was busy an unauthenticated
    request's body (up to 256 MiB) was read before its 401."""
    secret = presented_secret(Request(scope))
    if not secret or "\x00" in secret or len(secret) > 200:
        return False
    try:
        with scope["app"].state.pool.lend() as base:
            return base.conn.execute(wq.TOKEN_USER, {"tenant_id": base.tenant_id,
                                                     "sha": hash_secret(secret)}
                                     ).fetchone() is not None
    except PoolExhausted:
        return None


#: How many password hashes may be computed at once (argon2 uses about
#: 64 MiB and one core each): a burst of logins cannot starve searches. The
#: slots are a :class:`~loupe.web.admission.Gate` (``app.state.gates.hashing``),
#: waited for on the event loop.
HASH_SLOT_COUNT = max(1, (os.cpu_count() or 2) // 2)


def client_of(request: Request) -> str:
    """The client's address as the server sees it: the connecting address;
    behind a reverse proxy, the proxy's, unless ``loupe serve
    --trusted-proxy ADDRESS`` names it (then the address it forwards).
    ``X-Forwarded-For`` from anyone else is ignored."""
    return request.client.host if request.client else "unknown"


def _principal_row(pool, name: str) -> tuple | None:
    """``(id, kind, password_hash, disabled)`` of principal ``name``
    (blocking: one pooled connection, given back before returning)."""
    with pool.lend() as lib:
        return lib.conn.execute(wq.LOGIN_PRINCIPAL, {"tenant_id": lib.tenant_id,
                                                     "name": name}).fetchone()


def _check_password(row: tuple | None, password: str) -> tuple[bool, str | None]:
    """``(correct?, new hash or None)``: argon2 (blocking, CPU); an unknown
    name costs one hash like a wrong password (no user enumeration by timing).
    A disabled user's correct password is not correct here: it is hashed and
    checked like any other, then answered (and throttled) as a failure, so
    neither the answer nor the throttle tells it from a wrong one."""
    if row is None or row[1] != "user" or not row[2]:
        _hasher.hash(password)
        return False, None
    try:
        ok = _hasher.verify(row[2], password)
    except (VerificationError, InvalidHashError):
        return False, None
    if row[3]:
        return False, None
    return ok, (_hasher.hash(password) if ok and _hasher.check_needs_rehash(row[2]) else None)


def _logged_in(pool, row: tuple, name: str, new_hash: str | None) -> dict | None:
    """After a correct password: store a rehash, read the user (blocking)."""
    with pool.lend() as lib:
        if new_hash:
            lib.conn.execute(aq.SET_PASSWORD, {"id": row[0], "password_hash": new_hash})
        try:
            return lib.as_user(name).user
        except UnknownUser:
            return None


async def login(request: Request, name: str, password: str) -> dict | None:
    """Check a user name and password, throttled, with the password hash
    verified *outside* the database pool and *outside* the worker threads'
    queue: a hashing slot is waited for on the event loop
    (``app.state.gates.hashing``, at most ``WebLimits.slot_wait_s``), then
    the hash is fetched on a pooled connection (in a worker thread), the
    connection is given back, argon2 runs in a worker thread, and only a
    correct password borrows a connection again (to rehash if needed and
    read the user's groups).
    Before, a login blocked its worker thread on the hashing slot: 150
    concurrent correct logins took every thread and all users waited 26 s.

    Returns the user (``{"id", "name", "admin", "groups"}``) or None (an
    unknown name and a wrong password answer the same, after the same work).

    Raises:
        loupe.web.throttle.Throttled: too many failures of this account
            from this client, or from this client, or too many logins of
            this account in the window (before any hashing).
        loupe.web.admission.Busy: no hashing slot came free in time.
    """
    throttle = request.app.state.throttle
    client = client_of(request)
    throttle.check(name, client)
    if "\x00" in name or "\x00" in password:
        throttle.failed(name, client)
        return None
    pool = request.app.state.pool
    async with request.app.state.gates.hashing.slot():
        # only now a worker thread: a flood of logins waits as coroutines,
        # not as 150 thread jobs queued ahead of other users' requests
        throttle.begin(name, client)    # again, now that it is this login's turn
        ok, new_hash, checked = False, None, False
        try:
            row = await anyio.to_thread.run_sync(_principal_row, pool, name)
            ok, new_hash = await anyio.to_thread.run_sync(_check_password, row, password)
            checked = True
        finally:
            if ok:
                throttle.succeeded(name, client, begun=True)
            elif checked:
                throttle.failed(name, client, begun=True)
            else:     # the database failed (503), not the password: no failure counted
                throttle.abandon(name)
    if not ok:
        return None
    return await anyio.to_thread.run_sync(_logged_in, pool, row, name, new_hash)
