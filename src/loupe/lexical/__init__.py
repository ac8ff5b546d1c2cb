"""The lexical lane: BM25 over the search documents (SPEC L1)."""

from .bm25 import B, K1, bm25_idf, bm25_tf
from .search import LexicalHit, LexicalResult, analyze_query, bm25_search

__all__ = ["K1", "B", "bm25_idf", "bm25_tf", "analyze_query", "bm25_search",
           "LexicalHit", "LexicalResult"]
