"""A search's HNSW settings belong to its transaction (``SET LOCAL``), so
they reach every server that runs part of it (a Citus worker, a pooled
connection) and end with it (docs/scaling.md, "Citus")."""

from __future__ import annotations

from pathlib import Path

import pytest
from imaging import make_image, write_sidecar

from loupe import Library
from loupe.db.session import read_transaction


def _settings(conn) -> tuple[str, str]:
    return conn.execute("SELECT current_setting('hnsw.ef_search'), "
                        "current_setting('hnsw.iterative_scan')").fetchone()


@pytest.fixture
def cheetah(lib: Library, photos: Path) -> Library:
    write_sidecar(make_image(photos / "cheetah.jpg"), "-XMP-dc:Title=Cheetah")
    lib.ingest(photos)
    return lib


@pytest.mark.parametrize("read", ["search", "facets", "people"])
def test_a_reads_hnsw_settings_are_set_inside_its_transaction(
        cheetah: Library, monkeypatch: pytest.MonkeyPatch, read: str):
    monkeypatch.setenv("LOUPE_HNSW_EF_SEARCH", "123")
    conn = cheetah.conn
    conn.execute("RESET hnsw.ef_search")
    conn.execute("RESET hnsw.iterative_scan")
    assert _settings(conn) == ("40", "off")   # pgvector's defaults: the session sets nothing
    with conn.transaction():   # the read's transaction is a savepoint of this one
        if read == "search":
            assert cheetah.search("cheetah").total == 1
        elif read == "facets":
            cheetah.facets("cheetah")
        else:
            assert cheetah.people() == []
        assert _settings(conn) == ("123", "relaxed_order")
    assert _settings(conn) == ("40", "off")   # and they ended with it


def test_read_transaction_sets_the_configured_ef_search_locally(
        lib: Library, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("LOUPE_HNSW_EF_SEARCH", "77")
    lib.conn.execute("SELECT '[1]'::vector")   # pgvector loaded: its settings defined
    lib.conn.execute("RESET hnsw.ef_search")
    with read_transaction(lib.conn) as conn:
        assert _settings(conn) == ("77", "relaxed_order")
    assert _settings(lib.conn)[0] == "40"
