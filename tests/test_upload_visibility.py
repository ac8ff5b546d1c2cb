"""What a member sees of its uploads and of the hits it is shown: an upload is
granted as its files, never as the asset, so a private file of the same bytes
ingested later stays the owner's (and the migration that turns older asset
grants of uploads into file grants); a member is shown no score, whose
statistics count hidden assets. Real database, real files, real ExifTool, the
real app, the real CLI."""

from __future__ import annotations

import json
import re
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient
from imaging import make_image
from weblib import web_login

from loupe import Library
from loupe.cli import main
from loupe.db import migrate
from loupe.db.migrate import available
from loupe.web import create_app
from loupe.web.uploads import upload_folder_name

SIDECAR = ('<?xpacket begin="" id="W5M0MpCehiHzreSzNTczkc9d"?>'
           '<x:xmpmeta xmlns:x="adobe:ns:meta/">'
           '<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">'
           '<rdf:Description rdf:about="" xmlns:dc="http://purl.org/dc/elements/1.1/">'
           '<dc:title><rdf:Alt><rdf:li xml:lang="x-default">Project Falcon acquisition board'
           '</rdf:li></rdf:Alt></dc:title>'
           '<dc:subject><rdf:Bag><rdf:li>falconkw</rdf:li></rdf:Bag></dc:subject>'
           '<dc:creator><rdf:Seq><rdf:li>Eve Strategist</rdf:li></rdf:Seq></dc:creator>'
           '</rdf:Description></rdf:RDF></x:xmpmeta><?xpacket end="w"?>')
#: Words of the private file that a member must never meet.
PRIVATE_WORDS = ("falcon", "Falcon", "falconkw", "Eve", "Strategist", "secret", "private")


@pytest.fixture
def upload_then_private_copy(lib: Library, photos: Path, home: Path, db_url: str, tmp_path: Path):
    """bob (a member granted nothing) uploads harbour-crane.jpg; then the
    owner ingests private/secret.jpg, the same bytes, with a sidecar titled
    "Project Falcon acquisition board" (keyword falconkw, creator Eve
    Strategist). Yields ``(client, bob's headers, asset id, bytes)``."""
    make_image(photos / "public" / "cat.jpg", color=(200, 30, 30))
    lib.ingest(photos)
    lib.create_user("bob", "bob-password")
    data = make_image(tmp_path / "up" / "harbour-crane.jpg", color=(12, 99, 140)).read_bytes()
    app = create_app(home, database_url=db_url, pool_size=2)
    with TestClient(app) as client:
        tok = client.post("/api/tokens", json={"name": "bob", "password": "bob-password"})
        bob = {"Authorization": f"Bearer {tok.json()['token']}"}
        r = client.post("/api/upload", headers=bob,
                        files=[("files", ("harbour-crane.jpg", data, "image/jpeg"))])
        assert (r.status_code, r.json()["stored"]) == (200, 1), r.text
        [asset_id] = [h["asset_id"] for h in client.get(
            "/api/search", params={"q": "harbour"}, headers=bob).json()["hits"]]
        secret = photos / "private" / "secret.jpg"
        secret.parent.mkdir()
        secret.write_bytes(data)
        (photos / "private" / "secret.jpg.xmp").write_text(SIDECAR, encoding="utf-8")
        out = lib.ingest(photos)
        assert out.duplicates == 1 and out.failures == []
        yield client, bob, asset_id, data


def _no_private_word(text: str) -> None:
    for word in PRIVATE_WORDS:
        i = text.find(word)
        assert i < 0, (word, text[max(0, i - 300):i + 100])


def test_a_later_copy_of_an_upload_stays_the_owners(upload_then_private_copy, lib: Library, home: Path,
                                                         db_url: str):
    client, bob_h, asset_id, _ = upload_then_private_copy
    # the owner sees the asset whole: both files, found by the sidecar's words
    owner_view = lib.show(asset_id)
    assert sorted(Path(f["path"]).name for f in owner_view["files"]) == [
        "harbour-crane.jpg", "secret.jpg"]
    assert [h.asset_id for h in lib.search("falcon").hits] == [asset_id]
    assert lib.show(asset_id)["documents"][0]["title"] == "Project Falcon acquisition board"

    # bob, through the library
    bob = lib.as_user("bob")
    assert bob.search("falcon").total == 0
    assert bob.search("falconkw").total == 0 and bob.search("strategist").total == 0
    [hit] = bob.search("harbour").hits
    assert hit.asset_id == asset_id and Path(hit.path).name == "harbour-crane.jpg"
    assert hit.title == "harbour-crane.jpg"
    shown = bob.show(asset_id)
    assert [Path(f["path"]).name for f in shown["files"]] == ["harbour-crane.jpg"]
    assert [f["collection"] for f in shown["files"]] == [None]
    assert [d["title"] for d in shown["documents"]] == [""]
    assert [d["creator"] for d in shown["documents"]] == [""]
    _no_private_word(json.dumps(shown))
    assert [c["path"] for c in bob.collections()] == []
    # a grant on a file: listed as such, the asset itself is not granted
    assert [(g["principal"], g["on"], Path(g["target"]).name) for g in lib.grants()] == [
        ("bob", "file", "harbour-crane.jpg")]

    # bob, through the API
    r = client.get("/api/search", params={"q": "falcon"}, headers=bob_h).json()
    assert (r["total"], r["hits"]) == (0, [])
    a = client.get(f"/api/assets/{asset_id}", headers=bob_h).json()
    assert [f["path"] for f in a["files"]] == ["harbour-crane.jpg"]
    assert [f["sidecar"] for f in a["files"]] == [None]
    assert a["collections"] == []
    _no_private_word(json.dumps(a))
    assert client.get("/api/collections", headers=bob_h).json() == []

    # bob, through the CLI
    base = ["--home", str(home), "--database-url", db_url, "--user", "bob"]
    runner = CliRunner()
    out = runner.invoke(main, base + ["search", "falcon", "--json"])
    assert out.exit_code == 0, out.output
    assert (json.loads(out.output)["total"], json.loads(out.output)["hits"]) == (0, [])
    out = runner.invoke(main, base + ["show", str(asset_id), "--json"])
    assert out.exit_code == 0, out.output
    assert [Path(f["path"]).name for f in json.loads(out.output)["files"]] == [
        "harbour-crane.jpg"]
    _no_private_word(out.output)
    out = runner.invoke(main, base + ["collections", "--json"])
    assert (out.exit_code, json.loads(out.output)) == (0, [])

    # bob, through the pages
    client.cookies.clear()
    assert web_login(client, "bob", "bob-password").status_code == 303
    assert "No results for “falcon”." in client.get("/?q=falcon").text
    page = client.get(f"/assets/{asset_id}").text
    assert "harbour-crane.jpg" in page
    _no_private_word(page)
    client.cookies.clear()


def test_file_grants_revoke_and_cli(upload_then_private_copy, lib: Library, home: Path, db_url: str):
    """A file grant is listed and taken back by the file's path (CLI)."""
    _client, _bob_h, asset_id, _ = upload_then_private_copy
    [upload] = [f["path"] for f in lib.show(asset_id)["files"]
                if Path(f["path"]).name == "harbour-crane.jpg"]
    base = ["--home", str(home), "--database-url", db_url]
    runner = CliRunner()
    out = runner.invoke(main, base + ["users", "list"])
    assert f"grant bob reads file {upload}" in out.output
    out = runner.invoke(main, base + ["grant", "bob", "--file", upload, "--revoke"])
    assert (out.exit_code, out.output) == (0, f"bob may no longer read file {upload}\n")
    assert lib.grants() == []
    assert lib.as_user("bob").search("harbour").total == 0
    out = runner.invoke(main, base + ["grant", "bob", "--file", "/no/such.jpg"])
    assert out.exit_code == 1 and "no file '/no/such.jpg' in this tenant" in out.output


# -- no score for a member ----------------------------------------------------------

def test_a_member_is_shown_no_score_anywhere(upload_then_private_copy, lib: Library, home: Path, db_url: str):
    client, bob_h, asset_id, _ = upload_then_private_copy
    # the owner's hits carry the BM25F score
    [own] = lib.search("harbour").hits
    assert own.score is not None and own.score > 0
    assert own.explain["lexical"]["score"] == own.score
    # the library
    [hit] = lib.as_user("bob").search("harbour").hits
    assert (hit.rank, hit.asset_id, hit.score, hit.explain["lexical"]) == (
        1, asset_id, None, {"rank": 1, "score": None})
    # the API
    body = client.get("/api/search", params={"q": "harbour"}, headers=bob_h).json()
    [h] = body["hits"]
    assert (h["score"], h["explain"]["lexical"], h["why"]) == (
        None, {"rank": 1, "score": None}, "r=1;b=1;lexical=1")
    # the conversation lane searches through the same entry
    ask = client.post("/api/conversations", json={"sentence": "harbour"}, headers=bob_h)
    assert ask.status_code == 200, ask.text
    assert [(x["asset_id"], x["score"]) for x in ask.json()["search"]["hits"]] == [
        (asset_id, None)]
    # the CLI (--json, and the table with --explain)
    base = ["--home", str(home), "--database-url", db_url, "--user", "bob"]
    runner = CliRunner()
    out = runner.invoke(main, base + ["search", "harbour", "--json"])
    [j] = json.loads(out.output)["hits"]
    assert (j["score"], j["explain"]["lexical"]["score"]) == (None, None)
    out = runner.invoke(main, base + ["search", "harbour", "--explain"])
    assert out.exit_code == 0 and "bm25f" not in out.output
    assert re.search(r"^\s*1\s+1\s+–\s+%d\s" % asset_id, out.output, re.M), out.output
    # the pages: the tile's "why" code carries the rank only, no score
    assert web_login(client, "bob", "bob-password").status_code == 303
    page = client.get("/?q=harbour").text
    assert re.findall(r"why=([^&\"]+)", page) == ["r%3D1%3Bb%3D1%3Blexical%3D1"]
    client.cookies.clear()


# -- the migration of existing upload grants ---------------------------------------------

def _insert_file(conn, asset_id: int, source_id: int, path: str, rel: str,
                 collection_id: int | None = None) -> int:
    return conn.execute(
        "INSERT INTO asset_file (tenant_id, asset_id, source_id, collection_id, path, rel_path,"
        " byte_size, mtime_ns, metadata, raw_metadata) VALUES (1, %s, %s, %s, %s, %s, 1, 1,"
        " '{}', '{}') RETURNING id", (asset_id, source_id, collection_id, path, rel)
    ).fetchone()[0]


def test_0027_turns_upload_asset_grants_into_file_grants(pg_admin_url: str, tmp_path):
    """A library at schema 0026 whose uploads were granted as assets: after
    0027, each upload's grant is a grant on the uploaded file (current
    folder names, hashed names with '@', and folders named before upload folders
    were hashed per user), the private copy of the same bytes reaches nobody, and an
    asset grant an admin gave by hand on an asset with no upload stays."""
    import uuid

    from psycopg.conninfo import make_conninfo

    name = "loupe_mig27_" + uuid.uuid4().hex[:8]
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    url = make_conninfo(pg_admin_url, dbname=name)
    h = "/srv/home"
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            assert migrate(conn, target=26)[-1] == "0026_stored_filter_values.sql"
            users = {}
            for user in ("bob", "ann@x.org", "carl@y"):
                users[user] = conn.execute(
                    "INSERT INTO principal (tenant_id, kind, name, password_hash) VALUES"
                    " (1, 'user', %s, 'x') RETURNING id", (user,)).fetchone()[0]
            folders = {"bob": upload_folder_name("bob"),
                       "ann@x.org": upload_folder_name("ann@x.org"),
                       "carl@y": "carl_y"}   # as named before names were hashed (safe_filename)
            assert folders["ann@x.org"].startswith("ann_x.org@")
            src_priv = conn.execute("INSERT INTO source (tenant_id, root_path) VALUES"
                                    " (1, '/photos') RETURNING id").fetchone()[0]
            coll = conn.execute("INSERT INTO collection (tenant_id, source_id, name, path)"
                                " VALUES (1, %s, 'private', 'private') RETURNING id",
                                (src_priv,)).fetchone()[0]
            files, assets = {}, {}
            for i, user in enumerate(users, 1):
                root = f"{h}/uploads/{folders[user]}/20261201T10000{i}Z-a1b2c{i}"
                src = conn.execute("INSERT INTO source (tenant_id, root_path) VALUES (1, %s)"
                                   " RETURNING id", (root,)).fetchone()[0]
                aid = conn.execute(
                    "INSERT INTO asset (tenant_id, content_sha256, byte_size, media_type, width,"
                    " height) VALUES (1, %s, 1, 'image/jpeg', 1, 1) RETURNING id",
                    (bytes([i]),)).fetchone()[0]
                assets[user] = aid
                files[user] = _insert_file(conn, aid, src, f"{root}/up{i}.jpg", f"up{i}.jpg")
                files[user + " private"] = _insert_file(conn, aid, src_priv,
                                                        f"/photos/private/p{i}.jpg",
                                                        f"private/p{i}.jpg", coll)
                conn.execute("INSERT INTO asset_grant (asset_id, principal_id) VALUES (%s, %s)",
                             (aid, users[user]))
            # a grant by hand on an asset with no upload of that user: kept
            hand = conn.execute(
                "INSERT INTO asset (tenant_id, content_sha256, byte_size, media_type, width,"
                " height) VALUES (1, '\\x09', 1, 'image/jpeg', 1, 1) RETURNING id").fetchone()[0]
            files["hand"] = _insert_file(conn, hand, src_priv, "/photos/private/hand.jpg",
                                         "private/hand.jpg", coll)
            conn.execute("INSERT INTO asset_grant (asset_id, principal_id) VALUES (%s, %s)",
                         (hand, users["bob"]))
            before = dict(conn.execute("SELECT id, readers FROM asset_file"))
            assert before[files["bob private"]] == [users["bob"]]   # as 0026 left them

            assert migrate(conn) == [n for v, n, _ in available() if v > 26]
            readers = dict(conn.execute("SELECT id, readers FROM asset_file"))
            for user, uid in users.items():
                assert readers[files[user]] == [uid], user
                assert readers[files[user + " private"]] == [], user
                assert conn.execute("SELECT readers, doc_readers FROM asset WHERE id = %s",
                                    (assets[user],)).fetchone() == ([uid], [])
            assert readers[files["hand"]] == [users["bob"]]
            assert sorted(conn.execute("SELECT file_id, principal_id FROM file_grant")) == \
                sorted((files[u], uid) for u, uid in users.items())
            assert conn.execute("SELECT asset_id, principal_id FROM asset_grant").fetchall() == [
                (hand, users["bob"])]
    finally:
        with psycopg.connect(pg_admin_url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def test_the_order_of_two_own_documents_still_compares_dfs(
        lib: Library, photos: Path):
    """What hiding a member's scores leaves (docs/security.md): with no score shown,
    the ORDER of two of a member's own documents still follows the tenant's
    statistics. A holds "falconkw refw refw", B "falconkw falconkw refw":
    the query "falconkw refw" ranks A first while refw is at most as common
    as falconkw over the whole tenant, hidden assets included. Three hidden
    assets hold falconkw (df 5 with A and B); with refw in k more of bob's
    own documents (df 2 + k), A leads for k <= 3 (at k = 3 the dfs are equal,
    the scores too, and the tie goes to the lower asset id, A) and B from
    k = 4: one reference document per unit of df, i.e. about df uploads and
    a binary search of queries find a hidden df exactly."""
    from imaging import exiftool_write

    for i in range(3):
        exiftool_write(make_image(photos / "hidden" / f"h{i}.png", color=(60 * i, 40, 40)),
                       "-XMP-dc:Subject=falconkw")
    a = make_image(photos / "bob" / "a.jpg", color=(9, 1, 1))
    exiftool_write(a, "-XMP-dc:Title=falconkw refw refw")
    b = make_image(photos / "bob" / "b.jpg", color=(9, 2, 1))
    exiftool_write(b, "-XMP-dc:Title=falconkw falconkw refw")
    lib.ingest(photos)
    lib.create_user("bob", "bob-password")
    lib.grant("bob", collection="bob")
    bob = lib.as_user("bob")
    ids = {Path(r[0]).stem: r[1]
           for r in lib.conn.execute("SELECT rel_path, asset_id FROM asset_file")}
    order = {}
    for k in range(0, 6):
        if k:
            exiftool_write(make_image(photos / "bob" / f"r{k}.png", color=(9, 9, 40 * k)),
                           "-XMP-dc:Title=refw")
            lib.ingest(photos)
        hits = [h.asset_id for h in bob.search("falconkw refw").hits
                if h.asset_id in (ids["a"], ids["b"])]
        order[k] = "A" if hits[0] == ids["a"] else "B"
        assert all(h.score is None for h in bob.search("falconkw refw").hits)
    assert lib.conn.execute("SELECT df FROM lexicon_term WHERE term = 'falconkw'"
                            ).fetchone() == (5,)
    assert order == {0: "A", 1: "A", 2: "A", 3: "A", 4: "B", 5: "B"}
