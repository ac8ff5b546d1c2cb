"""The :class:`loupe.Library` methods of the ingest queue (``loupe ingest
--enqueue``, ``loupe status``): a part of the facade kept in its own module
so that ``library.py`` stays short. Each delegates to the
:mod:`loupe.jobs.queue` function its docstring names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg

from .access.viewer import Viewer
from .jobs import queue as jobs_queue


class JobMethods:
    """Mixed into :class:`loupe.Library`, whose attributes these methods use."""

    conn: psycopg.Connection
    home: Path
    tenant_id: int
    viewer: Viewer

    def enqueue_ingest(self, path: str | Path, *,
                       max_pixels: int | None = None) -> dict[str, Any]:
        """Queue one ingest job per image file under ``path`` for ``loupe
        worker`` processes (owner and admins only; AccessError otherwise).
        Stage: :func:`loupe.jobs.queue.enqueue_ingest`."""
        self._manage()
        return jobs_queue.enqueue_ingest(self.conn, self.tenant_id, self.home, path,
                                         max_pixels=max_pixels)

    def queue_status(self) -> dict[str, Any]:
        """The tenant's ingest queue: jobs by state, queued runs, live workers.
        Stage: :func:`loupe.jobs.queue.queue_status`."""
        return jobs_queue.queue_status(self.conn, self.tenant_id)
