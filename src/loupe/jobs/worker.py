"""A worker process: runs the queued ingest jobs (:mod:`loupe.jobs.queue`)
of every tenant of one library database, one file at a time.

:func:`run_worker` is what ``loupe worker`` runs. Any number of workers, on
any machines that reach the database, the files (at the same paths) and the
library home (thumbnails are written there) share the queue: procrastinate
hands each job to one of them. Each keeps one database connection and one
ExifTool process for all its jobs. A worker that stops sending heartbeats
(killed, its machine gone) has its running job taken again by another
worker after ``stalled_s`` seconds (:func:`retry_stalled`); the file's
transaction it left open was rolled back by PostgreSQL when its connection
dropped, so nothing of that file was stored.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import procrastinate
import psycopg
from psycopg.types.json import Jsonb

from ..db import session
from ..db.server import resolve_database_url
from ..ingest.exiftool_reader import ExifToolReader
from ..ingest.pipeline import DEFAULT_MAX_PIXELS
from ..ingest.single import FileIngester
from .queue import QUEUE, RECORD_DONE, RETRIES, RUN_COUNTERS, ensure_schema, make_app

log = logging.getLogger(__name__)

#: Seconds between a worker's heartbeats, and without one after which its
#: running job is taken again (procrastinate's defaults).
HEARTBEAT_S = 10.0
STALLED_S = 30.0

tasks = procrastinate.Blueprint()


class WorkerState:
    """What one worker keeps across jobs: the library home, one autocommit
    connection (opened when first needed, verified and migrated as
    :func:`loupe.db.session.connect` does) and one ExifTool process."""

    def __init__(self, home: Path, url: str):
        self.home = Path(home)
        self.url = url
        self._conn: psycopg.Connection | None = None
        self._reader: ExifToolReader | None = None

    def conn(self) -> psycopg.Connection:
        """The worker's database connection (a new one after it broke)."""
        if self._conn is None or self._conn.closed or self._conn.broken:
            self._conn = session.connect(self.home, self.url, create=False)
        return self._conn

    def reader(self) -> ExifToolReader:
        """The worker's ExifTool process, started when first needed."""
        if self._reader is None:
            self._reader = ExifToolReader()
            self._reader.start()
        return self._reader

    def ingest_file(self, tenant_id: int, root: str, rel_path: str, run_id: int,
                    max_pixels: int | None) -> dict[str, Any]:
        """One job's work: :meth:`loupe.ingest.single.FileIngester.ingest_file`,
        then the file's counts added to its run. Returns the file's summary
        (``IngestSummary.as_dict``).

        Raises:
            ValueError: no tenant ``tenant_id``; ``rel_path`` outside ``root``.
            NotADirectoryError: ``root`` is no longer a folder.
        """
        conn = self.conn()
        ingester = FileIngester(conn, tenant_id, self.home, exiftool=self.reader(),
                                max_pixels=max_pixels or DEFAULT_MAX_PIXELS, workers=1)
        summary = ingester.ingest_file(root, rel_path, run_id)
        counts = {k: getattr(summary, k) for k in RUN_COUNTERS}
        conn.execute(RECORD_DONE, {"add": Jsonb({**counts, "done": 1}), "run_id": run_id,
                                   "tenant_id": tenant_id})
        return summary.as_dict()

    def close(self) -> None:
        """Stop ExifTool and close the connection."""
        if self._reader is not None:
            self._reader.close()
        if self._conn is not None:
            self._conn.close()


@tasks.task(name="ingest_file", queue=QUEUE, pass_context=True,
            retry=procrastinate.RetryStrategy(max_attempts=RETRIES, wait=5))
def ingest_file(context: procrastinate.JobContext, *, tenant_id: int, root: str,
                rel_path: str, run_id: int, max_pixels: int | None = None) -> None:
    """The ingest job of one file (queued by :func:`loupe.jobs.queue.enqueue_ingest`)."""
    state: WorkerState = context.additional_context["loupe"]
    state.ingest_file(int(tenant_id), str(root), str(rel_path), int(run_id),
                      int(max_pixels) if max_pixels is not None else None)


async def retry_stalled(app: procrastinate.App, stalled_s: float) -> int:
    """Put back in the queue every running ingest job whose worker sent no
    heartbeat for ``stalled_s`` seconds (or is gone). Returns how many."""
    jobs = await app.job_manager.get_stalled_jobs(queue=QUEUE,
                                                  seconds_since_heartbeat=stalled_s)
    n = 0
    for job in jobs:
        await app.job_manager.retry_job(job)
        log.warning("ingest job %s (%s) was taken again: its worker stopped", job.id,
                    job.task_kwargs.get("rel_path"))
        n += 1
    return n


async def _watch_stalled(app: procrastinate.App, stalled_s: float, every_s: float) -> None:
    while True:
        try:
            await retry_stalled(app, stalled_s)
        except Exception as exc:  # noqa: BLE001 - the next round tries again
            log.warning("could not look for stalled ingest jobs: %s", exc)
        await asyncio.sleep(every_s)


def run_worker(home: str | Path, database_url: str | None = None, *, wait: bool = True,
               heartbeat_s: float = HEARTBEAT_S, stalled_s: float = STALLED_S,
               name: str | None = None, install_signal_handlers: bool = True) -> None:
    """Run queued ingest jobs until stopped (SIGINT / SIGTERM: the running
    job is finished first), or, without ``wait``, until the queue is empty.
    ``home``: the library home (its embedded database when no URL is
    configured, thumbnails); ``database_url``: else ``LOUPE_DATABASE_URL``.
    Every ``heartbeat_s`` the worker tells the queue it is alive; jobs of
    workers silent for ``stalled_s`` are taken again.

    Raises:
        loupe.db.DatabaseUnavailable: no database could be reached.
        ValueError: ``heartbeat_s`` not below ``stalled_s``, or either not positive.
    """
    if not 0 < heartbeat_s < stalled_s:
        raise ValueError(f"heartbeat_s ({heartbeat_s}) must be positive and below "
                         f"stalled_s ({stalled_s})")
    home = Path(home).expanduser()
    url = resolve_database_url(home, database_url)
    with psycopg.connect(url, autocommit=True) as conn:
        ensure_schema(conn)
    state = WorkerState(home, url)
    app = make_app(url, tasks)

    async def main() -> None:
        async with app.open_async():
            watch = asyncio.create_task(_watch_stalled(app, stalled_s, heartbeat_s))
            try:
                await app.run_worker_async(
                    queues=[QUEUE], wait=wait, concurrency=1, name=name,
                    update_heartbeat_interval=heartbeat_s, stalled_worker_timeout=stalled_s,
                    additional_context={"loupe": state}, delete_jobs="never",
                    install_signal_handlers=install_signal_handlers)
            finally:
                watch.cancel()

    try:
        asyncio.run(main())
    finally:
        state.close()
