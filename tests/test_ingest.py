"""Ingest on real files: formats, duplicates, collections, incremental runs,
bad files, and the one-transaction-per-asset guarantee (S6, N3, P2)."""

from __future__ import annotations

import os
from pathlib import Path

from imaging import exiftool_write, make_image, write_sidecar
from PIL import Image

from loupe import Library


def asset_rows(lib: Library) -> list[tuple]:
    return lib.conn.execute(
        "SELECT a.media_type, a.width, a.height, f.rel_path FROM asset a "
        "JOIN asset_file f ON f.asset_id = a.id WHERE a.tenant_id = %s ORDER BY f.rel_path",
        (lib.tenant_id,)).fetchall()


def titles(lib: Library, query: str, lang: str | None = None) -> list[str]:
    return [h.title for h in lib.search(query, lang=lang, limit=100).hits]


def test_every_format(lib: Library, photos: Path):
    make_image(photos / "a.jpg", size=(40, 30), color=(10, 20, 30))
    make_image(photos / "b.png", size=(41, 30), color=(11, 20, 30), fmt="PNG")
    make_image(photos / "c.webp", size=(42, 30), color=(12, 20, 30), fmt="WEBP", lossless=True)
    make_image(photos / "d.tif", size=(43, 30), color=(13, 20, 30), fmt="TIFF")
    make_image(photos / "e.gif", size=(44, 30), color=(14, 20, 30), fmt="GIF")
    make_image(photos / "f.heic", size=(46, 30), color=(15, 20, 30), fmt="HEIF")
    summary = lib.ingest(photos)
    assert (summary.new_assets, summary.failed) == (6, 0)
    assert asset_rows(lib) == [
        ("image/jpeg", 40, 30, "a.jpg"), ("image/png", 41, 30, "b.png"),
        ("image/webp", 42, 30, "c.webp"), ("image/tiff", 43, 30, "d.tif"),
        ("image/gif", 44, 30, "e.gif"), ("image/heic", 46, 30, "f.heic"),
    ]
    # thumbnails exist for every asset, with orientation applied and bounded size
    for (thumb,) in lib.conn.execute("SELECT thumbnail FROM asset"):
        with Image.open(lib.home / thumb) as im:
            assert im.format == "WEBP" and max(im.size) <= 384


def test_orientation_applied_to_thumbnail(lib: Library, photos: Path):
    img = make_image(photos / "rot.jpg", size=(80, 40))
    exiftool_write(img, "-EXIF:Orientation#=6")
    lib.ingest(photos)
    asset = lib.show(1)
    # as displayed (tests/test_edges_ingest.py); the stored pixels apart
    assert (asset["width"], asset["height"], asset["orientation"]) == (40, 80, 6)
    assert (asset["stored_width"], asset["stored_height"]) == (80, 40)
    with Image.open(asset["thumbnail"]) as im:
        assert im.size == (40, 80)


def test_duplicates_are_one_asset_with_several_paths(lib: Library, photos: Path):
    a = make_image(photos / "food" / "rice-raw.jpg")
    b = photos / "food" / "rice-flakes.jpg"
    b.write_bytes(a.read_bytes())
    write_sidecar(a, "-XMP-dc:Title=Rice, raw")
    write_sidecar(b, "-XMP-dc:Title=Rice flakes", "-XMP-dc:Subject=breakfast")
    summary = lib.ingest(photos)
    assert (summary.new_assets, summary.duplicates) == (1, 1)
    assert lib.stats()["assets"] == 1 and lib.stats()["files"] == 2
    # findable by what either path says; the title lists both
    assert titles(lib, "breakfast") == ["Rice flakes / Rice, raw"]
    assert titles(lib, "raw") == ["Rice flakes / Rice, raw"]


def test_folders_become_collections(lib: Library, photos: Path):
    make_image(photos / "animals" / "mammals" / "cats" / "tiger.jpg")
    make_image(photos / "animals" / "birds" / "owl.jpg", color=(1, 2, 3))
    lib.ingest(photos)
    rows = lib.conn.execute(
        "SELECT c.path, p.path FROM collection c LEFT JOIN collection p ON p.id = c.parent_id "
        "ORDER BY c.path").fetchall()
    assert rows == [("animals", None), ("animals/birds", "animals"),
                    ("animals/mammals", "animals"), ("animals/mammals/cats", "animals/mammals")]
    # collection names are in the search document
    assert titles(lib, "mammals") == ["tiger.jpg"]
    assert sorted(titles(lib, "animals")) == ["owl.jpg", "tiger.jpg"]


def test_lang_alt_gives_one_document_per_language(lib: Library, photos: Path):
    lib.init(languages=["en", "fr", "de"])
    img = make_image(photos / "horses.jpg")
    write_sidecar(img, "-XMP-dc:Title=Horses in a field", "-XMP-dc:Title-fr=Chevaux dans un pré",
                  "-XMP-dc:Description=Two horses grazing",
                  "-XMP-dc:Description-fr-FR=Deux chevaux qui broutent")
    lib.ingest(photos)
    docs = {d["lang"]: (d["title"], d["description"]) for d in lib.show(1)["documents"]}
    assert docs == {
        "en": ("Horses in a field", "Two horses grazing"),
        "fr": ("Chevaux dans un pré", "Deux chevaux qui broutent"),
        "de": ("Horses in a field", "Two horses grazing"),  # no German text: x-default
    }
    # each language is stemmed by its own analyzer: fr 'cheval' finds 'chevaux'
    assert titles(lib, "cheval", lang="fr") == ["Chevaux dans un pré"]
    assert titles(lib, "horse", lang="en") == ["Horses in a field"]
    assert titles(lib, "cheval", lang="en") == []


def test_incremental_reingest(lib: Library, photos: Path):
    keep = make_image(photos / "keep.jpg", color=(1, 1, 1))
    edit = make_image(photos / "edit.jpg", color=(2, 2, 2))
    gone = make_image(photos / "gone.jpg", color=(3, 3, 3))
    side = write_sidecar(edit, "-XMP-dc:Title=Old title")
    first = lib.ingest(photos)
    assert (first.new_assets, first.unchanged) == (3, 0)

    again = lib.ingest(photos)
    assert (again.new_assets, again.updated, again.unchanged, again.removed_files) == (0, 0, 3, 0)

    # a changed sidecar re-reads metadata; a deleted file is removed; new bytes
    # under a known path keep the path's asset (its id; S7, tests/test_identity.py)
    write_sidecar(edit, "-XMP-dc:Title=New title")
    os.utime(side, ns=(1, 1))
    gone.unlink()
    make_image(keep, color=(9, 9, 9))
    os.utime(keep, ns=(2_000_000_000_000_000_000, 2_000_000_000_000_000_000))
    third = lib.ingest(photos)
    assert (third.new_assets, third.updated, third.unchanged) == (0, 2, 0)
    assert (third.removed_files, third.removed_assets) == (1, 1)
    assert titles(lib, "title") == ["New title"]
    assert titles(lib, "old") == []
    assert lib.stats()["assets"] == 2
    # corpus statistics follow: two documents, no term of the deleted asset left
    assert lib.conn.execute("SELECT n_docs FROM corpus_stat").fetchone()[0] == 2
    assert lib.conn.execute("SELECT count(*) FROM lexicon_term WHERE term = 'gone'").fetchone()[0] == 0


def test_bad_files_are_recorded_and_the_rest_is_ingested(lib: Library, photos: Path):
    good = make_image(photos / "good.jpg")
    write_sidecar(good, "-XMP-dc:Title=A good photo")
    (photos / "zero.jpg").write_bytes(b"")
    (photos / "text.png").write_text("this is not a picture\n")
    full = make_image(photos.parent / "full.jpg", size=(400, 300), color=(5, 5, 5)).read_bytes()
    (photos / "truncated.jpg").write_bytes(full[: len(full) // 2])
    (photos / "corrupt.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 40)
    Image.new("1", (16000, 12000)).save(photos / "bomb.png")  # 192 MP, 23 kB on disk
    summary = lib.ingest(photos)
    got = {Path(f.path).name: f.kind for f in summary.failures}
    assert got == {"zero.jpg": "empty", "text.png": "not_image", "truncated.jpg": "truncated",
                   "corrupt.png": "corrupt", "bomb.png": "too_large"}
    assert summary.new_assets == 1
    reasons = {Path(f["path"]).name: f["reason"] for f in lib.failures()}
    assert reasons["bomb.png"] == ("16000x12000 = 192,000,000 pixels exceeds the limit of "
                                   "150,000,000 (decompression bomb guard)")
    assert reasons["zero.jpg"] == "empty file (0 bytes)"
    assert titles(lib, "good photo") == ["A good photo"]
    # nothing of a failed file is visible
    assert lib.stats()["assets"] == 1 and lib.stats()["files"] == 1


def test_an_unusable_sidecar_is_ignored_with_a_warning(lib: Library, photos: Path):
    sidecars = {
        "unclosed": '<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/'
                    '1999/02/22-rdf-syntax-ns#"><rdf:Description><dc:title>unclosed',
        "text": "hello\n",
        "empty": "",
        "garbage": "<x:xmpmeta garbage",
    }
    for i, (name, content) in enumerate(sidecars.items()):
        img = make_image(photos / f"{name}.jpg", color=(7, 7, i * 50))
        exiftool_write(img, f"-XMP-dc:Title=Embedded {name} title")
        (photos / f"{name}.jpg.xmp").write_text(content)
    summary = lib.ingest(photos)
    assert (summary.new_assets, summary.failed) == (4, 0)
    reasons = {Path(w.path).name: w.reason for w in summary.warnings}
    side = {n: photos / f"{n}.jpg.xmp" for n in sidecars}
    assert reasons == {
        "unclosed.jpg": f"XMP sidecar {side['unclosed']} ignored: malformed XML "
                        "(XMP format error (no closing tag for x:xmpmeta))",
        "text.jpg": f"XMP sidecar {side['text']} ignored: not XMP (ExifTool reads it as TXT)",
        "empty.jpg": f"XMP sidecar {side['empty']} ignored: File is empty",
        "garbage.jpg": f"XMP sidecar {side['garbage']} ignored: it holds no XMP property",
    }
    # each image is indexed from its own metadata
    assert sorted(titles(lib, "embedded")) == [f"Embedded {n} title" for n in sorted(sidecars)]
    assert {f["severity"] for f in lib.failures()} == {"warning"}


def test_a_known_file_that_turns_bad_keeps_its_asset_until_it_reads_again(lib: Library,
                                                                          photos: Path):
    """An exporter rewriting a file can be caught mid-write: the failure is
    reported, and the asset — its id and what people added to it (S7) —
    stays as last read until the file reads again (it was deleted before)."""
    img = make_image(photos / "x.jpg")
    lib.ingest(photos)
    aid = lib.conn.execute("SELECT id FROM asset").fetchone()[0]
    lib.bulk("add_keyword", "approved", query="x")
    img.write_bytes(b"")
    summary = lib.ingest(photos)
    assert [f.kind for f in summary.failures] == ["empty"]
    assert f"asset {aid} keeps its previous version" in summary.failures[0].reason
    assert (summary.removed_files, summary.removed_assets) == (0, 0)
    assert [h.asset_id for h in lib.search("approved").hits] == [aid]
    # retried at the next run; read again, the same asset
    make_image(img, color=(1, 2, 3))
    again = lib.ingest(photos)
    assert (again.failed, again.updated, again.new_assets) == (0, 1, 0)
    assert [h.asset_id for h in lib.search("approved").hits] == [aid]
    # deleted: it goes
    img.unlink()
    gone = lib.ingest(photos)
    assert (gone.removed_files, gone.removed_assets, lib.stats()["assets"]) == (1, 1, 0)
