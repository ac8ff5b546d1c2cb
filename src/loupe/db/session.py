"""Opening a library's database: the connection a :class:`loupe.Library` holds.

:func:`connect` finds the database of a library home (the embedded server, or
a URL), refuses a home that holds no library unless asked to create one,
applies pending migrations with the data work some of them need afterwards,
and sets the session up (pgvector types, HNSW search settings);
:func:`tenant_id` binds it to one tenant (P3).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg

from ..privacy import private_home
from .. import queries as q
from .migrate import applied, migrate, verify_current
from .server import DATABASE_URL_ENV, resolve_database_url, stop_embedded
from ..document.compile import rebuild_all_file_documents
from ..faces.backfill import backfill_people
from ..lexical import settings as lexical_bounds
from ..vector import queries as vq


class UnknownTenant(LookupError):
    """Raised when a tenant name does not exist (create it with ``init``)."""


class LibraryNotInitialized(LookupError):
    """Raised when opening a home or database that holds no Loupe library yet
    (create it with ``loupe init``); a mistyped ``LOUPE_HOME`` must not look
    like an empty library."""


def after_migrations(conn: psycopg.Connection, newly: list[str]) -> None:
    """The data work some migrations need once applied (``newly``: the file
    names just applied): file documents of multi-file assets compiled again
    (0011, and 0017 for 0013's analyzer), names written in files ingested
    before Loupe read them (0022)."""
    if any(n.startswith(("0011_", "0017_")) for n in newly):
        rebuild_all_file_documents(conn)
    if any(n.startswith("0022_") for n in newly):
        backfill_people(conn)


def prepare_session(conn: psycopg.Connection) -> None:
    """pgvector's types, and the HNSW search settings of the environment.

    Raises:
        loupe.lexical.settings.SettingError: ``LOUPE_HNSW_EF_SEARCH`` or
            ``LOUPE_QUERY_VECTOR_CACHE`` is not a whole number in its range.
    """
    from pgvector.psycopg import register_vector

    register_vector(conn)
    lexical_bounds.env_setting("LOUPE_QUERY_VECTOR_CACHE")
    for stmt in vq.hnsw_session(lexical_bounds.env_setting("LOUPE_HNSW_EF_SEARCH")):
        conn.execute(stmt)


def read_only(conn: psycopg.Connection) -> bool:
    """Whether the server behind ``conn`` refuses writes: a hot standby
    (``pg_is_in_recovery()``) or a session that is read-only by default."""
    return bool(conn.execute(
        "SELECT pg_is_in_recovery() OR current_setting('default_transaction_read_only')::bool"
    ).fetchone()[0])


@contextmanager
def read_transaction(conn: psycopg.Connection) -> Iterator[psycopg.Connection]:
    """``with read_transaction(conn):`` one transaction (a savepoint when one
    is open) for a search, facets, similar or people read, whose first
    statements set its HNSW search settings with ``SET LOCAL``
    (:func:`loupe.vector.queries.hnsw_session`): settings that belong to the
    statement's transaction reach every server that runs part of it (a
    Citus worker, a new pooled connection), where a session's ``SET`` does
    not. They end with the transaction.

    Raises:
        loupe.lexical.settings.SettingError: ``LOUPE_HNSW_EF_SEARCH`` is out of range.
    """
    ef_search = lexical_bounds.env_setting("LOUPE_HNSW_EF_SEARCH")
    with conn.transaction():
        for stmt in vq.hnsw_session(ef_search, local=True):
            conn.execute(stmt)
        yield conn


def connect(home: Path, database_url: str | None, *, create: bool) -> psycopg.Connection:
    """An autocommit connection to library ``home``'s migrated database:
    the embedded PostgreSQL is started when no URL is configured (argument,
    then ``LOUPE_DATABASE_URL``), pending migrations are applied and the
    session prepared; closed again on error. With ``create`` (what ``loupe
    init`` does) a home without a library gets one. A server that refuses
    writes (a hot standby, :func:`read_only`) is never migrated: its schema
    is verified instead (:func:`loupe.db.migrate.verify_current`).

    Raises:
        loupe.db.DatabaseUnavailable: no database could be reached.
        LibraryNotInitialized: no library there and ``create`` is false.
        loupe.db.migrate.MigrationError: an applied migration file was edited
            or renamed (docs/architecture.md, "Migrations").
        loupe.db.migrate.SchemaBehind: a standby lacks migrations this Loupe needs.
        loupe.lexical.settings.SettingError: ``LOUPE_HNSW_EF_SEARCH`` or
            ``LOUPE_QUERY_VECTOR_CACHE`` is not a whole number in its range.
    """
    url_given = database_url or os.environ.get(DATABASE_URL_ENV)
    if not create and not url_given and not (home / "pgdata").is_dir():
        raise LibraryNotInitialized(
            f"no Loupe library in {home}: create one with 'loupe init' "
            f"(or set LOUPE_HOME to the library's home)")
    private_home(home)   # 0700 folders, 0600 files from here on
    conn = psycopg.connect(resolve_database_url(home, database_url), autocommit=True)
    try:
        if not create and not applied(conn):
            raise LibraryNotInitialized(
                "the database holds no Loupe library: create one with 'loupe init'")
        if read_only(conn):   # a hot standby: verified, never migrated
            verify_current(conn)
        else:
            after_migrations(conn, migrate(conn))
        prepare_session(conn)
    except BaseException:
        conn.close()
        raise
    return conn


def tenant_id(conn: psycopg.Connection, tenant: str, *, create: bool) -> int:
    """The id of tenant ``tenant`` (created with ``create``).

    Raises:
        UnknownTenant: no such tenant and ``create`` is false.
    """
    row = conn.execute(q.TENANT_BY_NAME, {"name": tenant}).fetchone()
    if row is None and create:
        row = conn.execute(q.CREATE_TENANT, {"name": tenant}).fetchone()
    if row is None:
        raise UnknownTenant(f"no tenant named {tenant!r}: create it with "
                            f"'loupe --tenant {tenant} init'")
    return row[0]


def open_tenant(home: Path, database_url: str | None, tenant: str, *,
                create: bool) -> tuple[psycopg.Connection, int]:
    """What :meth:`loupe.Library.open` does: :func:`connect` (its errors),
    then :func:`tenant_id` of ``tenant`` (created with ``create``; raises
    UnknownTenant otherwise). Returns ``(connection, tenant id)``; the
    connection is closed again when binding to the tenant fails."""
    conn = connect(home, database_url, create=create)
    try:
        return conn, tenant_id(conn, tenant, create=create)
    except BaseException:
        conn.close()
        raise


def stop(home: Path, database_url: str | None, *, force: bool) -> dict:
    """Stop library ``home``'s embedded server (``loupe stop``), after
    dropping the pids of dead processes from its users
    (:func:`loupe.db.server.stop_embedded`): ``{"pgdata", "was_running",
    "stopped", "stale_handles_removed", "users"}``.

    Raises:
        ValueError: a database URL is configured (Loupe does not manage that server).
        loupe.db.server.ServerInUse: other live processes use it and ``force``
            is false. loupe.db.DatabaseUnavailable: ``pg_ctl`` failed.
    """
    if database_url or os.environ.get(DATABASE_URL_ENV):
        raise ValueError(f"{DATABASE_URL_ENV} (or --database-url) is set: that server is "
                         f"not Loupe's to stop")
    return stop_embedded(home / "pgdata", force=force)
