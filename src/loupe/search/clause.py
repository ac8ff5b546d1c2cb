"""The one way a condition on assets (a filter, filters) enters every
search statement.

An :class:`AssetClause` is a boolean SQL expression over one asset id
column, written by our code (never from user input; values travel as
statement parameters, :meth:`AssetClause.params`). The statements of
:mod:`loupe.search.statements` apply it wherever assets *enter* a
statement, so that every row, band and count is of assets that satisfy it:

=====================  ======================================================
entry point            fragment
=====================  ======================================================
lexical candidates     ``cand_l`` of :func:`loupe.lexical.queries.lexical_ctes`
                       (filtered rows are left out of ``cand``, ``kept`` and
                       the counts; ``max_df``, a count of every posting, is
                       then 0: it would count assets the clause excludes)
vector lanes           :func:`loupe.vector.queries.vector_cte` (inside the HNSW
                       walk: pgvector's iterative scan goes on past them)
title band (C2)        :func:`loupe.lexical.queries.title_band_cte`
scope members (C1-C3)  :func:`loupe.scopes.queries.readable_members` (the
                       regime, both bands and the exact vector scan read them)
=====================  ======================================================

Rows reached through those (``kept``, ``fused``, ``ranked``, the bands) need
no second test. :func:`and_clause` renders the clause at one entry point.

When the clause is itself the statement's scope (a filter, which has
``scope_members()``), the scoped statements first materialise its set once
(the ``scope`` CTE, at most DEEP_MAX + 1 readable assets) and the entry
points test membership in that set (:class:`ScopeProbe`: one hash probe per
lexical posting or HNSW candidate) instead of running the clause's test on
each row; only when the set overflows the bound (then it is not the whole
set) does the row test run. Measured in benchmarks/RESULTS.md.
"""

from __future__ import annotations

from typing import Any, Protocol


class AssetClause(Protocol):
    """A condition on assets, rendered at each entry point."""

    def sql(self, asset: str) -> str:
        """A boolean SQL expression on the asset whose id is the column
        reference ``asset`` (e.g. ``v.asset_id``); placeholders
        ``%(name)s`` name :meth:`params` keys."""

    def params(self) -> dict[str, Any]:
        """The statement parameters the expression uses."""


def and_clause(clause: AssetClause | None, asset: str, keyword: str = "AND") -> str:
    """``"\\n AND (<clause on asset>)"`` (or with ``keyword``, e.g. ``WHERE``),
    or ``""`` without a clause (the statement's text is then unchanged)."""
    if clause is None:
        return ""
    return f"\n      {keyword} ({clause.sql(asset)})"


class ScopeProbe:
    """An :class:`AssetClause` that tests membership in the statement's
    materialised ``scope`` CTE (see the module docstring): ``asset IN
    (SELECT asset_id FROM scope)`` — a hashed subplan, built once per
    statement — while the scope is complete (``regime.n`` at most
    ``%(deep_max)s``, the bound of :func:`loupe.scopes.queries.readable_members`),
    else ``clause``'s own row test. The scope's members are readable by the
    viewer as well as accepted by the clause; every entry point tests
    readability itself too, so the rows are the same either way.

    Needs the CTEs ``scope`` (asset_id) and ``regime`` (n) defined before
    the entry points, and the parameter ``deep_max``."""

    def __init__(self, clause: AssetClause):
        self.clause = clause

    def sql(self, asset: str) -> str:
        """The membership test on the asset id column ``asset``."""
        return (f"CASE WHEN (SELECT n FROM regime) <= %(deep_max)s"
                f" THEN {asset} IN (SELECT asset_id FROM scope)"
                f" ELSE {self.clause.sql(asset)} END")

    def params(self) -> dict[str, Any]:
        """The clause's parameters."""
        return self.clause.params()
