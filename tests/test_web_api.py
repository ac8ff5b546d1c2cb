"""The REST API and the pages over HTTP (FastAPI's TestClient, in process)
against the real database and a library ingested from real files
(tests/weblib.py): authentication, search with totals and verdicts, scopes,
paging, visibility (404 for what a user may not see), bulk confirmation,
upload, status; and schemathesis over /openapi.json finding no 500."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import psycopg
import pytest
from fastapi.testclient import TestClient
from psycopg.conninfo import make_conninfo

from loupe import Library
from loupe.web import create_app
from loupe.web.security import WebLimits
from loupe.web.words import bulk_sentence, explain_code, explain_sentences, verdict_sentence
from weblib import N_SUNSETS, build_photos, page_csrf, web_login


def _fresh_db(pg_admin_url: str, template_db: str) -> tuple[str, str]:
    name = "loupe_w_" + uuid.uuid4().hex[:12]
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name} TEMPLATE {template_db}")
    return name, make_conninfo(pg_admin_url, dbname=name)


def populate(home: Path, url: str, photos: Path) -> dict[str, int]:
    """Ingest the fixture files; users: ``admin`` (admin), ``alice`` (member
    of group ``travellers``, granted the ``travel`` collection), ``bob``
    (granted nothing). Returns asset ids by file stem."""
    with Library.open(home, database_url=url) as lib:
        lib.ingest(build_photos(photos))
        lib.create_user("admin", "admin-password", admin=True)
        lib.create_user("alice", "alice-password")
        lib.create_user("bob", "bob-password")
        lib.create_group("travellers")
        lib.add_member("travellers", "alice")
        lib.grant("travellers", collection="travel")
        ids = {}
        for r in lib.conn.execute("SELECT rel_path, asset_id FROM asset_file"):
            ids[Path(r[0]).stem] = r[1]
        return ids


@pytest.fixture(scope="module")
def site(pg_admin_url, template_db, tmp_path_factory):
    """One library for the read-only tests: ``(client, asset ids by stem, tokens by user)``."""
    tmp = tmp_path_factory.mktemp("web")
    name, url = _fresh_db(pg_admin_url, template_db)
    ids = populate(tmp / "home", url, tmp / "photos")
    # the fuzzing logs admin in once per DELETE case, hundreds of times a
    # minute: no logins-per-minute throttle and no token cap here, or the
    # shared tokens below would be revoked as the oldest (both are tested
    # in test_web_floods)
    app = create_app(tmp / "home", database_url=url, pool_size=2,
                     limits=WebLimits(account_logins_per_window=10**6,
                                      max_api_tokens_per_user=10**6))
    with TestClient(app) as client:
        tokens = {u: client.post("/api/tokens", json={"name": u, "password": f"{u}-password"}
                                 ).json()["token"] for u in ("admin", "alice", "bob")}
        yield client, ids, {u: {"Authorization": f"Bearer {t}"} for u, t in tokens.items()}
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture
def fresh_site(db_url, home, tmp_path):
    """A library of its own for tests that change it."""
    ids = populate(home, db_url, tmp_path / "photos")
    app = create_app(home, database_url=db_url, pool_size=2)
    with TestClient(app) as client:
        def auth(user: str) -> dict[str, str]:
            tok = client.post("/api/tokens", json={"name": user, "password": f"{user}-password"})
            return {"Authorization": f"Bearer {tok.json()['token']}"}
        yield client, ids, auth


def test_the_verdict_and_the_ranking_in_plain_words():
    assert verdict_sentence("x", 1240, True, "complete") == "All 1,240 results."
    assert verdict_sentence("x", 1, True, "complete") == "1 result — the only one."
    assert verdict_sentence("madrid", 0, True, "complete") == "No results for “madrid”."
    assert verdict_sentence("x", 1000, False, "truncated") == \
        "At least 1,000 results — narrow the search to act on all of them."
    assert verdict_sentence("x", 1953, True, "truncated", 1000) == \
        "1,953 results, of which the first 1,000 can be shown — narrow the search to act " \
        "on all of them."
    assert verdict_sentence("chetah", 2, False, "unknown", 2, {"chetah": "cheetah"}) == \
        "About 2 results (searched “cheetah” for “chetah”), not proven complete — acting " \
        "on all of them needs a confirmation."
    code = explain_code(3, 2, {"lexical": {"rank": 1, "score": 4.91276},
                               "text": {"rank": 3, "distance": 0.52937}})
    assert code == "r=3;b=2;lexical=1,4.913;text=3,0.529"
    assert explain_sentences(code) == [
        "Rank 3 in this search.", "Phrase bonus: the title holds the query.",
        "Word lane (BM25F): rank 1, score 4.913.",
        "Text lane (meaning of the metadata): rank 3, cosine distance 0.529."]
    assert explain_code(31, 0, {"lexical": {"rank": None, "score": 0.9}, "band": True}) == \
        "r=31;b=0;lexical=,0.900;band"
    assert explain_sentences("r=x;<script>") == []


def test_every_api_endpoint_needs_a_token(site):
    client, ids, h = site
    for path in ["/api/me", "/api/search?q=cat", f"/api/assets/{ids['cat-01']}",
                 f"/api/assets/{ids['cat-01']}/thumbnail", f"/api/assets/{ids['cat-01']}/original",
                 "/api/collections", "/api/models", "/api/status"]:
        r = client.get(path)
        assert r.status_code == 401, path
        assert r.headers["www-authenticate"] == "Bearer"
        assert client.get(path, headers={"Authorization": "Bearer not-a-token"}).status_code == 401
    assert client.post("/api/bulk", json={"action": "add_keyword", "value": "x", "q": "cat"}
                       ).status_code == 401
    assert client.post("/api/tokens", json={"name": "alice", "password": "wrong"}
                       ).status_code == 401
    assert client.post("/api/tokens", json={"name": "nobody", "password": "x"}).status_code == 401
    me = client.get("/api/me", headers=h["alice"]).json()
    assert (me["name"], me["admin"], me["tenant"]) == ("alice", False, "default")
    # a token can be revoked by its holder
    tok = client.post("/api/tokens", json={"name": "alice", "password": "alice-password"}).json()
    mine = {"Authorization": f"Bearer {tok['token']}"}
    assert client.get("/api/me", headers=mine).status_code == 200
    assert client.delete("/api/tokens/current", headers=mine).status_code == 204
    assert client.get("/api/me", headers=mine).status_code == 401


def test_search_total_verdict_and_paging(site):
    client, ids, h = site
    r = client.get("/api/search", params={"q": "sunset", "limit": 24}, headers=h["admin"])
    assert r.status_code == 200
    page1 = r.json()
    assert (page1["total"], page1["total_exact"], page1["verdict"]) == (N_SUNSETS, True, "complete")
    assert page1["verdict_text"] == "All 30 results."
    assert [x["rank"] for x in page1["hits"]] == list(range(1, 25))
    page2 = client.get("/api/search", params={"q": "sunset", "limit": 24, "offset": 24},
                       headers=h["admin"]).json()
    assert [x["rank"] for x in page2["hits"]] == list(range(25, 31))
    got = {x["asset_id"] for x in page1["hits"] + page2["hits"]}
    assert got == {ids[f"lisbon-sunset-{i:02d}"] for i in range(1, N_SUNSETS + 1)}
    first = page1["hits"][0]
    assert first["thumbnail_url"] == f"/api/assets/{first['asset_id']}/thumbnail"
    assert first["bonus"] == 1  # the document (file name) holds the query
    assert first["why"] == f"r=1;b=1;lexical=1,{first['score']:.3f}"


def test_no_results_is_an_answer(site):
    client, _, h = site
    body = client.get("/api/search", params={"q": "madrid"}, headers=h["admin"]).json()
    assert (body["total"], body["verdict"], body["hits"]) == (0, "complete", [])
    assert body["verdict_text"] == "No results for “madrid”."


def test_scope_searches_inside_a_collection(site):
    client, ids, h = site
    body = client.get("/api/search", params={"q": "bridge", "scope": "travel/porto"},
                      headers=h["admin"]).json()
    assert [x["asset_id"] for x in body["hits"]] == [ids["porto-bridge"]]
    assert (body["total"], body["verdict"], body["scope"]) == (1, "complete", "travel/porto")
    body = client.get("/api/search", params={"q": "bridge", "scope": "animals"},
                      headers=h["admin"]).json()
    assert (body["total"], body["verdict_text"]) == (0, "No results for “bridge”.")
    r = client.get("/api/search", params={"q": "bridge", "scope": "no/such"}, headers=h["admin"])
    assert r.status_code == 400 and "no collection 'no/such'" in r.json()["detail"]


def test_visibility_and_404_for_what_a_user_may_not_see(site):
    client, ids, h = site
    # alice sees the travel collection only (granted to her group)
    assert client.get("/api/search", params={"q": "sunset"}, headers=h["alice"]).json()["total"] == 30
    body = client.get("/api/search", params={"q": "cat"}, headers=h["alice"]).json()
    assert (body["total"], body["hits"]) == (0, [])
    assert client.get("/api/search", params={"q": "cat"}, headers=h["admin"]).json()["total"] == 3
    # bob sees nothing at all
    assert client.get("/api/search", params={"q": "sunset"}, headers=h["bob"]).json()["total"] == 0
    cat, bridge = ids["cat-01"], ids["porto-bridge"]
    missing = max(ids.values()) + 1000
    for suffix in ("", "/thumbnail", "/original"):
        hidden = client.get(f"/api/assets/{cat}{suffix}", headers=h["alice"])
        absent = client.get(f"/api/assets/{missing}{suffix}", headers=h["alice"])
        assert (hidden.status_code, hidden.json()) == (404, {"detail": "no such asset"})
        assert (absent.status_code, absent.json()) == (404, {"detail": "no such asset"})
        assert client.get(f"/api/assets/{cat}{suffix}", headers=h["admin"]).status_code == 200
        assert client.get(f"/api/assets/{bridge}{suffix}", headers=h["alice"]).status_code == 200
    thumb = client.get(f"/api/assets/{bridge}/thumbnail", headers=h["alice"])
    assert thumb.headers["content-type"] == "image/webp" and thumb.content[:4] == b"RIFF"
    orig = client.get(f"/api/assets/{bridge}/original", headers=h["alice"])
    assert orig.headers["content-type"] == "image/jpeg"
    assert orig.content == (Path(client.get(f"/api/assets/{bridge}", headers=h["admin"])
                                 .json()["files"][0]["path"])).read_bytes()


def test_asset_detail(site):
    client, ids, h = site
    a = client.get(f"/api/assets/{ids['porto-bridge']}", headers=h["alice"]).json()
    assert a["collections"] == ["travel/porto"]
    assert a["thumbnail"] == f"/api/assets/{ids['porto-bridge']}/thumbnail"
    doc = a["documents"][0]
    assert (doc["title"], doc["creator"]) == ("Dom Luís bridge at dusk", "Ana Costa")


def test_collections_count_visible_members(site):
    client, _, h = site
    admin = {c["path"]: c["assets"] for c in client.get("/api/collections", headers=h["admin"]).json()}
    alice = {c["path"]: c["assets"] for c in client.get("/api/collections", headers=h["alice"]).json()}
    assert admin["animals/cats"] == 3 and admin["travel/lisbon"] == 30
    assert alice.get("animals/cats", 0) == 0 and alice["travel/lisbon"] == 30


def test_status_lanes_runs_and_failures(site):
    client, _, h = site
    s = client.get("/api/status", headers=h["admin"]).json()
    assert [(x["lane"], x["on"]) for x in s["lanes"]] == [("lexical", True), ("image", False),
                                                          ("text", False)]
    assert s["lanes"][1]["text"].startswith("image search off: no image model installed — "
                                            "install an OpenCLIP export")
    assert len(s["ingest_runs"]) == 1 and s["ingest_runs"][0]["new_assets"] == 36
    assert s["failures"] == [] and s["stats"]["assets"] == 36
    member = client.get("/api/status", headers=h["alice"]).json()
    assert set(member) == {"lanes", "admin"} and member["admin"] is False
    assert client.get("/api/models", headers=h["alice"]).json() == []


def test_status_says_how_to_turn_the_image_lane_on(fresh_site, db_url, home, tmp_path):
    from tinymodels import build_clip

    client, _, auth = fresh_site
    h = auth("admin")
    with Library.open(home, database_url=db_url) as lib:
        lib.install_model(build_clip(tmp_path / "clip-src"), name="clip")
    image = client.get("/api/status", headers=h).json()["lanes"][1]
    assert image == {"lane": "image", "on": False, "model": None,
                     "text": "image search off: no model serves the image lane — run 'loupe "
                             "models use clip --lane image' (installed and able: clip)"}
    with Library.open(home, database_url=db_url) as lib:
        lib.use_model("clip", "image")
    s = client.get("/api/status", headers=h).json()
    assert s["lanes"][1] == {"lane": "image", "on": True, "model": "clip",
                             "text": "image search on: model clip"}
    assert s["vectors_waiting"] == {"image": 36}
    assert client.get("/api/models", headers=h).json() == [
        {"name": "clip", "kind": "clip-onnx", "dims": 4, "lanes": ["image"]}]


def test_bad_input_is_a_4xx_with_a_reason(site):
    client, _, h = site
    r = client.get("/api/search", params={"q": "a\x00b"}, headers=h["admin"])
    assert (r.status_code, r.json()["detail"]) == (400, "q must not contain NUL characters")
    assert client.get("/api/search", params={"q": "x", "limit": 0}, headers=h["admin"]).status_code == 422
    assert client.get("/api/search", params={"q": "x" * 1001}, headers=h["admin"]).status_code == 422
    r = client.get("/api/search", params={"q": "x", "lang": "xx"}, headers=h["admin"])
    assert r.status_code == 400 and "not a language of this library" in r.json()["detail"]
    assert client.get("/api/assets/99999999999999999999", headers=h["admin"]).status_code == 404
    assert client.get("/api/assets/abc", headers=h["admin"]).status_code == 422
    assert client.get("/api/assets/0", headers=h["admin"]).status_code == 404


def test_truncated_verdict_and_bulk_confirmation(fresh_site, db_url, home):
    client, ids, auth = fresh_site
    with Library.open(home, database_url=db_url) as lib:
        lib.set_lexical_settings(keep_cap=10)
    h = auth("admin")
    body = client.get("/api/search", params={"q": "sunset"}, headers=h).json()
    assert (body["verdict"], body["total"]) == ("truncated", 30)
    assert body["verdict_text"] == verdict_sentence("sunset", 30, body["total_exact"],
                                                    "truncated", body["reachable"])
    assert "narrow the search to act on all of them" in body["verdict_text"]
    # not complete: refused until confirmed, and nothing changed
    ask = {"action": "add_keyword", "value": "goldenhour", "q": "sunset"}
    r = client.post("/api/bulk", json=ask, headers=h)
    assert r.status_code == 409
    assert (r.json()["verdict"], r.json()["total"]) == ("truncated", 30)
    # the confirmation names what the match rule would change (not "the 201
    # results" of an action that changes 7)
    assert r.json()["detail"].endswith(
        " Confirm to apply it to the 10 assets of the 10 the search can reach that hold "
        "every query term.")
    assert client.get("/api/search", params={"q": "goldenhour"}, headers=h).json()["total"] == 0
    r = client.post("/api/bulk", json={**ask, "confirm": True}, headers=h)
    assert r.status_code == 200
    done = r.json()
    assert done["verdict"] == "truncated" and done["audit_id"] is not None
    assert done["message"] == bulk_sentence("add_keyword", "goldenhour", done["count"])
    assert client.get("/api/search", params={"q": "goldenhour"}, headers=h
                      ).json()["total"] == done["count"]
    # a dry run says what would be done (it had said "applied to 0 assets")
    r = client.post("/api/bulk", json={"action": "add_keyword", "value": "feline", "q": "cat",
                                       "dry_run": True}, headers=h)
    assert (r.status_code, r.json()["count"], r.json()["message"]) == (
        200, 0, "Add keyword “feline”: would apply to 3 assets; nothing changed.")
    # complete: applied directly
    r = client.post("/api/bulk", json={"action": "add_keyword", "value": "feline", "q": "cat"},
                    headers=h)
    assert (r.status_code, r.json()["count"], r.json()["verdict"]) == (200, 3, "complete")
    assert r.json()["message"] == "Add keyword “feline”: applied to 3 assets."
    # a member may read, not change: no bulk action for alice
    r = client.post("/api/bulk", json={"action": "add_keyword", "value": "x", "q": "cat"},
                    headers=auth("alice"))
    assert (r.status_code, r.json()["detail"]) == (403, "alice is not an admin of this tenant")
    r = client.post("/api/bulk", json={"action": "set_rights_expiry", "value": "not a date",
                                       "q": "cat"}, headers=h)
    assert (r.status_code, r.json()["detail"]) == (400, "'not a date' is not an ISO date (YYYY-MM-DD)")
    # the audit log holds the two applied actions, newest first; members may not read it
    log = client.get("/api/audit", headers=h).json()
    assert [(e["actor"], e["action"], e["query"], e["verdict"], e["count"]) for e in log
            if e["query"] is not None] == [
        ("admin", "add_keyword", "cat", "complete", 3),
        ("admin", "add_keyword", "sunset", "truncated", done["count"])]
    assert client.get("/api/audit", headers=auth("alice")).status_code == 403


def test_upload_ingests_and_grants_to_the_uploader(fresh_site, tmp_path, home):
    client, ids, auth = fresh_site
    from imaging import make_image

    png = make_image(tmp_path / "up" / "harbour crane.png", color=(1, 2, 3)).read_bytes()
    files = [("files", ("harbour crane.png", png, "image/png")),
             ("files", ("notes.jpg", b"this is not an image", "image/jpeg"))]
    r = client.post("/api/upload", files=files, headers=auth("bob"))
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["folder"].startswith("uploads/bob/")
    assert (out["files_seen"], out["stored"], out["failed"]) == (2, 1, 1)
    assert out["failures"][0]["file"] == "notes.jpg"
    # the refused file is not kept on disk
    assert sorted(p.name for p in (home / out["folder"]).iterdir()) == ["harbour crane.png"]
    # bob (who saw nothing) sees his upload, found by its file name; alice does not
    body = client.get("/api/search", params={"q": "crane"}, headers=auth("bob")).json()
    [new_id] = [x["asset_id"] for x in body["hits"]]
    assert client.get(f"/api/assets/{new_id}", headers=auth("alice")).status_code == 404
    # a copy of an asset bob may not see does not open it to him
    cat = client.get(f"/api/assets/{ids['cat-01']}/original", headers=auth("admin")).content
    out = client.post("/api/upload", files=[("files", ("mine.jpg", cat, "image/jpeg"))],
                      headers=auth("bob")).json()
    assert {k: v for k, v in out.items() if k != "folder"} == \
        {"files_seen": 1, "stored": 1, "failed": 0, "failures": []}
    assert client.get(f"/api/assets/{ids['cat-01']}", headers=auth("bob")).status_code == 404
    r = client.post("/api/upload", files=[("files", (".hidden", png, "image/png"))],
                    headers=auth("bob"))
    assert r.status_code == 400 and "unusable file name" in r.json()["detail"]


def test_an_upload_never_changes_an_asset_the_uploader_cannot_see(fresh_site, tmp_path, home):
    """The bytes of a hidden asset plus a sidecar, uploaded by a
    member, change nothing admins see and get the same reply as new bytes."""
    from imaging import make_image

    client, ids, auth = fresh_site
    admin, bob = auth("admin"), auth("bob")
    cat = ids["cat-01"]
    before = client.get(f"/api/assets/{cat}", headers=admin).json()
    original = client.get(f"/api/assets/{cat}/original", headers=admin).content
    xmp = (b'<?xpacket begin="" id="W5M0MpCehiHzreSzNTczkc9d"?><x:xmpmeta xmlns:x="adobe:ns:meta/">'
           b'<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">'
           b'<rdf:Description rdf:about="" xmlns:dc="http://purl.org/dc/elements/1.1/">'
           b'<dc:title><rdf:Alt><rdf:li xml:lang="x-default">Pwned title</rdf:li></rdf:Alt>'
           b'</dc:title></rdf:Description></rdf:RDF></x:xmpmeta><?xpacket end="w"?>')
    hidden = client.post("/api/upload", headers=bob, files=[
        ("files", ("copy.jpg", original, "image/jpeg")),
        ("files", ("copy.jpg.xmp", xmp, "application/rdf+xml"))])
    fresh = make_image(tmp_path / "n" / "copy.jpg", color=(77, 1, 99)).read_bytes()
    new = client.post("/api/upload", headers=bob, files=[
        ("files", ("copy.jpg", fresh, "image/jpeg")),
        ("files", ("copy.jpg.xmp", xmp, "application/rdf+xml"))])
    assert hidden.status_code == new.status_code == 200
    strip = lambda r: {k: v for k, v in r.json().items() if k != "folder"}  # noqa: E731
    assert strip(hidden) == strip(new) == {"files_seen": 1, "stored": 1, "failed": 0,
                                           "failures": []}
    after = client.get(f"/api/assets/{cat}", headers=admin).json()
    assert after["files"] == before["files"] and after["documents"] == before["documents"]
    assert client.get("/api/search", params={"q": "pwned"}, headers=admin).json()["total"] == 1
    # the copy is not kept on disk, and bob still cannot see the hidden asset
    assert not any((home / hidden.json()["folder"]).iterdir())
    assert client.get(f"/api/assets/{cat}", headers=bob).status_code == 404


def test_a_wordy_sidecar_does_not_tell_known_bytes_from_new(fresh_site, tmp_path, home):
    """The word bound ran in the ingest, which known bytes
    never reached, so the bytes of a hidden asset with a 400-word sidecar
    answered "stored" and new bytes "failed": a certain answer to "does the
    library hold this file?". Known bytes now meet every check a new file
    meets, then are left out: the two replies are the same."""
    from imaging import make_image

    client, ids, auth = fresh_site
    admin, bob = auth("admin"), auth("bob")
    original = client.get(f"/api/assets/{ids['cat-01']}/original", headers=admin).content
    words = " ".join(f"z{i}q" for i in range(400)).encode()
    xmp = (b'<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF '
           b'xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description '
           b'xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:description><rdf:Alt>'
           b'<rdf:li xml:lang="x-default">' + words + b'</rdf:li></rdf:Alt></dc:description>'
           b'</rdf:Description></rdf:RDF></x:xmpmeta>')
    fresh = make_image(tmp_path / "n" / "cand.jpg", color=(7, 91, 19)).read_bytes()
    replies = []
    for content in (original, fresh):
        r = client.post("/api/upload", headers=bob, files=[
            ("files", ("cand.jpg", content, "image/jpeg")),
            ("files", ("cand.jpg.xmp", xmp, "application/rdf+xml"))])
        assert r.status_code == 200
        replies.append({k: v for k, v in r.json().items() if k != "folder"})
        assert not any((home / r.json()["folder"]).iterdir())   # nothing kept either way
    assert replies[0] == replies[1]
    assert (replies[0]["stored"], replies[0]["failed"]) == (0, 1)
    assert "distinct words" in replies[0]["failures"][0]["reason"]


def test_pages_login_search_asset_logout(site):
    client, ids, _ = site
    client.cookies.clear()
    r = client.get("/?q=sunset", follow_redirects=False)
    assert (r.status_code, r.headers["location"]) == (303, "/login?next=%2F%3Fq%3Dsunset")
    r = web_login(client, "alice", "nope", next="/")
    assert r.status_code == 401 and "Wrong user name or password." in r.text
    r = web_login(client, "alice", "alice-password", next="/?q=sunset")
    assert (r.status_code, r.headers["location"]) == (303, "/?q=sunset")
    page = client.get("/?q=sunset").text
    assert re.search(r'id="verdict"[^>]*>All 30 results\.<', page)
    assert page.count('class="tile"') == 24 and "Page 1 of 2" in page
    assert client.get("/?q=sunset&page=2").text.count('class="tile"') == 6
    assert "No results for “madrid”." in client.get("/?q=madrid").text
    tile = re.search(r'href="(/assets/\d+\?[^"]+)"', client.get("/?q=bridge").text).group(1)
    bridge = client.get(tile.replace("&amp;", "&")).text
    assert re.search(r'<p class="ranking">Rank 1 in this search\.</p>', bridge)
    assert "Dom Luís bridge at dusk" in bridge and "Why it matched “bridge”" in bridge
    assert "<strong>bridg</strong>: in title, keywords, description, filename" in bridge
    assert client.get(f"/assets/{ids['cat-01']}").status_code == 404
    for path in ("/status", "/upload"):
        assert client.get(path).status_code == 200
    client.post("/logout", data={"csrf_token": page_csrf(client, "/status")})
    assert client.get("/", follow_redirects=False).status_code == 303
    # the open redirect is refused
    r = web_login(client, "alice", "alice-password", next="//evil.example/")
    assert r.headers["location"] == "/"
    client.cookies.clear()


def test_users_token_issues_an_api_token(db_url, home):
    from click.testing import CliRunner

    from loupe.cli import main

    base = ["--home", str(home), "--database-url", db_url, "users"]
    runner = CliRunner()
    r = runner.invoke(main, base + ["add", "carol", "--admin"],
                      env={"LOUPE_NEW_PASSWORD": "carol-password"})
    assert (r.exit_code, r.output) == (0, "user carol created (admin)\n")
    r = runner.invoke(main, base + ["token", "carol", "--label", "scripts"])
    assert r.exit_code == 0
    token = r.output.strip()
    with TestClient(create_app(home, database_url=db_url, pool_size=1)) as client:
        me = client.get("/api/me", headers={"Authorization": f"Bearer {token}"}).json()
        assert (me["name"], me["admin"]) == ("carol", True)
        assert client.post("/api/tokens", json={"name": "carol", "password": "carol-password"}
                           ).status_code == 200
    r = runner.invoke(main, base + ["token", "nobody"])
    assert r.exit_code == 1 and "nobody" in r.output


def test_openapi_is_published(site):
    client, _, _ = site
    spec = client.get("/openapi.json").json()
    assert {"/api/search", "/api/assets/{asset_id}", "/api/assets/{asset_id}/thumbnail",
            "/api/assets/{asset_id}/original", "/api/collections", "/api/upload", "/api/bulk",
            "/api/models", "/api/status", "/api/tokens"} <= set(spec["paths"])


# -- schemathesis over the published schema: no input makes the server fail ------

schemathesis = pytest.importorskip("schemathesis")
from hypothesis import HealthCheck, settings  # noqa: E402
from schemathesis.checks import not_a_server_error  # noqa: E402


# The app the fuzzer calls; it borrows the module library's pool in the test
# (its schema is read without starting it, so it never opens a library itself).
FUZZ_APP = create_app(None)
fuzzed = schemathesis.openapi.from_dict(FUZZ_APP.openapi())
fuzzed.app = FUZZ_APP


@fuzzed.parametrize()
@settings(max_examples=15, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
def test_no_input_makes_a_server_error(case, site):
    """Every operation, fuzzed with schema-shaped and malformed input, as
    an admin (who reaches every branch): never a 5xx."""
    client, _, h = site
    FUZZ_APP.state.pool = client.app.state.pool
    headers = h["admin"]
    if case.method == "DELETE":  # revoking: spend a token of its own, not the shared one
        tok = client.post("/api/tokens", json={"name": "admin", "password": "admin-password"})
        headers = {"Authorization": f"Bearer {tok.json()['token']}"}
    case.call_and_validate(headers=headers, checks=[not_a_server_error])


def test_the_judging_page_is_served_to_logged_in_users(fresh_site, db_url, home, tmp_path):
    """The instrument's blind judging router is mounted in the web
    app behind the login; its page names no file."""
    from loupe.eval import Evaluation

    client, ids, auth = fresh_site
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"id": "q1", "text": "cat", "provenance": "blind", '
                       '"register": "objects"}\n')
    with Library.open(home, database_url=db_url) as lib:
        ev = Evaluation(lib)
        ev.import_queries(queries, name="web")
        ev.run("web", "hybrid", name="hybrid")
        ev.pool("p", ["hybrid"], seed=1)
    page = client.get("/judge/p/?judge=alice", follow_redirects=False)
    assert page.status_code == 303 and page.headers["location"].startswith("/login")
    page = client.get("/judge/p/", headers=auth("admin"))
    assert page.status_code == 200 and "cat-01" not in page.text
    nxt = client.get("/judge/p/next", headers=auth("admin")).json()
    assert nxt["query"] == "cat" and "cat-01" not in str(nxt)
    assert client.get("/judge/nope/", headers=auth("admin")).status_code == 404
    # alice may read no cat: for her the pool is not there
    assert client.get("/judge/p/", headers=auth("alice")).status_code == 404


def test_judging_shows_a_user_only_the_pairs_it_may_read(fresh_site, db_url, home, tmp_path):
    """The judging routes answer through the logged-in viewer. A
    member is served, counted and pictured only pairs whose asset it may read
    (hidden and embargoed ones are skipped), grades are stored under its own
    name whatever the request says, and every not-found is the same bytes,
    naming no pool."""
    from datetime import datetime, timedelta, timezone

    from loupe.eval import Evaluation

    client, ids, auth = fresh_site
    queries = tmp_path / "q.jsonl"
    queries.write_text("".join(
        f'{{"id": "q{i}", "text": "{t}", "provenance": "blind", "register": "objects"}}\n'
        for i, t in enumerate(("cat", "bridge", "sunset"))))
    embargoed = ids["lisbon-sunset-01"]
    with Library.open(home, database_url=db_url) as lib:
        ev = Evaluation(lib)
        ev.import_queries(queries, name="web")
        ev.run("web", "hybrid", name="hybrid")
        ev.pool("p", ["hybrid"], seed=1)
        items = ev.pool_items("p")
        lib.set_embargo([embargoed], datetime.now(timezone.utc) + timedelta(days=30))
    asset_of = {i["token"]: i["asset_id"] for i in items}
    travel = {v for k, v in ids.items() if k.startswith(("lisbon", "porto"))}
    readable = {t for t, a in asset_of.items() if a in travel and a != embargoed}
    hidden = set(asset_of) - readable
    assert readable and hidden and embargoed in asset_of.values()
    assert {asset_of[t] for t in hidden} >= {ids["cat-01"], embargoed}

    alice = auth("alice")
    served = []
    nxt = client.get("/judge/p/next", headers=alice).json()
    assert (nxt["total"], nxt["done"]) == (len(readable), 0)
    while not nxt.get("finished"):
        served.append(nxt["token"])
        assert client.get(f"/judge/p/picture/{nxt['token']}", headers=alice).status_code == 200
        # the body names another judge: the grade is alice's all the same
        nxt = client.post("/judge/p/grade", headers=alice,
                          json={"token": nxt["token"], "judge": "admin", "grade": 2}).json()
    assert set(served) == readable and len(served) == len(readable)
    assert (nxt["total"], nxt["done"]) == (len(readable), len(readable))
    with Library.open(home, database_url=db_url) as lib:
        judges = lib.conn.execute("SELECT DISTINCT judge FROM eval_judgement").fetchall()
    assert judges == [("alice",)]

    # a hidden pair, an unknown token, an unknown pool and a pool bob can read
    # nothing of: one answer, the same bytes, naming nothing
    token = next(iter(hidden))
    answers = [
        client.get(f"/judge/p/picture/{token}", headers=alice),
        client.post("/judge/p/grade", headers=alice, json={"token": token, "grade": 1}),
        client.get("/judge/p/picture/no-such-token", headers=alice),
        client.get("/judge/secret-pool/next", headers=alice),
        client.get("/judge/secret-pool/", headers=alice),
        client.get("/judge/p/next", headers=auth("bob")),
        client.get("/judge/p/", headers=auth("bob")),
    ]
    assert [(r.status_code, r.content) for r in answers] == \
        [(404, b'{"detail":"not found"}')] * len(answers)
    # the admin (and the owner's standalone page) judge every pair
    assert client.get("/judge/p/next", headers=auth("admin")).json()["total"] == len(items)


def test_a_query_whose_truth_is_hidden_is_not_shown_to_a_member(fresh_site, db_url, home,
                                                                 tmp_path):
    """A known-item query is written from its picture, so
    its text describes it; a member was served the readable pairs of a query
    whose ground truth (here by path, and by content hash) it may not read.
    Now such a query's pairs are neither served, counted nor pictured for
    it; the admin judges them as before."""
    from loupe.eval import Evaluation

    client, ids, auth = fresh_site
    with Library.open(home, database_url=db_url) as lib:
        cat_path, = lib.conn.execute("SELECT rel_path FROM asset_file WHERE asset_id = %s",
                                     [ids["cat-01"]]).fetchone()
        cat_sha, = lib.conn.execute("SELECT encode(content_sha256, 'hex') FROM asset "
                                    "WHERE id = %s", [ids["cat-01"]]).fetchone()
    queries = tmp_path / "q.jsonl"
    queries.write_text(
        '{"id": "k1", "text": "lisbon sunset secret", "provenance": "blind", "register": '
        f'"objects", "truth": [{{"path": "{cat_path}", "grade": 2}}]}}\n'
        '{"id": "k2", "text": "porto bridge secret", "provenance": "blind", "register": '
        f'"objects", "truth": [{{"sha256": "{cat_sha}", "grade": 2}}]}}\n'
        '{"id": "q3", "text": "lisbon", "provenance": "blind", "register": "objects"}\n')
    with Library.open(home, database_url=db_url) as lib:
        ev = Evaluation(lib)
        ev.import_queries(queries, name="web")
        ev.run("web", "hybrid", name="hybrid")
        ev.pool("p", ["hybrid"], seed=1)
        items = ev.pool_items("p")
        qid_of = {r[0]: r[1] for r in lib.conn.execute(
            "SELECT i.token, q.qid FROM eval_pool_item i JOIN eval_query q ON q.id = i.query_id")}
    travel = {v for k, v in ids.items() if k.startswith(("lisbon", "porto"))}
    readable = {i["token"] for i in items if i["asset_id"] in travel}
    secret = {t for t in readable if qid_of[t] in ("k1", "k2")}
    assert secret and readable - secret          # readable pictures of both kinds of query
    alice = auth("alice")
    served = []
    nxt = client.get("/judge/p/next", headers=alice).json()
    assert nxt["total"] == len(readable - secret)
    while not nxt.get("finished"):
        assert "secret" not in nxt["query"]
        served.append(nxt["token"])
        nxt = client.post("/judge/p/grade", headers=alice,
                          json={"token": nxt["token"], "grade": 1}).json()
    assert set(served) == readable - secret
    token = next(iter(secret))
    assert client.get(f"/judge/p/picture/{token}", headers=alice).status_code == 404
    assert client.get("/judge/p/next", headers=auth("admin")).json()["total"] == len(items)
