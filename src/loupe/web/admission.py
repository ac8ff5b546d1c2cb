"""Scarce slots waited for on the event loop, never in a worker thread.

The server has a few expensive things it does a bounded number of at once:
uploads (``LibraryPool.outside``: an ExifTool run, decoding, ingest), the
decode of a picture to search by (``POST /api/similar``), and argon2 password
hashes (logins). Before, each request took one of anyio's 40 worker threads
(and for ``/api/similar`` a pooled Library) and then *blocked that thread* on
a ``threading`` semaphore for up to 30 s: 80 concurrent uploads, 16 pictures
or 150 logins occupied every worker thread, and every other request of every
user — the login page included — waited 20-28 s.

A :class:`Gate` is such a slot counter whose waiters wait as coroutines: a
request waits for its slot *before* it takes a worker thread or a pooled
Library, at most ``wait_s`` seconds, and is then refused with
:class:`Busy` (503 with ``Retry-After``). Waiters are served first come,
first served. The counter is guarded by a ``threading.Lock`` and wakes a
waiter through its own event loop, so one Gate is right whatever loop or
thread a request runs on (uvicorn's one loop; a test client's several).

    >>> gate = Gate("uploads", slots=2, wait_s=5, retry_after_s=5)   # doctest: +SKIP
    >>> async with gate.slot():                                     # doctest: +SKIP
    ...     await anyio.to_thread.run_sync(work)
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass


class Busy(Exception):
    """No slot came free within the gate's wait: answered 503 with
    ``Retry-After: retry_after`` (seconds) and :attr:`detail`."""

    def __init__(self, detail: str, retry_after: int):
        super().__init__(detail)
        self.detail = detail
        self.retry_after = retry_after


class _Waiter:
    __slots__ = ("loop", "future", "granted")

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = loop
        self.future: asyncio.Future = loop.create_future()
        self.granted = False


def _wake(future: asyncio.Future) -> None:
    if not future.done():
        future.set_result(None)


class Gate:
    """``slots`` things at once; a request waits for one on the event loop.

    Args:
        what: what a slot is for, in words (it names the 503's reason).
        slots: how many at once (>= 1).
        wait_s: the longest a request waits for a slot, in seconds (> 0).
        retry_after_s: the ``Retry-After`` of the 503 (whole seconds, >= 1).
    """

    def __init__(self, what: str, slots: int, wait_s: float, retry_after_s: int):
        if slots < 1 or not wait_s > 0 or retry_after_s < 1:
            raise ValueError("a gate needs slots >= 1, wait_s > 0 and retry_after_s >= 1")
        self.what = what
        self.slots = slots
        self.wait_s = wait_s
        self.retry_after_s = retry_after_s
        self._lock = threading.Lock()
        self._free = slots
        self._waiters: deque[_Waiter] = deque()
        #: Requests refused for want of a slot since the gate was made.
        self.refused = 0

    @property
    def waiting(self) -> int:
        """How many requests wait for a slot now."""
        with self._lock:
            return len(self._waiters)

    async def acquire(self) -> None:
        """Take a slot, waiting at most ``wait_s`` (first come, first served).

        Raises:
            Busy: no slot came free in time (nothing is held then).
        """
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._free > 0 and not self._waiters:
                self._free -= 1
                return
            waiter = _Waiter(loop)
            self._waiters.append(waiter)
        try:
            await asyncio.wait_for(waiter.future, self.wait_s)
        except (TimeoutError, asyncio.CancelledError) as exc:
            with self._lock:
                granted = waiter.granted
                if not granted:
                    self._waiters.remove(waiter)
            if granted:                       # handed over as the wait ended: ours
                if isinstance(exc, asyncio.CancelledError):
                    self.release()
                    raise
                return
            if isinstance(exc, asyncio.CancelledError):
                raise
            self.refused += 1
            raise Busy(f"the server is busy: all {self.slots} slot(s) for {self.what} stayed "
                       f"taken for {self.wait_s:g} s; try again in {self.retry_after_s} s",
                       self.retry_after_s) from None

    def release(self) -> None:
        """Give a slot back: to the longest waiter, else to the pool of free ones."""
        with self._lock:
            while self._waiters:
                waiter = self._waiters.popleft()
                waiter.granted = True
                try:
                    waiter.loop.call_soon_threadsafe(_wake, waiter.future)
                    return
                except RuntimeError:          # its loop is closed: the waiter is gone
                    continue
            self._free += 1

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """``async with gate.slot():`` — :meth:`acquire`, then :meth:`release`
        whatever happens. Raises :class:`Busy` like :meth:`acquire`."""
        await self.acquire()
        try:
            yield
        finally:
            self.release()


@dataclass
class Gates:
    """The server's gates (``app.state.gates``): ``uploads`` (as many as the
    pool's upload Libraries), ``decode`` (one picture decoded by ``POST
    /api/similar`` at a time) and ``hashing`` (argon2 password checks)."""

    uploads: Gate
    decode: Gate
    hashing: Gate
