"""The :class:`loupe.Library` methods of its connections (closing them,
session settings) and those that route reads to hot standbys
(docs/scaling.md, "Hot standbys"): a part of the facade kept in its own
module so that ``library.py`` stays short. Searches, facets, similar-image
and people reads run through :meth:`ReadMethods._read`; every write stays on
the primary (:mod:`loupe.db.replica` says why and what lag means).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

from .access.viewer import Viewer
from .db import replica, session
from .search import why as search_why


class ReadMethods:
    """Mixed into :class:`loupe.Library`, whose attributes these methods use."""

    conn: psycopg.Connection
    home: Path
    tenant_id: int
    tenant: str
    viewer: Viewer
    reads: replica.ReadRoute | None

    #: Libraries given standbys by this process: each starts at the next one,
    #: so that the Libraries of a server's pool spread over them.
    _routes = 0

    @classmethod
    def _read_route(cls, urls_text: str | None) -> replica.ReadRoute | None:
        """The standbys of a Library being opened: ``urls_text``, else
        ``LOUPE_READ_DATABASE_URL`` (None without URLs).

        Raises:
            ValueError: as :func:`loupe.db.replica.parse_urls`.
        """
        urls = replica.parse_urls(urls_text or os.environ.get(replica.READ_DATABASE_URL_ENV))
        if not urls:
            return None
        ReadMethods._routes += 1
        return replica.ReadRoute(urls, session.prepare_session, start=ReadMethods._routes - 1)

    def close(self) -> None:
        """Close the connections (the embedded server stops when its last user
        exits). Stage: :meth:`loupe.db.replica.ReadRoute.close` for the standby's."""
        if self.reads is not None:
            self.reads.close()
        self.conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def set_session(self, statement: str, params: dict[str, Any] | None = None) -> None:
        """Run a session setting (``SET ...``) on the primary's connection and
        on every standby connection this Library opens (the web server's
        ``statement_timeout``). Stage: :meth:`loupe.db.replica.ReadRoute.add_session_setting`."""
        self.conn.execute(statement, params or {})
        if self.reads is not None:
            self.reads.add_session_setting(statement, params)

    def _read(self, fn: Callable[[Any], Any]) -> tuple[Any, str | None]:
        """Run read ``fn(lib)`` in a search transaction
        (:func:`loupe.db.session.read_transaction`: its HNSW settings as
        ``SET LOCAL``) on a standby when :attr:`reads` has one, else on the
        primary. A standby lost mid-read (or whose replay cancelled it) is
        dropped and the read runs again, on another standby or the primary.
        Returns ``(fn's value, notice)``: the notice says the read ran on the
        primary because no standby answered (None otherwise)."""
        route = self.reads
        for _ in range(2):
            conn = route.connection() if route is not None else None
            if conn is None:
                break
            try:
                with session.read_transaction(conn):
                    return fn(type(self)(conn, self.home, self.tenant_id, self.tenant,
                                         self.viewer)), None
            except psycopg.Error as exc:
                if not replica.standby_failed(conn, exc):
                    raise
                route.lost(exc)
        with session.read_transaction(self.conn):
            value = fn(self)
        if route is None:
            return value, None
        return value, route.notice or ("the standby failed during this read, so it ran "
                                       "on the primary")

    def _primary(self) -> Any:
        """This Library without its standbys, for the reads that decide a
        write (a bulk action's search, in the action's transaction): they
        must see what the primary holds, not a standby's replay of it."""
        return type(self)(self.conn, self.home, self.tenant_id, self.tenant, self.viewer)

    def read_status(self) -> list[dict[str, Any]]:
        """Each configured standby and its replay lag (``loupe status``).
        Stage: :meth:`loupe.db.replica.ReadRoute.status`; [] without standbys."""
        return self.reads.status() if self.reads is not None else []

    def why(self, asset_id: int, query: str, *, lang: str | None = None,
            scope: str | list[str] | None = None, filters: Any = None) -> dict[str, Any]:
        """Why an asset is or is not in the results of ``query`` (C7), as
        the viewer sees it; an asset it may not read is answered as a missing
        one (AssetNotFound). Stage: :func:`loupe.search.why.why`."""
        return search_why.why(self, asset_id, query, lang=lang, scope=scope, filters=filters)
