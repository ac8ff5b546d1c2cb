"""Loupe on a Citus coordinator (docs/scaling.md, "Citus"): runs only when
``LOUPE_CITUS_URL`` names a Citus coordinator database (PostgreSQL with the
``citus`` and ``vector`` extensions, and workers added), which no package
registry ships; CI skips it.

It migrates that database, distributes every tenant-owned table by
``tenant_id`` (co-located with ``asset``), makes the global tables reference
tables, ingests the same library into two tenants, and checks that a
search, a scoped search, facets and the people read of one tenant return
exactly what a single node returns, and that a tenant's search statement is
routed to one worker (``EXPLAIN``: one task). The schema does not
distribute yet where tests/test_distribution_keys.py lists tables in
``NOT_YET``: this module then fails at the distribution step, naming the
table Citus refused.
"""

from __future__ import annotations

import os
from pathlib import Path

import psycopg
import pytest
from imaging import make_image, write_sidecar
from test_distribution_keys import GLOBAL, QUEUE_PREFIX

from loupe import Library
from loupe.db import migrate

CITUS_URL = os.environ.get("LOUPE_CITUS_URL")
pytestmark = pytest.mark.skipif(
    not CITUS_URL, reason="LOUPE_CITUS_URL is not set: these tests need a Citus coordinator "
                          "with workers (no package registry ships Citus)")

SPECS = [("wild/cheetah.jpg", "Cheetah", "A cheetah running across the savanna"),
         ("wild/lion.jpg", "Lion at rest", "A male lion resting at sunset"),
         ("city/tram.jpg", "Lisbon tram", "Yellow tram climbing a street at sunset")]


def distribute(conn: psycopg.Connection) -> None:
    """Global tables as reference tables, then every other table distributed
    by tenant_id, co-located with asset (parents before children: Citus
    needs a foreign key's target distributed first)."""
    tables = [r[0] for r in conn.execute(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = 'public' AND c.relkind = 'r' ORDER BY c.oid")]
    for t in tables:
        if t in GLOBAL or t.startswith(QUEUE_PREFIX):
            conn.execute("SELECT create_reference_table(%s)", (t,))
    conn.execute("SELECT create_distributed_table('asset', 'tenant_id')")
    for t in tables:
        if t not in GLOBAL and not t.startswith(QUEUE_PREFIX) and t != "asset":
            try:
                conn.execute("SELECT create_distributed_table(%s, 'tenant_id', "
                             "colocate_with => 'asset')", (t,))
            except psycopg.Error as exc:
                raise AssertionError(f"Citus refused to distribute {t}: {exc}") from exc


@pytest.fixture(scope="module")
def citus(tmp_path_factory: pytest.TempPathFactory):
    with psycopg.connect(CITUS_URL, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM pg_extension WHERE extname = 'citus'"
                            ).fetchone()[0] == 1, "LOUPE_CITUS_URL is not a Citus database"
        migrate(conn)
        distribute(conn)
    root = tmp_path_factory.mktemp("citus")
    photos = root / "photos"
    for rel, title, desc in SPECS:
        write_sidecar(make_image(photos / rel), f"-XMP-dc:Title={title}",
                      f"-XMP-dc:Description={desc}")
    for tenant in ("citus-a", "citus-b"):
        with Library.open(root / tenant, database_url=CITUS_URL, tenant=tenant,
                          create=True) as lib:
            lib.init(languages=["en"])
            lib.ingest(photos)
    return root


def _answer(res) -> tuple:
    return (res.total, res.verdict, [(h.title, h.path) for h in res.hits])


def test_each_tenants_reads_are_the_single_nodes(citus: Path, db_url: str):
    photos = citus / "photos"
    with Library.open(citus / "single", database_url=db_url) as single:
        single.init(languages=["en"])
        single.ingest(photos)
        for tenant in ("citus-a", "citus-b"):
            with Library.open(citus / tenant, database_url=CITUS_URL, tenant=tenant) as lib:
                for q in ("cheetah", "sunset", "lion sunset", "nothing"):
                    assert _answer(lib.search(q)) == _answer(single.search(q)), q
                assert _answer(lib.search("sunset", scope="wild")) == \
                    _answer(single.search("sunset", scope="wild"))
                assert lib.facets("sunset") == single.facets("sunset")
                assert lib.people() == single.people()


def test_a_tenants_search_runs_as_one_task(citus: Path):
    with psycopg.connect(CITUS_URL, autocommit=True) as conn:
        tid = conn.execute("SELECT id FROM tenant WHERE name = 'citus-a'").fetchone()[0]
        plan = "\n".join(r[0] for r in conn.execute(
            "EXPLAIN SELECT a.id FROM asset a JOIN search_document d ON d.tenant_id = "
            "a.tenant_id AND d.asset_id = a.id WHERE a.tenant_id = %s", (tid,)))
    assert "Task Count: 1" in plan, plan
