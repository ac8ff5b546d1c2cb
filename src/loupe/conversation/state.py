"""Applying a turn to the conversation state (filter tree + free text).

Rules (docs/conversation.md "Intents"); ``conjuncts`` are the top-level members
of the state's ``all``:
- replace: the state becomes the turn;
- refine: conjunction; a positive predicate of a single-valued field
  (``SINGLE``) replaces the state's positive predicate of that field, in its
  place (the new value stands where the old one was); the turn's
  text is appended to the state's text;
- add: a new predicate joins, by ``any``, the one top-level conjunct of the same
  field (a predicate or an any of that field); otherwise the state becomes
  any[state, turn]; with no previous filter the turn's filter is taken;
- remove: the state gains {"not": removed set}.
A state in which a predicate and its negation are both required is refused:
the turn carries a message and the state is left as it was.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .parse import Turn, conjuncts, contradiction, join_all

SINGLE = {"captured", "added", "kind", "orientation", "background", "media_type", "format", "cutout",
          "monochrome"}


@dataclass(frozen=True)
class State:
    """The conversation's current search: ``filter`` (tree or None) and ``text``."""
    filter: dict | None = None
    text: str = ""

    def empty(self) -> bool:
        return self.filter is None and not self.text

    def as_dict(self) -> dict[str, Any]:
        return {"filter": self.filter, "text": self.text}


def _field(node: dict) -> str | None:
    if "any" in node:
        fields = {_field(n) for n in node["any"]}
        return fields.pop() if len(fields) == 1 else None
    if "all" in node or "not" in node:
        return None
    return next(iter(node))


def _join_text(a: str, b: str) -> str:
    return " ".join(x for x in (a, b) if x)


def apply(state: State, turn: Turn) -> tuple[State, str | None]:
    """The state after ``turn`` and a message (None, or why it was refused)."""
    if turn.message:
        return state, turn.message
    if turn.intent == "replace":
        return State(turn.filter, turn.text), None
    old = conjuncts(state.filter)
    if turn.intent == "refine":
        new = conjuncts(turn.filter)
        fields = {_field(n) for n in new if "not" not in n} & SINGLE
        # a replaced single-valued predicate keeps its place ("actually the 2020 ones")
        first = {f: next(n for n in new if "not" not in n and _field(n) == f) for f in fields}
        kept, placed = [], set()
        for n in old:
            f = None if "not" in n else _field(n)
            if f in fields:
                if f not in placed:
                    kept.append(first[f])
                    placed.add(f)
            else:
                kept.append(n)
        nodes = kept + [n for n in new if n not in kept]
        text = _join_text(state.text, turn.text)
    elif turn.intent == "add":
        text = _join_text(state.text, turn.text)
        if state.filter is None or turn.filter is None:
            nodes = conjuncts(state.filter if turn.filter is None else turn.filter)
        else:
            f = _field(turn.filter)
            same = [k for k, n in enumerate(old) if f is not None and _field(n) == f]
            if len(same) == 1:
                k = same[0]
                members = old[k]["any"] if "any" in old[k] else [old[k]]
                extra = turn.filter["any"] if "any" in turn.filter else [turn.filter]
                nodes = old[:k] + [{"any": members + [x for x in extra if x not in members]}] + old[k + 1:]
            else:
                nodes = [{"any": [state.filter, turn.filter]}]
    elif turn.intent == "remove":
        text = state.text
        nodes = old + ([{"not": turn.filter}] if turn.filter is not None else [])
    else:
        raise ValueError(f"unknown intent {turn.intent!r}")
    msg = contradiction(nodes)
    if msg:
        return state, msg
    return State(join_all(nodes), text), None
