"""The CLI's everyday outcomes in words and its long commands' progress:
a bulk action says what it did as the web app does (a cleared date reads
"(cleared)", never a raw None), and a vocabulary import reports the
documents it rebuilds as it goes."""

from __future__ import annotations

import json

from click.testing import CliRunner

from imaging import exiftool_write, make_image
from loupe.cli import main


def test_a_bulk_outcome_is_said_in_words(lib, photos, db_url, home):
    for i in range(1, 4):
        make_image(photos / f"cat-{i:02d}.jpg", color=(10 * i, 200, 30))
    lib.ingest(photos)
    cli = ["--home", str(home), "--database-url", db_url, "bulk"]
    out = CliRunner().invoke(main, cli + ["set_embargo", "", "-q", "cat"])
    assert out.exit_code == 0, out.output
    first = out.output.splitlines()[0]
    assert first.startswith("Set embargo until (cleared): applied to 3 assets (result complete, "
                            "total 3; audit #"), first
    assert "None" not in out.output
    out = CliRunner().invoke(main, cli + ["add_keyword", "feline", "-q", "cat", "--dry-run"])
    assert out.output.splitlines()[0] == ("dry run: Add keyword “feline”: would apply to 3 "
                                          "assets (result complete, total 3); nothing changed")
    CliRunner().invoke(main, cli + ["add_keyword", "feline", "-q", "cat"])
    out = CliRunner().invoke(main, cli + ["remove_keyword", "Feline", "-q", "cat 02"])
    assert out.output.splitlines()[0].startswith("Remove keyword “Feline”: applied to 1 asset ")
    assert lib.search("feline").total == 2
    # the search's filters narrow a bulk action too
    out = CliRunner().invoke(main, cli + ["add_keyword", "tabby", "-q", "cat",
                                          "--keyword", "feline"])
    assert out.output.splitlines()[0].startswith("Add keyword “tabby”: applied to 2 assets "), \
        out.output
    out = CliRunner().invoke(main, cli + ["add_keyword", "x", "-q", "cat", "--where", "{"])
    assert out.exit_code == 1 and "not JSON" in out.output


def test_a_vocabulary_import_reports_its_progress(lib, photos, tmp_path):
    for name in ("espresso.jpg", "toaster.jpg", "plain.jpg"):
        pic = make_image(photos / name, color=(len(name) * 9, 40, 40))
        if name != "plain.jpg":
            exiftool_write(pic, f"-XMP-dc:Subject={name.split('.')[0]}")
    lib.ingest(photos)
    vocab = tmp_path / "products.json"
    vocab.write_text(json.dumps({"name": "products", "terms": [
        {"key": "espresso", "label": "Espresso"}, {"key": "toaster", "label": "Toaster"}]}))
    calls = []
    info = lib.import_vocabulary(vocab, progress=lambda d, t: calls.append((d, t)))
    assert info["assets_tagged"] == 2
    assert calls == [(1, 2), (2, 2)]
