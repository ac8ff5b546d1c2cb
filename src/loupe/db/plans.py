"""Statements run from a plan kept on the server: prepared once per
connection, and planned once (PostgreSQL's generic plan) instead of once per
execution.

Why: a search statement is a few hundred lines of common table expressions.
PostgreSQL planned the lexical lane's statement in 1.7–12 ms and then ran it,
for a rare word, in 0.4–1.7 ms (``EXPLAIN (ANALYZE, SUMMARY)`` at 10,000
documents; benchmarks/RESULTS.md, "Lexical lane: one round trip"). Left to itself
(``plan_cache_mode = auto``) the server kept planning every execution of the
prepared statement again (152 custom plans, 0 generic, in that run), because
the generic plan's estimate was not cheaper than the custom ones'. The
generic plan returned the same rows and scores for all 300 benchmark queries.

The setting is ``SET LOCAL`` inside the statement's own transaction, so it
never leaks to the connection's other statements and it travels with the
transaction (to Citus workers too). The ``SET`` and the statement go to the
server with ``BEGIN`` and ``COMMIT`` as one pipeline (psycopg's pipeline
mode: one sync), so the four cost one network round trip.
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import pq

GENERIC_PLAN = "SET LOCAL plan_cache_mode = force_generic_plan"


def fetch_generic(conn: psycopg.Connection, stmt: Any, params: dict[str, Any],
                  row_factory: Any = None) -> list[Any]:
    """Every row of ``stmt`` (a string or :class:`psycopg.sql.Composable`)
    with ``params``, run as a prepared statement from its generic plan.

    On an idle connection (autocommit, no transaction open) the statement
    runs in its own transaction with ``plan_cache_mode`` set locally, in one
    pipeline. Inside a caller's transaction the setting would outlive the
    statement, so there it is only prepared (the server then chooses the
    plan as it would have).

    Returns:
        the rows, as ``row_factory`` makes them (default: tuples).
    Raises:
        psycopg.Error: as the statement raises it (its own transaction is
            rolled back, the setting with it).
    """
    idle = conn.autocommit and conn.info.transaction_status == pq.TransactionStatus.IDLE
    with conn.cursor(row_factory=row_factory) if row_factory else conn.cursor() as cur:
        if not idle:
            return cur.execute(stmt, params, prepare=True).fetchall()
        # one pipeline: BEGIN, the SET, the statement and COMMIT reach the
        # server together and are answered after one sync
        try:
            with conn.cursor() as control, conn.pipeline():
                control.execute("BEGIN")
                control.execute(GENERIC_PLAN)
                cur.execute(stmt, params, prepare=True)
                control.execute("COMMIT")
        except BaseException:
            if conn.info.transaction_status != pq.TransactionStatus.IDLE:
                conn.execute("ROLLBACK")   # the failed statement's transaction
            raise
        return cur.fetchall()
