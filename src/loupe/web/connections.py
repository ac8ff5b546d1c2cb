"""Limits on the server's TCP connections, in front of the app.

uvicorn (0.54, h11) keeps a connection that never sends a request open
forever: ``timeout_keep_alive`` only starts after a response, and there is no
cap on open connections. About 20,000 idle connections from one unauthenticated
client exhausted the process's 20,000 descriptors; nobody was answered while
they were held, and every refused ``accept()`` was logged (106 MB of log in
~40 s).

:func:`guarded_protocol` wraps uvicorn's HTTP protocol class (uvicorn's own
knob for it: ``uvicorn.run(..., http=CLASS)``) so that

* at most ``max_connections`` connections are open at once, and at most
  ``max_per_client`` from one client (:func:`loupe.web.throttle.client_key`:
  all of loopback is one client, an IPv6 /64 is one; an address named by
  ``--trusted-proxy`` is counted only against the total); a connection past
  either is answered ``503`` with ``Retry-After`` and closed at once, so its
  descriptor is given back before the next ``accept()``;
* a connection must complete the headers of a request within
  ``header_timeout_s`` of being opened, and of its previous response
  (keep-alive), or it is closed: an idle or trickling client holds a
  descriptor for seconds, not forever (uvicorn's ``timeout_keep_alive``
  closes idle keep-alive connections sooner, as before);
* once its headers are in, a request's body must keep arriving at
  ``min_body_rate`` bytes a second or more, measured over windows of
  ``header_timeout_s``, whenever the server is ready to read it (not while
  uvicorn has paused reading because the app has not taken the body yet,
  e.g. while an upload waits for its slot), or the connection is closed: a
  client that sends its headers and then trickles its body no longer holds
  its connection for as long as it likes (what this module cannot bound);
* refused connections are logged once per :data:`LOG_EVERY_S` with their
  count, never once each, and asyncio's "accept() out of system resource"
  errors likewise (:class:`RateLimitedLog`).

:func:`fit_descriptor_limit` raises the process's soft descriptor limit to
its hard limit at start and checks that ``max_connections`` leaves room for
the database connections, ExifTool and files.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import threading
import time
from collections import Counter
from dataclasses import dataclass

from .throttle import client_key

#: Log a kind of refusal at most once per this many seconds.
LOG_EVERY_S = 10.0
#: Descriptors kept free of connections for the rest of the server (pooled
#: and upload database connections, ExifTool's pipes, files being ingested,
#: the embedded PostgreSQL's own are another process's).
RESERVED_DESCRIPTORS = 256
#: The listening socket's backlog (uvicorn's ``backlog``; its default is
#: 2,048). asyncio accepts up to this many connections in one go before any
#: of them reaches the protocol that refuses it, so the descriptors a flood
#: can hold at once are ``max_connections`` + this; with 2,048 a flood ran
#: the process out of descriptors before a connection could be refused.
ACCEPT_BACKLOG = 128

_BUSY = (b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n"
         b"retry-after: 5\r\nconnection: close\r\ncontent-length: %d\r\n\r\n%s")


@dataclass(frozen=True)
class ConnectionLimits:
    """The connection limits of ``loupe serve`` (defaults in brackets; each
    is an option of the same name).

    Attributes:
        max_connections: open connections at once, all clients [1024].
        max_per_client: open connections of one client [64] (a browser
            opens about 6 per site; a reverse proxy named by
            ``trusted_proxies`` is not held to it).
        header_timeout_s: seconds a connection may take to send the
            complete headers of its next request, from its opening or its
            previous response [10 s].
        keep_alive_s: uvicorn's ``timeout_keep_alive``: an idle connection
            after a response is closed after this many seconds [5 s].
        trusted_proxies: addresses or networks (``--trusted-proxy``) that
            are not held to ``max_per_client`` (they carry many clients).
        min_body_rate: bytes a second a request body must arrive at, over
            each window of ``header_timeout_s`` while the server is ready
            to read it [1024: 8 kbit/s, below any real link; a 10 s window
            then asks for 10 KiB].
    """

    max_connections: int = 1024
    max_per_client: int = 64
    header_timeout_s: float = 10.0
    keep_alive_s: float = 5.0
    trusted_proxies: tuple[str, ...] = ()
    min_body_rate: int = 1024

    def __post_init__(self) -> None:
        if self.max_connections < 1 or self.max_per_client < 1:
            raise ValueError("max_connections and max_per_client must be >= 1")
        if not (self.header_timeout_s > 0 and self.keep_alive_s > 0):
            raise ValueError("header_timeout_s and keep_alive_s must be > 0")
        if self.min_body_rate < 1:
            raise ValueError("min_body_rate must be >= 1 byte a second")

    def trusted(self, address: str) -> bool:
        """Whether ``address`` is one of :attr:`trusted_proxies` (``*``: any)."""
        for entry in self.trusted_proxies:
            entry = entry.strip()
            if entry == "*":
                return True
            try:
                if ipaddress.ip_address(address.split("%", 1)[0]) in ipaddress.ip_network(
                        entry, strict=False):
                    return True
            except ValueError:
                if address == entry:
                    return True
        return False


class RateLimitedLog:
    """One log line per ``every_s`` seconds per kind, saying how many
    events of that kind were seen since the last line.

    Args:
        logger: where to write.
        every_s: the shortest time between two lines of one kind.
        clock: seconds, monotonic.
    """

    def __init__(self, logger: logging.Logger, every_s: float = LOG_EVERY_S,
                 clock=time.monotonic):
        self.logger = logger
        self.every_s = every_s
        self._clock = clock
        self._lock = threading.Lock()
        self._last: dict[str, float] = {}
        self._count: Counter[str] = Counter()

    def note(self, kind: str, message: str) -> bool:
        """Count one event of ``kind``; log ``message`` plus the count when
        the last line of that kind is ``every_s`` old. Returns whether a
        line was written."""
        now = self._clock()
        with self._lock:
            self._count[kind] += 1
            last = self._last.get(kind)
            if last is not None and now - last < self.every_s:
                return False
            self._last[kind] = now
            n = self._count.pop(kind)
        self.logger.warning("%s (%d time%s since the last such line)", message, n,
                            "" if n == 1 else "s")
        return True


class AcceptErrorFilter(logging.Filter):
    """A filter for the ``asyncio`` logger: its "socket.accept() out of
    system resource" errors (descriptors exhausted) pass once per
    ``every_s``; other records pass."""

    def __init__(self, every_s: float = LOG_EVERY_S, clock=time.monotonic):
        super().__init__()
        self.every_s = every_s
        self._clock = clock
        self._last: float | None = None
        self._dropped = 0

    def filter(self, record: logging.LogRecord) -> bool:  # noqa: A003 - logging's name
        if "accept" not in str(record.msg):
            return True
        now = self._clock()
        if self._last is not None and now - self._last < self.every_s:
            self._dropped += 1
            return False
        self._last = now
        if self._dropped:
            record.msg = f"{record.msg} ({self._dropped} like it not logged)"
            self._dropped = 0
        record.exc_info = None     # one line, not a traceback a time
        return True


class _Counts:
    """Open connections, in all and per client (one server's, one loop's)."""

    def __init__(self) -> None:
        self.total = 0
        self.per: Counter[str] = Counter()
        self.refused = 0
        self.timed_out = 0
        self.body_timed_out = 0


def guarded_protocol(base: type, limits: ConnectionLimits,
                     log: RateLimitedLog | None = None) -> type:
    """A subclass of uvicorn's HTTP protocol class ``base`` (for
    ``uvicorn.run(http=...)``) that enforces ``limits`` as the module
    docstring says. The returned class has ``counts`` (open connections,
    refused and timed-out counts) for tests and status."""
    log = log or RateLimitedLog(logging.getLogger("uvicorn.error"))
    counts = _Counts()

    class GuardedProtocol(base):  # type: ignore[misc, valid-type]
        def connection_made(self, transport) -> None:  # noqa: ANN001 - asyncio's
            peer = transport.get_extra_info("peername")
            address = str(peer[0]) if isinstance(peer, (tuple, list)) and peer else "unknown"
            key = None if limits.trusted(address) else client_key(address)
            self._guard_key = key
            self._guard_timer = None
            self._guard_bytes = 0        # bytes received on this connection
            self._guard_mark = 0         # ... when the body window began
            why = None
            if counts.total >= limits.max_connections:
                why = (f"refused connections: {limits.max_connections} open connections "
                       f"(--max-connections)")
            elif key is not None and counts.per[key] >= limits.max_per_client:
                why = (f"refused connections: {limits.max_per_client} open connections of "
                       f"one client (--max-connections-per-client)")
            if why is not None:
                self._guard_refused = True
                counts.refused += 1
                log.note(why, why)
                body = b'{"detail": "too many open connections: try again later"}'
                try:
                    transport.write(_BUSY % (len(body), body))
                finally:
                    transport.close()
                return
            self._guard_refused = False
            counts.total += 1
            if key is not None:
                counts.per[key] += 1
            super().connection_made(transport)
            self._guard_arm()

        def _guard_arm(self) -> None:
            if self._guard_timer is not None:
                self._guard_timer.cancel()
            loop = asyncio.get_running_loop()
            self._guard_timer = loop.call_later(limits.header_timeout_s, self._guard_check,
                                                self.cycle)

        def _guard_check(self, cycle_then) -> None:
            self._guard_timer = None
            if self.transport is None or self.transport.is_closing():
                return
            if self.cycle is cycle_then and (cycle_then is None or cycle_then.response_complete):
                # no new request's headers since the timer was armed
                counts.timed_out += 1
                log.note("header-timeout", f"closed connections that sent no complete "
                                           f"request headers within {limits.header_timeout_s:g} s "
                                           f"(--header-timeout-s)")
                self.transport.close()
            elif self.cycle is not cycle_then:
                self._guard_arm()   # a request came: watch for the next one
            else:
                self._guard_body_arm()   # a request under way: watch its body

        def _guard_body_arm(self) -> None:
            self._guard_mark = self._guard_bytes
            loop = asyncio.get_running_loop()
            self._guard_timer = loop.call_later(limits.header_timeout_s, self._guard_body_check,
                                                self.cycle)

        def _guard_body_check(self, cycle_then) -> None:
            # armed only while a request is under way: its response's end
            # (on_response_complete) cancels this timer and arms the header one
            self._guard_timer = None
            if self.transport is None or self.transport.is_closing():
                return
            if self.cycle is not cycle_then:
                self._guard_arm()
                return
            if not cycle_then.more_body:
                return                   # the body is in: the app answers in its time
            came = self._guard_bytes - self._guard_mark
            if not self.flow.read_paused and \
                    came < limits.min_body_rate * limits.header_timeout_s:
                counts.body_timed_out += 1
                log.note("body-timeout", f"closed connections whose request body arrived at "
                                         f"less than {limits.min_body_rate} bytes/s over "
                                         f"{limits.header_timeout_s:g} s (--min-body-rate)")
                self.transport.close()
                return
            self._guard_body_arm()

        def data_received(self, data: bytes) -> None:
            self._guard_bytes += len(data)
            super().data_received(data)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self._guard_refused:
                self._guard_arm()

        def connection_lost(self, exc) -> None:  # noqa: ANN001 - asyncio's
            if getattr(self, "_guard_refused", True):
                return
            self._guard_refused = True       # count it down once
            if self._guard_timer is not None:
                self._guard_timer.cancel()
                self._guard_timer = None
            counts.total -= 1
            if self._guard_key is not None:
                counts.per[self._guard_key] -= 1
                if counts.per[self._guard_key] <= 0:
                    del counts.per[self._guard_key]
            super().connection_lost(exc)

    GuardedProtocol.counts = counts
    GuardedProtocol.__name__ = f"Guarded{base.__name__}"
    return GuardedProtocol


def fit_descriptor_limit(limits: ConnectionLimits) -> int:
    """Raise the soft ``RLIMIT_NOFILE`` to the hard limit and return it.

    Raises:
        ValueError: ``max_connections`` + :data:`ACCEPT_BACKLOG` +
            :data:`RESERVED_DESCRIPTORS` is over the limit (the message says
            the most that fits).
    """
    import resource  # noqa: PLC0415 - POSIX only, at start

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        soft = hard
    elif hard == resource.RLIM_INFINITY and soft != resource.RLIM_INFINITY:
        soft = soft  # leave an unlimited hard limit's soft one as the admin set it
    keep = RESERVED_DESCRIPTORS + ACCEPT_BACKLOG
    if soft != resource.RLIM_INFINITY and limits.max_connections + keep > soft:
        raise ValueError(
            f"--max-connections {limits.max_connections} does not fit the process's limit of "
            f"{soft} open files with {keep} kept for accepting and the rest of the server: "
            f"use at most {max(1, soft - keep)} or raise 'ulimit -n'")
    return soft
