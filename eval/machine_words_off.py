"""Make a copy of a library home read as if machine words did not exist (the *before* of the machine-words measurement).

Usage (``LOUPE_HOME`` = a COPY of the home; the original is never touched)::

    loupe settings --weights 3,2,1,0.5,0          # the lexical lane: machine group's weight 0
    python eval/machine_words_off.py              # the text lane: vectors of the text without them

The lexical half is a setting (BM25F's fifth field group, weight 0: its
terms still match, at no score, so ranks are those of the other four
groups; ``loupe settings`` rebuilds the statistics). The text half has no
setting: the text lane's embedding text holds the machine words, and the evaluation's caption variant already embeds
without them (``embed_texts(..., machine_words=False)``). This script
writes every text-lane vector again from that text, through the library's
own ``embed`` with that one argument changed, so nothing else (budget,
prefix, model) differs from what the library would write. A later
``loupe embed`` puts the machine words back (the stored text hash differs).
"""

from __future__ import annotations

import functools

from loupe import Library
from loupe.vector import embed as embed_mod
from loupe.vector import lanes


def main() -> None:
    lanes.embed_texts = functools.partial(embed_mod.embed_texts, machine_words=False)
    with Library.open() as lib:
        for s in lib.embed(lane="text"):
            print(f"{s.lane} lane ({s.model}): {s.written} vectors written without machine words, "
                  f"{s.unchanged} unchanged")


if __name__ == "__main__":
    main()
