"""The machine facts a search query names, read with the conversation's
grammar (:func:`loupe.conversation.parse.parse`): "cut-out on white" names
a cut-out on a white background. The facts and their SQL live in
:mod:`loupe.search.facts`, below every statement; the reading lives here,
beside the grammar, and the search entry point calls it.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from ..search.facts import FACT_FIELDS, NO_FACTS, QueryFacts
from .parse import SentenceError, conjuncts, parse


def query_facts(query: str) -> QueryFacts:
    """The machine facts ``query`` names when every one of its words names
    one (the sentence compiler leaves no free text and nothing unparsed,
    and each filter it gives is a plain fact of :data:`FACT_FIELDS`), else
    :data:`NO_FACTS`. Never raises: a sentence the compiler refuses (too
    long, empty) names no facts."""
    try:
        turn = parse(query, clock=datetime.now(timezone.utc))
    except SentenceError:
        return NO_FACTS
    if turn.text.strip() or turn.unparsed or turn.message or not turn.filter:
        return NO_FACTS
    values: dict[str, list[Any]] = {}
    for node in conjuncts(turn.filter):
        if not isinstance(node, dict) or len(node) != 1:
            return NO_FACTS
        (name, value), = node.items()
        flag = name in ("cutout", "monochrome")
        if name not in FACT_FIELDS or (value is not True if flag else not isinstance(value, str)):
            return NO_FACTS
        values.setdefault(name, []).append(value)
    return QueryFacts(kind=tuple(values.get("kind", ())),
                      background=tuple(values.get("background", ())),
                      orientation=tuple(values.get("orientation", ())),
                      cutout="cutout" in values, monochrome="monochrome" in values)
