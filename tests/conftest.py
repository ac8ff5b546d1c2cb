"""Test fixtures: a real PostgreSQL (the embedded one, or LOUPE_TEST_DATABASE_URL),
one fresh database per test cloned from a migrated template, and real image
files written with Pillow and ExifTool."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from loupe import Library
from loupe.db import migrate
from loupe.db.server import embedded_uri

TEMPLATE = "loupe_test_template"


@pytest.fixture(scope="session")
def pg_admin_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    """URL of a PostgreSQL server the tests may create databases on."""
    url = os.environ.get("LOUPE_TEST_DATABASE_URL")
    if url:
        return url
    return embedded_uri(tmp_path_factory.mktemp("pg") / "pgdata")


@pytest.fixture(scope="session")
def template_db(pg_admin_url: str) -> str:
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {TEMPLATE}")
        conn.execute(f"CREATE DATABASE {TEMPLATE}")
    with psycopg.connect(make_conninfo(pg_admin_url, dbname=TEMPLATE), autocommit=True) as conn:
        migrate(conn)
    return TEMPLATE


@pytest.fixture
def db_url(pg_admin_url: str, template_db: str):
    """A fresh, migrated database for one test; dropped afterwards."""
    name = "loupe_t_" + uuid.uuid4().hex[:12]
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name} TEMPLATE {template_db}")
    yield make_conninfo(pg_admin_url, dbname=name)
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def lib(db_url: str, home: Path):
    with Library.open(home, database_url=db_url) as library:
        yield library


@pytest.fixture
def photos(tmp_path: Path) -> Path:
    folder = tmp_path / "photos"
    folder.mkdir()
    return folder


@pytest.fixture(scope="session")
def minilm_onnx(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The offline MiniLM text encoder exported to ONNX (tests/leakmodel.py),
    once per session for every evaluation test that needs it."""
    from leakmodel import export_minilm

    path = tmp_path_factory.mktemp("minilm") / "model.onnx"
    export_minilm(path)
    return path
