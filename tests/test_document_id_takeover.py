"""An XMP DocumentID is chosen by whoever writes the file: it must not let a
planted file or an upload take over the asset of a file that went missing,
with its grants, keywords and collections. Real ExifTool, real
PostgreSQL, the real web app in process."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient
from imaging import exiftool_write, make_image

from loupe import Library
from loupe.web import create_app

DID = "-XMP-xmpMM:DocumentID=xmp.did:falcon-board"


def test_a_file_planted_in_a_members_folder_does_not_take_over_a_missing_private_asset(
        lib: Library, photos: Path):
    """``private/plan.jpg`` (granted to nobody, a bulk keyword and a hand-made
    collection added) goes missing; a file with its DocumentID appears in
    ``dropbox/``, which bob may read (and write). Before: counted as a move,
    bob found the asset by the private keyword and saw its collection."""
    plan = make_image(photos / "private" / "plan.jpg", color=(10, 20, 200))
    exiftool_write(plan, "-XMP-dc:Title=Board plan", DID)
    make_image(photos / "dropbox" / "holiday.jpg", color=(200, 20, 10))
    lib.ingest(photos)
    aid = lib.search("board plan").hits[0].asset_id
    lib.bulk("add_keyword", "falconsecret", query="board plan")
    lib.bulk("add_to_collection", "Acquisition", query="board plan")
    lib.create_user("bob", "bob-password")
    lib.grant("bob", collection="dropbox")
    bob = lib.as_user("bob")
    assert bob.search("falconsecret").total == 0

    plan.unlink()
    planted = make_image(photos / "dropbox" / "innocent.jpg", color=(1, 2, 3))
    exiftool_write(planted, "-XMP-dc:Title=Innocent", DID)
    summary = lib.ingest(photos)
    assert (summary.moved, summary.new_assets, summary.removed_assets) == (0, 1, 1)
    assert bob.search("falconsecret").total == 0
    assert bob.search("acquisition").total == 0
    new_id = bob.search("innocent").hits[0].asset_id
    assert new_id != aid
    assert [r[0] for r in lib.conn.execute(
        "SELECT keyword FROM asset_keyword WHERE asset_id = %s", (new_id,))] == []


def test_a_move_between_folders_with_the_same_readers_still_keeps_the_asset(
        lib: Library, photos: Path):
    """The rule lets a real move-and-edit through: the new folder (no grant
    of its own) grants no one who could not read the old file."""
    shot = make_image(photos / "a" / "shot.jpg", color=(5, 90, 5))
    exiftool_write(shot, "-XMP-dc:Title=Lighthouse", DID)
    lib.ingest(photos)
    aid = lib.search("lighthouse").hits[0].asset_id
    lib.create_user("alice", "alice-password")
    lib.grant("alice", collection="a")
    lib.grant("alice", asset_id=aid)
    (photos / "b").mkdir()
    moved = shot.rename(photos / "b" / "shot-final.jpg")
    exiftool_write(moved, "-XMP-dc:Subject=night")
    summary = lib.ingest(photos)
    assert (summary.moved, summary.new_assets) == (1, 0)
    assert [h.asset_id for h in lib.as_user("alice").search("night").hits] == [aid]


def test_an_upload_never_continues_a_missing_file_by_its_document_id(
        lib: Library, photos: Path, db_url: str, home: Path, tmp_path: Path):
    """bob uploads a picture carrying the DocumentID of an owner's file that
    went missing from disk. Before: the upload was counted as a move and the
    owner's asset (granted to alice, keyword added) now showed bob's bytes."""
    plan = make_image(photos / "plan.jpg", color=(10, 20, 200))
    exiftool_write(plan, "-XMP-dc:Title=Board plan", DID)
    lib.ingest(photos)
    aid = lib.search("board plan").hits[0].asset_id
    lib.bulk("add_keyword", "falconsecret", query="board plan")
    lib.create_user("alice", "alice-password")
    lib.create_user("bob", "bob-password")
    lib.grant("alice", asset_id=aid)
    before = lib.conn.execute("SELECT content_sha256 FROM asset WHERE id = %s",
                              (aid,)).fetchone()[0]
    plan.unlink()
    evil = make_image(tmp_path / "evil.jpg", color=(250, 250, 0))
    exiftool_write(evil, "-XMP-dc:Title=Evil", DID)

    with TestClient(create_app(home, database_url=db_url, pool_size=1)) as client:
        tok = client.post("/api/tokens", json={"name": "bob", "password": "bob-password"})
        headers = {"Authorization": f"Bearer {tok.json()['token']}"}
        r = client.post("/api/upload", headers=headers,
                        files=[("files", ("evil.jpg", evil.read_bytes(), "image/jpeg"))])
        assert r.status_code == 200, r.text
        assert (r.json()["stored"], r.json()["failed"]) == (1, 0)
    # the owner's asset keeps its bytes and its file; bob's upload is its own asset
    assert lib.conn.execute("SELECT content_sha256 FROM asset WHERE id = %s",
                            (aid,)).fetchone()[0] == before
    assert [f["path"] for f in lib.show(aid)["files"]] == [str(plan)]
    bob = lib.as_user("bob")
    assert bob.search("falconsecret").total == 0
    (hit,) = bob.search("evil").hits
    assert hit.asset_id != aid
    assert [h.asset_id for h in lib.as_user("alice").search("evil").hits] == []
