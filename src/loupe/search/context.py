"""What a search stage reads of the library view it runs for: its
connection, tenant, home folder, viewer, settings and the process's query
encoder caches. :class:`loupe.Library` is one; a stage names this protocol
rather than importing the facade, so the facade sits above every stage.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

import psycopg

from ..access.viewer import Viewer


class SearchContext(Protocol):
    """One library view as the search stages see it."""

    conn: psycopg.Connection
    #: the tenant's name and id
    tenant: str
    tenant_id: int
    #: the library's home folder (models live under ``home/models``)
    home: Path
    #: who searches: what they may read (P1)
    viewer: Viewer
    #: the process's query encoder health and recent query vectors
    #: (:data:`loupe.models.runtime.ENCODER_HEALTH`, :data:`~loupe.models.runtime.QUERY_VECTORS`)
    encoder_health: Any
    query_vectors: Any

    def languages(self) -> list[str]:
        """The library's document languages, the first the default."""
        ...

    def lexical_settings(self) -> dict[str, Any]:
        """The lexical lane's settings (caps)."""
        ...

    def fusion_settings(self) -> dict[str, Any]:
        """The fusion settings (lane weights, RRF k)."""
        ...
