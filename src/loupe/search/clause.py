"""The one way a condition on assets (a filter, SPEC issue 17) enters every
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
