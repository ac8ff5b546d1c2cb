"""The hybrid with the phrase bonus as a tie-break instead of the first key (E9; measurement only).

Usage (``LOUPE_HOME`` = the home to measure)::

    python eval/e9_bonus.py SET NAME      # stores run NAME: SET through the hybrid, ordered RRF ▸ bonus ▸ id

Loupe's fused page is ordered by phrase bonus ▸ RRF ▸ asset id
(``fusion/search.py BANDED_PAGE``, C2: a title that holds the whole
query outranks any fused score). The BM25 + dense RRF peer has no bonus. At
a larger haystack more distractor titles hold the query's words, and each
such row goes above every better-fused row. This script asks how much of
the hybrid's loss to the peer that explains: it runs the same hybrid with
the page ordered by RRF first (bonus, then id, as tie-breaks), through the
instrument's own ``Evaluation.run``, by replacing the page's ORDER BY for
this process only. Nothing in the library changes.
"""

from __future__ import annotations

import sys

from loupe import Library
from loupe.eval import Evaluation
from loupe.fusion import search as fusion

BONUS_FIRST = "r.bonus DESC, r.rrf DESC"
RRF_FIRST = "r.rrf DESC, r.bonus DESC"


def main(query_set: str, name: str) -> None:
    assert fusion.BANDED_PAGE.count(BONUS_FIRST) == 2, "the page's order changed: review"
    fusion.BANDED_PAGE = fusion.BANDED_PAGE.replace(BONUS_FIRST, RRF_FIRST)
    with Library.open() as lib:
        out = Evaluation(lib).run(query_set, "hybrid", name=name)
    print(f"run {out['run']}: {out['queries']} queries, {out['hits']} results "
          "(hybrid, page ordered RRF > bonus > id)")


if __name__ == "__main__":
    main(*sys.argv[1:])
