"""Who is asking: login sessions (cookie) and API bearer tokens.

Both are 32 random bytes (``secrets.token_urlsafe``) handed to the client
once; the database keeps only their SHA-256 (table ``web_token``, migration
0007). Passwords are checked by :meth:`loupe.Library.authenticate` (argon2).
Every request resolves its secret to a user of the server's tenant and works
through ``Library.as_user(name)``, so search, assets, thumbnails, originals,
collections and bulk actions all apply that user's visibility (SPEC P1, P3).
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterator
from dataclasses import dataclass

from fastapi import Request

from ..access.users import UnknownUser
from ..library import Library
from . import queries as wq

SESSION_COOKIE = "loupe_session"
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


def issue_token(lib: Library, user_id: int, kind: str, *, label: str = "",
                ttl_s: int | None = None) -> dict:
    """Create a session (``kind='session'``) or API token for ``user_id``.

    Returns ``{"token", "id", "created_at", "expires_at"}``; ``token`` is the
    only copy of the secret.
    """
    token = secrets.token_urlsafe(32)
    tid, created, expires = lib.conn.execute(wq.CREATE_TOKEN, {
        "tenant_id": lib.tenant_id, "user_id": user_id, "kind": kind, "label": label,
        "sha": hash_secret(token), "ttl_s": ttl_s}).fetchone()
    return {"token": token, "id": tid, "created_at": created.isoformat(),
            "expires_at": expires.isoformat() if expires else None}


def revoke_token(lib: Library, token: str) -> None:
    """Forget a session or token (logout)."""
    lib.conn.execute(wq.DELETE_TOKEN, {"tenant_id": lib.tenant_id, "sha": hash_secret(token)})


def presented_secret(request: Request) -> str | None:
    """The bearer token of the Authorization header, else the session cookie."""
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    return request.cookies.get(SESSION_COOKIE) or None


def user_library(request: Request) -> Iterator[Library]:
    """FastAPI dependency: a pooled Library bound to the request's user.

    Raises:
        LoginRequired: no secret, or one that is unknown, expired or revoked.
    """
    secret = presented_secret(request)
    if not secret or "\x00" in secret or len(secret) > 200:
        raise LoginRequired()
    with request.app.state.pool.lend() as base:
        row = base.conn.execute(wq.TOKEN_USER, {"tenant_id": base.tenant_id,
                                                "sha": hash_secret(secret)}).fetchone()
        if row is None:
            raise LoginRequired()
        try:
            lib = base.as_user(row[1])
        except UnknownUser:
            raise LoginRequired() from None
        request.state.owner = base  # for server policy acting as the owner (upload grants)
        request.state.principal = Principal(user_id=row[0], name=row[1],
                                            admin=bool((lib.user or {}).get("admin")), via=row[2])
        yield lib
