"""The reference peer system of the instrument (F1):
what a user would assemble with a general-purpose engine, run in the same
process on the same library, so that ``loupe eval metrics`` / ``compare``
treat it like any other system (``loupe eval run SET peer``).

* **BM25**: Tantivy (PyPI ``tantivy``), in memory, one text field holding
  the plain English fields a user would index — title, description,
  keywords, creator, folder (collection) words and file-name words, from the
  asset's search document — with Tantivy's ``en_stem`` analyzer (simple
  tokenizer, lower case, English Snowball stemmer) and its BM25 (k1 1.2,
  b 0.75). The query's words (``[0-9A-Za-z]+``, lower-cased, each once) are
  OR-ed. Only documents holding a query term are ranked.
* **Dense**: the same document text through a sentence encoder (the
  library's text-lane model; else the text encoder of its image-lane model),
  compared with the query's vector by cosine similarity over *every*
  document — brute force, no cut-off (rclip's method).
* **Fusion**: plain reciprocal rank fusion, ``Σ 1 / (60 + rank)`` over the
  two rankings (Cormack, Clarke and Büttcher, SIGIR 2009), no weights.

Every ranking breaks ties by asset id (ascending), so a run is
deterministic. Documents are only those the viewer may read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

#: RRF's rank constant (Cormack et al. 2009), as a user's engine would set it.
PEER_RRF_K = 60
WORD = re.compile(r"[0-9A-Za-z]+")


def document_text(title: str, description: str, keywords: str, creator: str,
                  collections: str, filename: str) -> str:
    """The peer's document: the plain fields joined by new lines."""
    return "\n".join(x for x in (title, description, keywords, creator, collections, filename) if x)


def query_words(text: str) -> list[str]:
    """The query's words as the peer's BM25 ORs them: ``[0-9A-Za-z]+``,
    lower case (so ``AND``/``OR`` are words, not operators), each once, in order."""
    return list(dict.fromkeys(w.lower() for w in WORD.findall(text)))


def rrf(rankings: list[list[int]], k: int = PEER_RRF_K) -> list[tuple[int, float]]:
    """Plain RRF of ranked id lists: ``[(id, Σ 1/(k + rank))]`` best first,
    ties by id. Rank is 1-based."""
    score: dict[int, float] = {}
    for ranking in rankings:
        for rank, doc in enumerate(ranking, 1):
            score[doc] = score.get(doc, 0.0) + 1.0 / (k + rank)
    return sorted(score.items(), key=lambda x: (-x[1], x[0]))


@dataclass
class Peer:
    """The peer over one library's documents. ``ids``: asset ids; ``texts``:
    their documents; ``vectors``: (n, d) L2-normalised document vectors."""

    ids: list[int]
    texts: list[str]
    vectors: np.ndarray

    def __post_init__(self) -> None:
        import tantivy

        sb = tantivy.SchemaBuilder()
        sb.add_integer_field("id", stored=True, indexed=True, fast=True)
        sb.add_text_field("body", stored=False, tokenizer_name="en_stem")
        self.index = tantivy.Index(sb.build())
        writer = self.index.writer(heap_size=50_000_000, num_threads=1)
        for doc_id, body in zip(self.ids, self.texts):
            writer.add_document(tantivy.Document(id=doc_id, body=body))
        writer.commit()
        writer.wait_merging_threads()
        self.index.reload()
        self.searcher = self.index.searcher()
        norms = np.linalg.norm(self.vectors, axis=1, keepdims=True) if len(self.ids) else 1.0
        self.vectors = self.vectors / np.where(norms == 0, 1.0, norms)

    def bm25(self, text: str) -> list[int]:
        """Asset ids holding a query term, by Tantivy BM25 score then id."""
        words = query_words(text)
        if not words or not self.ids:
            return []
        query = self.index.parse_query(" ".join(words), ["body"])
        hits = self.searcher.search(query, len(self.ids)).hits
        scored = [(self.searcher.doc(addr)["id"][0], score) for score, addr in hits]
        return [d for d, _ in sorted(scored, key=lambda x: (-x[1], x[0]))]

    def dense(self, qvec: np.ndarray) -> list[int]:
        """Every asset id, by cosine similarity to ``qvec`` then id (no cut-off)."""
        if not self.ids:
            return []
        q = np.asarray(qvec, np.float64)
        q = q / (np.linalg.norm(q) or 1.0)
        sims = self.vectors.astype(np.float64) @ q
        order = sorted(range(len(self.ids)), key=lambda i: (-sims[i], self.ids[i]))
        return [self.ids[i] for i in order]

    def search(self, text: str, qvec: np.ndarray, k: int = 10) -> list[tuple[int, float]]:
        """The top ``k`` of the RRF of :meth:`bm25` and :meth:`dense`:
        ``[(asset_id, rrf score)]``."""
        return rrf([self.bm25(text), self.dense(qvec)])[:k]
