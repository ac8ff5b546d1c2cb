"""A fixed pool of open :class:`loupe.Library` objects for the server.

A Library holds one psycopg connection, which is not thread-safe, so each
request borrows one Library for its whole duration and gives it back. The
pool size bounds the database connections (and concurrent searches) of one
``loupe serve``; requests beyond it wait for a free Library.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from ..library import Library


class PoolExhausted(RuntimeError):
    """No Library came free within the wait limit (the server is overloaded)."""


class LibraryPool:
    """``size`` Libraries opened by ``opener``, lent one at a time.

    Args:
        opener: returns a new, open Library (bound to the server's tenant).
        size: number of Libraries (= database connections), >= 1.
        wait_s: how long :meth:`lend` waits for a free one before raising
            :class:`PoolExhausted`.
    """

    def __init__(self, opener: Callable[[], Library], size: int = 4, wait_s: float = 30.0):
        if size < 1:
            raise ValueError("pool size must be >= 1")
        self._opener = opener
        self._wait_s = wait_s
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
        """Borrow a Library for the duration of the ``with`` block. A Library
        whose connection broke is replaced by a freshly opened one.

        Raises:
            PoolExhausted: none came free within ``wait_s``.
        """
        try:
            lib = self._free.get(timeout=self._wait_s)
        except queue.Empty:
            raise PoolExhausted(f"all {self.size} database connections are busy") from None
        try:
            yield lib
        finally:
            if lib.conn.closed or lib.conn.broken:
                lib = self._replace(lib)
            self._free.put(lib)

    def _replace(self, dead: Library) -> Library:
        with self._lock:
            try:
                dead.close()
            except Exception:  # noqa: BLE001 - already broken; we only want it gone
                pass
            lib = self._opener()
            self._all[self._all.index(dead)] = lib
            return lib

    def close(self) -> None:
        """Close every Library (call once, at shutdown)."""
        for lib in self._all:
            lib.close()
