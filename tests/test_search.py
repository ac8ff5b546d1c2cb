"""Library-level search: exact answers, honest totals, tenant isolation (P3),
searchable in the inserting transaction (P2)."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest
from imaging import make_image, write_sidecar

from loupe import Library
from loupe.document.compile import rebuild_documents


@pytest.fixture
def small_library(lib: Library, photos: Path) -> Library:
    specs = [
        ("wild/cheetah.jpg", "Cheetah", "A cheetah running across the savanna", ["cat", "wildlife"]),
        ("wild/lion.jpg", "Lion at rest", "A male lion resting in the shade of an acacia", ["cat"]),
        ("city/lisbon.jpg", "Lisbon tram", "Yellow tram 28 climbing a street at sunset", ["tram"]),
        ("city/porto.jpg", "Porto bridge", "The Dom Luís I bridge over the Douro at sunset",
         ["bridge", "river"]),
    ]
    for i, (rel, title, desc, kws) in enumerate(specs):
        img = make_image(photos / rel, color=(i * 40, 10, 10))
        write_sidecar(img, f"-XMP-dc:Title={title}", f"-XMP-dc:Description={desc}",
                      *[f"-XMP-dc:Subject={k}" for k in kws])
    summary = lib.ingest(photos)
    assert summary.new_assets == 4
    return lib


def test_single_word(small_library: Library):
    res = small_library.search("cheetah")
    assert (res.total, res.verdict, [h.title for h in res.hits]) == (1, "complete", ["Cheetah"])
    assert res.hits[0].path.endswith("wild/cheetah.jpg")


def test_multi_word_description_ranks_the_described_asset_first(small_library: Library):
    res = small_library.search("tram climbing a street at sunset")
    assert [h.title for h in res.hits] == ["Lisbon tram", "Porto bridge"]
    assert res.total == 2


def test_word_in_no_document_gives_zero_results(small_library: Library):
    res = small_library.search("madrid")
    assert (res.total, res.hits, res.terms) == (0, [], ["madrid"])


def test_stemming_and_accents(small_library: Library):
    assert [h.title for h in small_library.search("resting lions").hits] == ["Lion at rest"]
    assert [h.title for h in small_library.search("Luis").hits] == ["Porto bridge"]


def test_tenants_never_see_each_other(db_url: str, home: Path, photos: Path, tmp_path: Path):
    with Library.open(home, database_url=db_url) as a:
        img = make_image(photos / "a.jpg")
        write_sidecar(img, "-XMP-dc:Title=Secret cheetah prototype")
        a.ingest(photos)
    other = tmp_path / "other"
    img = make_image(other / "b.jpg", color=(1, 2, 3))
    write_sidecar(img, "-XMP-dc:Title=Public cheetah")
    make_image(other / "c.jpg", color=(3, 2, 1))
    with Library.open(home, database_url=db_url, tenant="acme", create=True) as b:
        b.ingest(other)
        res = b.search("cheetah")
        assert [h.title for h in res.hits] == ["Public cheetah"] and res.total == 1
        assert b.search("secret").total == 0
        assert b.stats()["assets"] == 2
        # BM25 statistics are per tenant: 'cheetah' is in 1 of acme's 2 documents
        assert b.conn.execute(
            "SELECT df FROM lexicon_term WHERE tenant_id = %s AND term = 'cheetah'",
            (b.tenant_id,)).fetchone() == (1,)
        with pytest.raises(Exception, match="no asset 1 in tenant 'acme'"):
            b.show(1)
    with Library.open(home, database_url=db_url) as a:
        assert [h.title for h in a.search("cheetah").hits] == ["Secret cheetah prototype"]
        assert a.search("public").total == 0


def test_new_asset_is_searchable_in_the_inserting_transaction(small_library: Library,
                                                                db_url: str):
    lib = small_library
    with lib.conn.transaction():
        lib.conn.execute(
            "UPDATE asset_file SET metadata = jsonb_set(metadata, '{keywords}', '[\"zanzibar\"]')"
            " WHERE rel_path = 'wild/lion.jpg'")
        asset_id = lib.conn.execute(
            "SELECT asset_id FROM asset_file WHERE rel_path = 'wild/lion.jpg'").fetchone()[0]
        rebuild_documents(lib.conn, lib.tenant_id, asset_id, ["en"])
        assert [h.title for h in lib.search("zanzibar").hits] == ["Lion at rest"]
        with psycopg.connect(db_url) as other:  # not committed: invisible elsewhere
            assert other.execute(
                "SELECT count(*) FROM search_document WHERE keywords LIKE '%%zanzibar%%'"
            ).fetchone()[0] == 0
    assert lib.search("zanzibar").total == 1


def test_renaming_languages_rebuilds_documents(small_library: Library):
    small_library.init(languages=["en", "es"])
    assert small_library.stats()["documents"] == {"en": 4, "es": 4}
    small_library.init(languages=["es"])
    assert small_library.stats()["documents"] == {"es": 4}
    assert small_library.search("cheetah").total == 1  # default language is now es


def test_library_languages_are_checked(small_library: Library):
    with pytest.raises(ValueError, match=r"'xx' is not a language of this library \(en\)"):
        small_library.search("cheetah", lang="xx")
    with pytest.raises(ValueError, match=r"unknown language code 'zz'"):
        small_library.init(languages=["en", "zz"])
    with pytest.raises(ValueError, match=r"a library needs at least one language"):
        small_library.init(languages=[""])
    assert small_library.languages() == ["en"]


def test_an_uninitialised_home_is_an_error_not_an_empty_library(tmp_path: Path):
    from loupe.library import LibraryNotInitialized

    with pytest.raises(LibraryNotInitialized, match=r"no Loupe library in .*nowhere: create one"):
        Library.open(tmp_path / "nowhere")
    assert not (tmp_path / "nowhere").exists()
