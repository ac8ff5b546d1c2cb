"""The ranking formulas as pure functions: the reference for the SQL in migrations
0001 (``loupe_bm25_idf``, ``loupe_bm25_tf``) and 0002 (``loupe_bm25f_tf``).

BM25, as Lucene computes it (Lucene 8+ ``BM25Similarity``; bm25s'
``method="lucene"``; Kamphuis, de Vries, Boytsov and Lin, "Which BM25 Do You
Mean? A Large-Scale Reproducibility Study of Scoring Variants", ECIR 2020)::

    score(q, d) = Σ_{t ∈ q ∩ d} idf(t) · tf / (tf + k1 · (1 − b + b · dl / avgdl))
    idf(t)      = ln(1 + (N − df + 0.5) / (df + 0.5))

BM25F, the field-weighted extension Loupe ranks with (Robertson, Zaragoza and
Taylor, "Simple BM25 Extension to Multiple Weighted Fields", CIKM 2004;
Zaragoza et al., TREC 2004): each field group's frequency is normalised by
that group's own length, weighted, and summed into one pseudo-frequency,
which is then saturated once::

    tf~(t, d) = Σ_g w_g · tf_g / (1 − b_g + b_g · len_g / avglen_g)
    score     = Σ_t idf(t) · tf~ / (k1 + tf~)

A weight scales evidence without lengthening the document, unlike weighting
by repeating text (S3). With one group of weight 1 it is exactly BM25.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

#: Term-frequency saturation (Lucene's default; Robertson & Zaragoza 2009 suggest 1.2–2.0).
K1 = 1.2
#: Length normalisation strength (Lucene's default).
B = 0.75
#: Default weights of the four field groups: title, keywords, description, other (incl. OCR).
GROUP_WEIGHTS = (3.0, 2.0, 1.0, 0.5)
#: Default length normalisation of each field group.
GROUP_B = (B, B, B, B)
GROUPS = ("title", "keywords", "description", "other")


def bm25_idf(n_docs: int, df: int) -> float:
    """Inverse document frequency of a term held by ``df`` of ``n_docs`` documents.

    Raises:
        ValueError: ``df`` is not in ``[0, n_docs]``.
    """
    if not 0 <= df <= n_docs:
        raise ValueError(f"df={df} outside [0, {n_docs}]")
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


def bm25_tf(tf: float, doc_len: float, avgdl: float, k1: float = K1, b: float = B) -> float:
    """Saturated, length-normalised term frequency of plain BM25; in ``[0, 1)``.

    Raises:
        ValueError: ``avgdl`` is not positive.
    """
    if avgdl <= 0:
        raise ValueError("avgdl must be positive")
    return tf / (tf + k1 * (1.0 - b + b * doc_len / avgdl))


def bm25f_tf(tf: Sequence[float], group_len: Sequence[float], avg_len: Sequence[float],
             weights: Sequence[float] = GROUP_WEIGHTS, b: Sequence[float] = GROUP_B) -> float:
    """BM25F pseudo-frequency ``tf~`` of one term in one document.

    All sequences are per field group (same length). A group whose corpus
    average length is 0 holds no text anywhere and contributes nothing.
    """
    total = 0.0
    for g in range(len(tf)):
        if tf[g] > 0 and avg_len[g] > 0:
            total += weights[g] * tf[g] / (1.0 - b[g] + b[g] * group_len[g] / avg_len[g])
    return total


def bm25f_term_score(idf: float, pseudo_tf: float, k1: float = K1) -> float:
    """One term's BM25F contribution: ``idf · tf~ / (k1 + tf~)``."""
    return idf * pseudo_tf / (k1 + pseudo_tf)
