"""Loupe: search an image library by what people wrote and what the pixels show,
and say honestly whether the results are all that match.

The package is laid out by the data's journey: ``ingest`` (files → metadata,
pixels) → ``document`` (the search document per language) → ``lexical`` and
``vector`` (the lanes) → ``fusion`` → ``scopes`` (bands) with ``access``
(who sees what) → ``bulk`` → ``library`` (the API the CLI mirrors)."""

from .access.users import AccessError, UnknownUser
from .bulk.actions import BulkError, ConfirmationRequired
from .library import AssetNotFound, Hit, Library, SearchResult, UnknownTenant

__all__ = ["Library", "SearchResult", "Hit", "AssetNotFound", "UnknownTenant", "UnknownUser",
           "AccessError", "BulkError", "ConfirmationRequired"]
__version__ = "0.1.0"
