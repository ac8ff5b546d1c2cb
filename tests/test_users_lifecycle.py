"""The user lifecycle without SQL: reset a password, disable and
enable, revoke tokens, delete — from the CLI, the Library and the admin REST
API, every action audited; a disabled user's token gets 401 at once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from loupe import Library
from loupe.access.users import AccessError, SelfAction
from loupe.cli import main
from loupe.web import create_app
from loupe.web.auth import SESSION_COOKIE, issue_token


def _tokens(lib: Library, user: str) -> list[str]:
    return [r[0] for r in lib.conn.execute(
        "SELECT w.kind FROM web_token w JOIN principal p ON p.id = w.user_id "
        "WHERE p.name = %s ORDER BY w.kind", (user,))]


@pytest.fixture
def people(lib: Library) -> Library:
    lib.create_user("admin", "admin-password", admin=True)
    lib.create_user("alice", "alice-password")
    lib.create_user("bob", "bob-password")
    lib.create_group("team")
    lib.add_member("team", "alice")
    return lib


@pytest.fixture
def client(people: Library, db_url: str, home: Path):
    with TestClient(create_app(home, database_url=db_url, pool_size=2)) as c:
        yield c


def _bearer(client: TestClient, name: str) -> dict[str, str]:
    r = client.post("/api/tokens", json={"name": name, "password": f"{name}-password"})
    assert r.status_code == 200, r.text
    return {"Authorization": f"Bearer {r.json()['token']}"}


def test_a_disabled_users_token_and_session_get_401_at_once(client: TestClient,
                                                            people: Library):
    admin, alice = _bearer(client, "admin"), _bearer(client, "alice")
    session = issue_token(people, people.as_user("alice").user["id"], "session")["token"]
    assert client.get("/api/me", headers=alice).json()["name"] == "alice"
    client.cookies.set(SESSION_COOKIE, session)
    assert client.get("/api/me").json()["name"] == "alice"
    client.cookies.clear()

    r = client.post("/api/users/alice/disable", headers=admin)
    assert r.status_code == 200
    assert {k: v for k, v in r.json().items() if k != "audit_id"} == {
        "user": "alice", "disabled": True, "tokens_revoked": 2}
    assert client.get("/api/me", headers=alice).status_code == 401
    client.cookies.set(SESSION_COOKIE, session)
    assert client.get("/api/me").status_code == 401
    client.cookies.clear()
    assert client.post("/api/tokens", json={"name": "alice", "password": "alice-password"}
                       ).status_code == 401
    assert people.authenticate("alice", "alice-password") is None

    assert client.post("/api/users/alice/enable", headers=admin).json()["disabled"] is False
    assert client.get("/api/me", headers=alice).status_code == 401   # revoked for good
    assert client.get("/api/me", headers=_bearer(client, "alice")).json()["groups"] == ["team"]


def test_disabled_is_enforced_even_for_a_token_left_in_place(client: TestClient,
                                                             people: Library):
    """The viewer of every request is resolved through the user: a disabled user
    is refused whether or not its tokens were deleted (e.g. one minted in the
    same instant)."""
    alice = _bearer(client, "alice")
    people.conn.execute("UPDATE principal SET disabled_at = now() WHERE name = 'alice'")
    assert client.get("/api/me", headers=alice).status_code == 401


def test_only_admins_manage_users_and_not_themselves(client: TestClient):
    admin, alice = _bearer(client, "admin"), _bearer(client, "alice")
    for method, url in [("post", "/api/users/bob/disable"), ("post", "/api/users/bob/enable"),
                        ("post", "/api/users/bob/revoke-tokens"), ("delete", "/api/users/bob")]:
        assert getattr(client, method)(url, headers=alice).status_code == 403, url
    assert client.post("/api/users/bob/password", headers=alice,
                       json={"password": "x" * 12}).status_code == 403
    assert client.post("/api/users/admin/disable", headers=admin).status_code == 403
    assert client.delete("/api/users/admin", headers=admin).status_code == 403
    assert client.post("/api/users/nobody/disable", headers=admin).status_code == 404
    assert client.post("/api/users/team/disable", headers=admin).status_code == 404  # a group
    r = client.post("/api/users/bob/password", headers=admin, json={"password": "short"})
    assert r.status_code == 400 and "at least 8" in r.json()["detail"]
    # nothing changed for bob
    assert client.get("/api/me", headers=_bearer(client, "bob")).json()["name"] == "bob"


def test_api_password_reset_delete_and_audit(client: TestClient, people: Library):
    admin, bob = _bearer(client, "admin"), _bearer(client, "bob")
    r = client.post("/api/users/bob/password", headers=admin,
                    json={"password": "a new bob password"})
    assert r.status_code == 200 and r.json()["sessions_revoked"] == 0
    assert people.authenticate("bob", "bob-password") is None
    assert people.authenticate("bob", "a new bob password")["name"] == "bob"
    assert client.get("/api/me", headers=bob).status_code == 200      # API tokens stay
    assert client.post("/api/users/bob/revoke-tokens", headers=admin).json()[
        "tokens_revoked"] == 1
    assert client.get("/api/me", headers=bob).status_code == 401
    assert client.delete("/api/users/bob", headers=admin).json()["deleted"] is True
    assert client.post("/api/tokens", json={"name": "bob", "password": "a new bob password"}
                       ).status_code == 401
    audit = client.get("/api/audit", headers=admin).json()
    assert [(a["actor"], a["action"], a["target"], a["value"]) for a in audit[:3]] == [
        ("admin", "user_delete", "bob", {}),
        ("admin", "user_revoke_tokens", "bob", {"tokens_revoked": 1}),
        ("admin", "user_password", "bob", {"sessions_revoked": 0}),
    ]


def test_library_refuses_members_and_self_actions(people: Library):
    with pytest.raises(AccessError, match="alice is not an admin"):
        people.as_user("alice").disable_user("bob")
    with pytest.raises(SelfAction):
        people.as_user("admin").delete_user("admin")
    assert people.as_user("admin").set_password("admin", "another-admin-pw")["user"] == "admin"


def test_cli_passwd_disable_enable_revoke_delete_with_audit(people: Library, db_url: str,
                                                           home: Path):
    runner = CliRunner()
    base = ["--home", str(home), "--database-url", db_url]

    def loupe(*args: str, env: dict[str, str] | None = None) -> dict:
        res = runner.invoke(main, [*base, *args, "--json"], env=env, catch_exceptions=False)
        assert res.exit_code == 0, res.output
        return json.loads(res.output)

    alice_id = people.as_user("alice").user["id"]
    issue_token(people, alice_id, "session")
    issue_token(people, alice_id, "api")

    out = loupe("users", "passwd", "alice", env={"LOUPE_NEW_PASSWORD": "alice-second-pw"})
    assert (out["user"], out["sessions_revoked"]) == ("alice", 1)
    assert _tokens(people, "alice") == ["api"]
    assert people.authenticate("alice", "alice-password") is None
    assert people.authenticate("alice", "alice-second-pw")["name"] == "alice"

    assert loupe("users", "disable", "alice")["tokens_revoked"] == 1
    assert _tokens(people, "alice") == []
    listed = {p["name"]: p for p in loupe("users", "list")["principals"]}
    assert (listed["alice"]["disabled"], listed["bob"]["disabled"]) == (True, False)
    assert people.authenticate("alice", "alice-second-pw") is None
    refused = runner.invoke(main, [*base, "--user", "alice", "search", "x"])
    assert refused.exit_code == 1 and "user 'alice' is disabled" in refused.output
    assert loupe("users", "enable", "alice")["disabled"] is False
    assert people.authenticate("alice", "alice-second-pw")["name"] == "alice"

    issue_token(people, alice_id, "api")
    assert loupe("users", "revoke-tokens", "alice")["tokens_revoked"] == 1
    assert loupe("users", "delete", "alice") == {"user": "alice", "deleted": True,
                                                 "audit_id": loupe("audit")[0]["id"]}
    assert [p["name"] for p in loupe("users", "list")["principals"]] == [
        "admin", "bob", "team"]
    assert [(a["actor"], a["action"], a["target"]) for a in loupe("audit")[:6]] == [
        ("owner", "user_delete", "alice"), ("owner", "user_revoke_tokens", "alice"),
        ("owner", "user_enable", "alice"), ("owner", "user_disable", "alice"),
        ("owner", "user_password", "alice"), ("owner", "group_add_member", "team")]
    # creating users and groups is audited too (an admin's every change to who may log in is accountable)
    assert [(a["action"], a["target"], a["value"]) for a in loupe("audit", "-n", "50")[-4:]] == [
        ("group_create", "team", {}), ("user_create", "bob", {"admin": False}),
        ("user_create", "alice", {"admin": False}), ("user_create", "admin", {"admin": True})]
    text = runner.invoke(main, [*base, "audit"]).output
    assert "owner: user_disable alice {\"tokens_revoked\": 1}" in text
    missing = runner.invoke(main, [*base, "users", "disable", "nobody"])
    assert missing.exit_code == 1 and "no user named 'nobody'" in missing.output
