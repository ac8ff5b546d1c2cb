"""The BM25 formula, as a pure function (the reference for the SQL in migration 0001).

Loupe scores with Lucene's BM25 (Lucene 8+ ``BM25Similarity``, also bm25s'
``method="lucene"``; see Kamphuis, de Vries, Boytsov and Lin, "Which BM25 Do
You Mean? A Large-Scale Reproducibility Study of Scoring Variants", ECIR 2020)::

    score(q, d) = Σ_{t ∈ q ∩ d} idf(t) · tf / (tf + k1 · (1 − b + b · dl / avgdl))
    idf(t)      = ln(1 + (N − df + 0.5) / (df + 0.5))

The idf never goes negative, unlike Robertson's original, so a term present
in most documents still adds (a little) evidence instead of subtracting.
The SQL functions ``loupe_bm25_idf`` and ``loupe_bm25_tf`` compute the same
two factors inside PostgreSQL; tests hold them equal to these and to bm25s.
"""

from __future__ import annotations

import math

#: Term-frequency saturation (Robertson & Zaragoza 2009 recommend 1.2–2.0; Lucene's default).
K1 = 1.2
#: Length normalisation strength (Lucene's default).
B = 0.75


def bm25_idf(n_docs: int, df: int) -> float:
    """Inverse document frequency of a term held by ``df`` of ``n_docs`` documents.

    Raises:
        ValueError: ``df`` is not in ``[0, n_docs]``.
    """
    if not 0 <= df <= n_docs:
        raise ValueError(f"df={df} outside [0, {n_docs}]")
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


def bm25_tf(tf: int, doc_len: int, avgdl: float, k1: float = K1, b: float = B) -> float:
    """Saturated, length-normalised term frequency; in ``[0, 1)``.

    ``doc_len`` and ``avgdl`` are in tokens (after stop-word removal).

    Raises:
        ValueError: ``avgdl`` is not positive.
    """
    if avgdl <= 0:
        raise ValueError("avgdl must be positive")
    return tf / (tf + k1 * (1.0 - b + b * doc_len / avgdl))
