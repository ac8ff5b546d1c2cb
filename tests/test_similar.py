"""Search by image (X1): perceptual hashes at ingest, multi-index
hashing in PostgreSQL (exact within the radius, no sequential scan), the
near-duplicate groups of a small fixture of real photos, permissions, and
clear errors for what is not an image."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from PIL import Image

from loupe import AssetNotFound, Library
from loupe.cli import main
from loupe.ingest import perceptual
from loupe.similar import queries as sq
from loupe.similar.search import SimilarError, hash_neighbours, mih_bits

FIXTURES = Path(__file__).parent / "fixtures" / "similar"


def path_ids(lib: Library) -> dict[str, int]:
    """rel_path -> asset id."""
    return {r[0]: r[1] for r in lib.conn.execute("SELECT rel_path, asset_id FROM asset_file")}


@pytest.fixture
def shoot(photos: Path) -> Path:
    """A photo (chelsea), its re-encode at JPEG q60, its 50% resize, an
    unrelated photo (coffee) held by two files with the same bytes, and
    another unrelated photo (astronaut)."""
    shutil.copy(FIXTURES / "chelsea.jpg", photos / "cat.jpg")
    im = Image.open(FIXTURES / "chelsea.jpg")
    im.save(photos / "cat-q60.jpg", quality=60)
    im.resize((im.width // 2, im.height // 2), Image.Resampling.LANCZOS).save(
        photos / "cat-half.png")
    (photos / "copies").mkdir()
    shutil.copy(FIXTURES / "coffee.jpg", photos / "coffee.jpg")
    shutil.copy(FIXTURES / "coffee.jpg", photos / "copies" / "coffee-copy.jpg")
    shutil.copy(FIXTURES / "astronaut.jpg", photos / "astronaut.jpg")
    return photos


def test_ingest_stores_a_perceptual_hash_per_asset(lib: Library, shoot: Path):
    lib.ingest(shoot)
    rows = {r[0]: r[1:] for r in lib.conn.execute(
        "SELECT f.rel_path, h.phash, h.error FROM asset_file f "
        "JOIN asset_phash h ON h.asset_id = f.asset_id")}
    assert len(rows) == 6  # every file's asset has its row
    expected = perceptual.hash_file(str(FIXTURES / "chelsea.jpg"))
    assert rows["cat.jpg"] == (expected.phash, None)
    assert rows["coffee.jpg"] == rows["copies/coffee-copy.jpg"]


def test_exact_near_duplicate_groups_of_the_fixture(lib: Library, shoot: Path):
    lib.ingest(shoot)
    ids = path_ids(lib)
    groups = lib.duplicates()
    near = [g for g in groups if g["kind"] == "near"]
    exact = [g for g in groups if g["kind"] == "exact"]
    assert [sorted(a["asset_id"] for a in g["assets"]) for g in near] == [
        sorted([ids["cat.jpg"], ids["cat-q60.jpg"], ids["cat-half.png"]])]
    # the largest file leads the group; sizes are the files' sizes
    sizes = {a["asset_id"]: a["byte_size"] for a in near[0]["assets"]}
    assert sizes == {ids[n]: (shoot / n).stat().st_size
                     for n in ("cat.jpg", "cat-q60.jpg", "cat-half.png")}
    assert near[0]["assets"][0]["byte_size"] == max(sizes.values())
    assert near[0]["byte_size"] == sum(sizes.values())
    assert near[0]["reclaimable"] == sum(sizes.values()) - max(sizes.values())
    coffee = (shoot / "coffee.jpg").stat().st_size
    assert [(g["paths"], g["byte_size"], g["reclaimable"]) for g in exact] == [
        ([str(shoot / "coffee.jpg"), str(shoot / "copies" / "coffee-copy.jpg")],
         2 * coffee, coffee)]


def test_near_groups_form_around_a_leader_and_do_not_chain():
    """Leader clustering (similar/search.py): the largest file leads, every
    member is within the radius of it. A~B and B~C with A and C further apart
    gave one chained group (a phone, a bat and a shark on the demo, the shark
    at no stated distance); now A leads {A, B} and C, whose only neighbour
    is taken, is in no group."""
    from loupe.similar.search import _leader_groups

    a, b, c, d, e = 1, 2, 3, 4, 5
    pairs = [(a, b, 8), (b, c, 6), (d, e, 3), (a, e, 10)]
    assert _leader_groups(pairs, [a, b, c, d, e]) == [[a, b, e]]
    assert _leader_groups(pairs, [d, c, b, a, e]) == [[d, e], [c, b]]
    assert _leader_groups([], [a]) == []


def test_flat_pictures_are_not_near_duplicates_of_each_other(lib: Library, shoot: Path):
    """A white, a black and a smoothly shaded picture all hash to (nearly) 0:
    their pHash saw no structure, so they group with nothing (the demo's 81
    flat or transparent pictures in one group); the cat's
    near-duplicates still group."""
    Image.new("RGB", (200, 150), "white").save(shoot / "white.png")
    Image.new("RGB", (200, 150), "black").save(shoot / "black.png")
    Image.new("RGBA", (200, 150), (0, 0, 0, 0)).save(shoot / "clear.png")
    lib.ingest(shoot)
    ids = path_ids(lib)
    flat = lib.conn.execute("SELECT array_agg(bit_count(phash::bit(64)) ORDER BY asset_id) "
                            "FROM asset_phash WHERE asset_id = ANY(%s)",
                            ([ids["white.png"], ids["black.png"], ids["clear.png"]],)).fetchone()[0]
    assert flat == [0, 0, 1]   # (a clear picture: only the DC term)
    near = [sorted(a["asset_id"] for a in g["assets"]) for g in lib.duplicates()
            if g["kind"] == "near"]
    assert near == [sorted([ids["cat.jpg"], ids["cat-q60.jpg"], ids["cat-half.png"]])]


def test_similar_to_an_asset_returns_its_near_duplicates_only(lib: Library, shoot: Path):
    lib.ingest(shoot)
    ids = path_ids(lib)
    res = lib.similar(ids["cat.jpg"])
    assert sorted(h.asset_id for h in res.hits) == sorted([ids["cat-q60.jpg"], ids["cat-half.png"]])
    assert (res.total, res.verdict, res.lanes) == (2, "complete", ["hash"])
    assert all(h.distance <= res.radius for h in res.hits)
    assert any("no image model" in n for n in res.notices)


def test_similar_file_finds_the_original_first_and_is_not_ingested(lib: Library, shoot: Path,
                                                                   tmp_path: Path):
    lib.ingest(shoot)
    ids = path_ids(lib)
    im = Image.open(FIXTURES / "chelsea.jpg")
    probe = tmp_path / "probe.jpg"
    im.resize((im.width // 2, im.height // 2)).save(probe, quality=60)
    before = lib.stats()["assets"]
    res = lib.similar(file=probe)
    assert res.hits[0].asset_id in {ids["cat.jpg"], ids["cat-q60.jpg"], ids["cat-half.png"]}
    assert {h.asset_id for h in res.hits} == {ids["cat.jpg"], ids["cat-q60.jpg"], ids["cat-half.png"]}
    assert lib.stats()["assets"] == before


def test_a_file_that_is_not_an_image_is_a_clear_error(lib: Library, shoot: Path, tmp_path: Path,
                                                      db_url: str, home: Path):
    lib.ingest(shoot)
    bogus = tmp_path / "notes.jpg"
    bogus.write_text("this is not a picture")
    with pytest.raises(SimilarError, match=r"notes\.jpg: not an image"):
        lib.similar(file=bogus)
    out = CliRunner().invoke(main, ["--home", str(home), "--database-url", db_url,
                                    "similar", "--file", str(bogus)])
    assert out.exit_code != 0 and "not an image" in out.output and "notes.jpg" in out.output


def test_radius_out_of_range_is_refused():
    with pytest.raises(SimilarError, match="0..15"):
        mih_bits(16)
    assert [mih_bits(r) for r in (0, 3, 4, 7, 8, 11, 12, 15)] == [0, 0, 1, 1, 2, 2, 3, 3]


def test_a_member_never_learns_of_a_hidden_near_duplicate(lib: Library, shoot: Path):
    lib.ingest(shoot)
    ids = path_ids(lib)
    lib.create_user("alice", "alice-password")
    for name in ("cat.jpg", "coffee.jpg", "astronaut.jpg"):
        lib.grant("alice", asset_id=ids[name])
    alice = lib.as_user("alice")
    res = alice.similar(ids["cat.jpg"])
    # the re-encode and the resize exist, but alice may not read them
    assert (res.total, res.hits, res.verdict) == (0, [], "complete")
    assert not any(str(ids["cat-q60.jpg"]) in n or str(ids["cat-half.png"]) in n
                   for n in res.notices)
    assert [g for g in alice.duplicates() if g["kind"] == "near"] == []
    with pytest.raises(AssetNotFound):
        alice.similar(ids["cat-q60.jpg"])
    # granted one of them, she sees exactly that one
    lib.grant("alice", asset_id=ids["cat-half.png"])
    res = lib.as_user("alice").similar(ids["cat.jpg"])
    assert [h.asset_id for h in res.hits] == [ids["cat-half.png"]] and res.total == 1


def test_backfill_hashes_assets_ingested_before_hashes(lib: Library, shoot: Path):
    lib.ingest(shoot)
    before = dict(lib.conn.execute("SELECT asset_id, phash FROM asset_phash").fetchall())
    lib.conn.execute("DELETE FROM asset_phash")
    res = lib.similar(path_ids(lib)["cat.jpg"])  # hashes the few missing ones on the way
    assert res.total == 2 and res.verdict == "complete"
    lib.conn.execute("DELETE FROM asset_phash")
    assert lib.hash() == {"hashed": 5, "failed": 0, "pending": 0}
    assert dict(lib.conn.execute("SELECT asset_id, phash FROM asset_phash").fetchall()) == before


def _load_hashes(lib: Library, n: int, seed: float) -> None:
    """n assets with random 64-bit hashes, generated in SQL."""
    with lib.conn.transaction():
        lib.conn.execute("SELECT setseed(%s)", (seed,))
        lib.conn.execute("""
            INSERT INTO asset (id, tenant_id, content_sha256, byte_size, media_type, width, height)
            SELECT g, %(t)s, int8send(g), 1, 'image/jpeg', 1, 1 FROM generate_series(1, %(n)s) g
        """, {"t": lib.tenant_id, "n": n})
        lib.conn.execute("""
            INSERT INTO asset_phash (asset_id, tenant_id, phash, dhash)
            SELECT g, %(t)s, (floor(random() * 4294967296)::bigint << 32)
                             # floor(random() * 4294967296)::bigint, 0
            FROM generate_series(1, %(n)s) g
        """, {"t": lib.tenant_id, "n": n})
        lib.conn.execute("SELECT setval('asset_id_seq', %s)", (n,))
    lib.conn.execute("ANALYZE asset_phash")
    lib.conn.execute("ANALYZE asset")


def test_mih_returns_exactly_what_a_linear_scan_finds(lib: Library):
    _load_hashes(lib, 20_000, 0.11)
    rng = random.Random(7)
    base = perceptual.to_signed(rng.getrandbits(64))
    planted = {}
    with lib.conn.transaction():
        for d in range(0, 16):  # one planted hash at every distance 0..15
            bits = rng.sample(range(64), d)
            h = perceptual.to_signed((base & (2**64 - 1)) ^ sum(1 << b for b in bits))
            aid = lib.conn.execute(
                "INSERT INTO asset (tenant_id, content_sha256, byte_size, media_type, width, "
                "height) VALUES (%s, %s, 1, 'image/jpeg', 1, 1) RETURNING id",
                (lib.tenant_id, rng.randbytes(32))).fetchone()[0]
            lib.conn.execute("INSERT INTO asset_phash (asset_id, tenant_id, phash, dhash) "
                             "VALUES (%s, %s, %s, 0)", (aid, lib.tenant_id, h))
            planted[aid] = d
    for radius in (0, 3, 4, 7, 10, 15):
        hits, total = hash_neighbours(lib.conn, lib.tenant_id, base, radius=radius,
                                      viewer={"see_all": True, "principals": []}, limit=10_000)
        linear = lib.conn.execute(sq.SIMILAR_LINEAR, {
            "tenant_id": lib.tenant_id, "hash": base, "radius": radius, "limit": 10_000}).fetchall()
        assert [(h.asset_id, h.distance) for h in hits] == [tuple(r) for r in linear]
        assert total == len(linear)
        assert {a for a, d in planted.items() if d <= radius} <= {h.asset_id for h in hits}
        assert all(perceptual.hamming(base, p) == d for a, d in planted.items()
                   for p in [lib.conn.execute("SELECT phash FROM asset_phash WHERE asset_id = %s",
                                              (a,)).fetchone()[0]])


def test_similar_statement_plan_has_no_sequential_scan_at_100k(lib: Library):
    _load_hashes(lib, 100_000, 0.42)
    for radius in (3, 10, 15):
        plan = lib.conn.execute("EXPLAIN (FORMAT JSON) " + sq.SIMILAR, {
            "tenant_id": lib.tenant_id, "hash": 1234567890123, "bits": radius // 4,
            "radius": radius, "exclude": None, "limit": 20, "offset": 0,
            "see_all": False, "principals": [1]}).fetchone()[0]
        scans = list(_scans(plan[0]["Plan"]))
        # the four sub-hash indexes are probed; no big table is read whole
        # (mih_mask, 697 rows of bit flips, may be)
        assert {"asset_phash_p0_idx", "asset_phash_p1_idx", "asset_phash_p2_idx",
                "asset_phash_p3_idx"} <= {s[2] for s in scans}, scans
        assert [s for s in scans if s[0] == "Seq Scan" and s[1] != "mih_mask"] == [], scans


def _scans(node):
    """(node type, relation, index) of every scan in a JSON plan."""
    if "Relation Name" in node:
        yield node["Node Type"], node["Relation Name"], node.get("Index Name")
    for child in node.get("Plans", []):
        yield from _scans(child)


def test_with_an_image_model_the_image_lane_is_fused_after_the_hash_hits(lib: Library, shoot: Path,
                                                                       tmp_path: Path):
    from tinymodels import build_clip

    lib.ingest(shoot)
    ids = path_ids(lib)
    lib.install_model(build_clip(tmp_path / "models" / "tiny-clip"))
    lib.use_model("tiny-clip", "image")
    lib.embed()
    res = lib.similar(ids["cat.jpg"])
    assert res.lanes == ["hash", "image"] and (res.total, res.verdict) == (2, "complete")
    near = {ids["cat-q60.jpg"], ids["cat-half.png"]}
    # the two near-duplicates first (they hold a distance), then the image lane's
    # other neighbours (no distance): every other asset, the query excluded
    assert {h.asset_id for h in res.hits[:2]} == near
    assert all(h.distance is not None and h.image_distance is not None for h in res.hits[:2])
    assert {h.asset_id for h in res.hits[2:]} == {ids["coffee.jpg"], ids["astronaut.jpg"]}
    assert all(h.distance is None for h in res.hits[2:])
    assert [h.rank for h in res.hits] == [1, 2, 3, 4]
    # a file is encoded by the model too
    assert lib.similar(file=shoot / "cat-q60.jpg").lanes == ["hash", "image"]
    # the image lane reads only what the viewer may read
    lib.create_user("alice", "alice-password")
    lib.grant("alice", asset_id=ids["cat.jpg"])
    lib.grant("alice", asset_id=ids["coffee.jpg"])
    res = lib.as_user("alice").similar(ids["cat.jpg"])
    assert [h.asset_id for h in res.hits] == [ids["coffee.jpg"]] and res.total == 0


def test_a_file_that_cannot_be_hashed_is_ingested_with_a_warning(lib: Library, shoot: Path,
                                                                monkeypatch):
    import imagehash

    real = imagehash.phash

    def failing(image, *args, **kwargs):  # fault injection: the hash library fails on one file
        # cat-half.png, the one PNG: its pixels carry no JFIF header (the
        # hash library is handed them already reduced to 32x32)
        if "jfif" not in image.info:
            raise ValueError("simulated decoder failure")
        return real(image, *args, **kwargs)

    monkeypatch.setattr(imagehash, "phash", failing)
    summary = lib.ingest(shoot)
    assert summary.failed == 0 and summary.new_assets == 5
    assert [(w.path, w.kind) for w in summary.warnings] == [(str(shoot / "cat-half.png"), "phash")]
    assert "simulated decoder failure" in summary.warnings[0].reason
    ids = path_ids(lib)
    assert lib.conn.execute("SELECT phash, error IS NOT NULL FROM asset_phash WHERE asset_id = %s",
                            (ids["cat-half.png"],)).fetchone() == (None, True)
    res = lib.similar(ids["cat.jpg"])
    assert [h.asset_id for h in res.hits] == [ids["cat-q60.jpg"]]
    assert res.verdict == "unknown" and any(n.startswith("1 readable asset has no perceptual hash")
                                            for n in res.notices)


def test_cli_similar_duplicates_and_hash_mirror_the_library(lib: Library, shoot: Path,
                                                            db_url: str, home: Path):
    lib.ingest(shoot)
    ids = path_ids(lib)
    lib.conn.execute("DELETE FROM asset_phash")
    run = lambda *args: CliRunner().invoke(  # noqa: E731
        main, ["--home", str(home), "--database-url", db_url, *args])
    out = run("hash", "--json")
    assert out.exit_code == 0 and json.loads(out.output) == {"hashed": 5, "failed": 0, "pending": 0}
    out = run("similar", str(ids["cat.jpg"]), "--json")
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data == lib.similar(ids["cat.jpg"]).as_dict()
    assert sorted(h["asset_id"] for h in data["hits"]) == sorted([ids["cat-q60.jpg"],
                                                                  ids["cat-half.png"]])
    out = run("duplicates", "--json")
    assert out.exit_code == 0 and json.loads(out.output) == lib.duplicates()
    # the headline counts only exact copies as copies (it had added near groups' bytes)
    groups = lib.duplicates()
    near = [g for g in groups if g["kind"] == "near"]
    exact = [g for g in groups if g["kind"] == "exact"]
    assert near and sum(g["reclaimable"] for g in near) > 0
    assert run("duplicates").output.splitlines()[0] == (
        f"{len(near)} near-duplicate groups, {len(exact)} exact-bytes groups; "
        f"{sum(g['reclaimable'] for g in exact):,} bytes held by exact copies, "
        f"{sum(g['reclaimable'] for g in near):,} by the rest of near groups (look before "
        f"deleting: a near group may join different pictures)")
    out = run("similar", str(ids["cat.jpg"]), "--radius", "16")
    assert out.exit_code != 0 and "radius 16 is out of range: it must be 0..15" in out.output
    out = run("similar", "999999")
    assert out.exit_code != 0 and "no asset 999999" in out.output
    out = run("similar")
    assert out.exit_code != 0 and "either ASSET_ID or --file" in out.output
    out = run("similar", str(ids["cat.jpg"]))
    assert out.exit_code == 0 and "2 assets within 10 bits of asset" in out.output


def test_near_pairs_are_exactly_the_pairs_a_brute_force_finds(lib: Library):
    _load_hashes(lib, 1_500, 0.23)
    rng = random.Random(11)
    with lib.conn.transaction():  # 60 hashes 0..15 bits from a random stored one
        for k in range(60):
            src = lib.conn.execute("SELECT phash FROM asset_phash WHERE asset_id = %s",
                                   (rng.randrange(1, 1_501),)).fetchone()[0]
            flips = sum(1 << b for b in rng.sample(range(64), k % 16))
            aid = lib.conn.execute(
                "INSERT INTO asset (tenant_id, content_sha256, byte_size, media_type, width, "
                "height) VALUES (%s, %s, 1, 'image/jpeg', 1, 1) RETURNING id",
                (lib.tenant_id, rng.randbytes(32))).fetchone()[0]
            lib.conn.execute("INSERT INTO asset_phash (asset_id, tenant_id, phash, dhash) "
                             "VALUES (%s, %s, %s, 0)",
                             (aid, lib.tenant_id, perceptual.to_signed(src ^ flips)))
    hashes = lib.conn.execute("SELECT asset_id, phash FROM asset_phash ORDER BY asset_id").fetchall()
    for radius in (3, 10, 15):
        brute = [(a, b, perceptual.hamming(ha, hb)) for i, (a, ha) in enumerate(hashes)
                 for b, hb in hashes[i + 1:] if perceptual.hamming(ha, hb) <= radius]
        rows = lib.conn.execute(sq.NEAR_PAIRS, {
            "tenant_id": lib.tenant_id, "bits": mih_bits(radius), "radius": radius,
            "see_all": True, "principals": [], "min_bits": 0}).fetchall()
        assert [tuple(r) for r in rows] == sorted(brute)
        assert len(brute) >= 4 * (radius // 4 + 1)  # the planted pairs are there


def test_hash_is_taken_on_the_exif_oriented_image(tmp_path: Path):
    upright = Image.open(FIXTURES / "chelsea.jpg").convert("RGB")
    upright.save(tmp_path / "upright.png")
    stored = upright.transpose(Image.Transpose.ROTATE_90)  # what a camera held sideways writes
    exif = Image.Exif()
    exif[0x0112] = 6  # Orientation: rotate 90° clockwise to display
    stored.save(tmp_path / "tagged.png", exif=exif)
    stored.save(tmp_path / "untagged.png")
    up = perceptual.hash_file(str(tmp_path / "upright.png"))
    tagged = perceptual.hash_file(str(tmp_path / "tagged.png"))
    untagged = perceptual.hash_file(str(tmp_path / "untagged.png"))
    assert tagged == up
    assert perceptual.hamming(untagged.phash, up.phash) > 20
