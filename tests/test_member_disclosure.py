"""What a member may learn of the server and of hidden collections: a hidden collection named in a scope answers exactly like one that does
not exist (library, CLI, API, web page); a member is shown no server path —
not a collection's full path, not its upload folder, not in a refusal's
reason; and a forged X-Forwarded-For does not move the login throttle of a
real ``loupe serve``. Real database, real files, the real app."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient
from imaging import exiftool_write, make_image
from weblib import web_login

import loupe
from loupe import Library
from loupe.cli import main
from loupe.scopes.search import UnknownScope
from loupe.web import create_app


@pytest.fixture
def split(lib: Library, photos: Path) -> tuple[Library, dict[str, int]]:
    """``public/`` granted to bob; ``secret/`` (a plan titled Falcon) to no
    member; a hand-made collection 'Board' holding only the secret asset."""
    make_image(photos / "public" / "cat.jpg", color=(200, 30, 30))
    plan = make_image(photos / "secret" / "plan.jpg", color=(30, 30, 200))
    exiftool_write(plan, "-XMP-dc:Title=Falcon plan")
    lib.ingest(photos)
    lib.bulk("add_to_collection", "Board", query="falcon")
    lib.create_user("bob", "bob-password")
    lib.grant("bob", collection="public")
    ids = {r[1]: r[0] for r in lib.conn.execute("SELECT id, path FROM collection")}
    return lib, ids


def _same_after_renaming(a: str, b: str, pairs: list[tuple[str, str]]) -> None:
    for old, new in pairs:
        a = a.replace(old, new)
    assert a == b


def test_a_hidden_collection_answers_like_a_missing_one(split, db_url: str, home: Path):
    lib, ids = split
    missing_id = max(ids.values()) + 100
    bob = lib.as_user("bob")
    s, b = ids["secret"], ids["Board"]
    # (hidden name, missing name, how the one is written where the other is)
    cases = [("secret", "nosuch", [("secret", "nosuch")]),
             ("Board", "Bored", [("Board", "Bored")]),
             (f"id:{s}", f"id:{missing_id}", [(f"id:{s}", f"id:{missing_id}"),
                                              (f"id {s} ", f"id {missing_id} ")]),
             (str(b), str(missing_id), [(f"'{b}'", f"'{missing_id}'"),
                                        (f"&#39;{b}&#39;", f"&#39;{missing_id}&#39;"),
                                        (f'"{b}"', f'"{missing_id}"'),
                                        (f"scope={b}", f"scope={missing_id}")])]
    # the library: the same exception text (the owner still finds the collection)
    for hidden, missing, pairs in cases:
        with pytest.raises(UnknownScope) as h:
            bob.search("falcon", scope=hidden)
        with pytest.raises(UnknownScope) as m:
            bob.search("falcon", scope=missing)
        _same_after_renaming(str(h.value), str(m.value), pairs)
    assert lib.search("falcon", scope="secret").total == 1
    assert bob.search("cat", scope="public").total == 1
    # a full server path is not resolved for a member, even of its own collection
    root = str(lib.show(bob.search("cat").hits[0].asset_id)["files"][0]["path"]).rsplit(
        "/public/", 1)[0]
    with pytest.raises(UnknownScope, match="no collection"):
        bob.search("cat", scope=root + "/public")

    # the CLI as bob: same output, same exit code
    runner = CliRunner()
    base = ["--home", str(home), "--database-url", db_url, "--user", "bob"]
    for hidden, missing, pairs in cases:
        h = runner.invoke(main, [*base, "search", "falcon", "--in", hidden, "--json"])
        m = runner.invoke(main, [*base, "search", "falcon", "--in", missing, "--json"])
        assert h.exit_code == m.exit_code != 0
        _same_after_renaming(h.output, m.output, pairs)

    # the API and the web page as bob: same status, same bytes
    with TestClient(create_app(home, database_url=db_url, pool_size=1)) as client:
        tok = client.post("/api/tokens", json={"name": "bob", "password": "bob-password"})
        auth = {"Authorization": f"Bearer {tok.json()['token']}"}
        for hidden, missing, pairs in cases:
            h = client.get("/api/search", params={"q": "falcon", "scope": hidden}, headers=auth)
            m = client.get("/api/search", params={"q": "falcon", "scope": missing}, headers=auth)
            assert h.status_code == m.status_code == 400
            _same_after_renaming(h.text, m.text, pairs)
        assert web_login(client, "bob", "bob-password").status_code == 303
        for hidden, missing, pairs in cases:
            h = client.get("/", params={"q": "falcon", "scope": hidden})
            m = client.get("/", params={"q": "falcon", "scope": missing})
            assert h.status_code == m.status_code == 200
            _same_after_renaming(h.text, m.text, pairs)
            assert "no collection" in h.text


def test_members_see_no_collection_full_path(split, db_url: str, home: Path, photos: Path):
    lib, ids = split
    bob = lib.as_user("bob")
    assert bob.collections() == [{"id": ids["public"], "path": "public", "parent_id": None,
                                  "hand_made": False, "assets": 1, "full_path": None}]
    assert [c["full_path"] for c in lib.collections() if c["path"] == "public"] == [
        str(photos.resolve() / "public")]
    res = CliRunner().invoke(main, ["--home", str(home), "--database-url", db_url,
                                    "--user", "bob", "collections"])
    assert res.exit_code == 0 and str(photos.resolve()) not in res.output
    assert res.output == f"id:{ids['public']}\tpublic\t-\t1 asset\n"
    with TestClient(create_app(home, database_url=db_url, pool_size=1)) as client:
        tok = client.post("/api/tokens", json={"name": "bob", "password": "bob-password"})
        auth = {"Authorization": f"Bearer {tok.json()['token']}"}
        r = client.get("/api/collections", headers=auth)
        assert r.status_code == 200 and str(photos.resolve()) not in r.text
        assert web_login(client, "bob", "bob-password").status_code == 303
        assert str(photos.resolve()) not in client.get("/").text


def test_an_upload_reply_names_no_server_path(split, db_url: str, home: Path, tmp_path: Path):
    """A member's upload of a good picture, a text file named .jpg, a
    truncated PNG and an empty file: the reply names files only (before, the
    reasons Pillow gave named the absolute upload folder)."""
    lib, _ = split
    good = make_image(tmp_path / "good.png", color=(1, 200, 3))
    trunc = make_image(tmp_path / "t.png", size=(300, 300), color=(9, 9, 9)).read_bytes()
    files = [("files", ("good.png", good.read_bytes(), "image/png")),
             ("files", ("notes.jpg", b"just some text, not a picture\n" * 10, "image/jpeg")),
             ("files", ("cut.png", trunc[: len(trunc) // 2], "image/png")),
             ("files", ("empty.gif", b"", "image/gif"))]
    with TestClient(create_app(home, database_url=db_url, pool_size=1)) as client:
        for user in ("bob", "admin"):
            if user == "admin":
                lib.create_user("admin", "admin-password", admin=True)
            tok = client.post("/api/tokens", json={"name": user, "password": f"{user}-password"})
            auth = {"Authorization": f"Bearer {tok.json()['token']}"}
            r = client.post("/api/upload", headers=auth, files=files)
            assert r.status_code == 200, r.text
            body = r.json()
            assert str(home) not in r.text and str(home.resolve()) not in r.text, r.text
            assert body["folder"].startswith(f"uploads/{user}/")
            refused = body["failures"] if user == "bob" else body["refused"]
            assert sorted(f["file"] for f in refused) == ["cut.png", "empty.gif", "notes.jpg"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_forged_forwarded_for_does_not_move_the_login_throttle(lib: Library, db_url: str,
                                                                  home: Path, tmp_path: Path):
    """Seven wrong passwords from 127.0.0.1, each claiming another client in
    X-Forwarded-For, against a real ``loupe serve``: the throttle counts the
    connecting address, so the right password then gets 429. Before, uvicorn
    believed the header from 127.0.0.1 and each guess was a new client. Then
    guesses from other loopback source addresses (127.0.1.x) are refused too:
    all of 127.0.0.0/8 is one client."""
    lib.create_user("admin", "admin-password", admin=True)
    port = _free_port()
    src = str(Path(loupe.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.pop("FORWARDED_ALLOW_IPS", None)
    log = open(tmp_path / "serve.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "loupe.cli", "--home", str(home),
                             "--database-url", db_url, "serve", "--port", str(port),
                             "--pool", "1"], env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(150):
            assert proc.poll() is None, (tmp_path / "serve.log").read_text()
            try:
                if httpx.get(base + "/openapi.json", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.2)
        codes = [httpx.post(base + "/api/tokens", json={"name": "admin", "password": "guess"},
                            headers={"X-Forwarded-For": f"198.51.100.{i}"}).status_code
                 for i in range(7)]
        assert codes == [401] * 6 + [429]
        r = httpx.post(base + "/api/tokens", json={"name": "admin", "password": "admin-password"},
                       headers={"X-Forwarded-For": "203.0.113.250"})
        assert r.status_code == 429
        # binding another loopback source address is the
        # same client, already past its free guesses: each guess is refused
        # or doubles the back-off (before: fresh counters, ten times 401)
        codes = []
        for i in range(10, 20):
            with httpx.Client(transport=httpx.HTTPTransport(
                    local_address=f"127.0.1.{i}")) as other:
                codes.append(other.post(base + "/api/tokens",
                                        json={"name": "admin", "password": "guess"}
                                        ).status_code)
        assert 429 in codes, codes     # (how many depends on the machine's speed: 1 s, 2 s, ...)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


def test_trusted_proxies_are_an_opt_in():
    from loupe.web.cli import proxy_options
    assert proxy_options(()) == {"proxy_headers": False, "forwarded_allow_ips": ""}
    assert proxy_options(("10.0.0.5", " 10.1.0.0/16 ")) == {
        "proxy_headers": True, "forwarded_allow_ips": "10.0.0.5,10.1.0.0/16"}
    assert "--trusted-proxy" in CliRunner().invoke(main, ["serve", "--help"]).output


