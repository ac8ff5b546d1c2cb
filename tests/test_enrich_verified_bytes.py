"""The passes that read pixels after the ingest (enrich, embed, faces, the
perceptual-hash back-fill) read only a file that still holds the asset's bytes. Real files, real PostgreSQL; each
test failed on main 286cce1.

``loupe enrich`` read an asset's pixels by the path of its
first file and stored what it found (kind, colours, OCR text) on the asset:
a file replaced by a link to a private picture, or a private copy edited in
place before the next ingest, gave a shared asset the private picture's
words, which every reader of the asset saw and searched. ``loupe embed``,
``loupe faces`` and the perceptual-hash back-fill read the same way.
the same passes opened a FIFO (``loupe enrich`` hung for
ever) and decoded a pixel bomb swapped in after the ingest.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from PIL import Image, ImageDraw

from loupe import Library
from loupe.assets.view import NoVerifiedFile, open_asset_bytes
from loupe.similar.search import _verified_hash
from loupe.vector.embed import _open_image


def _facts(lib: Library, asset_id: int) -> tuple:
    return lib.conn.execute("SELECT kind, background, colours, version FROM asset_machine "
                            "WHERE asset_id = %s", (asset_id,)).fetchone()


def _asset(lib: Library, rel: str) -> int:
    return lib.conn.execute("SELECT asset_id FROM asset_file WHERE rel_path = %s",
                            (rel,)).fetchone()[0]


@pytest.fixture
def two(db_url: str, home: Path, photos: Path):
    """shared/innocent.png: a blue disc on transparent; private/scan.png: black
    lines on white; shared/dup.png and private/p4.png: the same red square."""
    (photos / "shared").mkdir()
    (photos / "private").mkdir()
    im = Image.new("RGBA", (300, 200), (0, 0, 0, 0))
    ImageDraw.Draw(im).ellipse((50, 20, 250, 180), fill=(30, 60, 230, 255))
    im.save(photos / "shared" / "innocent.png")
    im = Image.new("RGB", (600, 400), "white")
    d = ImageDraw.Draw(im)
    for i in range(0, 600, 60):
        d.line((i, 0, 600 - i, 400), fill="black", width=4)
    im.save(photos / "private" / "scan.png")
    im = Image.new("RGB", (300, 300), (200, 30, 30))
    im.save(photos / "shared" / "dup.png")
    im.save(photos / "private" / "p4.png")
    with Library.open(home, database_url=db_url, create=True) as lib:
        lib.init(languages=["en"])
        assert lib.ingest(photos).failed == 0
        yield lib, photos


def _stale(lib: Library) -> None:
    """As after migration 0028 (or a rules version change): every asset's
    facts are due for recomputing."""
    lib.conn.execute("UPDATE asset_machine SET version = 0")


def test_a_file_swapped_for_a_link_is_never_read(two):
    lib, photos = two
    innocent = _asset(lib, "shared/innocent.png")
    before = _facts(lib, innocent)
    assert before[:3] == ("clipart", "transparent", ["blue"])
    link = photos / "shared" / "innocent.png"
    link.unlink()
    link.symlink_to(photos / "private" / "scan.png")
    _stale(lib)
    out = lib.enrich()
    assert (out["computed"], out["skipped"], out["pending"]) == (2, 1, 1)
    assert out["skipped_reasons"] == [
        f"asset {innocent}: none of its 1 file(s) on disk holds its bytes any more (changed, "
        f"replaced or removed since the ingest; run 'loupe ingest' again); its facts of an "
        f"older version were removed"]
    # facts of an older version cannot be checked any more: removed, with their words
    assert _facts(lib, innocent) is None
    assert lib.conn.execute("SELECT count(*) FROM search_document WHERE asset_id = %s "
                            "AND machine <> ''", (innocent,)).fetchone()[0] == 0
    assert lib.enrich()["skipped_reasons"][0].endswith("run 'loupe ingest' again)")
    with pytest.raises(NoVerifiedFile):
        _open_image(lib.conn, innocent)
    assert _verified_hash(lib.conn, innocent).startswith("no perceptual hash: asset ")


def test_a_private_copy_edited_in_place_gives_its_twin_nothing(two):
    lib, photos = two
    dup = _asset(lib, "shared/dup.png")
    assert _asset(lib, "private/p4.png") == dup
    before = _facts(lib, dup)
    assert before[:3] == ("clipart", "uniform", ["red"])
    # the owner edits the private copy (first by path) before the next ingest
    im = Image.new("RGB", (600, 400), "white")
    ImageDraw.Draw(im).line((0, 0, 600, 400), fill="black", width=4)
    im.save(photos / "private" / "p4.png")
    _stale(lib)
    out = lib.enrich()
    assert (out["computed"], out["skipped"], out["pending"]) == (3, 0, 0)
    assert _facts(lib, dup)[:3] == before[:3]            # read from shared/dup.png
    fh, path = open_asset_bytes(lib.conn, dup)
    fh.close()
    assert path == str(photos / "shared" / "dup.png")


def test_a_fifo_swapped_in_never_blocks_enrich(two):
    lib, photos = two
    innocent = _asset(lib, "shared/innocent.png")
    (photos / "shared" / "innocent.png").unlink()
    os.mkfifo(photos / "shared" / "innocent.png")
    _stale(lib)

    def stuck(*_):
        raise TimeoutError("loupe enrich blocked on a FIFO")

    old = signal.signal(signal.SIGALRM, stuck)
    signal.alarm(60)
    try:
        out = lib.enrich()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    assert (out["computed"], out["skipped"]) == (2, 1)
    assert out["skipped_reasons"][0].startswith(f"asset {innocent}: none of its 1 file(s)")


def test_the_pass_decodes_a_private_copy_never_the_file(two):
    """The check hashed the file, then the decoders read the file again: a
    writer who rewrote it in place in between (same inode, same size) got
    other pixels, or a pixel bomb, decoded as the asset's.
    The pass now reads a copy made while hashing."""
    lib, photos = two
    dup = _asset(lib, "shared/dup.png")
    fh, path = open_asset_bytes(lib.conn, dup)
    before = (photos / "private" / "p4.png").read_bytes()
    with open(path, "r+b") as f:   # in place: same inode, same size, other bytes
        f.write(bytes(len(before)))
    with fh:
        assert fh.read() == before


# ---- vectors follow the facts they were built from --------------------------------------------------------------------------

def _vector(lib: Library, asset_id: int, lane: str) -> None:
    """A stand-in vector of ``lane`` for the asset (a model row of 3 dims)."""
    model = lib.conn.execute(
        "INSERT INTO embedding_model (name, kind, dims) VALUES ('t3', 'test', 3) "
        "ON CONFLICT (name) DO UPDATE SET dims = 3 RETURNING id").fetchone()[0]
    lib.conn.execute("INSERT INTO asset_vector (asset_id, tenant_id, model_id, lane, embedding)"
                     " VALUES (%s, %s, %s, %s, '[1,0,0]')",
                     (asset_id, lib.tenant_id, model, lane))


def _lanes(lib: Library, asset_id: int) -> list[str]:
    return [r[0] for r in lib.conn.execute(
        "SELECT lane FROM asset_vector WHERE asset_id = %s ORDER BY lane", (asset_id,))]


def test_vectors_of_words_and_bytes_that_cannot_be_checked_go_with_them(two):
    """Removing facts that cannot be checked must also remove the text vector
    built from them, or a member still finds the asset by the scan's text. Dropped
    facts take the asset's vectors along; a recomputation that changes the
    machine words drops its text vectors (and keeps them when the words stay)."""
    lib, photos = two
    innocent, dup = _asset(lib, "shared/innocent.png"), _asset(lib, "shared/dup.png")
    for asset in (innocent, dup):
        _vector(lib, asset, "text")
        _vector(lib, asset, "image")
    link = photos / "shared" / "innocent.png"
    link.unlink()
    link.symlink_to(photos / "private" / "scan.png")
    _stale(lib)
    lib.enrich()
    assert _lanes(lib, innocent) == []                   # facts gone, vectors gone
    assert _lanes(lib, dup) == ["image", "text"]         # recomputed, same words: kept
    # words that change (here: the stored facts made to differ) drop the text vectors only
    lib.conn.execute("UPDATE asset_machine SET version = 0, colours = '{green}' "
                     "WHERE asset_id = %s", (dup,))
    from loupe.document.compile import rebuild_documents
    rebuild_documents(lib.conn, lib.tenant_id, dup, ["en"])
    lib.enrich()
    assert _lanes(lib, dup) == ["image"]


def test_a_header_other_than_the_decoded_size_is_never_decoded(two):
    """An ingest that hashed one state of a file and decoded another (a race
    before the fix) recorded a small picture's size under a bomb's SHA-256:
    the passes compare the header with that size before any decode."""
    lib, photos = two
    dup = _asset(lib, "shared/dup.png")
    lib.conn.execute("UPDATE asset SET width = 200, height = 100 WHERE id = %s", (dup,))
    with pytest.raises(NoVerifiedFile, match=rf"asset {dup}: its bytes hold a 300x300 picture, "
                                             r"not the 200x100 its ingest decoded"):
        open_asset_bytes(lib.conn, dup)


def test_the_ingest_decodes_the_bytes_it_hashed(db_url: str, home: Path, photos: Path,
                                                      monkeypatch):
    """The ingest hashed the file and decoded it again through the same
    descriptor; a rewrite between the two stored one picture's size, facts
    and thumbnail under another's SHA-256. Now the decode reads the copy
    the hash was taken of: a rewrite after the hash changes nothing."""
    import hashlib

    from loupe.ingest import image as image_mod

    import io
    import os

    import numpy as np

    noise = np.random.default_rng(13).integers(0, 255, (80, 120, 3), dtype=np.uint8)
    Image.fromarray(noise).save(photos / "a.png")   # noise: larger than the other picture
    original = (photos / "a.png").read_bytes()
    buf = io.BytesIO()
    Image.new("RGB", (40, 20), (0, 0, 255)).save(buf, "PNG")
    other = buf.getvalue()
    assert len(other) < len(original)
    real = image_mod.hashed_copy

    def rewrite_after_hash(fileobj, max_bytes=None):
        out = real(fileobj, max_bytes)
        st = os.stat(photos / "a.png")
        with open(photos / "a.png", "r+b") as f:   # in place, same size, mtime put back,
            f.write(other + bytes(len(original) - len(other)))   # as a careful writer would
        os.utime(photos / "a.png", ns=(st.st_atime_ns, st.st_mtime_ns))
        return out

    import loupe.ingest.prepare as prepare_mod
    monkeypatch.setattr(prepare_mod, "hashed_copy", rewrite_after_hash)
    with Library.open(home, database_url=db_url, create=True) as lib:
        lib.init(languages=["en"])
        lib.ingest(photos)
        row = lib.conn.execute("SELECT content_sha256, width, height FROM asset").fetchall()
    assert [(bytes(r[0]), r[1], r[2]) for r in row] == [
        (hashlib.sha256(original).digest(), 120, 80)]


# ---- a missing file is not a changed file --------------------------------------------------------------------------

def test_a_file_only_missing_keeps_its_facts_and_vectors(two):
    """A file moved away or a source not mounted during an enrich after a
    rules change took the asset's facts and every vector with it; only
    evidence (a link, a special file, other bytes) does now."""
    lib, photos = two
    innocent = _asset(lib, "shared/innocent.png")
    _vector(lib, innocent, "image")
    moved = photos / "innocent.png"
    (photos / "shared" / "innocent.png").rename(moved)
    _stale(lib)
    out = lib.enrich()
    assert out["skipped_reasons"] == [
        f"asset {innocent}: none of its 1 file(s) could be read now (missing; a source not "
        f"mounted, or a full temporary directory?): nothing was changed"]
    assert _facts(lib, innocent) == ("clipart", "transparent", ["blue"], 0)
    assert _lanes(lib, innocent) == ["image"]
    moved.rename(photos / "shared" / "innocent.png")   # back: computed again
    assert lib.enrich()["skipped"] == 0 and _facts(lib, innocent)[3] > 0


def test_a_copy_that_cannot_be_written_changes_nothing(two, monkeypatch):
    """A full temporary directory made the copy fail, which enrich read as
    'not the asset's bytes' and deleted a healthy asset's facts and vectors."""
    import loupe.assets.view as view_mod

    lib, _photos = two
    dup = _asset(lib, "shared/dup.png")
    _vector(lib, dup, "text")

    def full(fileobj, max_bytes=None):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(view_mod, "hashed_copy", full)
    _stale(lib)
    out = lib.enrich()
    assert out["computed"] == 0 and out["skipped"] == 3
    assert all("a read or copy failed" in r for r in out["skipped_reasons"])
    assert _facts(lib, dup)[:3] == ("clipart", "uniform", ["red"])
    assert _lanes(lib, dup) == ["text"]


def test_the_ingest_bounds_and_measures_what_it_copies(db_url: str, home: Path,
                                                                    photos: Path, monkeypatch):
    """A file over MAX_FILE_BYTES is refused before it is read (a sparse file
    of any apparent size filled the temporary directory with its copy), and
    a file whose size changes while it is copied is not stored (its record
    would hold a size its bytes do not have)."""
    import loupe.ingest.prepare as prepare_mod

    (photos / "a").mkdir()
    (photos / "b").mkdir()
    Image.new("RGB", (64, 48), (10, 120, 40)).save(photos / "a" / "big.png")
    Image.new("RGB", (64, 48), (120, 10, 40)).save(photos / "b" / "grows.png")
    real = prepare_mod.hashed_copy
    size = (photos / "a" / "big.png").stat().st_size

    def grow(fileobj, max_bytes=None):
        with open(photos / "b" / "grows.png", "ab") as f:
            f.write(b"x" * 10)
        return real(fileobj, max_bytes)

    with Library.open(home, database_url=db_url, create=True) as lib:
        lib.init(languages=["en"])
        monkeypatch.setattr(prepare_mod, "MAX_FILE_BYTES", size - 1)
        summary = lib.ingest(photos / "a")
        assert [(Path(f.path).name, f.kind, f.reason) for f in summary.failures] == [
            ("big.png", "too_large", f"{size:,} bytes, over the limit of {size - 1:,} bytes a "
                                     f"picture file may have: not read")]
        monkeypatch.setattr(prepare_mod, "MAX_FILE_BYTES", 1 << 30)
        monkeypatch.setattr(prepare_mod, "hashed_copy", grow)
        summary = lib.ingest(photos / "b")
        assert [(Path(f.path).name, f.kind) for f in summary.failures] == [
            ("grows.png", "not_regular")]
        assert lib.conn.execute("SELECT count(*) FROM asset").fetchone()[0] == 0


def test_open_faces_and_hash_of_unverifiable_bytes_go_too(two):
    """The branch that removes facts of bytes it cannot check left the
    asset's faces (crops shown to its readers) and perceptual hash, which
    may show another picture (open): they go with the
    facts, the face scan is forgotten so that `loupe faces` scans it again,
    and a person left with no face goes."""
    lib, photos = two
    innocent = _asset(lib, "shared/innocent.png")
    person = lib.conn.execute("INSERT INTO person (tenant_id, number, name) VALUES (%s, 99, "
                              "'Secret Person') RETURNING id", (lib.tenant_id,)).fetchone()[0]
    lib.conn.execute(
        "INSERT INTO face (tenant_id, asset_id, box_x, box_y, box_w, box_h, descriptor, "
        "detector, size_px, blur, score, crop, person_id, confirmed) VALUES (%s, %s, 0.1, 0.1, "
        "0.5, 0.5, %s::vector, 'test', 80, 1, 1, %s, %s, true)",
        (lib.tenant_id, innocent, "[" + ",".join(["0.1"] * 128) + "]", b"crop", person))
    lib.conn.execute("INSERT INTO face_scan (asset_id, tenant_id, detector, faces) "
                     "VALUES (%s, %s, 'test', 1)", (innocent, lib.tenant_id))
    assert lib.conn.execute("SELECT count(*) FROM asset_phash WHERE asset_id = %s",
                            (innocent,)).fetchone()[0] == 1
    link = photos / "shared" / "innocent.png"
    link.unlink()
    link.symlink_to(photos / "private" / "scan.png")
    _stale(lib)
    lib.enrich()
    counts = lib.conn.execute(
        "SELECT (SELECT count(*) FROM face WHERE asset_id = %(a)s), "
        "(SELECT count(*) FROM face_scan WHERE asset_id = %(a)s), "
        "(SELECT count(*) FROM asset_phash WHERE asset_id = %(a)s), "
        "(SELECT count(*) FROM person WHERE id = %(p)s)", {"a": innocent, "p": person}).fetchone()
    assert counts == (0, 0, 0, 0)
