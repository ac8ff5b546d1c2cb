"""Defences of the web app that act before a route runs (N5):

* :class:`WebLimits` — the limits and their defaults (request bodies, upload
  quotas, pixels per upload, login throttling).
* :class:`Guard` — a pure ASGI middleware, outermost in the app. For every
  request it

  1. adds the security headers (:data:`SECURITY_HEADERS`: a Content-Security-
     Policy without inline script or style, ``nosniff``, no framing, a
     same-origin referrer policy);
  2. refuses a cross-origin state-changing request authenticated by the
     session cookie (or a login form posted from another origin): a POST,
     PUT, PATCH or DELETE without an ``Authorization: Bearer`` header whose
     ``Origin`` is not this server's own (``scheme://Host``), or whose
     ``Sec-Fetch-Site`` is neither ``same-origin`` nor ``none``, answers 403
     before the route runs (OWASP CSRF cheat sheet, "Verifying Origin with
     standard headers" and "Fetch Metadata");
  3. requires a CSRF token on every state-changing request that a browser
     could send with credentials of its own: one carrying the session
     cookie must present :func:`csrf_token_for` of that session (header
     ``X-CSRF-Token``, the field ``csrf_token`` of a urlencoded form, or
     the first part ``csrf_token`` of a multipart form — never the query
     string, which reaches logs and Referer headers), and the login form
     the value of its pre-login cookie
     (:data:`LOGIN_CSRF_COOKIE`, double submit). A request with neither
     ``Origin`` nor ``Sec-Fetch-Site`` (step 2 cannot judge it) is thus
     still refused without the token (403). Bearer-token calls are exempt
     (OWASP CSRF cheat sheet, "Synchronizer token pattern" and "Signed
     double-submit cookie");
  4. for a request with a body to a route that needs a login, checks the
     presented session or token against the database *before a byte of the
     body is read* (401 for ``/api/``, a redirect to the login page
     otherwise), then enforces the body-size limit on ``Content-Length``
     (413 at once) and on the bytes actually streamed (413 as soon as the
     count passes the limit; the route then sees a disconnect). So an
     unauthenticated or oversized upload is never spooled to disk.

* :class:`loupe.web.throttle.LoginThrottle` — failed logins per (account, client) and per
  client, with exponential back-off; 429 with ``Retry-After``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from urllib.parse import parse_qs
from dataclasses import dataclass
from typing import Any

import anyio
from python_multipart.multipart import MultipartParser, parse_options_header
from starlette.requests import cookie_parser

#: Methods that change state (CSRF-checked; their bodies are size-limited).
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})

#: The login session's cookie (as set by the login page).
SESSION_COOKIE = "loupe_session"
#: The pre-login cookie of the login form's double-submit token: random,
#: HttpOnly, SameSite=Strict, set by ``GET /login``.
LOGIN_CSRF_COOKIE = "loupe_login_csrf"
#: Where a CSRF token is presented: a header (scripts), or a form field.
CSRF_HEADER = b"x-csrf-token"
CSRF_FIELD = "csrf_token"


def csrf_token_for(session: str) -> str:
    """The CSRF token of a login session: SHA-256 (hex) of a fixed label and
    the session token. Only someone who holds the session token (an
    HttpOnly cookie) can compute it, so a page of another site — or another
    port of the same host, which can set cookies here but not read them —
    cannot; it stays valid for the session's life and needs no server
    state."""
    return hashlib.sha256(b"loupe-csrf\x00" + session.encode("utf-8", "replace")).hexdigest()


def cookie(scope: dict, name: str) -> str | None:
    """The value of cookie ``name`` in the request's (first) ``Cookie``
    header, read by Starlette's own ``cookie_parser`` — the parser behind
    ``request.cookies``, which the login reads. One parser for both: the
    standard library's ``SimpleCookie`` gave up at the first malformed pair
    (``x="; loupe_session=S``) where Starlette's read on, so the Guard saw no
    session and asked for no CSRF token while the route ran logged in."""
    raw = _header(scope, b"cookie")
    if not raw:
        return None
    return cookie_parser(raw).get(name)


#: Routes that take a body without a login (the login form, the token
#: exchange). Everything else with a body needs a live session or token
#: before its body is read.
PUBLIC_BODY_ROUTES = frozenset({("POST", "/login"), ("POST", "/api/tokens")})

#: The Content-Security-Policy: scripts, styles, images and requests from
#: this origin only, no inline script or style (the pages use
#: /static/loupe.js and /static/loupe.css; the judging page its own files),
#: no plugins, no <base>, forms only to this origin, never framed.
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
       "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
       "form-action 'self'; frame-ancestors 'none'")

#: Headers added to every response (names lower-case, as ASGI sends them).
SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
)

MiB = 1024 * 1024


@dataclass(frozen=True)
class WebLimits:
    """The web app's limits (defaults in brackets; ``loupe serve`` options
    set the upload ones).

    Attributes:
        max_body_bytes: largest request body of any route but the upload [1 MiB].
        max_upload_request_bytes: largest body of one ``POST /api/upload``,
            all files and multipart framing together [256 MiB].
        upload_quota_bytes: bytes a user may keep under its upload folder,
            all uploads together [2 GiB].
        upload_quota_files: files a user may keep there [10,000].
        upload_max_pixels: largest width x height of one uploaded image,
            read from its header before it is decoded [100 MP: a 100 MP
            medium-format frame].
        upload_pixel_budget: width x height of all images of one upload
            together [200 MP]; uploads are decoded one at a time, so the
            decoding memory of a request is bounded by the largest image
            (about 3-4 bytes per pixel), not by their sum.
        upload_exiftool_budget_s: seconds ExifTool may spend on all the
            files of one upload request together, every batch and retry
            included [60 s]; files whose turn comes after it is spent fail
            with a reason saying so, before they are decoded (before, 60 s per batch of 48, up to 5 minutes a request).
        upload_max_words: distinct words one uploaded image's name and
            metadata (embedded and sidecar) may hold
            (:func:`loupe.ingest.metadata_bounds.distinct_words`) [300]; an image
            over it is refused with its sidecar, before anything of it is
            stored. Each word is a term of the search index in every library
            language, which the byte quota of the upload folder does not see
            (a 10 KB sidecar of distinct words cost ~2 MB
            of database); docs/security.md gives the measured cost per word.
        similar_max_bytes: largest body of one ``POST /api/similar`` (the
            picture to search by) [32 MiB].
        similar_max_pixels: largest width x height of a picture to search by
            that must be decoded in full (PNG, GIF, WebP, TIFF, HEIC), read
            from its header before decoding [25 MP: about 100 MB decoded];
            a JPEG is decoded at 1/8 scale or less (DCT scaling) and may be
            up to ``upload_max_pixels``.
        statement_timeout_s: longest database statement of a web request
            [15 s]: PostgreSQL's ``statement_timeout``, set on every pooled
            connection and on the Libraries uploads ingest with; a
            statement past it is cancelled and the request answers 503
            saying so (defence in depth against any slow statement: filtered searches
            over a member's large raw metadata once took 8-78 s).
        login_free_failures: failed logins of one account from one client
            before back-off starts [5].
        client_free_failures: failed logins from one client, over all
            accounts, before back-off starts [20].
        account_free_failures: failed logins of one account, over all
            clients, before back-off starts for every client that has not
            logged into that account before [20].
        backoff_base_s: the first back-off; each further failure doubles
            it [1 s].
        backoff_max_s: the longest back-off [900 s].
        forget_after_s: failures are forgotten after this long without a
            new one [900 s].
        account_logins_per_window: password checks of one account that may
            succeed (or be under way) within ``login_window_s``, over all
            clients [30]; past it a login of that account answers 429 before
            its password is hashed (successes were never
            throttled, so one member's correct password x150 at once made
            150 tokens and kept the hashing slot busy).
        login_window_s: the window of ``account_logins_per_window`` [60 s].
        max_sessions_per_user: live login sessions a user may hold; a new
            one past it revokes that user's oldest sessions [50].
        max_api_tokens_per_user: live API tokens a user may hold; a new one
            past it revokes that user's oldest API tokens [50].
        slot_wait_s: the longest a request waits for an upload slot, the
            decode slot of ``POST /api/similar`` or a password-hashing slot,
            waiting on the event loop (no worker thread, no database
            connection held); then 503 with ``Retry-After`` [5 s].
        upload_slots: uploads ingested at once (each on a database
            connection of its own, outside the pool) [2].
    """

    max_body_bytes: int = 1 * MiB
    max_upload_request_bytes: int = 256 * MiB
    upload_quota_bytes: int = 2048 * MiB
    upload_quota_files: int = 10_000
    upload_max_pixels: int = 100_000_000
    upload_pixel_budget: int = 200_000_000
    upload_exiftool_budget_s: float = 60.0
    upload_max_words: int = 300
    similar_max_bytes: int = 32 * MiB
    similar_max_pixels: int = 25_000_000
    statement_timeout_s: float = 15.0
    login_free_failures: int = 5
    client_free_failures: int = 20
    account_free_failures: int = 20
    backoff_base_s: float = 1.0
    backoff_max_s: float = 900.0
    forget_after_s: float = 900.0
    account_logins_per_window: int = 30
    login_window_s: float = 60.0
    max_sessions_per_user: int = 50
    max_api_tokens_per_user: int = 50
    slot_wait_s: float = 5.0
    upload_slots: int = 2

    def __post_init__(self) -> None:
        for name, value in self.__dict__.items():
            if not value > 0:
                raise ValueError(f"web limit {name} must be > 0, not {value!r}")


def _header(scope: dict, name: bytes) -> str | None:
    for k, v in scope.get("headers", ()):
        if k == name:
            return v.decode("latin-1")
    return None


def _norm_host(host: str, scheme: str) -> str:
    host = host.strip().lower()
    default = {"http": ":80", "https": ":443"}.get(scheme, "")
    if default and host.endswith(default):
        host = host[: -len(default)]
    return host


def cross_origin(scope: dict) -> str | None:
    """Why a state-changing request looks cross-origin, or None when it is
    same-origin (or carries neither ``Origin`` nor ``Sec-Fetch-Site``: then it
    is not from a browser that could be forged into sending it)."""
    site = _header(scope, b"sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return f"Sec-Fetch-Site is {site!r}"
    origin = _header(scope, b"origin")
    if origin is None:
        return None
    host = _header(scope, b"host") or ""
    scheme, sep, netloc = origin.partition("://")
    if not sep or _norm_host(netloc, scheme.lower()) != _norm_host(host, scheme.lower()):
        return "the Origin is not this server"
    return None


class _FirstField:
    """The value of a multipart body's first part when it is the
    ``csrf_token`` field, read with python-multipart's streaming parser
    (RFC 7578) from at most :attr:`LOOKAHEAD` bytes. :meth:`feed` takes the
    body's chunks in order and says when the answer is known; ``value`` is
    then the token, or None (another first part, a malformed body, or a
    first part past the lookahead)."""

    LOOKAHEAD = 64 * 1024

    def __init__(self, content_type: str):
        self.value: str | None = None
        self._seen = 0
        self._done = False
        self._name: bytes | None = None
        self._field: bytes = b""
        self._data = bytearray()
        _kind, options = parse_options_header(content_type)
        boundary = options.get(b"boundary")
        if not boundary:
            self._done = True
            self._parser = None
            return

        def on_header_field(data: bytes, start: int, end: int) -> None:
            self._field += data[start:end]

        def on_header_value(data: bytes, start: int, end: int) -> None:
            if self._field.lower() == b"content-disposition":
                _disp, opts = parse_options_header(data[start:end])
                self._name = opts.get(b"name")

        def on_header_end() -> None:
            self._field = b""

        def on_part_data(data: bytes, start: int, end: int) -> None:
            self._data += data[start:end]
            if len(self._data) > 1024:       # a token is 64 characters
                self._finish(None)

        def on_part_end() -> None:
            if self._name == CSRF_FIELD.encode():
                self._finish(bytes(self._data).decode("utf-8", "replace"))
            self._finish(None)

        self._parser = MultipartParser(boundary, {
            "on_header_field": on_header_field, "on_header_value": on_header_value,
            "on_header_end": on_header_end, "on_part_data": on_part_data,
            "on_part_end": on_part_end})

    def _finish(self, value: str | None) -> None:
        if not self._done:
            self._done, self.value = True, value

    def feed(self, chunk: bytes) -> bool:
        """Parse ``chunk``; True once the first part is decided."""
        if self._done or self._parser is None:
            return True
        self._seen += len(chunk)
        try:
            self._parser.write(chunk)
        except Exception:               # a malformed body: no token
            self._finish(None)
        if self._seen >= self.LOOKAHEAD:
            self._finish(None)
        return self._done


async def _send_json(send, status: int, detail: str, headers: list | None = None) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()),
                            *SECURITY_HEADERS, *(headers or [])]})
    await send({"type": "http.response.body", "body": body})


class Guard:
    """The ASGI middleware described in the module docstring.

    Args:
        app: the ASGI app it wraps.
        limits: the body limits (:class:`WebLimits`).
        authenticated: ``(scope) -> bool | None``, blocking; whether the
            request presents a live session or token (run in a worker
            thread); None when it cannot be known now (503, body unread).
    """

    def __init__(self, app, limits: WebLimits, authenticated):
        self.app = app
        self.limits = limits
        self.authenticated = authenticated

    async def __call__(self, scope: dict, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                have = {k.lower() for k, _ in message.get("headers", ())}
                message = {**message, "headers": [*message.get("headers", ()),
                                                  *(h for h in SECURITY_HEADERS
                                                    if h[0] not in have)]}
            await send(message)

        method, path = scope["method"], scope["path"]
        if method not in UNSAFE_METHODS:
            await self.app(scope, receive, send_with_headers)
            return
        bearer = (_header(scope, b"authorization") or "").lower().startswith("bearer ")
        if not bearer and (why := cross_origin(scope)):
            await _send_json(send, 403, f"cross-origin request refused: {why}")
            return
        expected: str | None = None
        if not bearer:
            if (method, path) == ("POST", "/login"):
                expected = cookie(scope, LOGIN_CSRF_COOKIE) or ""
            elif (method, path) in PUBLIC_BODY_ROUTES:
                pass   # POST /api/tokens: the credentials are in the body, no cookie is set
            elif (session := cookie(scope, SESSION_COOKIE)) is not None:
                expected = csrf_token_for(session)
        if expected == "":
            await _send_json(send, 403, "CSRF token missing: reload the login page and try "
                                        "again (cookies must be enabled)")
            return
        if (method, path) not in PUBLIC_BODY_ROUTES:
            live = await anyio.to_thread.run_sync(self.authenticated, scope)
            if live is None:    # not known (every connection busy): fail closed, body unread
                await _send_json(send, 503, "the server is busy: the login could not be "
                                            "checked before the request's body was read; "
                                            "try again later", [(b"retry-after", b"5")])
                return
            if not live:
                if path.startswith("/api/"):
                    await _send_json(send, 401, "authentication required: POST /api/tokens "
                                                "for a bearer token",
                                     [(b"www-authenticate", b"Bearer")])
                else:
                    await send({"type": "http.response.start", "status": 303,
                                "headers": [(b"location", b"/login"), (b"content-length", b"0"),
                                            *SECURITY_HEADERS]})
                    await send({"type": "http.response.body", "body": b""})
                return
        limit = {"/api/upload": self.limits.max_upload_request_bytes,
                 "/api/similar": self.limits.similar_max_bytes}.get(path,
                                                                    self.limits.max_body_bytes)
        length = _header(scope, b"content-length")
        if length is not None:
            try:
                declared = int(length)
            except ValueError:
                await _send_json(send, 400, "invalid Content-Length")
                return
            if declared > limit:
                await _send_json(send, 413, f"request body of {declared:,} bytes is over the "
                                            f"limit of {limit:,} bytes for {path}")
                return
        seen = 0
        refused = False

        async def counted_receive() -> dict[str, Any]:
            nonlocal seen, refused
            if refused:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    refused = True
                    await _send_json(send, 413, f"request body is over the limit of "
                                                f"{limit:,} bytes for {path}")
                    return {"type": "http.disconnect"}
            return message

        async def send_unless_refused(message: dict[str, Any]) -> None:
            if not refused:
                await send_with_headers(message)

        app_receive = counted_receive
        if expected is not None:
            # the header, or a field of the body: never the query string,
            # which reaches logs, history and Referer headers
            presented = _header(scope, CSRF_HEADER)
            ctype = (_header(scope, b"content-type") or "").split(";")[0].strip().lower()
            if presented is None and ctype in ("application/x-www-form-urlencoded",
                                               "multipart/form-data"):
                # a form: read the (size-limited) body for the field — all of
                # a urlencoded one; of a multipart one only its first part,
                # where the page puts the field —, then hand the same bytes
                # to the route
                chunks: list[bytes] = []
                first = _FirstField(_header(scope, b"content-type") or "") \
                    if ctype == "multipart/form-data" else None
                while True:
                    message = await counted_receive()
                    if message["type"] != "http.request":
                        if not refused:
                            await _send_json(send, 400, "the request body ended early")
                        return
                    chunks.append(message.get("body", b""))
                    more = message.get("more_body", False)
                    if first is not None and first.feed(chunks[-1]):
                        break
                    if not more:
                        break
                body = b"".join(chunks)
                if first is not None:
                    presented = first.value
                else:
                    fields = parse_qs(body.decode("latin-1"), keep_blank_values=True)
                    presented = (fields.get(CSRF_FIELD) or [None])[0]
                replayed = False

                async def replay() -> dict[str, Any]:
                    nonlocal replayed
                    if not replayed:
                        replayed = True
                        return {"type": "http.request", "body": body, "more_body": more}
                    return await counted_receive()

                app_receive = replay
            if presented is None or not hmac.compare_digest(
                    presented.encode("utf-8", "replace"), expected.encode("utf-8", "replace")):
                await _send_json(send, 403, "CSRF token missing or wrong: reload the page "
                                            "and try again")
                return

        try:
            await self.app(scope, app_receive, send_unless_refused)
        except Exception:
            if not refused:
                raise
