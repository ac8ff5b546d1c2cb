"""The lexical lane: analyzer, BM25F over field groups, bounded postings, typo
fallback, phrase bonus (S3, S4, L1–L3, F3)."""

from .bm25 import B, GROUP_WEIGHTS, K1, bm25_idf, bm25_tf, bm25f_term_score, bm25f_tf
from .search import KEEP_CAP, RAW_CAP, LexicalHit, LexicalResult, analyze, lexical_search

__all__ = ["K1", "B", "GROUP_WEIGHTS", "bm25_idf", "bm25_tf", "bm25f_tf", "bm25f_term_score",
           "analyze", "lexical_search", "LexicalHit", "LexicalResult", "RAW_CAP", "KEEP_CAP"]
