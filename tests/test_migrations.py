"""A library created by an older schema upgrades in place: migration 0002
re-analyses existing documents and builds the lexical index from them."""

from __future__ import annotations

import uuid
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from loupe import Library
from loupe.db import migrate
from loupe.db.migrate import (ACCEPTED_EDITS, MigrationError, applied, available,
                              sha256_hex)


def test_upgrade_from_0001_keeps_and_reindexes_documents(pg_admin_url: str, tmp_path):
    name = "loupe_mig_" + uuid.uuid4().hex[:8]
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    url = make_conninfo(pg_admin_url, dbname=name)
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            assert migrate(conn, target=1) == ["0001_initial.sql"]
            # a document as schema 0001 stored it (GIN-indexed tsvector, no postings)
            conn.execute("INSERT INTO asset (id, tenant_id, content_sha256, byte_size, media_type,"
                         " width, height) VALUES (1, 1, '\\x01', 1, 'image/jpeg', 1, 1)")
            conn.execute("""
                INSERT INTO search_document (asset_id, tenant_id, lang, ts_config, title,
                                             description, tsv, doc_len)
                VALUES (1, 1, 'en', 'loupe_english', 'Hero shot SS26-HERO-03', 'Red kettles',
                        to_tsvector('loupe_english', 'Hero shot SS26-HERO-03 Red kettles'), 5)""")
        with Library.open(tmp_path / "home", database_url=url) as lib:  # migrates to head
            assert applied(lib.conn) == {v for v, _, _ in available()}
            # re-analysed with the identifier-aware analyzer, indexed as postings
            assert [h.asset_id for h in lib.search("ss26hero03").hits] == [1]
            assert [h.asset_id for h in lib.search("kettle").hits] == [1]
            assert lib.conn.execute("SELECT n_docs FROM corpus_stat").fetchone() == (1,)
            # hero, shot, ss26, 03, ss26hero03, red, kettl
            assert lib.conn.execute("SELECT count(*) FROM lexical_posting").fetchone()[0] == 7
    finally:
        with psycopg.connect(pg_admin_url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def test_a_library_whose_0002_predates_the_scoring_functions_is_repaired(pg_admin_url: str,
                                                                       tmp_path):
    """Migration 0002 gained loupe_bm25f_part and loupe_phrase_bonus after
    libraries had applied it; such a library (simulated by dropping them at
    version 4) searches again after upgrading to head."""
    name = "loupe_mig_" + uuid.uuid4().hex[:8]
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    url = make_conninfo(pg_admin_url, dbname=name)
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            migrate(conn, target=4)
            conn.execute("DROP FUNCTION loupe_bm25f_part, loupe_phrase_bonus")
        with Library.open(tmp_path / "home", database_url=url, create=True) as lib:
            from corpus import add_document

            add_document(lib, 1, {"title": "Red kettle"})
            res = lib.search("red kettle")
            assert [h.asset_id for h in res.hits] == [1] and res.hits[0].bonus == 2
    finally:
        with psycopg.connect(pg_admin_url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


# -- immutable migrations: upgrade from every version, checksums (N6) -----------

FIXTURES = Path(__file__).parent / "fixtures" / "migrations"
#: 0005 as committed in dc54b33: before the loupe_index_remove fix was
#: appended to it. Libraries that applied it never received that fix in place.
OLD_0005 = FIXTURES / "0005_permissions.dc54b33.sql"


@contextmanager
def _database(pg_admin_url: str):
    name = "loupe_mig_" + uuid.uuid4().hex[:8]
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    try:
        yield make_conninfo(pg_admin_url, dbname=name)
    finally:
        with psycopg.connect(pg_admin_url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def _legacy_migrate(conn: psycopg.Connection, target: int, replace: dict[str, Path]) -> None:
    """Migrate as Loupe did before hashes were recorded (schema_migration
    without a sha256 column), with some files as they were then."""
    conn.execute("CREATE TABLE schema_migration (version integer PRIMARY KEY, name text NOT NULL,"
                 " applied_at timestamptz NOT NULL DEFAULT now())")
    for version, name, sql in available():
        if version > target:
            break
        if name in replace:
            sql = replace[name].read_text(encoding="utf-8")
        with conn.transaction():
            conn.execute(sql)
            conn.execute("INSERT INTO schema_migration (version, name) VALUES (%s, %s)",
                         (version, name))


#: A small corpus whose documents share terms (df 2 and 3), written with plain
#: SQL that every schema version accepts (0001's columns; from 0002 on the
#: index triggers derive lexicon, statistics and postings from them).
_DOCS = {1: "Red kettle on a table", 2: "Blue kettle in a kitchen", 3: "Red kettle red table",
         4: "Green teapot"}


def _write(conn: psycopg.Connection, version: int, asset_id: int, text: str) -> None:
    conn.execute("INSERT INTO asset (id, tenant_id, content_sha256, byte_size, media_type,"
                 " width, height) VALUES (%s, 1, %s, 1, 'image/jpeg', 1, 1)"
                 " ON CONFLICT DO NOTHING", (asset_id, asset_id.to_bytes(32, "big")))
    group_len = ("loupe_group_len(tsv, vocab_tsv, (SELECT vocab_decay FROM lexical_setting"
                 " WHERE tenant_id = 1))" if version >= 2 else None)
    conn.execute("""
        INSERT INTO search_document AS d (asset_id, tenant_id, lang, ts_config, title, tsv, doc_len)
        VALUES (%(id)s, 1, 'en', 'loupe_english', %(t)s,
                setweight(to_tsvector('loupe_english', %(t)s), 'A'),
                length(to_tsvector('loupe_english', %(t)s)))
        ON CONFLICT (asset_id, lang) DO UPDATE SET title = EXCLUDED.title, tsv = EXCLUDED.tsv,
                                                  doc_len = EXCLUDED.doc_len""",
                 {"id": asset_id, "t": text})
    if group_len:
        conn.execute(f"UPDATE search_document SET group_len = {group_len} WHERE asset_id = %s",
                     (asset_id,))


def _statistics(conn: psycopg.Connection) -> dict[str, list]:
    """Lexicon (term, df), corpus statistics and postings (term, asset, tf,
    lengths) of every tenant and language, in a stable order. Impacts are left
    out: documents indexed one at a time take the averages of their moment,
    a rebuild today's; search scores use tf and lengths, not impacts."""
    return {
        "lexicon": conn.execute("SELECT tenant_id, lang, term, df FROM lexicon_term"
                                " ORDER BY 1, 2, 3").fetchall(),
        "corpus_stat": conn.execute("SELECT tenant_id, lang, n_docs, total_len, group_len"
                                    " FROM corpus_stat ORDER BY 1, 2").fetchall(),
        "postings": conn.execute(
            "SELECT t.tenant_id, t.lang, t.term, p.asset_id, p.tf, p.group_len"
            " FROM lexical_posting p LEFT JOIN lexicon_term t ON t.id = p.term_id"
            " ORDER BY 1, 2, 3, 4").fetchall(),
    }


def _rebuilt(conn: psycopg.Connection) -> dict[str, list]:
    """The statistics a full rebuild gives (in a rolled-back transaction)."""
    with conn.transaction(force_rollback=True):
        conn.execute("DELETE FROM lexical_posting")  # orphans too
        conn.execute("SELECT loupe_reindex_lexical(x.tenant_id, x.lang) FROM (SELECT DISTINCT"
                     " tenant_id, lang FROM search_document ORDER BY 1, 2) AS x")
        return _statistics(conn)


def _head() -> int:
    return available()[-1][0]


_STARTS = [pytest.param(v, None, id=f"from-{v:04d}") for v, _, _ in available()[:-1]] + [
    pytest.param(v, OLD_0005, id=f"from-{v:04d}-with-0005-dc54b33") for v in (5, 6, 7)]


@pytest.mark.parametrize("start,old_0005", _STARTS)
def test_upgrade_from_every_version_leaves_statistics_equal_to_a_rebuild(
        pg_admin_url: str, tmp_path, start: int, old_0005: Path | None):
    """A library migrated to ``start`` (by the migrations of that time when
    ``old_0005`` is given), with documents written and rewritten there, upgrades
    to head with lexicon df, corpus statistics and postings equal to a
    rebuild, and a document rewritten after the upgrade keeps them so."""
    with _database(pg_admin_url) as url:
        with psycopg.connect(url, autocommit=True) as conn:
            if old_0005 is None:
                assert migrate(conn, target=start)[-1].startswith(f"{start:04d}_")
            else:
                _legacy_migrate(conn, start, {"0005_permissions.sql": old_0005})
            for asset_id, text in _DOCS.items():
                _write(conn, start, asset_id, text)
            # rewrite a document holding shared terms, delete another
            _write(conn, start, 1, "Red kettle on a wooden table")
            conn.execute("DELETE FROM search_document WHERE asset_id = 4")
        with Library.open(tmp_path / "home", database_url=url) as lib:  # migrates to head
            assert applied(lib.conn) == {v for v, _, _ in available()}
            assert _statistics(lib.conn) == _rebuilt(lib.conn)
            assert sorted(h.asset_id for h in lib.search("kettle").hits) == [1, 2, 3]
            from corpus import add_document

            add_document(lib, 2, {"title": "Blue kettle in a big kitchen"})
            # a rewrite that lowers df 2 -> 1 ("tabl" stays in document 1): the
            # case 0002's loupe_index_remove got wrong (it orphaned document 1's
            # posting), which the rewrite above never reaches
            add_document(lib, 3, {"title": "Red kettle on a red teapot"})
            add_document(lib, 5, {"title": "Kettle"})
            assert _statistics(lib.conn) == _rebuilt(lib.conn)
            assert sorted(h.asset_id for h in lib.search("kettle").hits) == [1, 2, 3, 5]
            recorded = dict(lib.conn.execute("SELECT name, sha256 FROM schema_migration"))
            assert recorded == {n: sha256_hex(s.encode()) for _, n, s in available()}


def test_an_edited_migration_is_refused(pg_admin_url: str, tmp_path):
    """A migration file changed after a library applied it stops the
    migration with a message naming the file; the library is left as it was."""
    edited = tmp_path / "migrations"
    edited.mkdir()
    for _, name, sql in available():
        (edited / name).write_text(sql, encoding="utf-8")
    with _database(pg_admin_url) as url:
        _edited_is_refused(url, edited)
        with pytest.raises(MigrationError, match=r"migration 0003_vector_lanes\.sql was edited"):
            Library.open(tmp_path / "home", database_url=url)


def _edited_is_refused(url: str, edited: Path) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        # every shipped file (numbers have gaps: each branch had its own)
        assert len(migrate(conn, source=edited)) == len(available())
        assert migrate(conn, source=edited) == []  # unchanged files: nothing to do
        path = edited / "0005_permissions.sql"
        path.write_text(path.read_text() + "\n-- a late fix\n", encoding="utf-8")
        with pytest.raises(MigrationError, match=r"migration 0005_permissions\.sql was edited "
                           r"after it was applied to this library: recorded SHA-256 "
                           + sha256_hex(available()[4][2].encode())):
            migrate(conn, source=edited)
        # a newer file after the edited one is not applied either
        (edited / f"{_head() + 1:04d}_later.sql").write_text("CREATE TABLE later (x int);")
        with pytest.raises(MigrationError):
            migrate(conn, source=edited)
        assert conn.execute("SELECT to_regclass('later')").fetchone() == (None,)
        # Library.open refuses the same way (the shipped files are unchanged,
        # the record is not)
        conn.execute("UPDATE schema_migration SET sha256 = %s WHERE version = 3", ("0" * 64,))


def test_hashes_are_backfilled_and_accepted_old_0005_contents_pass(pg_admin_url: str):
    """A library migrated before hashes were recorded gets the shipped files'
    hashes; one recording a 0005 that the project shipped earlier is accepted,
    a renamed version is refused."""
    with _database(pg_admin_url) as url, psycopg.connect(url, autocommit=True) as conn:
        _legacy_migrate(conn, 7, {})
        assert [n for n in migrate(conn)] == [n for v, n, _ in available() if v > 7]
        assert conn.execute("SELECT count(*) FROM schema_migration WHERE sha256 IS NULL"
                            ).fetchone() == (0,)
        old = sha256_hex(OLD_0005.read_bytes())
        assert old in ACCEPTED_EDITS["0005_permissions.sql"]
        conn.execute("UPDATE schema_migration SET sha256 = %s WHERE version = 5", (old,))
        assert migrate(conn) == []
        conn.execute("UPDATE schema_migration SET name = '0006_other.sql' WHERE version = 6")
        with pytest.raises(MigrationError, match=r"version 6 was applied to this library as "
                           r"0006_other\.sql but this Loupe ships 0006_evaluation\.sql"):
            migrate(conn)
