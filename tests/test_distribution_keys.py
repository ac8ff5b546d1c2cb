"""The schema distributes by tenant (docs/scaling.md, "Citus"): read from
the catalog of a migrated database, every tenant-owned table has
``tenant_id bigint NOT NULL`` leading its primary key and every unique
constraint or index; its foreign keys to other tenant-owned tables are
``(tenant_id, ...)``; and every row a trigger writes (in its function, or
in the Loupe functions it calls) is a tenant-owned table's row chosen by
``tenant_id``. Only the global tables of :data:`GLOBAL` are exempt (Citus
reference tables). So the next migration cannot take a step back.

The tables that do not hold the rules yet are named, each with its reason,
in :data:`NOT_YET`; a table that comes to hold them must leave that list."""

from __future__ import annotations

import re

import psycopg
import pytest

#: Tables that belong to no tenant: Citus reference tables (a copy on
#: every node), or Loupe's and its queue's own bookkeeping.
GLOBAL = {
    "tenant": "the tenants themselves: every tenant-owned row references one",
    "embedding_model": "the models installed, shared by every tenant of the library",
    "mih_mask": "constants of the multi-index hash search (the same for everyone)",
    "schema_migration": "the migrations applied to the database",
}
#: Tables of the job queue (procrastinate's own schema, its own keys).
QUEUE_PREFIX = "procrastinate_"

#: The postings and lexical statistics: rewritten with tenant-led keys by the
#: lexical-index work (docs/scaling.md, "Lexical index"); until it lands they
#: break the rules as shipped.
LEXICAL = {
    "lexical_posting": "postings keyed (term_id, asset_id): rewritten by the lexical index work",
    "file_posting": "its foreign keys to asset_file and asset are not tenant-led: rewritten "
                    "by the lexical index work",
    "lexicon_term": "UNIQUE (id), a global surrogate: rewritten by the lexical index work",
}   # (corpus_stat, the fourth, already holds the rules)

#: Tenant-owned tables whose keys are not tenant-led yet, with why. Each
#: needs its primary key rebuilt as (tenant_id, ...) and the foreign keys
#: that reference it dropped and made again on (tenant_id, id) first.
_PARENT = ("primary key (id): to become (tenant_id, id) once every foreign key to it names "
           "the tenant (0030 made (tenant_id, id) unique)")
_CHILD = "its keys and foreign keys are on asset, file or term ids alone"
_READERS = ("keyed by tenant (0031); its trigger refreshes the readers of assets and files "
            "chosen by id alone (loupe_refresh_readers)")
NOT_YET: dict[str, str] = {
    **dict.fromkeys(["asset", "asset_file", "audit_log", "collection", "conversation",
                     "eval_pool", "eval_query_set", "eval_run", "face", "ingest_failure",
                     "ingest_run", "person", "principal", "source", "vocabulary",
                     "vocabulary_term", "web_token"], _PARENT),
    **dict.fromkeys(["file_document", "search_document"], _CHILD),
    **dict.fromkeys(["eval_pool_item", "eval_query"], _PARENT),
    **dict.fromkeys(["asset_grant", "collection_grant", "file_grant", "collection_member"],
                    _READERS),
}

EXPECTED = {**LEXICAL, **NOT_YET}

_WRITE = re.compile(r"\b(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+([a-z_][a-z0-9_]*)", re.I)
_CALL = re.compile(r"\b(loupe_[a-z0-9_]+)\s*\(", re.I)


def _tables(conn) -> dict[str, int]:
    return dict(conn.execute(
        "SELECT c.relname, c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p')").fetchall())


def _first_column(conn, oid: int, attnums: list[int]) -> str | None:
    if not attnums:
        return None
    return conn.execute("SELECT attname FROM pg_attribute WHERE attrelid = %s AND attnum = %s",
                        (oid, attnums[0])).fetchone()[0]


def _function_writes(conn, name: str, seen: set[str]) -> list[str]:
    """The write statements of Loupe function ``name`` and of the Loupe
    functions it calls (transitively)."""
    if name in seen:
        return []
    seen.add(name)
    out = []
    for (src,) in conn.execute("SELECT prosrc FROM pg_proc WHERE proname = %s", (name,)):
        for stmt in src.split(";"):
            if _WRITE.search(stmt):
                out.append(" ".join(stmt.split()))
        for called in set(_CALL.findall(src)):
            out += _function_writes(conn, called.lower(), seen)
    return out


def violations(conn: psycopg.Connection) -> dict[str, list[str]]:
    """Every tenant-owned table that breaks a rule, with the rules it breaks."""
    tables = _tables(conn)
    owned = {t: oid for t, oid in tables.items()
             if t not in GLOBAL and not t.startswith(QUEUE_PREFIX)}
    out: dict[str, list[str]] = {}
    for table, oid in sorted(owned.items()):
        bad = []
        col = conn.execute("SELECT format_type(atttypid, atttypmod), attnotnull FROM "
                           "pg_attribute WHERE attrelid = %s AND attname = 'tenant_id' AND "
                           "NOT attisdropped", (oid,)).fetchone()
        if col != ("bigint", True):
            bad.append(f"tenant_id bigint NOT NULL: {col or 'absent'}")
        for kind, name, keys, ref, refkeys, definition in conn.execute(
                "SELECT contype::text, conname, conkey, confrelid, confkey, "
                "pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = %s AND "
                "contype IN ('p', 'u', 'f')", (oid,)).fetchall():
            if kind in "pu" and _first_column(conn, oid, keys) != "tenant_id":
                bad.append(f"{name}: {definition} (not led by tenant_id)")
            if kind == "f" and ref in owned.values() and (
                    _first_column(conn, oid, keys) != "tenant_id"
                    or _first_column(conn, ref, refkeys) != "tenant_id"):
                bad.append(f"{name}: {definition} (a foreign key to a tenant-owned table "
                           f"not on tenant_id)")
        for name, keys in conn.execute(
                "SELECT c.relname, i.indkey::int2[] FROM pg_index i JOIN pg_class c ON "
                "c.oid = i.indexrelid WHERE i.indrelid = %s AND i.indisunique AND NOT EXISTS "
                "(SELECT 1 FROM pg_constraint x WHERE x.conindid = i.indexrelid)",
                (oid,)).fetchall():
            if _first_column(conn, oid, list(keys)) != "tenant_id":
                bad.append(f"unique index {name} not led by tenant_id")
        for trigger, function in conn.execute(
                "SELECT t.tgname, p.proname FROM pg_trigger t JOIN pg_proc p ON p.oid = "
                "t.tgfoid WHERE t.tgrelid = %s AND NOT t.tgisinternal", (oid,)).fetchall():
            for stmt in _function_writes(conn, function, set()):
                target = _WRITE.search(stmt).group(1).lower()
                if target not in owned or "tenant_id" not in stmt:
                    bad.append(f"trigger {trigger} writes {target} without choosing the "
                               f"tenant's rows: {stmt[:160]}")
        if bad:
            out[table] = bad
    return out


@pytest.fixture
def conn(db_url: str):
    with psycopg.connect(db_url, autocommit=True) as c:
        yield c


def test_every_tenant_owned_table_is_keyed_by_tenant(conn):
    found = violations(conn)
    unexpected = {t: v for t, v in found.items() if t not in EXPECTED}
    assert unexpected == {}


def test_a_table_that_holds_the_rules_leaves_the_list_of_exceptions(conn):
    found = violations(conn)
    assert sorted(t for t in EXPECTED if t not in found) == []


def test_grants_and_members_name_their_tenant(conn):
    # 0031: tenant-led keys, and a grant cannot join two tenants' rows
    found = violations(conn)
    for table in ("group_member", "asset_keyword", "asset_vocabulary", "conversation_turn",
                  "face_rejection", "eval_judgement", "eval_pool_run", "eval_run_hit",
                  "eval_run_query", "asset_machine", "asset_phash", "asset_vector", "face_scan",
                  "vocabulary_match"):   # 0031, 0032, 0033, 0034
        assert table not in found, found[table]
    for table in ("asset_grant", "collection_grant", "file_grant", "collection_member"):
        assert all(b.startswith("trigger ") for b in found[table]), found[table]
    t1, t2 = (conn.execute("INSERT INTO tenant (name) VALUES (%s) RETURNING id",
                           (n,)).fetchone()[0] for n in ("t-one", "t-two"))
    asset = conn.execute("INSERT INTO asset (tenant_id, content_sha256, byte_size, media_type,"
                         " width, height) VALUES (%s, '\\x01', 1, 'image/jpeg', 1, 1) "
                         "RETURNING id", (t1,)).fetchone()[0]
    other = conn.execute("INSERT INTO principal (tenant_id, kind, name) VALUES "
                         "(%s, 'user', 'eve') RETURNING id", (t2,)).fetchone()[0]
    with pytest.raises(psycopg.errors.ForeignKeyViolation):
        conn.execute("INSERT INTO asset_grant (tenant_id, asset_id, principal_id) "
                     "VALUES (%s, %s, %s)", (t1, asset, other))
    with pytest.raises(psycopg.errors.ForeignKeyViolation):
        conn.execute("INSERT INTO asset_grant (tenant_id, asset_id, principal_id) "
                     "VALUES (%s, %s, %s)", (t2, asset, other))


def test_the_rules_are_read_from_the_catalog(conn):
    # a table made the wrong way is caught, for each rule
    conn.execute("CREATE TABLE zz_bad (id bigserial PRIMARY KEY, asset_id bigint "
                 "REFERENCES asset (id), tenant_id bigint, note text UNIQUE)")
    bad = violations(conn)["zz_bad"]
    assert bad[0] == "tenant_id bigint NOT NULL: ('bigint', False)"
    assert any("PRIMARY KEY (id) (not led by tenant_id)" in b for b in bad)
    assert any("UNIQUE (note) (not led by tenant_id)" in b for b in bad)
    assert any("REFERENCES asset(id) (a foreign key to a tenant-owned table" in b for b in bad)
