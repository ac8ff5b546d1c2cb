"""Answerability (V8): whether the rows no query word matched
(meaning-only rows) count as results. A pure function of the evidence the
search statement reported and of cut-offs that live with the text model
(V4: ``answerability`` in its ``loupe-model.json``), no database.

Why: a vector lane always returns neighbours. With a text model over
metadata, a cut-off on each row's distance cannot tell "the library has no
such subject" from "a relevant picture described in other words"
(calibrated per-row cut-offs cost 0.046 recall@10 and still left 361 rows
per absent subject). The decision here is made once per query, from
evidence about the whole answer:

* ``best_distance``: the nearest neighbour's cosine distance in a lane of
  written words (the text lane), over the whole library the viewer reads;
* ``known_share``: the share of the query's content terms the library holds
  in some document the viewer may read (in the language where it holds most).

A query answers by meaning (:func:`answerable`) when its nearest neighbour
is within ``max_distance`` and the library knows at least ``min_known`` of
its words. Otherwise its meaning-only rows are not results: the search
counts the rows its words matched, says "nothing in the library matches
these words" when there are none, and shows the nearest pictures apart,
uncounted, as related by meaning. Without calibrated cut-offs (a model
without ``answerability``) the search cannot show that meaning-only rows
answer a query, and does not count them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: What a result says when no word of the query matched and the meaning
#: lanes could not show an answer.
NOTHING = "nothing in the library matches these words"


@dataclass(frozen=True)
class Evidence:
    """What one search saw: ``best_distance`` (cosine distance, 0–2, of the
    nearest neighbour in a lane of written words; None: no such lane or no
    neighbour), ``known_share`` (0–1), ``meaning_rows`` (rows of the result
    no query word matched)."""

    best_distance: float | None
    known_share: float
    meaning_rows: int

    def as_dict(self) -> dict[str, Any]:
        """Plain data for a result or the API."""
        return {"best_distance": self.best_distance, "known_share": self.known_share,
                "meaning_rows": self.meaning_rows}


@dataclass(frozen=True)
class Cutoffs:
    """Calibrated answerability cut-offs of one text model: the nearest
    neighbour's largest cosine distance and the least share of the query's
    words the library must know."""

    max_distance: float
    min_known: float

    def __post_init__(self) -> None:
        if not 0.0 <= self.max_distance <= 2.0:
            raise ValueError(f"answerability max_distance {self.max_distance!r} must be within "
                             f"0 and 2 (a cosine distance)")
        if not 0.0 <= self.min_known <= 1.0:
            raise ValueError(f"answerability min_known {self.min_known!r} must be within 0 and 1")


def cutoffs_from(config: dict[str, Any] | None) -> Cutoffs | None:
    """A model's answerability cut-offs from its ``loupe-model.json``
    (``{"answerability": {"max_distance": 0.45, "min_known": 0.5}}``), or
    None when it has none.

    Raises:
        ValueError: a value out of range or not a number.
    """
    raw = (config or {}).get("answerability")
    if not raw:
        return None
    try:
        return Cutoffs(float(raw["max_distance"]), float(raw.get("min_known", 0.0)))
    except (KeyError, TypeError) as exc:
        raise ValueError(f"answerability cut-offs {raw!r} need a number max_distance "
                         f"(and min_known)") from exc


def answerable(e: Evidence, cut: Cutoffs | None) -> bool:
    """Whether the meaning-only rows of a search count as results: there are
    none (nothing to decide), or the cut-offs exist and the nearest
    neighbour is within ``max_distance`` and the library knows at least
    ``min_known`` of the query's words."""
    if e.meaning_rows == 0:
        return True
    if cut is None or e.best_distance is None:
        return False
    return e.best_distance <= cut.max_distance and e.known_share >= cut.min_known
