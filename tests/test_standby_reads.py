"""Reads on hot standbys (docs/scaling.md, "Hot standbys"): a primary and a
streaming standby run from the embedded wheel (tests/standby.py); searches,
facets and verdicts read on the standby are the primary's; a standby is
verified, never migrated; a standby that stops sends reads to the primary
with a notice."""

from __future__ import annotations

import shutil
from pathlib import Path

import psycopg
import pytest
from imaging import make_image, write_sidecar
from standby import Cluster, free_port, wait_for_replay

from loupe import Library
from loupe.db import replica
from loupe.db.migrate import SchemaBehind, available, verify_current

SPECS = [
    ("wild/cheetah.jpg", "Cheetah", "A cheetah running across the savanna", ["cat"]),
    ("wild/lion.jpg", "Lion at rest", "A male lion resting in the shade", ["cat"]),
    ("city/lisbon.jpg", "Lisbon tram", "Yellow tram climbing a street at sunset", ["tram"]),
    ("city/porto.jpg", "Porto bridge", "A bridge over the Douro at sunset", ["bridge"]),
]


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory):
    """``(primary, standby, home, photos)``: a library ingested on the
    primary, replayed by the standby."""
    root = tmp_path_factory.mktemp("standby")
    primary = Cluster(root / "primary", free_port())
    primary.initdb()
    primary.start()
    standby = Cluster(root / "standby", free_port())
    try:
        standby.base_backup_of(primary)
        standby.start()
        home, photos = root / "home", root / "photos"
        for i, (rel, title, desc, kws) in enumerate(SPECS):
            img = make_image(photos / rel, color=(i * 40, 10, 10))
            write_sidecar(img, f"-XMP-dc:Title={title}", f"-XMP-dc:Description={desc}",
                          *[f"-XMP-dc:Subject={k}" for k in kws])
        with Library.open(home, database_url=primary.url, create=True) as lib:
            lib.init(languages=["en"])
            assert lib.ingest(photos).new_assets == 4
        wait_for_replay(primary.url, standby.url)
        yield primary, standby, home, photos
    finally:
        for c in (standby, primary):
            try:
                c.stop("immediate")
            except RuntimeError:
                pass
        shutil.rmtree(root, ignore_errors=True)


def _answer(res) -> tuple:
    return (res.total, res.total_exact, res.verdict, res.terms,
            [(h.asset_id, h.title, h.path, h.score) for h in res.hits])


QUERIES = ["cheetah", "sunset", "cat", "tram sunset", "nothingatall", "bridg"]


def test_searches_facets_and_verdicts_on_the_standby_are_the_primarys(pair):
    primary, standby, home, _ = pair
    with Library.open(home, database_url=primary.url) as on_primary, \
            Library.open(home, database_url=primary.url, read_database_url=standby.url) as lib:
        for query in QUERIES:
            mine, theirs = lib.search(query), on_primary.search(query)
            assert _answer(mine) == _answer(theirs), query
            assert mine.notices == theirs.notices, query
        assert lib.search("sunset").total == 2
        assert lib.facets("cat") == on_primary.facets("cat")
        assert lib.facets("") == on_primary.facets("")
        # the reads went to the standby
        assert lib.reads.url == standby.url and lib.reads.notice is None
        assert lib.reads.conn.execute("SELECT pg_is_in_recovery()").fetchone()[0] is True


def test_a_standby_shows_an_asset_once_it_has_replayed_it(pair):
    primary, standby, home, photos = pair
    with psycopg.connect(standby.url, autocommit=True) as s, \
            Library.open(home, database_url=primary.url) as on_primary, \
            Library.open(home, database_url=primary.url, read_database_url=standby.url) as lib:
        s.execute("SELECT pg_wal_replay_pause()")
        try:
            img = make_image(photos / "wild" / "zebra.jpg", color=(250, 250, 250))
            write_sidecar(img, "-XMP-dc:Title=Zebra")
            assert on_primary.ingest(photos).new_assets == 1
            assert on_primary.search("zebra").total == 1   # the primary: at once (P2)
            assert lib.search("zebra").total == 0          # the paused standby: not yet
            # a bulk action decides its writes on the primary
            dry = lib.bulk("add_keyword", "striped", query="zebra", dry_run=True)
            assert (dry["matched_all_terms"], dry["total"]) == (1, 1)
        finally:
            s.execute("SELECT pg_wal_replay_resume()")
        wait_for_replay(primary.url, standby.url)
        assert [h.title for h in lib.search("zebra").hits] == ["Zebra"]


def test_a_library_opened_on_a_standby_is_verified_and_never_migrated(pair):
    _, standby, home, _ = pair
    with Library.open(home, database_url=standby.url) as lib:
        assert lib.conn.execute("SELECT pg_is_in_recovery()").fetchone()[0] is True
        assert lib.search("cheetah").total == 1
        assert verify_current(lib.conn) == available()[-1][0]
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            lib.init(languages=["en", "fr"])


def test_a_standby_that_stops_sends_searches_to_the_primary_with_a_notice(pair):
    primary, standby, home, _ = pair
    with Library.open(home, database_url=primary.url, read_database_url=standby.url) as lib:
        before = _answer(lib.search("cat"))
        assert lib.reads.conn is not None
        standby.stop("immediate")
        try:
            res = lib.search("cat")
            assert _answer(res) == before
            assert res.notices[-1].startswith("no standby answered, so this read ran on the "
                                              "primary (127.0.0.1:")
            assert lib.reads.conn is None
            # a fresh Library whose standby is down at its first read
            with Library.open(home, database_url=primary.url,
                              read_database_url=standby.url) as fresh:
                again = fresh.search("cat")
                assert _answer(again) == before
                assert "no standby answered" in again.notices[-1]
                assert fresh.people() == lib.people() == []
        finally:
            standby.start()


def test_a_database_behind_the_code_is_refused_naming_what_it_lacks(db_url: str,
                                                                    tmp_path: Path):
    shipped = tmp_path / "migrations"
    shipped.mkdir()
    for _, name, sql in available():
        (shipped / name).write_text(sql, encoding="utf-8")
    (shipped / "9999_from_a_newer_loupe.sql").write_text("SELECT 1;", encoding="utf-8")
    with psycopg.connect(db_url, autocommit=True) as conn:
        with pytest.raises(SchemaBehind, match=r"lacks 9999_from_a_newer_loupe\.sql. A "
                                               r"standby is never migrated"):
            verify_current(conn, source=shipped)
        assert verify_current(conn) == available()[-1][0]


def test_standby_urls_are_parsed_and_shown_without_passwords():
    urls = replica.parse_urls("postgresql://u:secret@db1:5433/lib, "
                              "postgresql://u@db2,db3/lib\npostgres://db4/lib")
    assert urls == ["postgresql://u:secret@db1:5433/lib", "postgresql://u@db2,db3/lib",
                    "postgres://db4/lib"]
    assert replica.shown(urls[0]) == "db1:5433/lib"
    assert replica.parse_urls("") == replica.parse_urls(None) == []
    with pytest.raises(ValueError, match="is not a postgresql:// URL"):
        replica.parse_urls("host=db1 dbname=lib")
