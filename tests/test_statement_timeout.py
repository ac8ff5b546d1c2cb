"""A web request's database work is bounded per statement (PostgreSQL's
statement_timeout on the server's connections, ``WebLimits.statement_timeout_s``)
and a cancelled statement answers a clear 503, not a 500: defence in depth
against any slow statement (a member's own filtered
searches took 8-78 s on a pooled connection). Real embedded PostgreSQL, the
real web app; the slow statement is a real one, made to wait on a lock."""

from __future__ import annotations

import threading
import time

import psycopg
from fastapi.testclient import TestClient

from loupe import Library
from loupe.web.app import create_app
from loupe.web.security import WebLimits


def test_a_statement_past_the_bound_answers_503_and_the_connection_goes_on(
        db_url, home):
    with Library.open(home, database_url=db_url) as owner:
        owner.create_user("bob", "bob-password")
    limits = WebLimits(statement_timeout_s=0.5)
    with TestClient(create_app(home, database_url=db_url, pool_size=1, limits=limits)) as client:
        tok = client.post("/api/tokens", json={"name": "bob", "password": "bob-password"})
        bob = {"Authorization": f"Bearer {tok.json()['token']}"}
        assert client.get("/api/search", params={"q": "harbour"}, headers=bob).status_code == 200
        # another session holds the asset table: the search's statement waits
        blocker = psycopg.connect(db_url)
        blocker.execute("LOCK TABLE asset IN ACCESS EXCLUSIVE MODE")
        release = threading.Timer(8.0, blocker.rollback)    # the code before waited for this
        release.start()
        try:
            started = time.monotonic()
            r = client.get("/api/search", params={"q": "harbour"}, headers=bob)
            took = time.monotonic() - started
        finally:
            release.cancel()
            blocker.rollback()
            blocker.close()
        assert (r.status_code, r.json()) == (503, {"detail": (
            "the request's database work took longer than 0.5 s (the server's bound on one "
            "statement): stopped; narrow the request or try again later")})
        assert r.headers["retry-after"] == "5"
        assert took < 5.0, took
        # the same pooled connection answers the next request
        again = client.get("/api/search", params={"q": "harbour"}, headers=bob)
        assert again.status_code == 200, again.text


def test_the_servers_connections_carry_the_default_bound(db_url, home):
    with Library.open(home, database_url=db_url):
        pass
    app = create_app(home, database_url=db_url, pool_size=1)
    with TestClient(app):
        with app.state.pool.lend() as lib:
            assert lib.conn.execute("SHOW statement_timeout").fetchone()[0] == "15s"
            with app.state.pool.outside() as upload_lib:      # the uploads' Library too
                assert upload_lib.conn.execute("SHOW statement_timeout").fetchone()[0] == "15s"
