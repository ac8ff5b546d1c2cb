"""``loupe users`` and ``grant``: users, groups and who may see what."""

from __future__ import annotations

import click

from ..access.users import AccessError
from ..terminal import echo
from .context import _Ctx, _emit_json


def _access_call(fn):
    """Run an access-management call, turning its errors into CLI errors."""
    try:
        return fn()
    except (AccessError, LookupError, ValueError) as exc:
        raise click.ClickException(str(exc)) from exc


@click.group()
def users() -> None:
    """Users and groups of the tenant (who may see what)."""


@users.command("add")
@click.argument("name")
@click.option("--admin", is_flag=True, help="An admin sees and manages everything in the tenant.")
@click.password_option(envvar="LOUPE_NEW_PASSWORD",
                       help="The password (prompted, or $LOUPE_NEW_PASSWORD).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def users_add(obj: _Ctx, name: str, admin: bool, password: str, as_json: bool) -> None:
    """Create user NAME."""
    with obj.open() as lib:
        user = _access_call(lambda: lib.create_user(name, password, admin=admin))
    if as_json:
        _emit_json(user)
        return
    echo(f"user {user['name']} created" + (" (admin)" if admin else ""))


def _user_action(obj: _Ctx, as_json: bool, call, done: str) -> None:
    """Run a user-lifecycle Library call; print its result (JSON) or ``done``."""
    with obj.open() as lib:
        out = _access_call(lambda: call(lib))
    if as_json:
        _emit_json(out)
    else:
        echo(done.format(**out) + f" (audit #{out['audit_id']})")


@users.command("passwd")
@click.argument("name")
@click.password_option(envvar="LOUPE_NEW_PASSWORD",
                       help="The new password (prompted, or $LOUPE_NEW_PASSWORD).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def users_passwd(obj: _Ctx, name: str, password: str, as_json: bool) -> None:
    """Set a new password for user NAME and end its login sessions (its API
    tokens keep working: 'loupe users revoke-tokens NAME' ends them). Audited."""
    _user_action(obj, as_json, lambda lib: lib.set_password(name, password),
                 "password of {user} changed; {sessions_revoked} login session(s) ended")


@users.command("disable")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def users_disable(obj: _Ctx, name: str, as_json: bool) -> None:
    """Disable user NAME: it can no longer log in, and its sessions and API
    tokens stop working at once (grants and groups are kept). Audited."""
    _user_action(obj, as_json, lambda lib: lib.disable_user(name),
                 "user {user} disabled; {tokens_revoked} session(s) and token(s) revoked")


@users.command("enable")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def users_enable(obj: _Ctx, name: str, as_json: bool) -> None:
    """Let disabled user NAME log in again. Audited."""
    _user_action(obj, as_json, lambda lib: lib.enable_user(name), "user {user} enabled")


@users.command("revoke-tokens")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def users_revoke_tokens(obj: _Ctx, name: str, as_json: bool) -> None:
    """Revoke every login session and API token of user NAME. Audited."""
    _user_action(obj, as_json, lambda lib: lib.revoke_tokens(name),
                 "{tokens_revoked} session(s) and token(s) of {user} revoked")


@users.command("delete")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def users_delete(obj: _Ctx, name: str, as_json: bool) -> None:
    """Delete user NAME with its sessions, tokens, group memberships and
    grants (the assets it uploaded stay). Audited."""
    _user_action(obj, as_json, lambda lib: lib.delete_user(name), "user {user} deleted")


@users.command("group")
@click.argument("name")
@click.argument("members", nargs=-1)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def users_group(obj: _Ctx, name: str, members: tuple[str, ...], as_json: bool) -> None:
    """Create group NAME (if new) and put MEMBERS (user names) in it."""
    with obj.open() as lib:
        if not any(p["name"] == name for p in _access_call(lib.principals)):
            _access_call(lambda: lib.create_group(name))
        for member in members:
            _access_call(lambda m=member: lib.add_member(name, m))
    if as_json:
        _emit_json({"group": name, "added": list(members)})
        return
    echo(f"group {name}: {len(members)} member(s) added")


@users.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def users_list(obj: _Ctx, as_json: bool) -> None:
    """Users and groups, with every grant."""
    with obj.open() as lib:
        people, grants = _access_call(lib.principals), _access_call(lib.grants)
    if as_json:
        _emit_json({"principals": people, "grants": grants})
        return
    for p in people:
        extra = (" admin" if p["admin"] else "") + (" disabled" if p.get("disabled") else "") + (
            f" groups: {', '.join(p['groups'])}" if p["groups"] else "") + (
            f" members: {', '.join(p['members'])}" if p["members"] else "")
        echo(f"{p['kind']:5} {p['name']}{extra}")
    for g in grants:
        where = (f" (id:{g['collection_id']}{', ' + g['full_path'] if g['full_path'] else ''})"
                 if g.get("collection_id") else "")
        echo(f"grant {g['principal']} reads {g['on']} {g['target']}{where}")


@click.command()
@click.argument("principal")
@click.option("--collection", help="A collection (sub-collections included): its path, "
                                   "id:N (see 'loupe collections') or full path.")
@click.option("--asset", "asset_id", type=int, help="One asset id (every file of it).")
@click.option("--file", "file_path", help="One file, by its full path (that file only: "
                                         "how a member's upload is granted).")
@click.option("--revoke", is_flag=True, help="Take the grant back.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def grant(obj: _Ctx, principal: str, collection: str | None, asset_id: int | None,
          file_path: str | None, revoke: bool, as_json: bool) -> None:
    """Let user or group PRINCIPAL read a collection, an asset or one file."""
    with obj.open() as lib:
        _access_call(lambda: lib.grant(principal, collection=collection, asset_id=asset_id,
                                       path=file_path, revoke=revoke))
    target = (f"collection {collection}" if collection else
              f"file {file_path}" if file_path else f"asset {asset_id}")
    if as_json:
        _emit_json({"principal": principal, "collection": collection, "asset_id": asset_id,
                    "file": file_path, "granted": not revoke})
        return
    echo(f"{principal} {'may no longer' if revoke else 'may'} read {target}")
