"""An asset keeps its id and everything Loupe added to it (grants, bulk
keywords, hand-made collections, embargo, rights expiry) when its file is
edited at the same path, re-exported with new pixels, or moved (S7);
real files, real ExifTool, real PostgreSQL."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from imaging import exiftool_write, make_image, write_sidecar
from tinymodels import build_clip

from loupe import Library

YESTERDAY = datetime.now(timezone.utc) - timedelta(days=1)
NEXT_YEAR = datetime.now(timezone.utc) + timedelta(days=365)


def only_asset(lib: Library) -> int:
    ids = [r[0] for r in lib.conn.execute("SELECT id FROM asset ORDER BY id")]
    assert len(ids) == 1, ids
    return ids[0]


def additions(lib: Library, asset_id: int) -> dict:
    """What Loupe added to one asset, as stored."""
    c = lib.conn
    return {
        "grants": [r[0] for r in c.execute(
            "SELECT p.name FROM asset_grant g JOIN principal p ON p.id = g.principal_id "
            "WHERE g.asset_id = %s ORDER BY 1", (asset_id,))],
        "keywords": [r[0] for r in c.execute(
            "SELECT keyword FROM asset_keyword WHERE asset_id = %s ORDER BY 1", (asset_id,))],
        "collections": [r[0] for r in c.execute(
            "SELECT c.name FROM collection_member m JOIN collection c ON c.id = m.collection_id "
            "WHERE m.asset_id = %s ORDER BY 1", (asset_id,))],
        "dates": c.execute("SELECT embargo_until, rights_expire_at FROM asset WHERE id = %s",
                           (asset_id,)).fetchone(),
    }


@pytest.fixture
def curated(lib: Library, photos: Path) -> tuple[Library, int]:
    """One photo granted to alice, with a bulk keyword, a hand-made collection
    and a rights expiry that has passed (so alice may no longer see it)."""
    img = make_image(photos / "photo.jpg", size=(60, 40), color=(30, 120, 200))
    exiftool_write(img, "-XMP-dc:Title=Harbour at dawn", "-XMP-dc:Subject=harbour")
    lib.ingest(photos)
    aid = only_asset(lib)
    lib.create_user("alice", "alice-password")
    lib.grant("alice", asset_id=aid)
    assert lib.bulk("add_keyword", "approved", query="harbour")["count"] == 1
    assert lib.bulk("add_to_collection", "Spring picks", query="harbour")["count"] == 1
    lib.set_embargo([aid], YESTERDAY - timedelta(days=30))
    lib.set_rights_expiry([aid], YESTERDAY)
    assert lib.as_user("alice").search("harbour").total == 0
    return lib, aid


def assert_kept(lib: Library, aid: int, before: dict) -> None:
    assert only_asset(lib) == aid
    assert additions(lib, aid) == before
    assert before["grants"] == ["alice"] and before["keywords"] == ["approved"]
    assert before["collections"] == ["Spring picks"]
    # still expired: alice must not see it again
    assert lib.as_user("alice").search("harbour").total == 0
    # the bulk keyword and the hand-made collection stay searchable
    assert [h.asset_id for h in lib.search("approved").hits] == [aid]
    assert [h.asset_id for h in lib.search("spring picks").hits] == [aid]


def test_a_metadata_edit_keeps_the_asset_and_what_loupe_added(curated, photos: Path):
    lib, aid = curated
    before = additions(lib, aid)
    exiftool_write(photos / "photo.jpg", "-XMP-dc:Subject=print")
    summary = lib.ingest(photos)
    assert (summary.new_assets, summary.updated, summary.duplicates, summary.removed_assets,
            summary.failed) == (0, 1, 0, 0, 0)
    assert_kept(lib, aid, before)
    # the new metadata is read: 'print' finds it, 'harbour' (the old keyword) still
    # in the title
    assert [h.asset_id for h in lib.search("print").hits] == [aid]
    assert lib.show(aid)["sha256"] == __import__("hashlib").sha256(
        (photos / "photo.jpg").read_bytes()).hexdigest()
    # un-expiring it makes it visible to alice again: the grant really is there
    lib.set_rights_expiry([aid], NEXT_YEAR)
    assert [h.asset_id for h in lib.as_user("alice").search("harbour").hits] == [aid]


def test_new_pixels_keep_the_asset_and_recompute_its_vectors(curated, photos: Path,
                                                            tmp_path: Path):
    lib, aid = curated
    lib.install_model(build_clip(tmp_path / "models" / "tiny-clip"))
    lib.use_model("tiny-clip", "image")
    lib.embed()
    old_vec = lib.conn.execute("SELECT embedding::text FROM asset_vector WHERE asset_id = %s "
                               "AND lane = 'image'", (aid,)).fetchone()[0]
    before = additions(lib, aid)
    # re-exported: other pixels, other size, the same metadata
    img = make_image(photos / "photo.jpg", size=(90, 30), color=(250, 200, 10))
    exiftool_write(img, "-XMP-dc:Title=Harbour at dawn", "-XMP-dc:Subject=harbour")
    summary = lib.ingest(photos)
    assert (summary.new_assets, summary.updated, summary.removed_assets) == (0, 1, 0)
    assert_kept(lib, aid, before)
    shown = lib.show(aid)
    assert (shown["width"], shown["height"]) == (90, 30)
    assert Path(shown["thumbnail"]).is_file()
    # the pixel vector of the old pixels is gone, and the next embed makes a new one
    assert lib.vectors_waiting() == {"image": 1}
    lib.embed()
    new_vec = lib.conn.execute("SELECT embedding::text FROM asset_vector WHERE asset_id = %s "
                               "AND lane = 'image'", (aid,)).fetchone()[0]
    assert new_vec != old_vec


def test_a_sidecar_edit_keeps_the_asset(curated, photos: Path):
    lib, aid = curated
    before = additions(lib, aid)
    write_sidecar(photos / "photo.jpg", "-XMP-dc:Subject=framed")
    summary = lib.ingest(photos)
    assert (summary.new_assets, summary.updated) == (0, 1)
    assert_kept(lib, aid, before)
    assert [h.asset_id for h in lib.search("framed").hits] == [aid]


def test_a_moved_file_keeps_the_asset(curated, photos: Path):
    lib, aid = curated
    before = additions(lib, aid)
    (photos / "archive").mkdir()
    (photos / "photo.jpg").rename(photos / "archive" / "photo-2024.jpg")
    summary = lib.ingest(photos)
    assert (summary.new_assets, summary.duplicates, summary.moved, summary.removed_files,
            summary.removed_assets) == (0, 0, 1, 0, 0)
    assert_kept(lib, aid, before)
    assert [f["path"] for f in lib.show(aid)["files"]] == [str(photos / "archive" /
                                                               "photo-2024.jpg")]


def test_a_moved_and_edited_file_is_recognised_by_its_xmp_document_id(lib: Library,
                                                                     photos: Path):
    img = make_image(photos / "in" / "shot.jpg", color=(5, 90, 5))
    exiftool_write(img, "-XMP-dc:Title=Lighthouse",
                   "-XMP-xmpMM:DocumentID=xmp.did:3f1e-lighthouse",
                   "-XMP-xmpMM:OriginalDocumentID=xmp.did:3f1e-lighthouse")
    other = make_image(photos / "in" / "other.jpg", color=(90, 5, 5))
    exiftool_write(other, "-XMP-dc:Title=Other", "-XMP-xmpMM:DocumentID=xmp.did:other")
    lib.ingest(photos)
    aid = lib.search("lighthouse").hits[0].asset_id
    lib.create_user("alice", "alice-password")
    lib.grant("alice", asset_id=aid)
    # moved to another folder and edited there (bytes differ, DocumentID kept)
    (photos / "out").mkdir()
    img.rename(photos / "out" / "shot-final.jpg")
    exiftool_write(photos / "out" / "shot-final.jpg", "-XMP-dc:Subject=night")
    summary = lib.ingest(photos)
    assert (summary.new_assets, summary.moved, summary.removed_files,
            summary.removed_assets) == (0, 1, 0, 0)
    assert [h.asset_id for h in lib.search("night").hits] == [aid]
    assert [h.asset_id for h in lib.as_user("alice").search("lighthouse").hits] == [aid]
    assert lib.stats()["assets"] == 2


def test_a_derived_file_with_only_the_same_original_document_id_is_a_new_asset(
        lib: Library, photos: Path):
    """'Save as' keeps OriginalDocumentID but gets a new DocumentID: while the
    original is still on disk the derivative is another asset."""
    img = make_image(photos / "shot.jpg", color=(5, 90, 5))
    exiftool_write(img, "-XMP-xmpMM:DocumentID=xmp.did:a",
                   "-XMP-xmpMM:OriginalDocumentID=xmp.did:a")
    lib.ingest(photos)
    der = make_image(photos / "shot-crop.jpg", color=(6, 91, 6))
    exiftool_write(der, "-XMP-xmpMM:DocumentID=xmp.did:b",
                   "-XMP-xmpMM:OriginalDocumentID=xmp.did:a")
    summary = lib.ingest(photos)
    assert (summary.new_assets, summary.moved) == (1, 0)
    assert lib.stats()["assets"] == 2


def test_editing_one_of_two_identical_copies_forks_with_the_additions(lib: Library,
                                                                      photos: Path):
    a = make_image(photos / "a" / "copy.jpg", color=(1, 2, 250))
    b = photos / "b" / "copy.jpg"
    b.parent.mkdir()
    b.write_bytes(a.read_bytes())
    lib.ingest(photos)
    aid = only_asset(lib)
    lib.create_user("alice", "alice-password")
    lib.grant("alice", asset_id=aid)
    lib.bulk("add_keyword", "approved", query="copy")
    lib.set_rights_expiry([aid], NEXT_YEAR)
    before = additions(lib, aid)
    exiftool_write(b, "-XMP-dc:Subject=retouched")
    summary = lib.ingest(photos)
    assert (summary.new_assets, summary.updated, summary.removed_assets) == (0, 1, 0)
    ids = [r[0] for r in lib.conn.execute("SELECT id FROM asset ORDER BY id")]
    assert len(ids) == 2 and ids[0] == aid
    fork = ids[1]
    # the untouched copy keeps the asset; the edited one carries everything along
    assert [f["path"] for f in lib.show(aid)["files"]] == [str(a)]
    assert [f["path"] for f in lib.show(fork)["files"]] == [str(b)]
    assert additions(lib, aid) == before
    assert additions(lib, fork) == before
    assert sorted(h.asset_id for h in lib.as_user("alice").search("approved").hits) == [aid, fork]


def test_a_file_that_becomes_a_copy_of_another_asset_merges_into_it(lib: Library,
                                                                    photos: Path):
    """The rule: the file joins the asset holding its new bytes; that asset
    gains the old one's keywords, the later embargo and the earlier rights
    expiry (the stricter of each), and its grants and hand-made collections
    when nobody would read more by them — here alice, granted the old asset,
    may not read b.jpg, so she is granted the moved file alone (tests/test_visibility.py)."""
    a = make_image(photos / "a.jpg", color=(200, 2, 2))
    exiftool_write(a, "-XMP-dc:Title=Alpha")
    b = make_image(photos / "b.jpg", color=(2, 200, 2))
    exiftool_write(b, "-XMP-dc:Title=Beta")
    lib.ingest(photos)
    ida = lib.search("alpha").hits[0].asset_id
    idb = lib.search("beta").hits[0].asset_id
    lib.create_user("alice", "alice-password")
    lib.create_user("bob", "bob-password")
    lib.grant("alice", asset_id=ida)
    lib.grant("bob", asset_id=idb)
    lib.bulk("add_keyword", "kept-a", query="alpha")
    lib.bulk("add_keyword", "kept-b", query="beta")
    lib.set_rights_expiry([ida], NEXT_YEAR)
    lib.set_embargo([idb], YESTERDAY)
    a.write_bytes(b.read_bytes())
    summary = lib.ingest(photos)
    assert (summary.new_assets, summary.updated, summary.removed_assets) == (0, 1, 1)
    assert [w.kind for w in summary.warnings] == ["merged"]
    assert [r[0] for r in lib.conn.execute("SELECT id FROM asset")] == [idb]
    got = additions(lib, idb)
    assert (got["grants"], got["keywords"]) == (["bob"], ["kept-a", "kept-b"])
    assert lib.conn.execute(
        "SELECT p.name, f.path FROM file_grant g JOIN asset_file f ON f.id = g.file_id "
        "JOIN principal p ON p.id = g.principal_id").fetchall() == [("alice", str(a))]
    assert [len(lib.as_user(u).show(idb)["files"]) for u in ("alice", "bob")] == [1, 2]
    assert got["dates"][0] is not None and abs(got["dates"][0] - YESTERDAY) < timedelta(seconds=1)
    assert abs(got["dates"][1] - NEXT_YEAR) < timedelta(seconds=1)
    assert sorted(f["path"] for f in lib.show(idb)["files"]) == [str(a), str(b)]


def test_a_file_moved_to_another_ingested_folder_and_edited_keeps_its_asset(
        lib: Library, tmp_path: Path):
    """Across roots: the old root is not re-ingested; its file is gone from disk."""
    old_root, new_root = tmp_path / "card", tmp_path / "archive"
    img = make_image(old_root / "IMG_0001.jpg", color=(40, 40, 200))
    exiftool_write(img, "-XMP-dc:Title=Boat", "-XMP-xmpMM:DocumentID=xmp.did:boat-1")
    lib.ingest(old_root)
    aid = only_asset(lib)
    lib.bulk("add_keyword", "approved", query="boat")
    new_root.mkdir()
    moved = img.rename(new_root / "boat.jpg")
    exiftool_write(moved, "-XMP-dc:Subject=sail")
    summary = lib.ingest(new_root)
    assert (summary.new_assets, summary.moved) == (0, 1)
    assert only_asset(lib) == aid
    assert [f["path"] for f in lib.show(aid)["files"]] == [str(moved)]
    assert [h.asset_id for h in lib.search("sail approved").hits] == [aid]
    # the old root's next ingest has nothing left to remove
    again = lib.ingest(old_root)
    assert (again.removed_files, again.removed_assets, only_asset(lib)) == (0, 0, aid)
