"""The verdict of a search and the total it tells (C4, C5): pure
functions of the counts the search statement itself reported, no database.

C4 asks for the verdict to be computed from "count columns per
candidate source compared with the cap it ran under", in the same query
that produced the results: every statement of :mod:`loupe.search.statements`
returns those counts next to its rows, and this module compares them.
Every search path (library-wide or scoped, lexical only or fused with
vector lanes, first try or typo fallback) decides here, with these rules,
each written once:

R1 (C4, L2) A fallback path (typo correction) never inherits completeness:
   ``unknown``.
R2 (C4, F3) The lexical lane is complete when every query term's postings
   were read to their end (``all_read``) and the assets reached fit the
   keep cap (``candidates <= keep_cap``).
R3 (C3) Inside a scope the band completes the lane: the ``direct`` regime
   scores every member (complete by construction), ``deep`` is complete
   when every term was read to the deep cap's end (``deep_all_read``),
   ``none`` (no band) keeps the lane's own verdict (R2).
R4 (V5) When the rows are exactly the lexical lane's — no vector lane ran,
   or a one-word query whose word matched (or with no lane of written
   words that could bridge it) — the lexical verdict (R2, or R3 in a
   scope) holds: ``complete``, else ``truncated``.
R5 (C3, C4) Otherwise vector neighbours are among the rows; a vector lane
   is exact only inside a ``direct`` scope (every member's vector compared)
   when no member waits for a vector: ``complete``; any other source of
   rows defaults to ``unknown`` — among them a one-word query bridged by
   the text lane (V5: a fallback; its band keeps only rows the word
   matched, so the exact scan does not reach the bridge's rows).

Totals (C5, never the page size):

T1 Library-wide, R4: the lexical count ``max(candidates + title-band rows
   the walk had not reached, max_df)``, exact when ``all_read``.
T2 Library-wide otherwise (R1, R5): a lower bound, the larger of the rows
   the statement can page through and T1's count; never exact.
T3 In a scope: the ranked rows plus the band rows (every reachable row),
   exact exactly when the verdict is ``complete``.
"""

from __future__ import annotations

from dataclasses import dataclass

COMPLETE = "complete"
TRUNCATED = "truncated"
UNKNOWN = "unknown"
#: Scope regimes (C3), see :func:`loupe.scopes.search.regime_for`.
REGIMES = ("direct", "deep", "none")


@dataclass(frozen=True)
class Counts:
    """What one search statement reported, and the flags of its path.

    Attributes:
        candidates: assets the lexical lane's walk reached (``cand``).
        all_read: every query term's postings were read to their end.
        keep_cap: the keep cap the lane ran under (assets).
        max_df: the largest document frequency of a query term (0 for a
            viewer who does not see everything: hidden postings move no total).
        title_band_unreached: title-band rows (C2) the walk had not reached.
        rows: rows the statement can page through (ranked + band rows).
        regime: the scope's regime (``direct``/``deep``/``none``), ``None``
            for a library-wide search.
        deep_all_read: (scope) every term's postings fit the deep cap.
        waiting: (scope, direct regime) members without a vector of a lane.
        corrected: the rows come from the typo fallback (L2).
        vector_lanes: vector lanes in the statement.
        word_lanes: one of them embeds written words (the text lane).
        one_word: the query is one word (V5).
    """

    candidates: int
    all_read: bool
    keep_cap: int
    max_df: int = 0
    title_band_unreached: int = 0
    rows: int = 0
    regime: str | None = None
    deep_all_read: bool = False
    waiting: int = 0
    corrected: bool = False
    vector_lanes: int = 0
    word_lanes: bool = False
    one_word: bool = False

    def __post_init__(self) -> None:
        if self.regime is not None and self.regime not in REGIMES:
            raise ValueError(f"regime {self.regime!r} is not one of {', '.join(REGIMES)}")


@dataclass(frozen=True)
class Verdict:
    """``verdict`` (``complete``/``truncated``/``unknown``), the ``total`` to
    tell (assets) and whether it is exact (else a lower bound, "at least")."""

    verdict: str
    total: int
    exact: bool


def lexical_complete(c: Counts) -> bool:
    """R2: every term read to its end and the reached assets within the keep cap."""
    return bool(c.all_read) and c.candidates <= c.keep_cap


def scope_complete(c: Counts) -> bool:
    """R3: whether the lane plus the scope's band hold every matching member."""
    if c.regime == "direct":
        return True
    if c.regime == "deep":
        return bool(c.deep_all_read)
    return lexical_complete(c)


def rows_are_lexical(c: Counts) -> bool:
    """R4: whether the rows are exactly the lexical lane's (V5's one-word
    rule keeps only rows the word matched, unless no word matched and a
    lane of written words bridged it)."""
    return c.vector_lanes == 0 or (c.one_word and (c.candidates > 0 or not c.word_lanes))


def lexical_total(c: Counts) -> int:
    """T1's count: assets reached, plus title-band rows not reached, at
    least the largest document frequency."""
    return max(c.candidates + c.title_band_unreached, c.max_df)


def decide(c: Counts) -> Verdict:
    """The verdict and total of a search (rules R1–R5, T1–T3 above)."""
    if c.corrected:
        verdict = UNKNOWN                                            # R1
    elif rows_are_lexical(c):                                        # R4
        done = scope_complete(c) if c.regime else lexical_complete(c)
        verdict = COMPLETE if done else TRUNCATED
    elif c.regime == "direct" and c.waiting == 0 and not c.one_word:  # R5
        verdict = COMPLETE
    else:
        verdict = UNKNOWN
    if c.regime is not None:                                         # T3
        return Verdict(verdict, c.rows, verdict == COMPLETE)
    if verdict != UNKNOWN:                                           # T1
        return Verdict(verdict, lexical_total(c), bool(c.all_read))
    return Verdict(verdict, max(c.rows, lexical_total(c)), False)   # T2


def meaning_only(c: Counts) -> bool:
    """Every row comes from vector lanes: no word of the query matched, no
    typo fallback ran, and there are rows."""
    return (c.vector_lanes > 0 and not c.corrected and c.candidates == 0
            and c.title_band_unreached == 0 and c.rows > 0)
