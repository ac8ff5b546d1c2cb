"""Users, groups and grants of one tenant (migration 0005).

Passwords are hashed with Argon2id (argon2-cffi's defaults, RFC 9106); the
hash string carries its own parameters, so stored hashes stay verifiable
when the defaults change (and are re-hashed on the next login).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import psycopg
from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from . import queries as q
from .viewer import Viewer

_hasher = PasswordHasher()


class UnknownUser(LookupError):
    """No user (or group) of that name in this tenant."""


class AccessError(ValueError):
    """A user, group or grant request that cannot be carried out (name taken,
    bad name, password too short, wrong kind of principal)."""


#: Shortest password accepted (NIST SP 800-63B §5.1.1.2: at least 8).
MIN_PASSWORD = 8


def _principal(conn: psycopg.Connection, tenant_id: int, name: str,
               kind: str | None = None) -> tuple[int, str, str | None, bool]:
    row = conn.execute(q.PRINCIPAL_BY_NAME, {"tenant_id": tenant_id, "name": name}).fetchone()
    if row is None or (kind and row[1] != kind):
        what = kind or "user or group"
        raise UnknownUser(f"no {what} named {name!r} in this tenant")
    return row


def _create(conn, stmt, params, name) -> int:
    try:
        with conn.transaction():
            return conn.execute(stmt, params).fetchone()[0]
    except psycopg.errors.UniqueViolation:
        raise AccessError(f"the name {name!r} is already taken in this tenant") from None
    except psycopg.errors.CheckViolation:
        raise AccessError(f"{name!r} is not a valid name: letters, digits and . _ @ -, "
                          f"at most 64, starting with a letter or digit") from None


def create_user(conn: psycopg.Connection, tenant_id: int, name: str, password: str, *,
                admin: bool = False) -> dict[str, Any]:
    """Create a user. Returns ``{"id", "name", "admin", "groups"}``.

    Raises:
        AccessError: name taken or invalid, password shorter than MIN_PASSWORD.
    """
    if len(password) < MIN_PASSWORD:
        raise AccessError(f"a password needs at least {MIN_PASSWORD} characters")
    uid = _create(conn, q.CREATE_USER, {"tenant_id": tenant_id, "name": name, "admin": admin,
                                        "password_hash": _hasher.hash(password)}, name)
    return {"id": uid, "name": name, "admin": admin, "groups": []}


def create_group(conn: psycopg.Connection, tenant_id: int, name: str) -> dict[str, Any]:
    """Create a group. Returns ``{"id", "name"}``.

    Raises:
        AccessError: name taken or invalid.
    """
    gid = _create(conn, q.CREATE_GROUP, {"tenant_id": tenant_id, "name": name}, name)
    return {"id": gid, "name": name}


def add_member(conn: psycopg.Connection, tenant_id: int, group: str, user: str) -> None:
    """Put ``user`` in ``group`` (no-op if already there).

    Raises:
        UnknownUser: no such group or user.
    """
    gid = _principal(conn, tenant_id, group, "group")[0]
    uid = _principal(conn, tenant_id, user, "user")[0]
    conn.execute(q.ADD_MEMBER, {"group_id": gid, "user_id": uid})


def viewer_for(conn: psycopg.Connection, tenant_id: int, name: str) -> Viewer:
    """The :class:`Viewer` of user ``name``: its id and its groups' ids.

    Raises:
        UnknownUser: no such user in this tenant.
    """
    uid, _kind, _hash, admin = _principal(conn, tenant_id, name, "user")
    groups = conn.execute(q.USER_GROUPS, {"user_id": uid}).fetchall()
    return Viewer(see_all=admin, principals=(uid, *[g[0] for g in groups]), user_id=uid,
                  name=name, admin=admin, groups=tuple(g[1] for g in groups))


def authenticate(conn: psycopg.Connection, tenant_id: int, name: str,
                 password: str) -> Viewer | None:
    """The user's :class:`Viewer` if ``password`` is right, else None (an
    unknown name and a wrong password answer the same)."""
    row = conn.execute(q.PRINCIPAL_BY_NAME, {"tenant_id": tenant_id, "name": name}).fetchone()
    if row is None or row[1] != "user" or not row[2]:
        _hasher.hash(password)   # same work either way: no user enumeration by timing
        return None
    try:
        _hasher.verify(row[2], password)
    except (VerificationError, InvalidHashError):
        return None
    if _hasher.check_needs_rehash(row[2]):
        conn.execute(q.SET_PASSWORD, {"id": row[0], "password_hash": _hasher.hash(password)})
    return viewer_for(conn, tenant_id, name)


def principals(conn: psycopg.Connection, tenant_id: int) -> list[dict[str, Any]]:
    """Users and groups: ``{"name", "kind", "admin", "groups", "members"}``."""
    return [{"name": r[0], "kind": r[1], "admin": r[2], "groups": list(r[3]),
             "members": list(r[4])}
            for r in conn.execute(q.PRINCIPALS, {"tenant_id": tenant_id})]


def grant(conn: psycopg.Connection, tenant_id: int, principal: str, *,
          collection_id: int | None = None, asset_id: int | None = None,
          revoke: bool = False) -> None:
    """Grant (or revoke) read access to a collection (with its
    sub-collections) or to one asset. ``asset.readers`` follows in the same
    transaction (triggers of migration 0005).

    Raises:
        UnknownUser: no such principal.
        AccessError: neither or both of ``collection_id`` / ``asset_id``; an
            asset of another tenant.
    """
    if (collection_id is None) == (asset_id is None):
        raise AccessError("grant a collection or an asset (one of them)")
    pid = _principal(conn, tenant_id, principal)[0]
    with conn.transaction():
        if collection_id is not None:
            stmt = q.REVOKE_COLLECTION if revoke else q.GRANT_COLLECTION
            conn.execute(stmt, {"collection_id": collection_id, "principal_id": pid})
        else:
            if not revoke and conn.execute(q.CAN_READ, {
                    "asset_id": asset_id, "tenant_id": tenant_id, "see_all": True,
                    "principals": []}).fetchone() is None:
                raise AccessError(f"no asset {asset_id} in this tenant")
            stmt = q.REVOKE_ASSET if revoke else q.GRANT_ASSET
            conn.execute(stmt, {"asset_id": asset_id, "principal_id": pid,
                                "tenant_id": tenant_id})


def grants(conn: psycopg.Connection, tenant_id: int) -> list[dict[str, Any]]:
    """Every grant: ``{"principal", "kind", "on", "target"}``."""
    return [{"principal": r[0], "kind": r[1], "on": r[2], "target": r[3]}
            for r in conn.execute(q.GRANTS, {"tenant_id": tenant_id})]


def set_dates(conn: psycopg.Connection, tenant_id: int, asset_ids: list[int],
              *, embargo: datetime | None | bool = False,
              rights_expiry: datetime | None | bool = False) -> int:
    """Set (or clear with None) the embargo and/or the usage-rights expiry of
    assets; an argument left False is not touched. Returns the number of
    assets of this tenant updated (others are ignored)."""
    n = 0
    with conn.transaction():
        if embargo is not False:
            n = conn.execute(q.SET_EMBARGO, {"tenant_id": tenant_id, "ids": asset_ids,
                                             "until": embargo}).rowcount
        if rights_expiry is not False:
            n = conn.execute(q.SET_RIGHTS_EXPIRY, {"tenant_id": tenant_id, "ids": asset_ids,
                                                   "until": rights_expiry}).rowcount
    return n
