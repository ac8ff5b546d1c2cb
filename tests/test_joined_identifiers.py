"""An identifier a file name writes with separators is found joined, as
itself (``SS26_HERO_03.jpg`` by "ss26hero03", ``IMG-4471-RD.jpg`` by
"4471rd"), not through the typo fallback; and a search says ``complete``
only where it could have found every way the library writes the query's
words: an identifier no document holds is not proven absent. Real files,
real ExifTool, real PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest
from imaging import make_image

from loupe import Library
from loupe.document.compile import filename_words
from loupe.search import verdict as vd


@pytest.mark.parametrize("path,words", [
    ("shoot/SS26_HERO_03.jpg", "SS26 HERO 03 SS26HERO03"),
    ("IMG-4471-RD.jpg", "IMG-4471-RD IMG4471RD 4471RD"),
    ("DSC_0042.JPG", "DSC 0042 DSC0042"),
    ("sunset_beach.jpg", "sunset beach"),       # no digit: not an identifier
    ("photo 2.jpg", "photo 2"),                 # parts apart by a space: two words
])
def test_a_file_names_identifier_is_also_written_joined(path, words):
    assert filename_words(path) == words


@pytest.fixture
def shoot(lib: Library, photos: Path) -> Library:
    make_image(photos / "shoot/SS26_HERO_03.jpg", color=(200, 10, 10))
    make_image(photos / "shoot/IMG-4471-RD.jpg", color=(10, 200, 10))
    make_image(photos / "shoot/beach.jpg", color=(10, 10, 200))
    assert lib.ingest(photos).new_assets == 3
    return lib


@pytest.mark.parametrize("query,path", [
    ("ss26hero03", "SS26_HERO_03.jpg"), ("SS26HERO03", "SS26_HERO_03.jpg"),
    ("SS26_HERO_03", "SS26_HERO_03.jpg"), ("4471rd", "IMG-4471-RD.jpg"),
    ("img4471rd", "IMG-4471-RD.jpg"),
])
def test_the_joined_identifier_finds_its_file_as_itself(shoot: Library, query, path):
    res = shoot.search(query, limit=10)
    assert [h.path.rsplit("/", 1)[-1] for h in res.hits][:1] == [path]
    assert res.corrections == {}
    assert res.verdict == "complete"


def test_an_identifier_no_document_holds_is_not_proven_absent(shoot: Library):
    res = shoot.search("ss27hero99", limit=10)
    assert res.hits == [] and res.total == 0
    assert res.verdict == "unknown" and res.total_exact is False
    assert any("“ss27hero99”: no document holds this identifier" in n for n in res.notices)


def test_a_word_of_letters_only_in_no_document_is_proven_absent(shoot: Library):
    res = shoot.search("zebra", limit=10)
    assert res.hits == [] and res.verdict == "complete" and res.total_exact is True


def test_the_verdict_of_an_unproven_word_is_unknown():
    c = vd.Counts(candidates=0, all_read=True, keep_cap=1000)
    assert vd.decide(c) == vd.Verdict("complete", 0, True)
    assert vd.decide(vd.Counts(candidates=0, all_read=True, keep_cap=1000, unproven=True)) \
        == vd.Verdict("unknown", 0, False)
