"""The embedding text of an asset (S5): a budgeted subset of its search
document, so that a long OCR dump or description cannot crowd out the title.

Budgets in characters (defaults, seed 002): title 300, description 1,500,
metadata 2,000 (keywords, vocabulary, collections, location, people,
creator), OCR 2,000; 8,000 in all. Parts are joined in that order, each cut
at a word boundary within its budget.

Machine words (what the pixels show: ``search_document.machine``)
are a part of their own, budget 300, at :data:`MACHINE_POSITION`; only the text
lane passes them (:func:`loupe.vector.embed.embed_texts`): the evaluation's
caption variant, which the leak check compares with the pixels, embeds
metadata only, so the check's meaning is unchanged.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass


#: Where the machine words go among the parts (title, description,
#: metadata, OCR): the number of parts before them.
MACHINE_POSITION = 1


@dataclass(frozen=True)
class Budget:
    """Character budgets of the embedding text."""

    title: int = 300
    description: int = 1500
    metadata: int = 2000
    ocr: int = 2000
    machine: int = 300
    total: int = 8000


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = cut.rfind(" ")
    return cut[:space] if space > limit // 2 else cut


def embedding_text(doc: dict[str, str], budget: Budget = Budget()) -> str:
    """Compose the embedding text from a search document's fields (a dict with
    title, description, keywords, vocabulary, collections, location, people,
    creator, ocr, machine; missing keys count as empty: a document without
    ``machine`` gives the text it gave before machine words existed)."""
    meta = ". ".join(x for x in (doc.get("keywords", ""), doc.get("vocabulary", ""),
                                 doc.get("collections", ""), doc.get("location", ""),
                                 doc.get("people", ""), doc.get("creator", "")) if x)
    machine = _cut(doc.get("machine", "").replace(" · ", ", "), budget.machine)
    parts = [_cut(doc.get("title", ""), budget.title),
             _cut(doc.get("description", ""), budget.description),
             _cut(meta, budget.metadata),
             _cut(doc.get("ocr", ""), budget.ocr)]
    parts.insert(MACHINE_POSITION, machine)
    return _cut(". ".join(p for p in parts if p), budget.total)


def text_hash(text: str) -> bytes:
    """SHA-256 of the embedding text: a vector is recomputed only when it changes."""
    return hashlib.sha256(text.encode("utf-8")).digest()
