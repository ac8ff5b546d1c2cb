"""A fixed pool of open :class:`loupe.Library` objects for the server.

A Library holds one psycopg connection, which is not thread-safe, so each
request borrows one Library for its whole duration and gives it back. The
pool size bounds the database connections (and concurrent searches) of one
``loupe serve``; requests beyond it wait for a free Library. An upload gives
its pooled Library back before its long part (ExifTool, decoding, ingest),
which runs on a Library of its own (:meth:`LibraryPool.outside`).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import psycopg

from ..library import Library


class PoolExhausted(RuntimeError):
    """No Library came free within the wait limit (the server is overloaded)."""


class DatabaseDown(PoolExhausted):
    """The database cannot be reached now (restarting, stopped): a 503 with
    Retry-After, like an overloaded pool; the slot stays in the pool and the
    next request tries to connect again."""


class LibraryPool:
    """``size`` Libraries opened by ``opener``, lent one at a time.

    Args:
        opener: returns a new, open Library (bound to the server's tenant).
        size: number of Libraries (= database connections), >= 1.
        wait_s: how long :meth:`lend` waits for a free one before raising
            :class:`PoolExhausted`.
    """

    def __init__(self, opener: Callable[[], Library], size: int = 4, wait_s: float = 30.0,
                 long_tasks: int = 2):
        if size < 1 or long_tasks < 1:
            raise ValueError("pool size and long_tasks must be >= 1")
        self._opener = opener
        self._wait_s = wait_s
        self._long = threading.BoundedSemaphore(long_tasks)
        self.long_tasks = long_tasks
        self._free: queue.LifoQueue[Library] = queue.LifoQueue()
        self._all: list[Library] = []
        self._lock = threading.Lock()
        for _ in range(size):
            lib = opener()
            self._all.append(lib)
            self._free.put(lib)
        self.size = size

    @contextmanager
    def lend(self) -> Iterator[Library]:
        """Borrow a Library for the duration of the ``with`` block.

        A Library whose connection is closed, broken or no longer answers
        (the database restarted) is replaced by a freshly opened one before it
        is lent. Every slot is given back, whatever happens: when no new
        connection can be opened the old Library goes back to the pool (to be
        replaced at its next loan) and :class:`DatabaseDown` is raised.

        Raises:
            PoolExhausted: none came free within ``wait_s``.
            DatabaseDown: the database cannot be reached.
        """
        try:
            lib = self._free.get(timeout=self._wait_s)
        except queue.Empty:
            raise PoolExhausted(f"all {self.size} database connections are busy") from None
        try:
            lib = self._healthy(lib)
        except BaseException:
            self._free.put(lib)
            raise
        try:
            yield lib
        finally:
            self._free.put(lib)

    @contextmanager
    def outside(self) -> Iterator[Library]:
        """A Library opened for one long task (an upload's ExifTool reads,
        decoding and ingest), outside the pool and closed after it, so that
        the task holds none of the pool's Libraries meanwhile (with ``--pool 1``, another user's search waited 28.7 s behind one
        upload), as the login path does for argon2. At most ``long_tasks``
        such Libraries are open at once (database connections: ``size`` +
        ``long_tasks``). The web app takes one of its upload slots
        (``app.state.gates.uploads``, as many) on the event loop before it
        calls this in a worker thread, so a web request never waits here
        (80 uploads waited here in every worker thread).

        Raises:
            PoolExhausted: none came free within ``wait_s``.
            DatabaseDown: no Library could be opened.
        """
        if not self._long.acquire(timeout=self._wait_s):
            raise PoolExhausted(f"all {self.long_tasks} connections for uploads are busy")
        try:
            try:
                lib = self._opener()
            except Exception as exc:  # noqa: BLE001 - any failure to connect is "down"
                raise DatabaseDown(f"the database is unavailable: {exc}".splitlines()[0]) from exc
            try:
                yield lib
            finally:
                lib.close()
        finally:
            self._long.release()

    @staticmethod
    def _alive(lib: Library) -> bool:
        """A round trip on the Library's connection (an idle connection to a
        restarted server looks fine until it is used)."""
        conn = lib.conn
        if conn.closed or conn.broken:
            return False
        try:
            conn.execute("SELECT 1")
            return True
        except psycopg.Error:
            return False

    def _healthy(self, lib: Library) -> Library:
        if self._alive(lib):
            return lib
        try:
            return self._replace(lib)
        except Exception as exc:  # noqa: BLE001 - any failure to connect is "down"
            raise DatabaseDown(f"the database is unavailable: {exc}".splitlines()[0]) from exc

    def _replace(self, dead: Library) -> Library:
        """Open a new Library in ``dead``'s place (raises what the opener raises;
        ``dead`` then stays in its place)."""
        with self._lock:
            lib = self._opener()
            self._all[self._all.index(dead)] = lib
        try:
            dead.close()
        except Exception:  # noqa: BLE001 - already broken; we only want it gone
            pass
        return lib

    def close(self) -> None:
        """Close every Library (call once, at shutdown)."""
        for lib in self._all:
            try:
                lib.close()
            except Exception:  # noqa: BLE001 - a dead connection closes with an error
                pass
