"""Stage 3 of a search, shared by every statement kind: the statement run
once, and the typo fallback (L2) when no query term matched as typed.

The lanes (:func:`loupe.lexical.search.lexical_search`,
:func:`loupe.scopes.search.scoped_search`) and the pipeline
(:mod:`loupe.search.pipeline`) call it; it imports only the statement room
(:mod:`.statements`, :mod:`.clause`) and the viewer, never a lane or the
pipeline, so a lane does not reach up to the pipeline to run its statement.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import psycopg

from ..access.viewer import Viewer
from ..fusion.search import VectorLane
from . import statements as st
from .clause import AssetClause


class Terms(Protocol):
    """The query terms a statement runs with
    (:class:`loupe.lexical.search.QueryTerms` is one): the terms and their
    correction against the index."""

    terms: list[str]

    def corrected(self, conn: psycopg.Connection, tenant_id: int, viewer: Viewer,
                  clause: AssetClause | None = None) -> tuple["Terms", dict[str, str]]:
        ...


@dataclass
class Attempt:
    """What stage 3 produced: the statement's outcome, the terms and vector
    lanes it ran with (after any correction) and the corrections made."""

    outcome: st.Outcome
    terms: Terms
    lanes: list[VectorLane]
    corrections: dict[str, str]


def execute_with_fallback(conn: psycopg.Connection, tenant_id: int, viewer: Viewer, kind: str,
                          lanes: list[VectorLane], qt: Terms,
                          params: Callable[[Terms, list[VectorLane], bool], dict[str, Any]],
                          *, correct_typos: bool = True,
                          clause: AssetClause | None = None) -> Attempt:
    """Stage 3: run the statement of ``kind`` once; when no query term
    matched as typed (no candidate), the typo fallback (L2, the only place
    it is written): each absent term replaced by its closest indexed term
    (:meth:`loupe.lexical.search.QueryTerms.corrected`, only terms the viewer
    can reach, P1), and the statement run again with ``fallback`` set,
    without the vector lanes (they encoded the misspelt query), a scoped
    statement as the scoped lexical one. A query that matches as typed is
    never corrected. ``params(terms, lanes, fallback)`` gives the
    statement's parameters; ``clause`` the condition on assets (:mod:`.clause`);
    a filter's corrections come only from words of assets it accepts that the
    viewer may read."""
    out = st.execute(conn, kind, lanes, params(qt, lanes, False), clause)
    corrections: dict[str, str] = {}
    if correct_typos and out.counts["candidates"] == 0 and qt.terms:
        fixed, corrections = qt.corrected(conn, tenant_id, viewer, clause)
        if corrections:
            qt, lanes = fixed, []
            kind = st.SCOPED if kind == st.SCOPED_FUSED else kind
            out = st.execute(conn, kind, lanes, params(qt, lanes, True), clause)
    return Attempt(out, qt, lanes, corrections)


