"""A library created by an older schema upgrades in place: migration 0002
re-analyses existing documents and builds the lexical index from them."""

from __future__ import annotations

import uuid

import psycopg
from psycopg.conninfo import make_conninfo

from loupe import Library
from loupe.db import migrate
from loupe.db.migrate import applied, available


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
