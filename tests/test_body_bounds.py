"""No unbounded work before authentication and throttling: a body that
takes no login (the login form, ``POST /api/tokens``) is bounded small, a
form's fields are counted before any parser sees them, a client the login
throttle holds back is answered 429 before its body is read, and a body
that does not arrive in time is answered 408 — before the route takes a
database connection."""

from __future__ import annotations

import asyncio

from test_web_security import call, site, token  # noqa: F401 - site: the fixture

URLENCODED = {"content-type": "application/x-www-form-urlencoded"}
LOGIN_COOKIE = {"cookie": "loupe_login_csrf=tok"}


def test_an_anonymous_body_is_bounded_before_it_is_parsed(site):  # noqa: F811
    make, _ = site
    with make() as client:
        app = client.app
        # 1 MiB to the login form (its own login cookie): 413 after the first
        # chunk, never parsed (before: read and parsed in full, 0.47 s each)
        status, pulled, body = call(app, "POST", "/login", {**URLENCODED, **LOGIN_COOKIE},
                                    chunks=4, chunk=b"a" * (1 << 20))
        assert (status, pulled) == (413, 1)
        assert b"over the limit of 32,768 bytes for /login" in body
        status, pulled, _ = call(app, "POST", "/api/tokens",
                                 {"content-type": "application/json",
                                  "content-length": str(1 << 20)}, chunks=1)
        assert (status, pulled) == (413, 0)
        # eleven fields to the login form: refused on the count
        eleven = "&".join(f"f{i}=1" for i in range(10)) + "&csrf_token=tok"
        status, _, body = call(app, "POST", "/login", {**URLENCODED, **LOGIN_COOKIE}, chunks=1,
                               chunk=eleven.encode())
        assert status == 413 and b"the form has 11 fields or more, over the limit of 10" in body


def test_a_members_form_fields_are_counted_before_parsing(site):  # noqa: F811
    make, _ = site
    with make() as client:
        app, admin = client.app, token(client, "admin")
        many = b"&".join(b"q=x" for _ in range(1001))
        status, _, body = call(app, "POST", "/bulk", {**URLENCODED, **admin}, chunks=1,
                               chunk=many)
        assert status == 413 and b"the form has 1,001 fields or more" in body


def test_a_throttled_client_is_answered_before_its_body_is_read(site):  # noqa: F811
    make, _ = site
    with make() as client:
        app = client.app
        for _ in range(21):        # past the client's free failures
            app.state.throttle.failed("someone", "127.0.0.1")
        status, pulled, _ = call(app, "POST", "/api/tokens",
                                 {"content-type": "application/json"}, chunks=3,
                                 chunk=b" " * 1000)
        assert (status, pulled) == (429, 0)
        status, pulled, _ = call(app, "POST", "/login", {**URLENCODED, **LOGIN_COOKIE},
                                 chunks=3, chunk=b"name=a&password=b&csrf_token=tok")
        assert (status, pulled) == (429, 0)


def test_a_body_that_does_not_arrive_in_time_is_answered_408(site):  # noqa: F811
    make, _ = site
    with make(body_timeout_s=0.5) as client:
        app, admin = client.app, token(client, "admin")
        sent: list[dict] = []
        first = True

        async def receive():
            nonlocal first
            if first:
                first = False
                return {"type": "http.request", "body": b"text=a", "more_body": True}
            await asyncio.sleep(3600)      # the rest never comes

        async def send(message):
            sent.append(message)

        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
                 "method": "POST", "scheme": "http", "path": "/ask/1/chips",
                 "raw_path": b"/ask/1/chips", "query_string": b"", "root_path": "",
                 "client": ("127.0.0.1", 5000), "server": ("testserver", 80), "app": app,
                 "headers": [(b"host", b"testserver"),
                             (b"content-type", b"application/x-www-form-urlencoded"),
                             (b"authorization", admin["Authorization"].encode())]}
        asyncio.run(asyncio.wait_for(app(scope, receive, send), 20))
        start = next(m for m in sent if m["type"] == "http.response.start")
        assert start["status"] == 408
