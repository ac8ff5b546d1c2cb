"""Machine facts a query names, ranked first (X3).

A query made only of words that name what the pixels decide — "cut-out on
white", "black and white line drawing", "transparent background icon" —
asks for a set that Loupe's machine facts (``asset_machine``, migration
0019) state exactly. The ranked lanes alone read such a query as words:
"white" in a title ("white", "Whiteflag") then outranks a picture whose
background is white. So when :func:`loupe.conversation.facts.query_facts` finds that every word of
the query names a machine fact, the results whose facts match come first,
each part in its own order (phrase bonus ▸ these facts ▸ RRF or score ▸
asset id: :func:`facts_first` in each page statement).

Only an ordering: the result set, its counts and its verdict are the
lanes' own. A query that also names a subject ("fish on white background")
is left to the lanes, where the machine field group already weighs the
fact words: putting every white-background picture before a fish on a
beach would answer a different question. Colours are never used: a colour
word names the subject's colour ("red brick castle"), which the dominant
colours of the pixels only approximate.

The phrases are read by the conversation's sentence compiler
(:func:`loupe.conversation.parse.parse`: English and French cue words, the
lexicon of :mod:`loupe.conversation.lexicon`), so ``loupe search`` and
``loupe ask`` understand the same words.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: The facts a query may name here: fields of ``asset_machine`` decided by
#: the pixels alone (loupe.pixels.kind, loupe.pixels.shape). Colours are
#: left out (see the module's docstring).
FACT_FIELDS = ("kind", "background", "orientation", "cutout", "monochrome")


@dataclass(frozen=True)
class QueryFacts:
    """The machine facts a query names: accepted values per field (any of
    them; fields combine with AND), and two flags. Empty: none named."""

    kind: tuple[str, ...] = ()
    background: tuple[str, ...] = ()
    orientation: tuple[str, ...] = ()
    cutout: bool = False
    monochrome: bool = False

    def __bool__(self) -> bool:
        return bool(self.kind or self.background or self.orientation or self.cutout
                    or self.monochrome)

    def params(self) -> dict[str, Any]:
        """The parameters of :func:`facts_first` (``qf_*``)."""
        return {"qf_on": bool(self), "qf_kind": list(self.kind),
                "qf_background": list(self.background),
                "qf_orientation": list(self.orientation),
                "qf_cutout": self.cutout, "qf_monochrome": self.monochrome}

    def words(self) -> str:
        """The facts as a notice names them: ``cut-out, background white``."""
        parts = []
        if self.cutout:
            parts.append("cut-out")
        if self.monochrome:
            parts.append("black and white")
        for name in ("kind", "background", "orientation"):
            values = getattr(self, name)
            if values:
                parts.append(f"{name} {' or '.join(values)}")
        return ", ".join(parts)


#: No facts: the page statements order as before.
NO_FACTS = QueryFacts()


def facts_first(asset: str) -> str:
    """SQL: true when the query names facts (``%(qf_on)s``) and asset
    ``asset`` (a column reference of a fixed name) has them all — one
    primary-key probe of ``asset_machine`` per row ordered. A page orders
    by it descending after the phrase bonus. Parameters: :meth:`QueryFacts.params`."""
    assert asset.replace(".", "").replace("_", "").isalnum()
    return f"""(%(qf_on)s AND EXISTS (
        SELECT 1 FROM asset_machine qf
        WHERE qf.asset_id = {asset}
          AND (cardinality(%(qf_kind)s::text[]) = 0 OR qf.kind = ANY(%(qf_kind)s::text[]))
          AND (cardinality(%(qf_background)s::text[]) = 0
               OR qf.background = ANY(%(qf_background)s::text[]))
          AND (cardinality(%(qf_orientation)s::text[]) = 0
               OR qf.orientation = ANY(%(qf_orientation)s::text[]))
          AND (NOT %(qf_cutout)s OR qf.cutout IS TRUE)
          AND (NOT %(qf_monochrome)s OR qf.monochrome IS TRUE)))"""
