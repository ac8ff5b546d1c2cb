"""Reads on hot standbys: where searches, facets, similar-image and people
reads go when ``LOUPE_READ_DATABASE_URL`` names one or several PostgreSQL
streaming standbys of the library's primary (docs/scaling.md, "Hot standbys").

Every write, and every read that decides a write (bulk actions, ingest), stays
on the primary. A standby shows what it has replayed: an asset the primary
just committed is searchable there once the standby has replayed that commit
(``loupe status`` shows the seconds since each standby's last replayed
transaction). The primary itself keeps "searchable in the inserting
transaction" (P2).

A standby is never migrated (it refuses every write): its schema is verified
(:func:`loupe.db.migrate.verify_current`); one behind the code is not used,
and the notice says why. When no standby answers, reads go to the primary
with a notice, and the standbys are tried again :data:`RETRY_S` seconds later.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable

import psycopg
from psycopg.conninfo import conninfo_to_dict

from .migrate import MigrationError, verify_current

READ_DATABASE_URL_ENV = "LOUPE_READ_DATABASE_URL"
#: Seconds before standbys that did not answer are tried again.
RETRY_S = 30.0
#: Seconds a connection attempt to one standby may take (unless its URL sets
#: ``connect_timeout``): a standby on an unreachable host must not hold a search.
CONNECT_TIMEOUT_S = 3
#: Most standby URLs accepted (each pooled Library may hold one connection).
MAX_URLS = 16

log = logging.getLogger(__name__)

# URLs are separated by whitespace, or by a comma that starts another URL
# (a comma inside a libpq multi-host URL stays part of it).
_SPLIT = re.compile(r"\s+|,\s*(?=postgres(?:ql)?://)")


def parse_urls(value: str | None) -> list[str]:
    """The standby URLs of ``value`` (``LOUPE_READ_DATABASE_URL``): libpq
    URLs (``postgresql://...``) separated by whitespace or commas.

    Raises:
        ValueError: an entry is not a ``postgresql://`` / ``postgres://`` URL,
            or more than :data:`MAX_URLS` are given.
    """
    urls = [u for u in _SPLIT.split(value or "") if u]
    for u in urls:
        if not re.match(r"^postgres(?:ql)?://", u):
            raise ValueError(f"{READ_DATABASE_URL_ENV}: {shown(u)!r} is not a postgresql:// "
                             f"URL (give standby URLs separated by spaces or commas)")
    if len(urls) > MAX_URLS:
        raise ValueError(f"{READ_DATABASE_URL_ENV} names {len(urls)} standbys; at most "
                         f"{MAX_URLS} are accepted")
    return urls


def shown(url: str) -> str:
    """``url`` as a notice may show it: host, port and database, never the
    user's password (a URL that does not parse shows as ``standby``)."""
    try:
        d = conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "standby"
    host = d.get("host") or "local socket"
    if host.startswith("/"):
        host = "socket " + host
    return f"{host}:{d.get('port') or 5432}/{d.get('dbname') or ''}"


def recovery_conflict(exc: BaseException) -> bool:
    """Whether ``exc`` is a standby cancelling a query because replay needed
    the rows it read (SQLSTATE 40001 on a standby): worth asking the primary."""
    return isinstance(exc, psycopg.errors.SerializationFailure)


class ReadRoute:
    """The standby connection of one :class:`loupe.Library` (and of its
    views as other users).

    Args:
        urls: the standbys, tried in turn from ``start`` (so that the
            Libraries of a pool spread over them).
        prepare: called on each new standby connection (pgvector's types,
            session settings); its errors count as the standby not answering.
        start: index of the first standby to try.
        clock: seconds, monotonic (a test's clock).
    """

    def __init__(self, urls: list[str], prepare: Callable[[psycopg.Connection], None], *,
                 start: int = 0, clock: Callable[[], float] = time.monotonic):
        self.urls = list(urls)
        self._prepare = prepare
        self._next = start % len(self.urls) if self.urls else 0
        self._clock = clock
        self._down_until = 0.0
        self.conn: psycopg.Connection | None = None
        self.url: str | None = None
        #: why reads go to the primary now (None while a standby serves them)
        self.notice: str | None = None
        self._session: list[tuple[str, dict]] = []

    def add_session_setting(self, statement: str, params: dict | None = None) -> None:
        """A statement run on every standby connection (now and on each
        reconnection): a setting the primary's connection also has, such
        as the web server's ``statement_timeout``."""
        self._session.append((statement, dict(params or {})))
        if self.conn is not None:
            self.conn.execute(statement, params or {})

    def _open(self, url: str) -> psycopg.Connection:
        kwargs = {} if "connect_timeout" in url else {"connect_timeout": CONNECT_TIMEOUT_S}
        conn = psycopg.connect(url, autocommit=True, **kwargs)
        try:
            verify_current(conn)
            self._prepare(conn)
            for statement, params in self._session:
                conn.execute(statement, params)
        except BaseException:
            conn.close()
            raise
        return conn

    def connection(self) -> psycopg.Connection | None:
        """The standby connection reads go to, opened when needed; None when
        no standby answered (:attr:`notice` says why; tried again after
        :data:`RETRY_S` seconds)."""
        if self.conn is not None and not self.conn.closed and not self.conn.broken:
            return self.conn
        self.conn = None
        if not self.urls or self._clock() < self._down_until:
            return None
        reasons = []
        for i in range(len(self.urls)):
            url = self.urls[(self._next + i) % len(self.urls)]
            try:
                self.conn, self.url = self._open(url), url
            except (psycopg.Error, MigrationError, OSError) as exc:
                reasons.append(f"{shown(url)}: {str(exc).strip().splitlines()[0]}")
                continue
            self._next = (self._next + i) % len(self.urls)
            self.notice = None
            return self.conn
        self._down_until = self._clock() + RETRY_S
        self.notice = ("no standby answered, so this read ran on the primary ("
                       + "; ".join(reasons) + ")")
        log.warning("%s", self.notice)
        return None

    def lost(self, exc: BaseException) -> None:
        """The current standby failed mid-read (``exc``): close it; the next
        :meth:`connection` tries the others (this one last)."""
        if self.conn is not None:
            try:
                self.conn.close()
            except psycopg.Error:  # pragma: no cover - already broken
                pass
        self.conn = None
        self._next = (self._next + 1) % len(self.urls)
        log.warning("standby %s failed: %s", shown(self.url or ""), exc)

    def status(self) -> list[dict]:
        """Each standby: ``{"standby", "serving", "replay_lag_s", "error"}``
        (``replay_lag_s``: seconds since the last transaction replayed, None
        when unknown). Opens a short connection to each."""
        out = []
        for url in self.urls:
            row = {"standby": shown(url), "serving": url == self.url and self.conn is not None,
                   "replay_lag_s": None, "error": None}
            try:
                with psycopg.connect(url, autocommit=True,
                                     connect_timeout=CONNECT_TIMEOUT_S) as c:
                    verify_current(c)
                    lag = c.execute("SELECT extract(epoch FROM now() - "
                                    "pg_last_xact_replay_timestamp())").fetchone()[0]
                    row["replay_lag_s"] = None if lag is None else round(float(lag), 3)
            except (psycopg.Error, MigrationError, OSError) as exc:
                row["error"] = str(exc).strip().splitlines()[0]
            out.append(row)
        return out

    def close(self) -> None:
        """Close the standby connection."""
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def standby_failed(conn: psycopg.Connection, exc: BaseException) -> bool:
    """Whether ``exc``, raised by a read on standby ``conn``, means the read
    should be asked elsewhere: the connection is gone, or replay cancelled it."""
    return conn.closed or conn.broken or recovery_conflict(exc)
