"""Scoped search never loses members (C1–C5): the seed's failure and its
fix, each scope-size regime, and the verdicts."""

from __future__ import annotations

import pytest

from loupe import Library
from loupe.lexical import lexical_search
from loupe.scopes import queries as sq
from loupe.scopes.search import collection_id, regime_for, scoped_search

from corpus import add_document

FILLER = " ".join(f"word{i}" for i in range(60))


def build(lib: Library, n_outside: int, members: list[tuple[str, str]]) -> int:
    """n_outside assets titled 'sunset ...' outside the collection, then the
    collection 'campaign' whose members have the given (title, description).
    Returns the collection id."""
    t = lib.tenant_id
    with lib.conn.transaction():
        lib.conn.execute("SELECT set_config('loupe.bulk', 'on', true)")
        src = lib.conn.execute("INSERT INTO source (tenant_id, root_path) VALUES (%s, '/lib') "
                               "RETURNING id", (t,)).fetchone()[0]
        coll = lib.conn.execute(
            "INSERT INTO collection (tenant_id, source_id, name, path) "
            "VALUES (%s, %s, 'campaign', 'campaign') RETURNING id", (t, src)).fetchone()[0]
        docs = [(i, f"sunset over the bay {i}", "") for i in range(1, n_outside + 1)]
        docs += [(n_outside + k + 1, title, desc) for k, (title, desc) in enumerate(members)]
        with lib.conn.cursor().copy(
                "COPY asset (id, tenant_id, content_sha256, byte_size, media_type, width, height)"
                " FROM STDIN") as cp:
            for i, _, _ in docs:
                cp.write_row((i, t, i.to_bytes(32, "big"), 1, "image/jpeg", 1, 1))
        lib.conn.execute("CREATE TEMP TABLE d (id bigint, title text, description text) "
                         "ON COMMIT DROP")
        with lib.conn.cursor().copy("COPY d FROM STDIN") as cp:
            for row in docs:
                cp.write_row(row)
        lib.conn.execute("""
            INSERT INTO search_document (asset_id, tenant_id, lang, ts_config, title,
                                         description, phrase_title, phrase_text, tsv, doc_len)
            SELECT id, %s, 'en', 'loupe_english', title, description, loupe_phrase_norm(title),
                   loupe_phrase_text(title, description), x.tsv, loupe_tsv_len(x.tsv)
            FROM d CROSS JOIN LATERAL (SELECT loupe_document_tsv('loupe_english', title, '', '',
                 description, '', '', '', '', '', '', '') AS tsv) x
        """, (t,))
        lib.conn.execute("""
            INSERT INTO asset_file (tenant_id, asset_id, source_id, collection_id, path, rel_path,
                                    byte_size, mtime_ns, metadata, raw_metadata)
            SELECT %s, id, %s, %s, '/lib/campaign/' || id, 'campaign/' || id, 1, 0, '{}', '{}'
            FROM d WHERE id > %s
        """, (t, src, coll, n_outside))
        lib.conn.execute("SELECT loupe_reindex_lexical(%s, 'en')", (t,))
    return coll


@pytest.fixture
def seed_library(lib: Library) -> tuple[Library, int, int]:
    """The seed's failure: a 400-asset collection, 30 members carry 'sunset';
    the tenant-wide top 1,000 holds 4 of them."""
    members = [("sunset sunset golden", "")] * 4
    members += [("campaign shot", f"{FILLER} sunset {FILLER}")] * 26
    members += [("campaign shot", "beach")] * 370
    coll = build(lib, 5000, members)
    return lib, coll, 5000


def test_the_seeds_failure_and_its_fix(seed_library):
    lib, coll, n_outside = seed_library
    member_ids = set(range(n_outside + 1, n_outside + 401))
    # without bands: the tenant-wide kept list, filtered to the collection
    unscoped = lexical_search(lib.conn, lib.tenant_id, "sunset", "en", limit=1000)
    in_top = [h.asset_id for h in unscoped.hits if h.asset_id in member_ids]
    assert len(in_top) == 4
    # with Loupe: all 30, the same 4 first in the same order, then the band
    res = scoped_search(lib.conn, lib.tenant_id, "sunset", "en", coll, limit=100)
    assert (res.members, res.regime, res.ranked, res.band) == (400, "direct", 4, 26)
    assert (res.total, res.total_exact, res.verdict) == (30, True, "complete")
    assert [h.asset_id for h in res.hits[:4]] == in_top
    assert [h.in_band for h in res.hits] == [False] * 4 + [True] * 26
    assert {h.asset_id for h in res.hits} == set(range(n_outside + 1, n_outside + 31))
    # page 1 of 20 is the ranked rows, then band rows; page 2 the rest of the band
    p2 = scoped_search(lib.conn, lib.tenant_id, "sunset", "en", coll, limit=20, offset=20)
    assert [h.rank for h in p2.hits] == list(range(21, 31))


def test_library_api_and_collection_paths(seed_library):
    lib, coll, _ = seed_library
    assert collection_id(lib.conn, lib.tenant_id, "campaign") == coll
    res = lib.search("sunset", scope="campaign", limit=50)
    assert (res.total, res.verdict, len(res.hits)) == (30, "complete", 30)
    assert res.notices == ["scope 'campaign': 400 members, 4 ranked, 26 in the band "
                           "(direct regime)"]
    with pytest.raises(LookupError, match=r"no collection 'nowhere' in this library"):
        lib.search("sunset", scope="nowhere")


def test_regime_boundaries():
    assert [regime_for(n) for n in (1, 2000, 2001, 50_000, 50_001)] == [
        "direct", "direct", "deep", "deep", "none"]


def test_deep_regime_reads_deeper_and_is_complete_when_it_reaches_the_end(
        seed_library, monkeypatch):
    lib, coll, _ = seed_library
    monkeypatch.setattr(sq, "DIRECT_MAX", 100)  # 400 members: now the deep regime
    res = scoped_search(lib.conn, lib.tenant_id, "sunset", "en", coll, limit=100)
    assert (res.regime, res.ranked, res.band, res.verdict, res.total) == ("deep", 4, 26,
                                                                           "complete", 30)
    # a depth that does not reach the end of the term's postings: truncated
    monkeypatch.setattr(sq, "DEEP_CAP", 3500)
    res = scoped_search(lib.conn, lib.tenant_id, "sunset", "en", coll, limit=100)
    assert (res.regime, res.verdict, res.total_exact) == ("deep", "truncated", False)
    assert res.ranked == 4 and res.band < 26


def test_no_band_regime_reports_what_the_lane_saw(seed_library, monkeypatch):
    lib, coll, _ = seed_library
    monkeypatch.setattr(sq, "DIRECT_MAX", 10)
    monkeypatch.setattr(sq, "DEEP_MAX", 100)
    res = scoped_search(lib.conn, lib.tenant_id, "sunset", "en", coll, limit=100)
    assert (res.regime, res.ranked, res.band) == ("none", 4, 0)
    assert (res.verdict, res.total, res.total_exact) == ("truncated", 4, False)


def test_a_scope_within_the_caps_is_complete_without_a_band(lib: Library):
    coll = build(lib, 10, [("sunset in the campaign", "")] * 3 + [("other", "")] * 5)
    res = scoped_search(lib.conn, lib.tenant_id, "sunset", "en", coll)
    assert (res.ranked, res.band, res.total, res.verdict) == (3, 0, 3, "complete")
    none = scoped_search(lib.conn, lib.tenant_id, "madrid", "en", coll)
    assert (none.total, none.hits, none.verdict) == (0, [], "complete")


def test_vector_lanes_inside_a_small_scope_scan_every_member(lib: Library, tmp_path):
    """Up to DIRECT_MAX members, the vector lanes compare every member's
    vector exactly instead of trusting the HNSW top 200, where 250 closer
    assets outside the scope leave no room for the members."""
    from tinymodels import build_clip

    lib.install_model(build_clip(tmp_path / "tiny-clip"))
    lib.use_model("tiny-clip", "image")
    model_id = lib.conn.execute("SELECT id FROM embedding_model WHERE name = 'tiny-clip'"
                                ).fetchone()[0]
    outside = [(i, f"outside {i}", [1.0, 0.0, 0.0, 0.0]) for i in range(1, 251)]
    members = [(300 + k, f"member {k}", [1.0, 0.5, 0.0, 0.0]) for k in range(5)]
    members += [(310, "member blue", [0.0, 0.0, 1.0, 0.0]), (311, "member waiting", None)]
    coll = build(lib, 0, [])
    with lib.conn.transaction():
        for asset_id, title, vec in outside + members:
            add_document(lib, asset_id, {"title": title})
            if vec is not None:
                lib.conn.execute(
                    "INSERT INTO asset_vector (asset_id, tenant_id, model_id, lane, embedding)"
                    " VALUES (%s, %s, %s, 'image', %s::vector)",
                    (asset_id, lib.tenant_id, model_id, str(vec)))
        src = lib.conn.execute("SELECT source_id FROM collection WHERE id = %s",
                               (coll,)).fetchone()[0]
        for asset_id, _, _ in members:
            lib.conn.execute(
                "INSERT INTO asset_file (tenant_id, asset_id, source_id, collection_id, path,"
                " rel_path, byte_size, mtime_ns, metadata, raw_metadata) VALUES"
                " (%s, %s, %s, %s, %s, %s, 1, 0, '{}', '{}')",
                (lib.tenant_id, asset_id, src, coll, f"/lib/campaign/{asset_id}",
                 f"campaign/{asset_id}"))
    unscoped = lib.search("red photo", limit=300)
    assert not {h.asset_id for h in unscoped.hits} & {m[0] for m in members}
    res = lib.search("red photo", scope="campaign", limit=20)
    assert [h.asset_id for h in res.hits] == [300, 301, 302, 303, 304]
    assert all(h.explain["band"] for h in res.hits)
    # "red photo" encodes to (1.02, .02, .02, .02); a member is (1, .5, 0, 0)
    assert res.hits[0].explain["image"]["distance"] == pytest.approx(1 - (1.02 + 0.01) / (
        (1.02 ** 2 + 3 * 0.02 ** 2) ** 0.5 * 1.25 ** 0.5), abs=1e-6)
    # one member has no vector yet: the exact scan cannot vouch for it
    assert (res.total, res.verdict, res.total_exact) == (5, "unknown", False)
    assert any("1 members of the scope wait for vectors" in n for n in res.notices)
    lib.conn.execute("INSERT INTO asset_vector (asset_id, tenant_id, model_id, lane, embedding)"
                     " VALUES (311, %s, %s, 'image', '[0,1,0,0]')", (lib.tenant_id, model_id))
    res = lib.search("red photo", scope="campaign", limit=20)
    assert (res.total, res.verdict, res.total_exact) == (5, "complete", True)
    # a one-word query keeps only word matches, in the scope as outside it
    res = lib.search("member", scope="campaign", limit=20)
    assert (res.total, res.verdict) == (7, "complete")


def test_an_unknown_collection_names_those_ending_in_it_that_the_viewer_sees(lib: Library,
                                                                               photos):
    """"--in animals" said only "no collection 'animals'"; the
    message now names the collections whose path ends in it, and a member
    only those it may see (a hidden collection's name is not told)."""
    from imaging import make_image

    for folder in ("clipart/animals", "tuxpaint/animals", "private/animals", "animals_extra"):
        make_image(photos / folder / "x.png", size=(8, 8), color=(9, 9, 9), fmt="PNG")
        make_image(photos / folder / "y.png", size=(8, 8), color=(len(folder), 0, 0), fmt="PNG")
    lib.ingest(photos)
    with pytest.raises(LookupError) as err:
        lib.search("cat", scope="animals")
    assert str(err.value) == ("no collection 'animals' in this library (collections ending "
                              "in it: 'clipart/animals', 'private/animals', 'tuxpaint/animals')")
    lib.create_user("alice", "alice-password")
    lib.grant("alice", collection="clipart")
    with pytest.raises(LookupError) as err:
        lib.as_user("alice").search("cat", scope="animals")
    assert str(err.value) == ("no collection 'animals' in this library (collections ending "
                              "in it: 'clipart/animals')")
    with pytest.raises(LookupError) as err:
        lib.search("cat", scope="anim%")
    assert str(err.value) == "no collection 'anim%' in this library"
