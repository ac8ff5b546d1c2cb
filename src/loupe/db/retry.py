"""Transactions that PostgreSQL may abort for want of a serial order
(a deadlock between two writers, a serialization failure) are run again
here, inside Loupe: the caller never sees them as an error.

Writers that rebuild search documents lock their assets in one global
order (:func:`loupe.document.compile.lock_assets`: ascending asset id), so
two of them on overlapping assets wait for each other instead of
deadlocking; a few paths cannot know every asset before they start (an
ingest that moves a file between assets, clustering new faces), and for
them a deadlock stays possible. PostgreSQL then aborts one transaction
(``40P01``) and the other goes on; running the aborted one again, from its
start, gives the same result as if it had waited.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TypeVar

import psycopg
import psycopg.errors
from psycopg.pq import TransactionStatus

T = TypeVar("T")

#: The errors a transaction is run again for: PostgreSQL's
#: ``deadlock_detected`` (40P01) and ``serialization_failure`` (40001).
RETRYABLE = (psycopg.errors.DeadlockDetected, psycopg.errors.SerializationFailure)
#: Tries in all, the first included.
ATTEMPTS = 8


def retrying(conn: psycopg.Connection, work: Callable[[], T], *, attempts: int = ATTEMPTS,
             base_s: float = 0.02) -> T:
    """``work()``, run again when it raises one of :data:`RETRYABLE`.

    ``work`` must open its own transaction (``with conn.transaction():``)
    on ``conn`` and do nothing outside the database that a second run would
    repeat wrongly. It is run again only when ``conn`` is outside any
    transaction after the failure (a failure inside a caller's transaction
    is the caller's to handle: its locks taken before are still held),
    after a random pause of up to ``base_s * 2**n`` seconds (n = tries so
    far; "full jitter" exponential back-off, as in AWS's architecture
    note "Exponential Backoff And Jitter").

    Returns: what ``work`` returns.
    Raises: what ``work`` raises; a retryable error after ``attempts`` tries.
    """
    for attempt in range(attempts):
        try:
            return work()
        except RETRYABLE:
            if attempt == attempts - 1 or \
                    conn.info.transaction_status != TransactionStatus.IDLE:
                raise
            time.sleep(random.uniform(0, base_s * 2 ** attempt))
    raise AssertionError("unreachable")
