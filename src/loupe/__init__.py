"""Loupe: search an image library by what people wrote and what the pixels show,
and say honestly whether the results are all that match.

The package is laid out by the data's journey: ``ingest`` (files → metadata,
pixels) → ``document`` (the search document per language) → ``lexical``
(BM25 lane) → ``library`` (the API the CLI mirrors)."""

from .library import AssetNotFound, Hit, Library, SearchResult, UnknownTenant

__all__ = ["Library", "SearchResult", "Hit", "AssetNotFound", "UnknownTenant"]
__version__ = "0.1.0"
