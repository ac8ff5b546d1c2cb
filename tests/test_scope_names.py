"""Scopes mean one thing (C1): several scopes search their union,
and a collection is named unambiguously (id:N, full path) in search, grant
and bulk, through the CLI, the Library and the REST API."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from loupe import Library
from loupe.scopes.search import UnknownScope
from loupe.web import create_app

from imaging import make_image

LOUPE = [sys.executable, "-m", "loupe.cli"]

# folder -> file stems (every stem holds "sunset" except the beaches)
LAYOUT = {
    "travel": ["sunset-t1", "sunset-t2"],
    "travel/italy": ["sunset-i1"],
    "work": ["sunset-w1", "sunset-w2", "sunset-w3", "beach-w4"],
    "family": ["sunset-f1"],
    "other": ["sunset-o1"],
}
_color = iter(range(1, 10_000))


def write_root(root: Path, prefix: str) -> Path:
    for folder, stems in LAYOUT.items():
        for stem in stems:
            n = next(_color)
            make_image(root / folder / f"{prefix}{stem}.jpg", color=((n * 13) % 256, (n * 29) % 256, (n * 7) % 256))
    return root


def loupe(db_url: str, home: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOUPE_")}
    return subprocess.run(LOUPE + ["--home", str(home), "--database-url", db_url, *args],
                          env=env, capture_output=True, text=True, timeout=120)


def stems(res) -> set[str]:
    return {Path(h.path).stem for h in res.hits}


@pytest.fixture
def one_root(lib: Library, tmp_path: Path) -> Library:
    assert lib.ingest(write_root(tmp_path / "photos", "")).new_assets == 9
    return lib


def test_several_scopes_search_their_union(one_root: Library, db_url, home):
    lib = one_root
    res = lib.search("sunset", scope=["travel", "work"], limit=50)
    assert stems(res) == {"sunset-t1", "sunset-t2", "sunset-i1", "sunset-w1", "sunset-w2",
                          "sunset-w3"}
    assert (res.total, res.total_exact, res.verdict) == (6, True, "complete")
    assert res.notices == ["scope 'travel' + 'work': 7 members, 6 ranked, 0 in the band "
                           "(direct regime)"]
    # a scope named twice, or inside another, counts each member once
    again = lib.search("sunset", scope=["travel", "travel/italy", "travel"], limit=50)
    assert (again.total, stems(again)) == (3, {"sunset-t1", "sunset-t2", "sunset-i1"})
    # one bad name among several is an error, not silently dropped
    with pytest.raises(UnknownScope, match="no collection 'nowhere' in this library"):
        lib.search("sunset", scope=["travel", "nowhere"])
    # the CLI: --in repeated
    out = loupe(db_url, home, "search", "sunset", "--in", "travel", "--in", "work", "--json")
    assert out.returncode == 0, out.stderr
    body = json.loads(out.stdout)
    assert (body["total"], body["verdict"]) == (6, "complete")
    assert {Path(h["path"]).stem for h in body["hits"]} == stems(res)


def test_rest_scope_parameter_repeated_is_the_union(one_root: Library, db_url, home):
    one_root.create_user("admin", "admin-password", admin=True)
    app = create_app(home, database_url=db_url, pool_size=1)
    with TestClient(app) as client:
        tok = client.post("/api/tokens", json={"name": "admin", "password": "admin-password"})
        h = {"Authorization": f"Bearer {tok.json()['token']}"}
        body = client.get("/api/search?q=sunset&scope=work&scope=family", headers=h).json()
        assert (body["total"], body["verdict"], body["scope"]) == (
            4, "complete", ["work", "family"])
        assert {Path(x["path"]).stem for x in body["hits"]} == {
            "sunset-w1", "sunset-w2", "sunset-w3", "sunset-f1"}
        one = client.get("/api/search?q=sunset&scope=family", headers=h).json()
        assert (one["total"], one["scope"]) == (1, "family")
        # the page keeps both scopes
        page = client.get("/?q=sunset&scope=work&scope=family", headers=h)
        assert page.status_code == 200 and 'data-total="4"' in page.text
        # bulk over two scopes (JSON list)
        r = client.post("/api/bulk", headers=h, json={
            "action": "add_keyword", "value": "dusk", "q": "sunset",
            "scope": ["work", "family"]})
        assert r.status_code == 200, r.text
        assert (r.json()["count"], r.json()["matched_all_terms"]) == (4, 4)
    assert one_root.search("dusk").total == 4


@pytest.fixture
def two_roots(lib: Library, tmp_path: Path) -> tuple[Library, Path, Path]:
    a = write_root(tmp_path / "a", "a-")
    b = write_root(tmp_path / "b", "b-")
    assert lib.ingest(a).new_assets == 9 and lib.ingest(b).new_assets == 9
    return lib, a, b


def test_ambiguous_collection_is_named_by_id_or_full_path(two_roots, db_url, home):
    lib, a, b = two_roots
    ids = {c["full_path"]: c["id"] for c in lib.collections()}
    travel_a, travel_b = ids[f"{a}/travel"], ids[f"{b}/travel"]
    with pytest.raises(UnknownScope, match=(
            rf"'travel' names collections in several sources: name one by its id \(id:N\) "
            rf"or its full path: id:{travel_a} \({a}/travel\), id:{travel_b} \({b}/travel\)")):
        lib.search("sunset", scope="travel")
    by_id = lib.search("sunset", scope=f"id:{travel_b}", limit=50)
    assert stems(by_id) == {"b-sunset-t1", "b-sunset-t2", "b-sunset-i1"}
    assert by_id.verdict == "complete"
    assert stems(lib.search("sunset", scope=str(travel_b), limit=50)) == stems(by_id)
    by_path = lib.search("sunset", scope=f"{a}/travel", limit=50)
    assert stems(by_path) == {"a-sunset-t1", "a-sunset-t2", "a-sunset-i1"}
    # both, as a union
    both = lib.search("sunset", scope=[f"id:{travel_a}", f"{b}/travel"], limit=50)
    assert both.total == 6
    with pytest.raises(UnknownScope, match="no collection with id 999999 in this library"):
        lib.search("sunset", scope="id:999999")
    with pytest.raises(UnknownScope, match="'id:x' is not a collection id"):
        lib.search("sunset", scope="id:x")

    # grant by id: alice reads b/travel only
    lib.create_user("alice", "alice-password")
    lib.grant("alice", collection=f"id:{travel_b}")
    alice = lib.as_user("alice")
    assert stems(alice.search("sunset", limit=50)) == {"b-sunset-t1", "b-sunset-t2",
                                                       "b-sunset-i1"}
    # a member resolves a name among the collections it may see: the one
    # 'travel' it reads (the other one's existence is not confirmed)
    assert stems(alice.search("sunset", scope="travel", limit=50)) == {
        "b-sunset-t1", "b-sunset-t2", "b-sunset-i1"}
    out = loupe(db_url, home, "grant", "alice", "--collection", "travel")
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert f"id:{travel_a} ({a}/travel), id:{travel_b} ({b}/travel)" in out.stderr
    out = loupe(db_url, home, "grant", "alice", "--collection", f"{a}/travel")
    assert out.returncode == 0, out.stderr
    assert [(g["target"], g["collection_id"], g["full_path"]) for g in lib.grants()] == [
        ("travel", travel_a, f"{a}/travel"), ("travel", travel_b, f"{b}/travel")]
    listed = loupe(db_url, home, "users", "list").stdout.splitlines()
    assert f"grant alice reads collection travel (id:{travel_b}, {b}/travel)" in listed
    assert len(alice.search("sunset", limit=50).hits) == 6
    # now both are hers: ambiguous, and the error names no server path
    with pytest.raises(UnknownScope, match=r"^'travel' names several collections: name one "
                                           r"by its id \(id:N, see 'loupe collections'\)$"):
        alice.search("sunset", scope="travel")

    # bulk by id
    done = lib.bulk("add_keyword", "golden", query="sunset", scope=f"id:{travel_a}")
    assert done["count"] == 3
    assert {Path(h.path).stem for h in lib.search("golden").hits} == {
        "a-sunset-t1", "a-sunset-t2", "a-sunset-i1"}
    assert lib.audit_log(1)[0]["scope"] == f"id:{travel_a}"

    # loupe collections lists the ids
    out = loupe(db_url, home, "collections", "--json")
    listed = json.loads(out.stdout)
    assert {(c["id"], c["path"], c["full_path"]) for c in listed} >= {
        (travel_a, "travel", f"{a}/travel"), (travel_b, "travel", f"{b}/travel")}
    text = loupe(db_url, home, "collections").stdout
    assert f"id:{travel_b}\ttravel\t{b}/travel\t3 assets" in text.splitlines()
    out = loupe(db_url, home, "search", "sunset", "--in", "travel")
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert f"id:{travel_a} ({a}/travel)" in out.stderr


def test_pages_and_api_name_an_ambiguous_collection_by_id(two_roots, db_url, home):
    lib, a, b = two_roots
    ids = {c["full_path"]: c["id"] for c in lib.collections()}
    travel_b = ids[f"{b}/travel"]
    lib.create_user("admin", "admin-password", admin=True)
    app = create_app(home, database_url=db_url, pool_size=1)
    with TestClient(app) as client:
        tok = client.post("/api/tokens", json={"name": "admin", "password": "admin-password"})
        h = {"Authorization": f"Bearer {tok.json()['token']}"}
        r = client.get("/api/search", params={"q": "sunset", "scope": "travel"}, headers=h)
        assert r.status_code == 400 and f"id:{travel_b} ({b}/travel)" in r.json()["detail"]
        body = client.get("/api/search", params={"q": "sunset", "scope": f"id:{travel_b}"},
                          headers=h).json()
        assert (body["total"], body["verdict"]) == (3, "complete")
        # the scope menu offers each of the two by id, shown by its full path
        page = client.get("/", headers=h).text
        assert f'<option value="id:{travel_b}" >{b}/travel (3)</option>' in page
        assert '<option value="work"' not in page      # 'work' is ambiguous too
        page = client.get(f"/?q=sunset&scope=id:{travel_b}", headers=h).text
        assert 'data-total="3"' in page
