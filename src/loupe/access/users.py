"""Users, groups and grants of one tenant (migration 0005).

Passwords are hashed with Argon2id (argon2-cffi's defaults, RFC 9106); the
hash string carries its own parameters, so stored hashes stay verifiable
when the defaults change (and are re-hashed on the next login).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from psycopg.types.json import Jsonb

import psycopg
from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from . import queries as q
from .viewer import Viewer
from ..scopes.search import collection_id

_hasher = PasswordHasher()


class UnknownUser(LookupError):
    """No user (or group) of that name in this tenant."""


class UserDisabled(UnknownUser):
    """The user exists but is disabled: it cannot log in and its tokens do not
    authenticate (a subclass of :class:`UnknownUser`, so every caller that
    turns an unknown user away turns a disabled one away too)."""


class AccessError(ValueError):
    """A user, group or grant request that cannot be carried out (name taken,
    bad name, password too short, wrong kind of principal)."""


class SelfAction(AccessError):
    """An admin tried to disable or delete itself (another admin, or the
    owner on the command line, may)."""


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
                admin: bool = False, actor: Viewer | None = None) -> dict[str, Any]:
    """Create a user; an admin sees everything in the tenant. Returns
    ``{"id", "name", "admin", "groups"}``. With ``actor``, the audit log
    records it (``user_create``) in the same transaction.

    Raises:
        AccessError: name taken or invalid, password shorter than MIN_PASSWORD.
    """
    if len(password) < MIN_PASSWORD:
        raise AccessError(f"a password needs at least {MIN_PASSWORD} characters")
    with conn.transaction():
        uid = _create(conn, q.CREATE_USER, {"tenant_id": tenant_id, "name": name, "admin": admin,
                                            "password_hash": _hasher.hash(password)}, name)
        if actor is not None:
            _audit(conn, tenant_id, actor, "user_create", name, {"admin": admin})
    return {"id": uid, "name": name, "admin": admin, "groups": []}


def create_group(conn: psycopg.Connection, tenant_id: int, name: str, *,
                 actor: Viewer | None = None) -> dict[str, Any]:
    """Create a group. Returns ``{"id", "name"}``. With ``actor``, audited
    (``group_create``).

    Raises:
        AccessError: name taken or invalid.
    """
    with conn.transaction():
        gid = _create(conn, q.CREATE_GROUP, {"tenant_id": tenant_id, "name": name}, name)
        if actor is not None:
            _audit(conn, tenant_id, actor, "group_create", name, {})
    return {"id": gid, "name": name}


def add_member(conn: psycopg.Connection, tenant_id: int, group: str, user: str, *,
               actor: Viewer | None = None) -> None:
    """Put ``user`` in ``group`` (no-op if already there). With ``actor``,
    audited (``group_add_member``, target the group).

    Raises:
        UnknownUser: no such group or user.
    """
    gid = _principal(conn, tenant_id, group, "group")[0]
    uid = _principal(conn, tenant_id, user, "user")[0]
    with conn.transaction():
        conn.execute(q.ADD_MEMBER, {"tenant_id": tenant_id, "group_id": gid, "user_id": uid})
        if actor is not None:
            _audit(conn, tenant_id, actor, "group_add_member", group, {"user": user})


def viewer_for(conn: psycopg.Connection, tenant_id: int, name: str) -> Viewer:
    """The :class:`Viewer` of user ``name``: its id and its groups' ids.

    Raises:
        UnknownUser: no such user in this tenant.
    """
    uid, _kind, _hash, admin = _principal(conn, tenant_id, name, "user")
    if conn.execute(q.USER_DISABLED, {"id": uid}).fetchone()[0]:
        raise UserDisabled(f"user {name!r} is disabled")
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
    try:
        return viewer_for(conn, tenant_id, name)
    except UserDisabled:
        return None


def principals(conn: psycopg.Connection, tenant_id: int) -> list[dict[str, Any]]:
    """Users and groups: ``{"name", "kind", "admin", "disabled", "groups", "members"}``."""
    return [{"name": r[0], "kind": r[1], "admin": r[2], "disabled": r[3], "groups": list(r[4]),
             "members": list(r[5])}
            for r in conn.execute(q.PRINCIPALS, {"tenant_id": tenant_id})]


def grant(conn: psycopg.Connection, tenant_id: int, principal: str, *,
          collection_id: int | None = None, asset_id: int | None = None,
          path: str | None = None, revoke: bool = False) -> None:
    """Grant (or revoke) read access to a collection (with its
    sub-collections), to one asset (every file of it), or to one file of
    the tenant named by its full ``path`` (that file only: its path, sidecar,
    metadata and words, and the asset's pixels; not the asset's other files,
    migration 0027). ``asset.readers`` and the files' readers follow in the
    same transaction (triggers of migrations 0005, 0011, 0027).

    Raises:
        UnknownUser: no such principal.
        AccessError: not exactly one of ``collection_id`` / ``asset_id`` /
            ``path``; an asset or file of another tenant, or none.
    """
    if sum(x is not None for x in (collection_id, asset_id, path)) != 1:
        raise AccessError("grant a collection, an asset or a file (one of them)")
    pid = _principal(conn, tenant_id, principal)[0]
    with conn.transaction():
        if collection_id is not None:
            stmt = q.REVOKE_COLLECTION if revoke else q.GRANT_COLLECTION
            conn.execute(stmt, {"collection_id": collection_id, "principal_id": pid,
                                "tenant_id": tenant_id})
        elif path is not None:
            row = conn.execute(q.FILE_BY_PATH, {"tenant_id": tenant_id, "path": path}).fetchone()
            if row is None:
                raise AccessError(f"no file {path!r} in this tenant")
            conn.execute(q.REVOKE_FILE if revoke else q.GRANT_FILE,
                         {"file_id": row[0], "principal_id": pid, "tenant_id": tenant_id})
        else:
            if not revoke and conn.execute(q.CAN_READ, {
                    "asset_id": asset_id, "tenant_id": tenant_id, "see_all": True,
                    "principals": []}).fetchone() is None:
                raise AccessError(f"no asset {asset_id} in this tenant")
            stmt = q.REVOKE_ASSET if revoke else q.GRANT_ASSET
            conn.execute(stmt, {"asset_id": asset_id, "principal_id": pid,
                                "tenant_id": tenant_id})


def grant_named(conn: psycopg.Connection, tenant_id: int, principal: str, *,
                collection: str | None = None, asset_id: int | None = None,
                path: str | None = None, revoke: bool = False,
                actor: Viewer | None = None) -> None:
    """:func:`grant` with the collection named as a user writes it, as for a
    search's scope (path, ``id:42`` or full path, sub-collections included:
    :func:`loupe.scopes.search.collection_id`); what
    :meth:`loupe.Library.grant` does for an admin. ``path``: one file's full
    path, as ``loupe users list`` shows it. With ``actor``, the audit log
    records it (``grant`` / ``revoke``, target the principal, value what was
    granted) in the same transaction.

    Raises:
        AccessError: not exactly one of ``collection`` / ``asset_id`` /
            ``path``; no such file.
        UnknownUser: no such user or group.
        loupe.scopes.search.UnknownScope: no such collection, or a path that
            names several (the message lists their ids).
    """
    coll = collection_id(conn, tenant_id, collection) if collection else None
    with conn.transaction():
        grant(conn, tenant_id, principal, collection_id=coll, asset_id=asset_id, path=path,
              revoke=revoke)
        if actor is not None:
            what = {k: v for k, v in (("collection", collection), ("asset_id", asset_id),
                                      ("path", path)) if v is not None}
            _audit(conn, tenant_id, actor, "revoke" if revoke else "grant", principal, what)


def grants(conn: psycopg.Connection, tenant_id: int) -> list[dict[str, Any]]:
    """Every grant: ``{"principal", "kind", "on", "target", "collection_id",
    "full_path"}``; ``on`` is ``collection``, ``asset`` (target: its id) or
    ``file`` (target: the file's full path, migration 0027); the last two
    for a collection grant, else None."""
    return [{"principal": r[0], "kind": r[1], "on": r[2], "target": r[3],
             "collection_id": r[4], "full_path": r[5]}
            for r in conn.execute(q.GRANTS, {"tenant_id": tenant_id})]


def set_dates(conn: psycopg.Connection, tenant_id: int, asset_ids: list[int],
              *, embargo: datetime | None | bool = False,
              rights_expiry: datetime | None | bool = False) -> int:
    """Set (or clear with None) the embargo and/or the usage-rights expiry of
    assets; an argument left False is not touched. Members do not see an
    asset until its embargo ends, nor from the moment its usage rights
    expire; the owner and admins always do. Returns the number of
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


# -- the user lifecycle ---------------------------------------------------------

#: What each action on users, groups and grants is called in the audit log.
USER_ACTIONS = ("user_password", "user_disable", "user_enable", "user_delete",
                "user_revoke_tokens", "user_create", "group_create", "group_add_member",
                "grant", "revoke")


def _audit(conn: psycopg.Connection, tenant_id: int, actor: Viewer, action: str, user: str,
           value: dict[str, Any]) -> int:
    assert action in USER_ACTIONS, action
    return conn.execute(q.AUDIT_USER_ACTION, {
        "tenant_id": tenant_id, "principal_id": actor.user_id, "actor": actor.name,
        "action": action, "value": Jsonb(value), "target": user}).fetchone()[0]


def _target(conn: psycopg.Connection, tenant_id: int, actor: Viewer, name: str,
            verb: str) -> int:
    uid = _principal(conn, tenant_id, name, "user")[0]
    if actor.user_id == uid and verb:
        raise SelfAction(f"you cannot {verb} yourself ({name}): ask another admin, "
                          f"or the owner on the command line")
    return uid


def set_password(conn: psycopg.Connection, tenant_id: int, actor: Viewer, name: str,
                 password: str) -> dict[str, Any]:
    """Give user ``name`` a new password and end its login sessions (its API
    tokens stay: revoke them with :func:`revoke_tokens`); audited.

    Returns ``{"user", "sessions_revoked", "audit_id"}``.

    Raises:
        UnknownUser: no such user. AccessError: password shorter than MIN_PASSWORD.
    """
    if len(password) < MIN_PASSWORD:
        raise AccessError(f"a password needs at least {MIN_PASSWORD} characters")
    uid = _target(conn, tenant_id, actor, name, "")
    with conn.transaction():
        conn.execute(q.SET_PASSWORD, {"id": uid, "password_hash": _hasher.hash(password)})
        n = conn.execute(q.REVOKE_TOKENS, {"id": uid, "tenant_id": tenant_id,
                                           "kinds": ["session"]}).rowcount
        audit_id = _audit(conn, tenant_id, actor, "user_password", name,
                          {"sessions_revoked": n})
    return {"user": name, "sessions_revoked": n, "audit_id": audit_id}


def set_disabled(conn: psycopg.Connection, tenant_id: int, actor: Viewer, name: str,
                 disabled: bool) -> dict[str, Any]:
    """Disable (or enable again) user ``name``; audited. Disabling revokes
    every session and API token of the user at once, and the user can no
    longer log in; its grants and groups are kept for when it is enabled.

    Returns ``{"user", "disabled", "tokens_revoked", "audit_id"}``.

    Raises:
        UnknownUser: no such user. AccessError: an admin disabling itself.
    """
    uid = _target(conn, tenant_id, actor, name, "disable" if disabled else "")
    with conn.transaction():
        conn.execute(q.SET_DISABLED, {"id": uid, "disabled": disabled})
        n = conn.execute(q.REVOKE_TOKENS, {"id": uid, "tenant_id": tenant_id,
                                           "kinds": ["session", "api"]}).rowcount if disabled else 0
        audit_id = _audit(conn, tenant_id, actor, "user_disable" if disabled else "user_enable",
                          name, {"tokens_revoked": n})
    return {"user": name, "disabled": disabled, "tokens_revoked": n, "audit_id": audit_id}


def revoke_tokens(conn: psycopg.Connection, tenant_id: int, actor: Viewer,
                  name: str) -> dict[str, Any]:
    """Revoke every login session and API token of user ``name``; audited.

    Returns ``{"user", "tokens_revoked", "audit_id"}``.

    Raises:
        UnknownUser: no such user.
    """
    uid = _target(conn, tenant_id, actor, name, "")
    with conn.transaction():
        n = conn.execute(q.REVOKE_TOKENS, {"id": uid, "tenant_id": tenant_id,
                                           "kinds": ["session", "api"]}).rowcount
        audit_id = _audit(conn, tenant_id, actor, "user_revoke_tokens", name,
                          {"tokens_revoked": n})
    return {"user": name, "tokens_revoked": n, "audit_id": audit_id}


def delete_user(conn: psycopg.Connection, tenant_id: int, actor: Viewer,
                name: str) -> dict[str, Any]:
    """Delete user ``name`` with its sessions, tokens, group memberships and
    grants; audited (the audit row keeps the name). Assets it uploaded stay
    in the library (and on disk), visible to admins and to whoever is granted them.

    Returns ``{"user", "deleted", "audit_id"}``.

    Raises:
        UnknownUser: no such user. AccessError: an admin deleting itself.
    """
    uid = _target(conn, tenant_id, actor, name, "delete")
    with conn.transaction():
        audit_id = _audit(conn, tenant_id, actor, "user_delete", name, {})
        conn.execute(q.DELETE_USER, {"id": uid})
    return {"user": name, "deleted": True, "audit_id": audit_id}
