"""What a member reads tells nothing of what is hidden from it, and a
throttle's answer tells nothing of a disabled account:

* a disabled account's correct password is answered, and throttled,
  exactly like a wrong one;
* a hidden person is no one to a member: ``GET /api/people/{id}`` is a
  404, its faces on ``GET /api/assets/{id}/faces`` show no person and no
  name, and the name is in none of the member's answers checked (people
  list, person, asset, asset faces, the asset and people pages);
* an asset's times (created, updated, machine facts computed) — which a
  hidden byte-copy can set — are not shown to a member;
* every JPEG marker is counted before decoding: a flood of empty ``FF F0``
  segments is refused by the marker walk.
"""

from __future__ import annotations

import os
from pathlib import Path

from fastapi.testclient import TestClient
from psycopg.conninfo import make_conninfo

from imaging import make_image
from loupe import Library
from loupe.ingest import jpegcheck
from loupe.web import create_app
from test_people import _person_of, plib, scanned  # noqa: F401 - plib, scanned: fixtures
from test_web_security import site  # noqa: F401 - the fixture


def test_a_disabled_accounts_correct_password_is_throttled_like_a_wrong_one(  # noqa: F811
        site, home, db_url):
    make, _ = site
    with Library.open(home, database_url=db_url) as lib:
        for name in ("carol", "dave"):
            lib.create_user(name, f"{name}-password")
            lib.disable_user(name)
    with make() as client:
        def attempts(name: str, correct_at: int | None) -> list[int]:
            return [client.post("/api/tokens", json={
                "name": name, "password": f"{name}-password" if i == correct_at else "wrong"}
                ).status_code for i in range(7)]
        # five wrong, then the right password, then one more: the same
        # answers as seven wrong ones (before: the right one reset the count)
        assert attempts("carol", 5) == attempts("dave", None) == [401] * 6 + [429]


def _client(scanned, plib) -> TestClient:  # noqa: F811
    admin, _src, home, _photos, _s = scanned
    return TestClient(create_app(home, database_url=make_conninfo(
        admin, dbname=plib.conn.info.dbname), pool_size=2))


def test_a_hidden_persons_name_is_nowhere_a_member_reads(plib, scanned):  # noqa: F811
    obama = _person_of(plib, "public/obama.jpg")
    plib.name_person(obama, "Barack Obama")
    public = plib.conn.execute("SELECT asset_id FROM asset_file WHERE rel_path = "
                               "'public/obama.jpg'").fetchone()[0]
    with _client(scanned, plib) as client:
        def auth(user: str) -> dict[str, str]:
            tok = client.post("/api/tokens", json={"name": user, "password": f"{user}-password"})
            return {"Authorization": f"Bearer {tok.json()['token']}"}
        alice, olga = auth("alice"), auth("olga")
        # named and shown: alice reads the name through her confirmed faces
        r = client.get(f"/api/people/{obama}", headers=alice)
        assert r.status_code == 200 and r.json()["name"] == "Barack Obama"
        plib.hide_person(obama)
        r = client.get(f"/api/people/{obama}", headers=alice)
        assert (r.status_code, r.json()) == (404, {"detail": f"no person {obama} in this library"})
        faces = client.get(f"/api/assets/{public}/faces", headers=alice).json()
        assert faces and all(f["person_id"] is None and f["label"] is None for f in faces)
        for path in ("/api/people", f"/api/assets/{public}", f"/api/assets/{public}/faces",
                     f"/api/people/{obama}"):
            r = client.get(path, headers=alice)
            assert "Obama" not in r.text.replace("obama.jpg", ""), path
        # pages, with a session
        client.cookies.clear()
        from weblib import web_login
        assert web_login(client, "alice", "alice-password").status_code == 303
        for path in ("/people", f"/assets/{public}", f"/people/{obama}"):
            r = client.get(path)
            assert "Barack" not in r.text, path
        client.cookies.clear()
        # the admin still sees the hidden person with its name
        r = client.get(f"/api/people/{obama}", headers=olga)
        assert r.status_code == 200 and r.json()["name"] == "Barack Obama"


def test_a_member_is_shown_none_of_an_assets_times(lib, tmp_path):
    """An asset a member may read through one file, whose bytes a private
    copy also holds: the member's view has no created, updated or
    machine-computed time (any of them may be the private copy's); the
    owner's view has them."""
    shared = make_image(tmp_path / "shared" / "a.png", size=(40, 30), fmt="PNG")
    private = tmp_path / "private" / "a-copy.png"
    private.parent.mkdir()
    private.write_bytes(shared.read_bytes())
    lib.ingest(tmp_path / "shared")
    lib.create_user("bob", "bob-password")
    lib.grant("bob", path=str(shared.resolve()))
    lib.ingest(tmp_path / "private")
    asset_id = lib.conn.execute("SELECT asset_id FROM asset_file").fetchone()[0]
    mine = lib.as_user("bob").show(asset_id)
    assert (mine["created_at"], mine["updated_at"]) == (None, None)
    assert mine["machine"] is None or mine["machine"]["computed_at"] is None
    assert [Path(f["path"]).name for f in mine["files"]] == ["a.png"]
    owner = lib.show(asset_id)
    assert owner["created_at"] is not None and owner["updated_at"] is not None


def test_every_jpeg_marker_is_counted_before_decoding(tmp_path):
    """5,000 empty ``FF F0`` segments (no metadata segment among them)
    after the start of a real JPEG: refused by the marker count; the plain
    JPEG passes."""
    plain = make_image(tmp_path / "plain.jpg", size=(64, 48))
    data = plain.read_bytes()
    flood = tmp_path / "flood.jpg"
    flood.write_bytes(data[:2] + b"\xff\xf0\x00\x02" * 5_000 + data[2:])
    for path, expected in ((plain, None), (flood, "a JPEG of more than 4,000 markers outside "
                                                  "its scans")):
        fd = os.open(path, os.O_RDONLY)
        try:
            why = jpegcheck.scan_count_problem(fd)
        finally:
            os.close(fd)
        assert why == expected if expected is None else why.startswith(expected), why
