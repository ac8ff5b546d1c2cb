"""Permissions are WHERE clauses of the one search statement (P1, P3):
every lane, band, count, total and suggestion sees only what the viewer may
read; bulk actions honour the verdict and are audited (C6)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from imaging import make_image, write_sidecar
from tinymodels import build_clip

from loupe import (AccessError, AssetNotFound, ConfirmationRequired, Library, UnknownUser)
from loupe.bulk import BulkError

FILES = [  # (folder/name, colour, title)
    ("shared/red.png", (255, 0, 0), "Red kettle"),
    ("shared/blue.png", (0, 0, 255), "Blue kettle"),
    ("private/red.png", (250, 5, 5), "Kettle kettle kettle secret"),
    ("private/green.png", (0, 255, 0), "Kettle kettle green"),
]


@pytest.fixture
def shared(lib: Library, photos: Path, tmp_path: Path) -> Library:
    """Four kettles: alice may read the 'shared' folder, the group 'team'
    (bob) the green one. The hidden ones outrank the visible ones."""
    for rel, colour, title in FILES:
        write_sidecar(make_image(photos / rel, size=(16, 16), color=colour, fmt="PNG"),
                      f"-XMP-dc:Title={title}")
    lib.ingest(photos)
    lib.create_user("alice", "alice-password")
    lib.create_user("bob", "bob-password")
    lib.create_user("root", "root-password", admin=True)
    lib.create_group("team")
    lib.add_member("team", "bob")
    lib.grant("alice", collection="shared")
    lib.grant("team", asset_id=asset_id(lib, "Kettle kettle green"))
    lib.install_model(build_clip(tmp_path / "models" / "tiny-clip"))
    lib.use_model("tiny-clip", "image")
    lib.embed()
    return lib


def asset_id(lib: Library, title: str) -> int:
    return lib.conn.execute("SELECT asset_id FROM search_document WHERE title = %s",
                            (title,)).fetchone()[0]


def titles(res) -> list[str]:
    return [h.title for h in res.hits]


def test_each_viewer_sees_its_own_assets_with_exact_totals(shared: Library):
    owner = shared.search("kettle")
    assert owner.total == 4 and owner.verdict == "complete" and owner.total_exact
    alice = shared.as_user("alice").search("kettle")
    assert sorted(titles(alice)) == ["Blue kettle", "Red kettle"]
    assert (alice.total, alice.total_exact, alice.verdict) == (2, True, "complete")
    bob = shared.as_user("bob").search("kettle")
    assert titles(bob) == ["Kettle kettle green"] and bob.total == 1
    root = shared.as_user("root").search("kettle")
    assert root.total == 4 and shared.as_user("root").user["admin"] is True
    assert shared.as_user("bob").user == {"id": shared.as_user("bob").viewer.user_id,
                                          "name": "bob", "admin": False, "groups": ["team"]}


def test_hidden_assets_take_no_cap_slot(shared: Library):
    # caps of 3: the owner's walk is cut (df 4), alice's is not: her two
    # kettles are found although two hidden ones rank above them
    shared.set_lexical_settings(raw_cap=3, keep_cap=3)
    owner = shared.search("kettle", limit=10)
    assert owner.verdict == "truncated" and (owner.total, owner.total_exact) == (4, False)
    assert len(owner.hits) == 3
    alice = shared.as_user("alice").search("kettle", limit=10)
    assert sorted(titles(alice)) == ["Blue kettle", "Red kettle"]
    assert (alice.total, alice.total_exact, alice.verdict) == (2, True, "complete")


def test_a_hidden_asset_never_moves_a_total(shared: Library):
    bob = shared.as_user("bob")
    assert bob.search("kettle").total == 1
    red_secret = asset_id(shared, "Kettle kettle kettle secret")
    shared.grant("bob", asset_id=red_secret)
    assert bob.search("kettle").total == 2
    shared.revoke("bob", asset_id=red_secret)
    assert bob.search("kettle").total == 1
    green = asset_id(shared, "Kettle kettle green")
    # embargo: not before a date
    shared.set_embargo([green], datetime.now(timezone.utc) + timedelta(days=1))
    res = bob.search("kettle")
    assert (res.total, res.hits, res.verdict) == (0, [], "complete")
    assert shared.search("kettle").total == 4          # the owner still sees it
    shared.set_embargo([green], datetime.now(timezone.utc) - timedelta(days=1))
    assert bob.search("kettle").total == 1
    # usage rights expired
    shared.set_rights_expiry([green], datetime.now(timezone.utc) - timedelta(seconds=1))
    assert bob.search("kettle").total == 0
    assert shared.as_user("root").search("kettle").total == 4


def test_suggestions_only_offer_readable_terms(shared: Library):
    owner = shared.search("secrett")
    assert owner.corrections == {"secrett": "secret"} and owner.verdict == "unknown"
    alice = shared.as_user("alice").search("secrett")
    assert alice.corrections == {} and alice.total == 0 and alice.hits == []
    # a term only hidden assets hold is unknown to alice, not "known but empty"
    assert shared.as_user("alice").search("secret").total == 0


def test_vector_lanes_scan_only_readable_assets(shared: Library):
    owner = shared.search("red photo")
    assert sorted(titles(owner)) == ["Kettle kettle kettle secret", "Red kettle"]
    alice = shared.as_user("alice").search("red photo")
    assert titles(alice) == ["Red kettle"]
    assert alice.hits[0].explain["image"]["rank"] == 1     # ranks among readable rows only
    assert shared.as_user("bob").search("red photo").hits == []


def test_scopes_bands_and_collections_follow_permissions(shared: Library):
    alice = shared.as_user("alice")
    # a collection alice may read nothing in answers like a missing one
    from loupe.scopes.search import UnknownScope
    with pytest.raises(UnknownScope, match=r"^no collection 'private' in this library$"):
        alice.search("kettle", scope="private")
    assert shared.search("kettle", scope="private").total == 2
    res = alice.search("kettle", scope="shared")
    assert sorted(titles(res)) == ["Blue kettle", "Red kettle"] and res.total == 2
    assert [(c["path"], c["assets"]) for c in alice.collections()] == [("shared", 2)]
    assert [(c["path"], c["assets"]) for c in shared.collections()] == [("private", 2),
                                                                       ("shared", 2)]
    bob = shared.as_user("bob")
    assert [(c["path"], c["assets"]) for c in bob.collections()] == [("private", 1)]


def test_asset_detail_thumbnail_and_original_are_guarded(shared: Library):
    hidden = asset_id(shared, "Kettle kettle kettle secret")
    alice = shared.as_user("alice")
    for fn in (alice.show, alice.thumbnail, alice.original):
        with pytest.raises(AssetNotFound, match=f"no asset {hidden} in tenant"):
            fn(hidden)
    assert shared.thumbnail(hidden).is_file()
    assert shared.original(hidden).name == "red.png"
    assert shared.original(hidden).parent.name == "private"
    visible = asset_id(shared, "Red kettle")
    assert alice.show(visible)["id"] == visible


def test_users_groups_and_management_rules(shared: Library):
    assert shared.authenticate("alice", "alice-password")["name"] == "alice"
    assert shared.authenticate("alice", "wrong-password") is None
    assert shared.authenticate("nobody", "alice-password") is None
    with pytest.raises(AccessError, match="already taken"):
        shared.create_user("alice", "another-password")
    with pytest.raises(AccessError, match="at least 8"):
        shared.create_user("carol", "short")
    with pytest.raises(AccessError, match="not a valid name"):
        shared.create_user("bad name", "long-enough")
    with pytest.raises(AccessError, match="not an admin"):
        shared.as_user("alice").create_user("carol", "carol-password")
    with pytest.raises(AccessError, match="not an admin"):
        shared.as_user("alice").grant("alice", collection="private")
    shared.as_user("root").create_user("carol", "carol-password")
    with pytest.raises(UnknownUser):
        shared.as_user("dave")
    assert [g["target"] for g in shared.grants()] == ["shared", str(
        asset_id(shared, "Kettle kettle green"))]


def test_tenants_never_share_users_or_assets(shared: Library, db_url: str, home: Path):
    with Library.open(home, database_url=db_url, tenant="other", create=True) as other:
        other.init(["en"])
        with pytest.raises(UnknownUser):
            other.as_user("alice")
        assert other.search("kettle").total == 0
        with pytest.raises(AssetNotFound):
            other.show(asset_id(shared, "Red kettle"))
        other.create_user("alice", "other-alice-pw")   # names are per tenant
        assert other.as_user("alice").search("kettle").total == 0


def test_bulk_action_on_a_complete_result_is_applied_and_audited(shared: Library):
    out = shared.bulk("add_keyword", "approved", query="kettle")
    assert (out["count"], out["verdict"], out["total"], out["confirmed"]) == (4, "complete", 4,
                                                                            False)
    assert shared.search("approved").total == 4
    [row] = [r for r in shared.audit_log() if r["query"] is not None]   # the bulk rows
    assert (row["id"], row["actor"], row["action"], row["value"], row["query"], row["verdict"],
            row["total"], row["count"]) == (out["audit_id"], "owner", "add_keyword", "approved",
                                            "kettle", "complete", 4, 4)
    # a member may read, not act in bulk (an embargo would hide assets from others)
    with pytest.raises(AccessError, match="alice is not an admin"):
        shared.as_user("alice").bulk("set_embargo", "2031-01-01", query="kettle")
    # an admin's bulk action reaches what the search found: here everything
    out = shared.as_user("root").bulk("add_to_collection", "Spring campaign", query="kettle")
    assert out["count"] == 4
    res = shared.search("red", scope="Spring campaign")
    assert sorted(titles(res)) == ["Kettle kettle kettle secret", "Red kettle"]
    assert shared.audit_log()[0]["actor"] == "root"


def test_bulk_action_on_a_truncated_result_needs_confirmation(shared: Library):
    shared.set_lexical_settings(raw_cap=3, keep_cap=3)
    with pytest.raises(ConfirmationRequired) as info:
        shared.bulk("set_rights_expiry", "2001-02-03", query="kettle")
    assert (info.value.verdict, info.value.total, info.value.total_exact,
            info.value.reachable) == ("truncated", 4, False, 3)
    assert "at least 4 assets match" in str(info.value)
    # nothing applied, nothing logged (the log holds the fixture's users and grants only)
    assert [r for r in shared.audit_log() if r["query"] is not None] == []
    assert shared.conn.execute("SELECT count(*) FROM asset WHERE rights_expire_at IS NOT NULL"
                               ).fetchone()[0] == 0
    out = shared.bulk("set_rights_expiry", "2001-02-03", query="kettle", confirm=True)
    assert (out["count"], out["verdict"], out["confirmed"]) == (3, "truncated", True)
    assert shared.conn.execute("SELECT count(*) FROM asset WHERE rights_expire_at = "
                               "'2001-02-03T00:00:00Z'").fetchone()[0] == 3
    assert shared.audit_log()[0]["confirmed"] is True


def test_bulk_typo_fallback_is_unknown_and_bad_actions_are_refused(shared: Library):
    with pytest.raises(ConfirmationRequired, match="the result is unknown"):
        shared.bulk("add_keyword", "x", query="kettlr")
    with pytest.raises(BulkError, match="unknown bulk action"):
        shared.bulk("delete_everything", None, query="kettle")
    with pytest.raises(BulkError, match="not an ISO date"):
        shared.bulk("set_embargo", "tomorrow", query="kettle")


def test_title_band_in_the_fused_statement_respects_permissions(shared: Library):
    shared.set_lexical_settings(raw_cap=2, keep_cap=2)
    owner = shared.search("kettle", limit=10, title_band=True)
    assert owner.lanes == ["lexical", "image"]
    assert [h.explain.get("title_band", False) for h in owner.hits] == [False, False, True, True]
    assert (owner.total, owner.reachable, owner.verdict) == (4, 4, "truncated")
    alice = shared.as_user("alice").search("kettle", limit=10, title_band=True)
    assert sorted(titles(alice)) == ["Blue kettle", "Red kettle"]
    assert not any(h.explain.get("title_band") for h in alice.hits)   # her walk reached both


def test_bulk_keyword_keeps_every_asset_findable_by_its_shared_words(lib: Library,
                                                                     photos: Path):
    """Found by a new user: a bulk keyword on two assets that share words
    once made one of them unfindable by those words (the index's remove step
    deleted a term whose df it had just lowered to 1)."""
    for name, colour, title, keywords in [("vase.png", (200, 10, 10), "Tulip vase", "vase"),
                                          ("field.png", (10, 200, 10), "Tulips in a field",
                                           "field")]:
        write_sidecar(make_image(photos / name, size=(16, 16), color=colour, fmt="PNG"),
                      f"-XMP-dc:Title={title}", "-XMP-dc:Subject=tulip",
                      "-XMP-dc:Subject=flower", f"-XMP-dc:Subject={keywords}")
    lib.ingest(photos)
    assert len(lib.search("tulip").hits) == 2
    assert lib.bulk("add_keyword", "approved", query="tulip")["count"] == 2
    for word in ("tulip", "flower", "approved"):
        res = lib.search(word)
        assert (sorted(h.title for h in res.hits), res.total, res.verdict) == (
            ["Tulip vase", "Tulips in a field"], 2, "complete"), word
