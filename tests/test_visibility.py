"""What people added in Loupe to an asset never lets anyone read more when a
file changes asset, and a member is told nothing of what it may not read (how
many hidden assets wait for vectors, a judging query written from a private
file). Real files, real ExifTool, real
PostgreSQL; each test failed on main c8a13e4.

F4 (high): a member granted one asset, who may write its file, copies into it
the bytes of a picture the library also holds privately; at the owner's next
ingest the file merged into that asset and the member's ASSET grant joined
it, so the member read the private copy's path, sidecar, Loupe-added keywords
and hand-made collections, and found it by the private words.

F5 (medium): editing the readable copy of an asset that also has a private
copy forked it with the keywords and hand-made collections people had added
to the whole asset; the member reads the fork whole, so it saw them.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from imaging import exiftool_write, make_image, write_sidecar

from loupe import Library
from loupe.eval import Evaluation


@pytest.fixture
def zephyr(lib: Library, photos: Path) -> tuple[Library, Path]:
    """shared/dup.jpg and private/dupcopy.jpg hold the same bytes (the
    private sidecar names Project Zephyrmerger); extra/e2.jpg is another
    picture. The owner added the keyword "secretkwadded" and the hand-made
    collection "Falconpicks board" to the shared/private asset. dave may read
    shared/ and is granted the extra asset as an asset."""
    dup = make_image(photos / "shared" / "dup.jpg", size=(40, 30), color=(10, 120, 200))
    write_sidecar(dup, "-XMP-dc:Title=Nice harbour view")
    (photos / "private").mkdir()
    copy = photos / "private" / "dupcopy.jpg"
    shutil.copyfile(dup, copy)
    write_sidecar(copy, "-XMP-dc:Title=Project Zephyrmerger acquisition",
                  "-XMP-dc:Creator=Victor Dealmaker")
    e2 = make_image(photos / "extra" / "e2.jpg", size=(40, 30), color=(200, 30, 30))
    write_sidecar(e2, "-XMP-dc:Title=Extra red square")
    lib.ingest(photos)
    lib.create_user("dave", "dave-password")
    lib.grant("dave", collection="shared")
    extra = lib.conn.execute(
        "SELECT asset_id FROM asset_file WHERE rel_path = 'extra/e2.jpg'").fetchone()[0]
    lib.grant("dave", asset_id=extra)
    assert lib.bulk("add_keyword", "secretkwadded", query="zephyrmerger")["count"] == 1
    assert lib.bulk("add_to_collection", "Falconpicks board", query="zephyrmerger")["count"] == 1
    return lib, photos


def rel(files: list[dict]) -> list[str]:
    """The files' paths as folder/name, sorted."""
    return sorted("/".join(Path(f["path"]).parts[-2:]) for f in files)


def names(lib: Library) -> list[str]:
    return [Path(c["path"]).name for c in lib.collections()]


def shared_asset(lib: Library) -> int:
    return lib.conn.execute(
        "SELECT asset_id FROM asset_file WHERE rel_path = 'shared/dup.jpg'").fetchone()[0]


def test_a_merge_never_carries_an_asset_grant_to_files_it_did_not_reach(zephyr):
    lib, photos = zephyr
    dave = lib.as_user("dave")
    target = shared_asset(lib)
    assert rel(dave.show(target)["files"]) == ["shared/dup.jpg"]
    # dave writes the bytes of the shared (and privately held) picture into his file
    e2 = photos / "extra" / "e2.jpg"
    e2.write_bytes((photos / "shared" / "dup.jpg").read_bytes())
    summary = lib.ingest(photos)
    # one asset, three files; dave reads his file and the shared one, never the private one
    assert rel(lib.show(target)["files"]) == [
        "extra/e2.jpg", "private/dupcopy.jpg", "shared/dup.jpg"]
    assert rel(dave.show(target)["files"]) == [
        "extra/e2.jpg", "shared/dup.jpg"]
    shown = str(dave.show(target))
    for secret in ("Zephyrmerger", "Dealmaker", "dupcopy", "secretkwadded", "Falconpicks"):
        assert secret not in shown, secret
    for query in ("zephyrmerger", "dealmaker", "secretkwadded", "falconpicks"):
        assert dave.search(query).total == 0, query
    assert "Falconpicks board" not in names(dave)
    assert "private" not in names(dave)
    # no asset grant joined the target; dave's grant is on his file alone
    assert lib.conn.execute("SELECT count(*) FROM asset_grant WHERE asset_id = %s",
                            (target,)).fetchone()[0] == 0
    assert lib.conn.execute(
        "SELECT f.rel_path FROM file_grant g JOIN asset_file f ON f.id = g.file_id "
        "JOIN principal p ON p.id = g.principal_id WHERE p.name = 'dave'").fetchall() == [
        ("extra/e2.jpg",)]
    # the owner still sees everything, the added keyword included, and is told
    assert [h.asset_id for h in lib.search("secretkwadded").hits] == [target]
    assert [w.kind for w in summary.warnings] == ["merged"]
    assert "not joined" in summary.warnings[0].reason


def test_a_merge_between_assets_the_same_people_read_still_joins_everything(zephyr):
    """The rule of tests/test_identity.py stays: nobody reads more, so grants,
    keywords and hand-made collections join as before."""
    lib, photos = zephyr
    lib.create_user("erin", "erin-password")
    extra = lib.conn.execute(
        "SELECT asset_id FROM asset_file WHERE rel_path = 'extra/e2.jpg'").fetchone()[0]
    lib.revoke("dave", asset_id=extra)
    lib.grant("erin", asset_id=extra)
    lib.grant("erin", collection="shared")
    lib.grant("erin", collection="private")
    e2 = photos / "extra" / "e2.jpg"
    e2.write_bytes((photos / "shared" / "dup.jpg").read_bytes())
    summary = lib.ingest(photos)
    assert [w.kind for w in summary.warnings] == ["merged"]
    assert "grants, keywords and hand-made collections joined" in summary.warnings[0].reason
    target = shared_asset(lib)
    assert [r[0] for r in lib.conn.execute(
        "SELECT p.name FROM asset_grant g JOIN principal p ON p.id = g.principal_id "
        "WHERE g.asset_id = %s", (target,))] == ["erin"]


def test_a_fork_of_a_copy_does_not_carry_words_its_readers_could_not_see(zephyr):
    lib, photos = zephyr
    dave = lib.as_user("dave")
    target = shared_asset(lib)
    assert dave.search("secretkwadded").total == 0
    exiftool_write(photos / "shared" / "dup.jpg", "-XMP-dc:Subject=retouched")
    summary = lib.ingest(photos)
    fork = lib.conn.execute(
        "SELECT asset_id FROM asset_file WHERE rel_path = 'shared/dup.jpg'").fetchone()[0]
    assert fork != target
    assert dave.search("secretkwadded").total == 0
    assert "Falconpicks board" not in names(dave)
    shown = str(dave.show(fork))
    assert "secretkwadded" not in shown and "Falconpicks" not in shown
    # the private copy keeps its asset and what was added to it; the owner is told
    assert [h.asset_id for h in lib.search("secretkwadded").hits] == [target]
    assert [w.kind for w in summary.warnings] == ["not_joined"]


def test_a_member_is_not_told_how_many_hidden_assets_wait_for_vectors(zephyr, tmp_path):
    """The waiting count is tenant-wide; only a viewer who sees every asset
    gets the number (search and similar). A member is
    told that some wait only when one it may read does — the notice's
    presence no longer says when private files were ingested."""
    from tinymodels import build_clip

    lib, photos = zephyr
    lib.install_model(build_clip(tmp_path / "tiny-clip"))
    lib.use_model("tiny-clip", "image")
    lib.embed()
    for i in range(4):  # the owner ingests four private pictures after the embed
        make_image(photos / "private" / "new" / f"n{i}.png", size=(16, 16),
                   color=(40 * i, 10, 10), fmt="PNG")
    lib.ingest(photos)
    waiting = [n for n in lib.search("harbour").notices if "wait" in n]
    assert waiting == ["image lane: 4 assets still wait for vectors of tiny-clip (run 'loupe embed')"]
    dave = lib.as_user("dave")
    for notices in (dave.search("harbour").notices,
                    dave.similar(shared_asset(lib)).notices):
        assert [n for n in notices if "wait" in n] == [], notices
    # a picture dave may read waits too: now he is told, without a number
    make_image(photos / "shared" / "s9.png", size=(16, 16), color=(10, 200, 10), fmt="PNG")
    lib.ingest(photos)
    waiting = [n for n in lib.search("harbour").notices if "wait" in n]
    assert waiting == ["image lane: 5 assets still wait for vectors of tiny-clip (run 'loupe embed')"]
    for notices in (dave.search("harbour").notices,
                    dave.similar(shared_asset(lib)).notices):
        waiting = [n for n in notices if "wait" in n]
        assert waiting == ["image lane: some assets still wait for vectors of tiny-clip; this "
                           "lane does not see them yet"], notices


def pooled(lib, tmp_path, queries: str):
    """Import ``queries`` (JSONL) as set "cap", run the lexical system over it
    as run "r" and pool that run as pool "p" (seed 1): the owner's Evaluation."""
    from loupe.eval import Evaluation

    path = tmp_path / "q.jsonl"
    path.write_text(queries)
    ev = Evaluation(lib)
    ev.import_queries(path, name="cap")
    ev.run("cap", "lexical", name="r")
    ev.pool("p", ["r"], seed=1)
    return ev


def test_a_query_written_from_a_private_file_is_not_shown_through_its_copy(zephyr, tmp_path):
    """A truth by path names one FILE: dave reads the bytes through
    shared/dup.jpg but not private/dupcopy.jpg, so a query whose truth is the
    private file (a caption-derived one paraphrases its sidecar) is not served
    to him; by content hash, the asset must be readable whole."""
    from loupe.eval import Evaluation

    lib, photos = zephyr
    sha = lib.conn.execute("SELECT encode(content_sha256, 'hex') FROM asset WHERE id = %s",
                           (shared_asset(lib),)).fetchone()[0]
    ev = pooled(lib, tmp_path,
                '{"id": "d1", "text": "zephyrmerger harbour", "provenance": "caption-derived", '
                '"register": "objects", "truth": [{"path": "private/dupcopy.jpg", "grade": 2}]}\n'
                '{"id": "d2", "text": "dealmaker harbour", "provenance": "caption-derived", '
                f'"register": "objects", "truth": [{{"sha256": "{sha}", "grade": 2}}]}}\n'
                '{"id": "d3", "text": "harbour view", "provenance": "blind", '
                '"register": "objects", "truth": [{"path": "shared/dup.jpg", "grade": 2}]}\n')
    owner_total = ev.progress("p", "owner")["total"]
    assert owner_total == 3  # the harbour picture for each query
    dave = Evaluation(lib.as_user("dave"))
    shown = []
    while (item := dave.next_item("p", "dave")) is not None:
        shown.append(item["query"])
        dave.judge("p", item["token"], "dave", 1)
    assert shown == ["harbour view"]
    assert dave.progress("p", "dave") == {"total": 1, "done": 1}


def _shown(lib: Library) -> list[str]:
    """The query texts dave is served, judging each pair as he goes."""
    ev = Evaluation(lib.as_user("dave"))
    shown = []
    while (item := ev.next_item("p", "dave")) is not None:
        shown.append(item["query"])
        ev.judge("p", item["token"], "dave", 1)
    ev.conn.execute("DELETE FROM eval_judgement WHERE judge = 'dave'")
    return shown


def test_a_truth_that_names_nothing_any_more_hides_its_query(zephyr, tmp_path):
    lib, photos = zephyr
    wolf = make_image(photos / "private" / "wolf.jpg", size=(40, 30), color=(90, 90, 20))
    write_sidecar(wolf, "-XMP-dc:Title=Harbour wolverine secret plan")
    lib.ingest(photos)
    sha = lib.conn.execute(
        "SELECT encode(a.content_sha256, 'hex') FROM asset a JOIN asset_file f "
        "ON f.asset_id = a.id WHERE f.rel_path = 'private/wolf.jpg'").fetchone()[0]
    ev = pooled(lib, tmp_path,
                '{"id": "w1", "text": "harbour", "provenance": "caption-derived", '
                '"register": "objects", "truth": [{"path": "private/wolf.jpg", "grade": 2}]}\n'
                '{"id": "w2", "text": "Harbour", "provenance": "caption-derived", '
                f'"register": "objects", "truth": [{{"sha256": "{sha}", "grade": 2}}]}}\n'
                '{"id": "d3", "text": "harbour view", "provenance": "blind", '
                '"register": "objects", "truth": [{"path": "shared/dup.jpg", "grade": 2}]}\n')
    total = ev.progress("p", "owner")["total"]
    assert total == 6   # each query: the harbour view (dave reads it) and the wolf (he does not)
    assert _shown(lib) == ["harbour view"]

    # the owner renames the private file: the path names nothing any more
    wolf.rename(photos / "private" / "wolf2.jpg")
    Path(str(wolf) + ".xmp").rename(photos / "private" / "wolf2.jpg.xmp")
    lib.ingest(photos)
    assert lib.conn.execute(
        "SELECT count(*) FROM asset_file WHERE rel_path = 'private/wolf.jpg'").fetchone()[0] == 0
    assert _shown(lib) == ["harbour view"]

    # ... and exports it again with other bytes: the hash names nothing any more
    make_image(photos / "private" / "wolf2.jpg", size=(40, 30), color=(20, 90, 90))
    lib.ingest(photos)
    assert lib.conn.execute("SELECT count(*) FROM asset WHERE content_sha256 = decode(%s, 'hex')",
                            (sha,)).fetchone()[0] == 0
    assert _shown(lib) == ["harbour view"]
    # the owner, who sees everything, still judges every pair of the pool
    assert ev.progress("p", "owner")["total"] == total
