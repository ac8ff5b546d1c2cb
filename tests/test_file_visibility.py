"""Visibility per file (P4, P5): the same bytes in a shared and
a private folder are one asset with two files, and a member who may read
only the shared file finds the asset only by the shared file's words and
sees only the shared file's path, folder and metadata."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from imaging import make_image, write_sidecar
from tinymodels import build_clip

from loupe import Library


@pytest.fixture
def falcon(lib: Library, photos: Path) -> Library:
    """shared/nice_view.jpg and private/plan.jpg hold the same bytes; the
    private copy's sidecar names Project Falcon. alice may read shared/,
    carol both folders, bob nothing. Plus two single-file assets in shared/
    and one in private/, so that counts have something to miss."""
    view = make_image(photos / "shared" / "nice_view.jpg", size=(32, 24), color=(10, 120, 200))
    write_sidecar(view, "-XMP-dc:Title=Nice view over the harbour",
                  "-XMP-dc:Subject=harbour")
    (photos / "private").mkdir()
    plan = photos / "private" / "plan.jpg"
    shutil.copyfile(view, plan)
    write_sidecar(plan, "-XMP-dc:Title=Project Falcon acquisition board",
                  "-XMP-dc:Subject=confidential")
    for rel, colour, title in [("shared/boat.jpg", (200, 10, 10), "Boat in the harbour"),
                               ("shared/quay.jpg", (10, 200, 10), "Harbour quay at dawn"),
                               ("private/memo.jpg", (90, 90, 90), "Falcon memo harbour")]:
        write_sidecar(make_image(photos / rel, size=(32, 24), color=colour),
                      f"-XMP-dc:Title={title}")
    lib.ingest(photos)
    for user in ("alice", "bob", "carol"):
        lib.create_user(user, f"{user}-password")
    lib.grant("alice", collection="shared")
    lib.grant("carol", collection="shared")
    lib.grant("carol", collection="private")
    return lib


def the_copy(lib: Library) -> int:
    return lib.conn.execute(
        "SELECT asset_id FROM asset_file WHERE rel_path = 'private/plan.jpg'").fetchone()[0]


def test_a_member_does_not_find_a_copy_by_the_private_files_words(falcon: Library):
    alice = falcon.as_user("alice")
    for query in ("falcon", "acquisition board", "confidential", "plan", "private"):
        res = alice.search(query)
        assert (res.total, res.hits) == (0, []), query
    # the owner still finds it by the private words, and sees both files
    owner = falcon.search("falcon acquisition")
    assert [h.asset_id for h in owner.hits][:1] == [the_copy(falcon)]
    assert falcon.search("falcon").total == 2


def test_a_member_finds_the_copy_by_the_shared_files_words_with_exact_counts(falcon: Library):
    alice = falcon.as_user("alice")
    res = alice.search("harbour")
    assert sorted(h.title for h in res.hits) == ["Boat in the harbour", "Harbour quay at dawn",
                                                 "Nice view over the harbour"]
    assert (res.total, res.total_exact, res.verdict) == (3, True, "complete")
    hit = next(h for h in res.hits if h.asset_id == the_copy(falcon))
    assert hit.path.endswith("shared/nice_view.jpg")
    assert "Falcon" not in hit.title
    # a query mixing a shared and a private word: only the shared word counts
    mixed = alice.search("view falcon")
    assert [h.asset_id for h in mixed.hits] == [the_copy(falcon)]
    assert mixed.hits[0].bonus == 0
    assert falcon.search("nice view").hits[0].bonus == 2
    # the owner's title of the asset holds both files' titles
    owner = {h.asset_id: h for h in falcon.search("harbour").hits}
    assert "Project Falcon acquisition board" in owner[the_copy(falcon)].title
    assert falcon.search("harbour").total == 4


def test_show_lists_only_the_readable_files(falcon: Library):
    aid = the_copy(falcon)
    shown = falcon.as_user("alice").show(aid)
    assert [(Path(f["path"]).name, f["collection"]) for f in shown["files"]] == [
        ("nice_view.jpg", "shared")]
    text = repr(shown)
    for secret in ("Falcon", "plan", "private", "confidential"):
        assert secret not in text, secret
    assert shown["documents"][0]["title"] == "Nice view over the harbour"
    assert falcon.as_user("alice").original(aid).parent.name == "shared"
    owner = falcon.show(aid)
    assert sorted((Path(f["path"]).name, f["collection"]) for f in owner["files"]) == [
        ("nice_view.jpg", "shared"), ("plan.jpg", "private")]
    assert "Project Falcon acquisition board" in owner["documents"][0]["title"]


def test_a_member_granted_both_folders_sees_both_files(falcon: Library):
    carol = falcon.as_user("carol")
    res = carol.search("falcon")
    assert res.total == 2 and the_copy(falcon) in [h.asset_id for h in res.hits]
    shown = carol.show(the_copy(falcon))
    assert sorted(f["collection"] for f in shown["files"]) == ["private", "shared"]
    assert "Project Falcon acquisition board" in shown["documents"][0]["title"]
    # what carol sees of the asset is what the owner sees
    assert ([h.asset_id for h in carol.search("harbour").hits]
            == [h.asset_id for h in falcon.search("harbour").hits])


def test_typo_suggestions_offer_no_word_only_the_private_file_holds(falcon: Library):
    assert falcon.search("falcom").corrections == {"falcom": "falcon"}
    res = falcon.as_user("alice").search("falcom")
    assert (res.corrections, res.total, res.hits) == ({}, 0, [])
    res = falcon.as_user("alice").search("harbor")
    assert res.corrections == {"harbor": "harbour"} and res.total == 3


def test_scopes_and_collections_do_not_leak_the_private_folder(falcon: Library):
    alice = falcon.as_user("alice")
    res = alice.search("harbour", scope="shared")
    assert res.total == 3 and the_copy(falcon) in [h.asset_id for h in res.hits]
    # a collection alice may not read answers like one that does not exist
    # ("200, total 0" against a 400 confirmed the name)
    from loupe.scopes.search import UnknownScope
    with pytest.raises(UnknownScope, match=r"^no collection 'private' in this library$"):
        alice.search("harbour", scope="private")
    res = alice.search("falcon", scope="shared")
    assert (res.total, res.hits) == (0, [])
    assert [(c["path"], c["assets"]) for c in alice.collections()] == [("shared", 3)]
    assert falcon.search("harbour", scope="private").total == 2


def test_the_title_band_reads_only_readable_titles(falcon: Library):
    alice = falcon.as_user("alice")
    res = alice.search("acquisition board", title_band=True)
    assert (res.total, res.hits) == (0, [])
    res = alice.search("nice view", title_band=True)
    assert [h.asset_id for h in res.hits] == [the_copy(falcon)]
    assert the_copy(falcon) in [h.asset_id for h in
                                falcon.search("acquisition board", title_band=True).hits]


def test_grants_and_edits_follow_the_files(falcon: Library, photos: Path):
    alice = falcon.as_user("alice")
    falcon.grant("alice", collection="private")
    assert alice.search("falcon").total == 2
    falcon.grant("alice", collection="private", revoke=True)
    assert alice.search("falcon").total == 0
    # the private copy leaves the library: the asset has one file again and
    # no file documents; alice's view of it is the owner's
    (photos / "private" / "plan.jpg").unlink()
    falcon.ingest(photos)
    aid = the_copy_gone = falcon.conn.execute(
        "SELECT asset_id FROM asset_file WHERE rel_path = 'shared/nice_view.jpg'").fetchone()[0]
    assert falcon.conn.execute("SELECT count(*) FROM file_document WHERE asset_id = %s",
                               (aid,)).fetchone()[0] == 0
    assert falcon.conn.execute("SELECT doc_readers FROM asset WHERE id = %s",
                               (the_copy_gone,)).fetchone()[0] is None
    assert falcon.search("falcon").total == 1
    assert [h.asset_id for h in alice.search("view").hits] == [aid]


def test_the_text_vector_lane_does_not_match_private_words(lib: Library, photos: Path,
                                                           tmp_path: Path):
    view = make_image(photos / "shared" / "view.png", size=(16, 16), color=(0, 0, 255),
                      fmt="PNG")
    write_sidecar(view, "-XMP-dc:Title=blue")
    (photos / "private").mkdir()
    shutil.copyfile(view, photos / "private" / "plan.png")
    write_sidecar(photos / "private" / "plan.png", "-XMP-dc:Title=red kettle")
    lib.ingest(photos)
    lib.create_user("alice", "alice-password")
    lib.grant("alice", collection="shared")
    lib.install_model(build_clip(tmp_path / "models" / "tiny-clip"))
    lib.use_model("tiny-clip", "text")
    lib.embed()
    owner = lib.search("red kettle")
    assert len(owner.hits) == 1 and owner.hits[0].explain["text"]["rank"] == 1
    alice = lib.as_user("alice")
    res = alice.search("red kettle")
    assert (res.total, res.hits) == (0, [])
    res = alice.search("kettle red")
    assert res.hits == []
    assert [h.title for h in alice.search("blue").hits] == ["blue"]
    # found by its shared word, the copy is not matched by the text vector,
    # which embeds the private title too
    assert lib.search("blue kettle").hits[0].explain["text"]["rank"] == 1
    [hit] = alice.search("blue kettle").hits
    assert hit.explain["text"]["rank"] is None and hit.explain["lexical"]["rank"] == 1


def test_a_library_without_file_documents_gets_them_on_open(falcon: Library, db_url: str,
                                                            home: Path):
    """A library whose file documents are missing (as after 0011 or 0017,
    which cannot compile documents in SQL) gets them when it is opened:
    forgetting 0017 (which empties file_document) makes the next open apply
    it again and compile every file's document, so the member no longer finds
    the copy by private words. (This test dropped 0011's objects before
    0019 added a column to file_document; replaying 0011 alone no longer
    gives a schema any shipped library has. The upgrade from every shipped
    version is tests/test_migrations.py's.)"""
    conn = falcon.conn
    with conn.transaction():
        conn.execute("DELETE FROM file_document")
        conn.execute("DELETE FROM schema_migration WHERE version = 17")
    with Library.open(home, database_url=db_url) as lib:
        alice = lib.as_user("alice")
        assert alice.search("falcon").total == 0
        assert [h.asset_id for h in alice.search("view").hits] == [the_copy(lib)]
        assert lib.conn.execute("SELECT count(DISTINCT file_id) FROM file_document"
                                ).fetchone()[0] == 2
        assert lib.search("falcon").total == 2


# -- with the search over every library language (0013) ---------------

@pytest.fixture
def bilingual_copy(lib: Library, photos: Path) -> Library:
    """An en+ja library. shared/sakura.jpg and private/secret.jpg hold the
    same bytes: the shared copy's ja title is 桜の花 (cherry blossom), the
    private copy's ja title 秘密計画 (secret plan) and en title "Falcon
    plan". Plus a single-file asset in shared/ whose ja title holds 桜 too.
    alice may read shared/ only."""
    lib.init(languages=["en", "ja"])
    (photos / "shared").mkdir()
    (photos / "private").mkdir()
    sakura = make_image(photos / "shared" / "sakura.jpg", size=(32, 24), color=(250, 180, 200))
    write_sidecar(sakura, "-XMP-dc:Title=Cherry blossom", "-XMP-dc:Title-ja=桜の花")
    secret = photos / "private" / "secret.jpg"
    shutil.copyfile(sakura, secret)
    write_sidecar(secret, "-XMP-dc:Title=Falcon plan", "-XMP-dc:Title-ja=秘密計画")
    write_sidecar(make_image(photos / "shared" / "tree.jpg", size=(32, 24), color=(20, 90, 20)),
                  "-XMP-dc:Title=Old tree", "-XMP-dc:Title-ja=桜の木")
    lib.ingest(photos)
    lib.create_user("alice", "alice-password")
    lib.grant("alice", collection="shared")
    return lib


def stems(res) -> list[str]:
    return [Path(h.path).stem for h in res.hits]


def test_a_member_searches_every_language_only_in_readable_files(bilingual_copy: Library):
    lib = bilingual_copy
    alice = lib.as_user("alice")
    # without --lang: the ja file documents, CJK bigrams and all
    res = alice.search("桜")
    assert (sorted(stems(res)), res.total, res.verdict, res.langs) == (
        ["sakura", "tree"], 2, "complete", ["en", "ja"])
    # (the bigrams 桜/桜の also reach the tree's 桜の木, ranked after)
    assert stems(alice.search("桜の花")) == ["sakura", "tree"]
    # the private copy's words, in either language, find nothing for her
    for query in ("秘密", "計画", "秘密計画", "falcon", "plan"):
        res = alice.search(query)
        assert (res.total, res.hits) == (0, []), query
        assert alice.search(query, lang="ja").total == 0, query
    # the owner finds the copy by them, and sees its primary path
    assert [h.asset_id for h in lib.search("秘密").hits] == [
        lib.conn.execute("SELECT asset_id FROM asset_file WHERE rel_path = 'private/secret.jpg'"
                         ).fetchone()[0]]
    # inside a scope and with the title band, the same
    res = alice.search("桜", scope="shared")
    assert (sorted(stems(res)), res.total) == (["sakura", "tree"], 2)
    assert alice.search("秘密", scope="shared").total == 0
    assert alice.search("秘密計画", title_band=True).total == 0
    # the phrase bonus: the readable ja title holds the literal query
    assert [h.bonus for h in alice.search("桜の花").hits] == [2, 0]


def test_file_documents_analysed_before_0013_are_compiled_again(bilingual_copy: Library,
                                                                db_url: str, home: Path):
    """A library that applied 0011 before 0013 holds file documents analysed
    the old way (0013 re-analyses whole documents only). Simulated: the file
    documents' tsv replaced by the old analyzer's single CJK token, and 0017
    forgotten. Opening the library applies 0017 and compiles them again."""
    lib = bilingual_copy
    alice = lib.as_user("alice")
    assert alice.search("桜").total == 2
    with lib.conn.transaction():
        lib.conn.execute(
            "UPDATE file_document SET tsv = to_tsvector('simple', title),"
            " phrase_title = '', phrase_text = ''")
        lib.conn.execute("DELETE FROM schema_migration WHERE version = 17")
    # the stale analysis: the split asset is not found by 桜 any more
    assert sorted(stems(alice.search("桜"))) == ["tree"]
    with Library.open(home, database_url=db_url) as again:
        alice = again.as_user("alice")
        res = alice.search("桜")
        assert (sorted(stems(res)), res.total) == (["sakura", "tree"], 2)
        assert [h.bonus for h in alice.search("桜の花").hits] == [2, 0]
        assert alice.search("秘密").total == 0
        terms = {r[0] for r in again.conn.execute(
            "SELECT term FROM file_posting WHERE lang = 'ja'")}
        assert {"桜", "桜の", "秘密", "計画"} <= terms and "桜の花" not in terms
        assert again.conn.execute(
            "SELECT count(DISTINCT file_id) FROM file_document").fetchone()[0] == 2


def test_what_people_added_in_loupe_is_seen_only_through_the_whole_asset(falcon: Library):
    """Per-file visibility (docs/security.md, "What a member sees through a copy"): the
    owner adds a keyword and a hand-made collection to the asset (working on
    the private file); alice, who holds only the shared copy, neither finds it
    by that keyword (search, filter, facets, its shown documents) nor learns
    the collection (list, scope, filter, facets). carol, who reads both files,
    does; and a keyword added to a single-file asset alice reads still counts."""
    copy = the_copy(falcon)
    out = falcon.bulk("add_keyword", "kestrelproject", query="acquisition board", confirm=True)
    assert out["count"] == 1
    falcon.bulk("add_to_collection", "Deal Room Kestrel", query="acquisition board",
                confirm=True)
    falcon.bulk("add_keyword", "quayside", query="quay dawn", confirm=True)
    alice, carol = falcon.as_user("alice"), falcon.as_user("carol")
    assert falcon.search("kestrelproject").total == 1
    assert [h.asset_id for h in carol.search("kestrelproject").hits] == [copy]
    assert alice.search("kestrelproject").total == 0
    assert alice.search("harbour", filters={"keyword": "kestrelproject"}).total == 0
    assert carol.search("harbour", filters={"keyword": "kestrelproject"}).total == 1
    assert alice.search("quayside").total == 1          # added to what she reads whole
    facets = alice.facets("harbour")["facets"]
    assert "kestrelproject" not in {v["value"].lower() for v in facets.get("keyword", [])}
    assert "Deal Room Kestrel" not in {v["value"] for v in facets.get("collection", [])}
    assert "kestrelproject" in {v["value"].lower()
                                for v in carol.facets("harbour")["facets"]["keyword"]}
    assert all("kestrelproject" not in d["keywords"] for d in alice.show(copy)["documents"])
    assert "Deal Room Kestrel" not in {c["path"] for c in alice.collections()}
    assert "Deal Room Kestrel" in {c["path"] for c in carol.collections()}
    with pytest.raises(Exception) as hidden:
        alice.search("harbour", scope="Deal Room Kestrel")
    with pytest.raises(Exception) as missing:
        alice.search("harbour", scope="Deal Room Nowhere")
    assert str(hidden.value).replace("Kestrel", "Nowhere") == str(missing.value)
    assert [h.asset_id for h in carol.search("harbour", scope="Deal Room Kestrel").hits] == [copy]
