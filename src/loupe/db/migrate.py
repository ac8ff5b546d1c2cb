"""Versioned schema migrations.

Migrations are the numbered ``.sql`` files in ``loupe/db/migrations``
(``0001_initial.sql``, ``0002_...``). Each is applied once, in order, in its own
transaction, and recorded in ``schema_migration`` with the SHA-256 of the file
as applied. An advisory lock keeps two processes from migrating the same
database at once.

Rules (N6; pgvector's habit of one upgrade script per release):

* **One file per change, never edited once merged.** A fix to an applied
  migration is a new file with the next number (``CREATE OR REPLACE`` for
  functions, plus whatever rebuild the fix needs, written so that it is also
  right for a library that already has the fix). Editing an applied file does
  not reach libraries that applied it: they skip a recorded version.
* Every run checks each applied version's recorded hash against the shipped
  file and refuses (:class:`MigrationError`) when they differ, naming the file.
* Libraries migrated before hashes were recorded get the shipped file's hash
  (backfill) the first time a Loupe with this rule opens them.
  :data:`ACCEPTED_EDITS` lists earlier contents of files that were edited in
  place before the rule and that the project accepted (later migrations repair
  what they lacked: 0008 for 0005's).
"""

from __future__ import annotations

import hashlib
import re
from importlib import resources
from importlib.abc import Traversable
from pathlib import Path

import psycopg

_LOCK_KEY = 0x4C4F555045  # 'LOUPE'
_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")

#: SHA-256 (hex) of earlier contents of migration files that were edited in
#: place before hashes were recorded, by file name, with the commit that
#: shipped each. A library whose record holds one of these is accepted.
ACCEPTED_EDITS: dict[str, dict[str, str]] = {
    "0005_permissions.sql": {
        "75515580735273ae460db9978a78ec79ca4ed442b4b497fc321d2299fbb6d51d": "01a8a14",
        "e0b6f6650c525341b71c681814c000c7d940830c9d06e68211cd2e0776e33981": "8bc6ed0",
        "1331f3897a15a044889dc1091a8d73a0bee25dc97f1dd981d95fb15a0b95b978": "dc54b33",
    },
}


class MigrationError(RuntimeError):
    """The database's migration record does not match the shipped files (an
    applied file was edited, or a version is recorded under another name)."""


def sha256_hex(data: bytes) -> str:
    """Hex SHA-256 of a migration file's bytes (what ``schema_migration.sha256`` holds)."""
    return hashlib.sha256(data).hexdigest()


def available(source: Traversable | Path | None = None) -> list[tuple[int, str, str]]:
    """Return ``(version, filename, sql)`` for every migration in ``source``
    (default: the shipped ``loupe/db/migrations``), in version order."""
    folder = source if source is not None else resources.files("loupe.db").joinpath("migrations")
    out = []
    for entry in folder.iterdir():
        m = _NAME.match(entry.name)
        if m:
            out.append((int(m.group(1)), entry.name, entry.read_bytes().decode("utf-8")))
    return sorted(out)


def applied(conn: psycopg.Connection) -> set[int]:
    """Versions already applied to the database behind ``conn``."""
    exists = conn.execute("SELECT to_regclass('schema_migration') IS NOT NULL").fetchone()[0]
    if not exists:
        return set()
    return {r[0] for r in conn.execute("SELECT version FROM schema_migration")}


def _check(conn: psycopg.Connection, files: list[tuple[int, str, str]]) -> None:
    """Backfill missing hashes, then refuse any applied file that differs
    from its record. Versions recorded but not shipped (a newer Loupe migrated
    this database) are left alone."""
    shipped = {v: (name, sha256_hex(sql.encode("utf-8"))) for v, name, sql in files}
    for version, name, digest in conn.execute(
            "SELECT version, name, sha256 FROM schema_migration ORDER BY version").fetchall():
        if version not in shipped:
            continue
        if digest is None:  # applied before hashes were recorded: backfill
            digest = shipped[version][1]
            conn.execute("UPDATE schema_migration SET sha256 = %s WHERE version = %s",
                         (digest, version))
        ship_name, ship_digest = shipped[version]
        if name != ship_name:
            raise MigrationError(
                f"migration version {version} was applied to this library as {name} but this "
                f"Loupe ships {ship_name} under that number: migration files are never renamed "
                "or renumbered once merged")
        if digest != ship_digest and digest not in ACCEPTED_EDITS.get(name, {}):
            raise MigrationError(
                f"migration {name} was edited after it was applied to this library: recorded "
                f"SHA-256 {digest}, shipped file {ship_digest}. Applied migrations are never "
                "edited; put the change in a new migration file (docs/architecture.md, "
                "'Migrations') and restore the original file")


def migrate(conn: psycopg.Connection, target: int | None = None, *,
            source: Traversable | Path | None = None) -> list[str]:
    """Apply every pending migration (up to version ``target`` when given);
    return the filenames applied (empty when current).

    ``conn`` must be in autocommit mode; each migration runs in its own
    transaction. ``source`` is the folder of migration files (default: the
    shipped ones).

    Raises:
        MigrationError: an applied migration's file differs from the SHA-256
            recorded when it was applied (checked before anything is applied).
        psycopg.Error: a migration failed (its transaction is rolled back, the
            versions before it stay applied).
    """
    files = available(source)
    done: list[str] = []
    conn.execute("SELECT pg_advisory_lock(%s)", (_LOCK_KEY,))
    try:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migration ("
            " version integer PRIMARY KEY, name text NOT NULL,"
            " applied_at timestamptz NOT NULL DEFAULT now(), sha256 text)"
        )
        # libraries migrated before hashes were recorded lack the column (checked
        # first: ALTER TABLE would take an exclusive lock on every open)
        if not conn.execute("SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid ="
                            " 'schema_migration'::regclass AND attname = 'sha256'"
                            " AND NOT attisdropped)").fetchone()[0]:
            conn.execute("ALTER TABLE schema_migration ADD COLUMN sha256 text")
        _check(conn, files)
        have = applied(conn)
        for version, name, sql in files:
            if version in have or (target is not None and version > target):
                continue
            with conn.transaction():
                conn.execute(sql)
                conn.execute(
                    "INSERT INTO schema_migration (version, name, sha256) VALUES (%s, %s, %s)",
                    (version, name, sha256_hex(sql.encode("utf-8"))))
            done.append(name)
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s)", (_LOCK_KEY,))
    return done
