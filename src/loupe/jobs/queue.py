"""The ingest queue: one procrastinate job per file (:mod:`loupe.jobs`).

:func:`enqueue_ingest` walks a folder (as ``loupe ingest`` does) and queues
one job per image file under one ingest run; :func:`queue_status` counts the
jobs and files of each queued run (``loupe status``). The queue's tables are
procrastinate's own (``procrastinate_jobs``...), created by
:func:`ensure_schema` in the library's database the first time a queue is
used; procrastinate's release notes give their upgrades.

Each job carries the tenant id, the folder, the file's path under it and
the run; it holds a lock named after the file, so that two jobs of one file
never run at once (the second finds it stored and leaves it). A job whose
worker stopped sending heartbeats (killed, its machine gone) is taken again
(:func:`loupe.jobs.worker.retry_stalled`); one that raised is retried by
procrastinate's ``RetryStrategy(max_attempts=RETRIES, wait=5)`` (5 s apart).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import procrastinate
import psycopg
from psycopg.conninfo import make_conninfo
from psycopg.types.json import Jsonb

from ..ingest import queries as iq
from ..ingest.pipeline import check_max_pixels
from ..ingest.walk import walk

#: The queue of ingest jobs, and the full name of their task.
QUEUE = "loupe-ingest"
TASK = "loupe:ingest_file"
#: procrastinate's ``max_attempts`` for a job that raised (a job taken again
#: after its worker was killed did not raise).
RETRIES = 2
#: Most ingest jobs waiting or running for one tenant; an enqueue that would
#: pass it is refused before any job is added (LOUPE_QUEUE_MAX overrides).
QUEUE_MAX = 1_000_000
QUEUE_MAX_ENV = "LOUPE_QUEUE_MAX"
_SCHEMA_LOCK = 0x4C4F55504551   # 'LOUPEQ'

class QueueFull(RuntimeError):
    """The tenant's ingest queue would hold more than its bound."""


def queue_max() -> int:
    """The bound on a tenant's queued ingest jobs (:data:`QUEUE_MAX`, or
    ``LOUPE_QUEUE_MAX``).

    Raises:
        ValueError: ``LOUPE_QUEUE_MAX`` is not a whole number within 1 and 100,000,000.
    """
    raw = os.environ.get(QUEUE_MAX_ENV)
    if raw is None:
        return QUEUE_MAX
    if not raw.strip().isdigit() or not 1 <= int(raw) <= 100_000_000:
        raise ValueError(f"{QUEUE_MAX_ENV} = {raw!r} is out of range: it must be a whole "
                         f"number within 1 and 100,000,000")
    return int(raw)


def make_app(url: str, tasks: procrastinate.Blueprint | None = None) -> procrastinate.App:
    """A procrastinate app on database ``url``, with ``tasks`` (named
    ``loupe:...``; the worker's, :mod:`loupe.jobs.worker`): an app without
    them queues jobs by name. Open it (``app.open()`` / ``open_async()``)."""
    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=url))
    if tasks is not None:
        app.add_tasks_from(tasks, namespace="loupe")
    return app


def ensure_schema(conn: psycopg.Connection) -> bool:
    """Create procrastinate's tables in ``conn``'s database unless they exist
    (under an advisory lock: two first workers do not both create them).
    Returns whether they were created. ``conn``: autocommit."""
    if conn.execute("SELECT to_regclass('procrastinate_jobs') IS NOT NULL").fetchone()[0]:
        return False
    conn.execute("SELECT pg_advisory_lock(%s)", (_SCHEMA_LOCK,))
    try:
        if conn.execute("SELECT to_regclass('procrastinate_jobs') IS NOT NULL").fetchone()[0]:
            return False
        with conn.transaction():
            conn.execute(procrastinate.schema.SchemaManager.get_schema())
        return True
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s)", (_SCHEMA_LOCK,))


def file_lock(tenant_id: int, path: str) -> str:
    """The procrastinate lock of a file's jobs (one runs at a time)."""
    return f"loupe-ingest:{tenant_id}:{path}"


def connection_url(conn: psycopg.Connection) -> str:
    """A libpq connection string for the database ``conn`` is connected to
    (its parameters and password), for the queue's own connections."""
    info = conn.info
    return make_conninfo(info.dsn, **({"password": info.password} if info.password else {}))


def enqueue_ingest(conn: psycopg.Connection, tenant_id: int, home: Path,
                   path: str | Path, *, max_pixels: int | None = None) -> dict[str, Any]:
    """Queue one ingest job per image file under folder ``path`` for tenant
    ``tenant_id`` (``conn``: an autocommit connection to its database; the
    queue opens its own, :func:`connection_url`), under a new ingest run. Returns ``{"run_id", "root", "queued",
    "skipped"}``; ``skipped``: folders too deep to walk (as ``loupe ingest``
    reports them). Files gone from the folder are not removed by jobs: a run
    of the whole folder (``loupe ingest``) removes them.

    Raises:
        NotADirectoryError: ``path`` is not a folder.
        ValueError: ``max_pixels`` out of range; ``LOUPE_QUEUE_MAX`` malformed.
        QueueFull: the tenant's queue would hold more than :func:`queue_max`
            jobs (checked before any job is added).
    """
    check_max_pixels(max_pixels)
    bound = queue_max()
    root = Path(path).expanduser().resolve()
    skipped: list[str] = []
    found = walk(root, exclude=[Path(home)], skipped=skipped)   # NotADirectoryError
    ensure_schema(conn)
    waiting = conn.execute(
        "SELECT count(*) FROM procrastinate_jobs WHERE task_name = %s AND status IN "
        "('todo', 'doing') AND (args->>'tenant_id')::bigint = %s", (TASK, tenant_id)
    ).fetchone()[0]
    if waiting + len(found) > bound:
        raise QueueFull(f"the ingest queue holds {waiting:,} jobs of this library; "
                        f"{len(found):,} more would pass its bound of {bound:,} "
                        f"({QUEUE_MAX_ENV}): let the workers catch up, or queue a "
                        f"smaller folder")
    with conn.transaction():
        source_id = conn.execute(iq.UPSERT_SOURCE, {"tenant_id": tenant_id,
                                                    "root": str(root)}).fetchone()[0]
        run_id = conn.execute(iq.START_RUN, {"tenant_id": tenant_id,
                                             "source_id": source_id}).fetchone()[0]
        conn.execute("UPDATE ingest_run SET summary = %s WHERE id = %s",
                     (Jsonb({"root": str(root), "queued": len(found), "done": 0}), run_id))
    app = make_app(connection_url(conn))
    with app.open():
        for f in found:
            app.configure_task(TASK, queue=QUEUE, lock=file_lock(tenant_id, f.path)).defer(
                tenant_id=tenant_id, root=str(root), rel_path=f.rel_path, run_id=run_id,
                max_pixels=max_pixels)
    if not found:
        conn.execute("UPDATE ingest_run SET finished_at = now() WHERE id = %s", (run_id,))
    return {"run_id": run_id, "root": str(root), "queued": len(found), "skipped": skipped}


#: Counters of a file's summary added to its run's (``ingest_run.summary``).
RUN_COUNTERS = ("new_assets", "duplicates", "updated", "unchanged", "failed")

# A file's counters added to its run's summary; the run is finished when as
# many files are done as were queued (a job run again after its worker was
# killed between its file's commit and this update counts twice: ">=").
RECORD_DONE = """
UPDATE ingest_run r
SET summary = r.summary || (SELECT jsonb_object_agg(k, coalesce((r.summary->>k)::bigint, 0)
                                                      + v::bigint)
                            FROM jsonb_each_text(%(add)s) AS e(k, v)),
    finished_at = CASE WHEN coalesce((r.summary->>'done')::bigint, 0) + 1
                            >= coalesce((r.summary->>'queued')::bigint, 0)
                       THEN coalesce(r.finished_at, now()) ELSE r.finished_at END
WHERE r.id = %(run_id)s AND r.tenant_id = %(tenant_id)s
"""


def queue_status(conn: psycopg.Connection, tenant_id: int) -> dict[str, Any]:
    """The ingest queue of tenant ``tenant_id``: ``{"jobs": {status: count},
    "runs": [{"run_id", "root", "queued", "done", "new_assets", ...,
    "failures", "finished"}], "workers": live workers}`` (the last 10 queued
    runs; ``failures``: the run's recorded problems of severity error). An
    empty shape when no queue was ever used."""
    if not conn.execute("SELECT to_regclass('procrastinate_jobs') IS NOT NULL").fetchone()[0]:
        return {"jobs": {}, "runs": [], "workers": 0}
    jobs = dict(conn.execute(
        "SELECT status::text, count(*) FROM procrastinate_jobs WHERE task_name = %s AND "
        "(args->>'tenant_id')::bigint = %s GROUP BY status ORDER BY status",
        (TASK, tenant_id)).fetchall())
    runs = []
    for run_id, summary, finished, failures in conn.execute(
            "SELECT r.id, r.summary, r.finished_at IS NOT NULL, (SELECT count(*) FROM "
            "ingest_failure f WHERE f.run_id = r.id AND f.tenant_id = r.tenant_id AND "
            "f.severity = 'error') FROM ingest_run r WHERE r.tenant_id = %s AND "
            "r.summary ? 'queued' ORDER BY r.id DESC LIMIT 10", (tenant_id,)).fetchall():
        runs.append({"run_id": run_id, **{k: summary.get(k, 0) for k in
                                          ("root", "queued", "done", *RUN_COUNTERS)},
                     "failures": failures, "finished": finished})
    workers = conn.execute("SELECT count(*) FROM procrastinate_workers WHERE last_heartbeat "
                           "> now() - interval '60 seconds'").fetchone()[0]
    return {"jobs": jobs, "runs": runs, "workers": workers}
