"""Where the known item ranks in the full rankings that ``eval/e9_explain.py``
recorded (``ranks-<TAG>.json``), at two sizes (E9).

Usage::

    python eval/e9_ranks.py SMALL_RANKS.json LARGE_RANKS.json

Prints, per system (a full ranking: ``peerbm25`` holds only documents with a
query word, so its rank is null when the known item holds none): how many of
the queries have the known item in the top 10 at each size, the median rank at
each size (null ranks left out, their count given), and how many ranks the
known item fell from the small to the large library, as the median and the
share of queries that fell by at least one rank.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np


def main(argv: list[str]) -> None:
    if len(argv) != 2:
        sys.exit(__doc__)
    small, large = (json.loads(Path(p).read_text()) for p in argv)
    systems = [k for k in next(iter(small.values())) if k != "maxd"]
    print("| ranking | known item in top 10, small / large | median rank, small / large "
          "| not ranked (no query word), small / large | median fall in rank | queries whose item fell |")
    print("|---|---|---|---|---|---|")
    for s in systems:
        rs = [small[q][s] for q in small]
        rl = [large[q][s] for q in small]
        top = [sum(r is not None and r <= 10 for r in x) for x in (rs, rl)]
        med = [float(np.median([r for r in x if r is not None])) for x in (rs, rl)]
        none = [sum(r is None for r in x) for x in (rs, rl)]
        falls = [b - a for a, b in zip(rs, rl) if a is not None and b is not None]
        print(f"| {s} | {top[0]} / {top[1]} | {med[0]:.0f} / {med[1]:.0f} | {none[0]} / {none[1]} "
              f"| {float(np.median(falls)):.0f} | {sum(f > 0 for f in falls)} of {len(falls)} |")


if __name__ == "__main__":
    main(sys.argv[1:])
