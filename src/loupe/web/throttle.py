"""Failed and successful logins counted per account and client, with
exponential back-off (:class:`LoginThrottle`), and the client a throttle
counts for an address (:func:`client_key`). :mod:`loupe.web.security`
re-exports all three; its Guard checks :meth:`LoginThrottle.check_client`
before the body of a login is read."""

from __future__ import annotations

import ipaddress
import threading
import time
from typing import Protocol


class ThrottleLimits(Protocol):
    """The thresholds a throttle reads (:class:`loupe.web.security.WebLimits` is one)."""

    login_free_failures: int
    client_free_failures: int
    account_free_failures: int
    forget_after_s: float
    login_window_s: float
    account_logins_per_window: int
    backoff_max_s: float
    backoff_base_s: float


class Throttled(Exception):
    """Too many failed logins: retry after ``retry_after`` seconds (429)."""

    def __init__(self, retry_after: int, why: str = "too many failed logins"):
        super().__init__(f"{why}: try again in {retry_after} s")
        self.why = why
        self.retry_after = retry_after


def client_key(address: str) -> str:
    """The client a throttle counts for a connecting address: every loopback
    address (127.0.0.0/8, ``::1``, and IPv4-mapped ``::ffff:127.x.y.z``) is
    one client, ``"loopback"`` — on Linux a local process may bind any of the
    16 million —; an IPv4-mapped address is its IPv4
    address; an IPv6 address is its /64 (one end site's subnet, RFC 6177:
    a single host commonly holds a whole /64); anything else (a Unix socket
    name, "unknown") is itself."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip.is_loopback:
        return "loopback"
    if isinstance(ip, ipaddress.IPv6Address):
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


class LoginThrottle:
    """Failed-login counters with exponential back-off, in memory (one
    ``loupe serve`` process).

    Three counters are kept: one per (account, client), one per client (over
    all accounts) and one per account (over all clients); a client is
    :func:`client_key` of its address. After ``free`` failures of a counter,
    each further failure locks it for ``base * 2**(n - free - 1)`` seconds, at
    most ``max_s`` (n = failures so far); a counter untouched for
    ``forget_after_s`` is dropped. A login is refused (:class:`Throttled`)
    while one of its counters is locked, *before* the password is hashed.
    The account-wide counter does not hold back a client that has logged into
    that account before (since this server started), so guessing from many
    addresses cannot lock an account's owner out of a client they use; a new
    client waits with the guesser. A success clears the (account, client)
    counter, not the client's nor the account's.

    Successes are throttled too: :meth:`begin`, called
    just before a password is hashed, admits at most
    ``account_logins_per_window`` logins of one account per
    ``login_window_s`` — successes in the window plus checks under way;
    a failure gives its place back, so wrong guesses by others never use up
    the owner's logins.

    Args:
        limits: the thresholds (:class:`ThrottleLimits`, e.g. ``WebLimits``).
        clock: seconds, monotonic (tests may pass their own).
    """

    def __init__(self, limits: ThrottleLimits, clock=time.monotonic):
        self.limits = limits
        self._clock = clock
        self._lock = threading.Lock()
        # key -> [failures, locked_until, last_failure]
        self._state: dict[tuple, list[float]] = {}
        # (account, client) pairs that logged in: the account-wide counter
        # does not hold them back
        self._known: set[tuple[str, str]] = set()
        # account -> [times of successes in the window], and checks under way
        self._successes: dict[str, list[float]] = {}
        self._pending: dict[str, int] = {}

    def _keys(self, account: str, client: str) -> list[tuple[tuple, int]]:
        client = client_key(client)
        return [(("account", account, client), self.limits.login_free_failures),
                (("client", client), self.limits.client_free_failures),
                (("user", account), self.limits.account_free_failures)]

    def check(self, account: str, client: str) -> None:
        """Raise :class:`Throttled` if this login must wait."""
        now = self._clock()
        wait = 0.0
        with self._lock:
            known = (account, client_key(client)) in self._known
            for key, _ in self._keys(account, client):
                if key[0] == "user" and known:
                    continue
                st = self._state.get(key)
                if st is None:
                    continue
                if now - st[2] > self.limits.forget_after_s:
                    del self._state[key]
                    continue
                wait = max(wait, st[1] - now)
        if wait > 0:
            raise Throttled(max(1, int(wait + 0.999)))

    def check_client(self, client: str) -> None:
        """Raise :class:`Throttled` if logins from ``client`` (over all
        accounts) must wait now: the one counter that is known before the
        request's body (which names the account) is read."""
        now = self._clock()
        with self._lock:
            st = self._state.get(("client", client_key(client)))
            wait = 0.0 if st is None or now - st[2] > self.limits.forget_after_s else st[1] - now
        if wait > 0:
            raise Throttled(max(1, int(wait + 0.999)))

    def begin(self, account: str, client: str) -> None:
        """:meth:`check`, then take one of the account's logins of the
        window (give it back with ``failed(..., begun=True)``, keep it with
        ``succeeded(..., begun=True)``).

        Raises:
            Throttled: a failure counter is locked, or the account had
                ``account_logins_per_window`` logins (done or under way)
                within the last ``login_window_s``.
        """
        self.check(account, client)
        now = self._clock()
        window = self.limits.login_window_s
        with self._lock:
            if len(self._successes) > 100_000:   # bound the memory under a flood of names
                self._successes = {a: t for a, t in self._successes.items()
                                   if t and now - t[-1] < window}
            times = [t for t in self._successes.get(account, ()) if now - t < window]
            self._successes[account] = times
            if len(times) + self._pending.get(account, 0) >= self.limits.account_logins_per_window:
                wait = (times[0] + window - now) if times else 1.0
                raise Throttled(max(1, int(wait + 0.999)),
                                f"too many logins of this account: at most "
                                f"{self.limits.account_logins_per_window} per "
                                f"{window:g} s")
            self._pending[account] = self._pending.get(account, 0) + 1

    def _end(self, account: str, now: float, ok: bool) -> None:
        left = self._pending.get(account, 0) - 1
        if left > 0:
            self._pending[account] = left
        else:
            self._pending.pop(account, None)
        if ok:
            self._successes.setdefault(account, []).append(now)

    def abandon(self, account: str) -> None:
        """Give back the place a :meth:`begin` took, counting nothing (the
        check did not run: the database failed)."""
        with self._lock:
            self._end(account, self._clock(), ok=False)

    def failed(self, account: str, client: str, begun: bool = False) -> None:
        """Count a failed login (``begun``: it had passed :meth:`begin`)."""
        now = self._clock()
        with self._lock:
            if begun:
                self._end(account, now, ok=False)
            if len(self._state) > 100_000:   # bound the memory under a flood of names
                self._state = {k: v for k, v in self._state.items()
                               if now - v[2] <= self.limits.forget_after_s}
            for key, free in self._keys(account, client):
                st = self._state.setdefault(key, [0, 0.0, now])
                st[0] += 1
                st[2] = now
                extra = st[0] - free
                if extra > 0:
                    st[1] = now + min(self.limits.backoff_max_s,
                                      self.limits.backoff_base_s * 2 ** min(extra - 1, 30))

    def succeeded(self, account: str, client: str, begun: bool = False) -> None:
        """Forget the (account, client) failures after a correct password
        (``begun``: it had passed :meth:`begin`, and counts as one of the
        account's logins of the window)."""
        with self._lock:
            if begun:
                self._end(account, self._clock(), ok=True)
            self._state.pop(("account", account, client_key(client)), None)
            if len(self._known) > 100_000:   # bound the memory
                self._known.clear()
            self._known.add((account, client_key(client)))
