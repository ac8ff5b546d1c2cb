"""Versioned schema migrations.

Migrations are the numbered ``.sql`` files in ``loupe/db/migrations``
(``0001_initial.sql``, ``0002_...``). Each is applied once, in order, in its own
transaction, and recorded in ``schema_migration``. An advisory lock keeps two
processes from migrating the same database at once.
"""

from __future__ import annotations

import re
from importlib import resources

import psycopg

_LOCK_KEY = 0x4C4F555045  # 'LOUPE'
_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")


def available() -> list[tuple[int, str, str]]:
    """Return ``(version, filename, sql)`` for every shipped migration, in order."""
    out = []
    for entry in resources.files("loupe.db").joinpath("migrations").iterdir():
        m = _NAME.match(entry.name)
        if m:
            out.append((int(m.group(1)), entry.name, entry.read_text(encoding="utf-8")))
    return sorted(out)


def applied(conn: psycopg.Connection) -> set[int]:
    """Versions already applied to the database behind ``conn``."""
    exists = conn.execute("SELECT to_regclass('schema_migration') IS NOT NULL").fetchone()[0]
    if not exists:
        return set()
    return {r[0] for r in conn.execute("SELECT version FROM schema_migration")}


def migrate(conn: psycopg.Connection, target: int | None = None) -> list[str]:
    """Apply every pending migration (up to version ``target`` when given);
    return the filenames applied (empty when current).

    ``conn`` must be in autocommit mode; each migration runs in its own transaction.

    Raises:
        psycopg.Error: a migration failed (its transaction is rolled back, the
            versions before it stay applied).
    """
    done: list[str] = []
    conn.execute("SELECT pg_advisory_lock(%s)", (_LOCK_KEY,))
    try:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migration ("
            " version integer PRIMARY KEY, name text NOT NULL,"
            " applied_at timestamptz NOT NULL DEFAULT now())"
        )
        have = applied(conn)
        for version, name, sql in available():
            if version in have or (target is not None and version > target):
                continue
            with conn.transaction():
                conn.execute(sql)
                conn.execute(
                    "INSERT INTO schema_migration (version, name) VALUES (%s, %s)", (version, name)
                )
            done.append(name)
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s)", (_LOCK_KEY,))
    return done
