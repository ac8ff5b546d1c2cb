"""CSRF tokens on every state-changing request a browser could send with its
own credentials: a request with neither Origin nor Sec-Fetch-Site
— which the Origin check lets through — is refused without the session's
token; the login form needs its pre-login double-submit token; bearer-token
calls are unchanged. The real app in process, real database and files."""

from __future__ import annotations

from fastapi.testclient import TestClient

from loupe.web import create_app
from test_web_security import populate, token
from weblib import page_csrf, web_login


def test_forms_and_cookie_calls_need_the_sessions_token(db_url, home, tmp_path):
    populate(home, db_url, tmp_path / "photos")
    with TestClient(create_app(home, database_url=db_url, pool_size=2)) as client:
        # login: without the pre-login cookie and token (no Origin either): 403
        r = client.post("/login", data={"name": "admin", "password": "admin-password"},
                        follow_redirects=False)
        assert r.status_code == 403 and r.json()["detail"].startswith("CSRF token missing")
        assert "loupe_session" not in client.cookies
        client.get("/login")   # the cookie is set, but a forged form has no token
        r = client.post("/login", data={"name": "admin", "password": "admin-password",
                                        "csrf_token": "guess"}, follow_redirects=False)
        assert r.status_code == 403 and "loupe_session" not in client.cookies
        assert web_login(client, "admin", "admin-password").status_code == 303
        assert "loupe_session" in client.cookies

        form = {"action": "add_keyword", "value": "csrf", "q": "cat"}
        # no Origin, no Sec-Fetch-Site, no token: refused before the route runs
        r = client.post("/bulk", data=form)
        assert r.status_code == 403 and r.json()["detail"] == (
            "CSRF token missing or wrong: reload the page and try again")
        r = client.post("/bulk", data={**form, "csrf_token": "0" * 64})
        assert r.status_code == 403
        for odd in ("%E2%82%AC", "%FF", "%00"):   # not latin-1, not UTF-8, NUL: 403, not 500
            r = client.post("/bulk?csrf_token=" + odd, data=form)
            assert r.status_code == 403, odd
        r = client.post("/bulk", content=b"csrf_token=%E2%82%AC&q=cat",
                        headers={"content-type": "application/x-www-form-urlencoded"})
        assert r.status_code == 403
        r = client.post("/api/upload", files=[("files", ("a.png", b"x", "image/png"))])
        assert r.status_code == 403
        r = client.post("/logout", follow_redirects=False)
        assert r.status_code == 403 and "loupe_session" in client.cookies
        admin = token(client, "admin")
        assert client.get("/api/search", params={"q": "csrf"}, headers=admin).json()["total"] == 0

        # the token of the page: the form works (as a field), a script's call (as a header)
        csrf = page_csrf(client, "/?q=cat")
        r = client.post("/bulk", data={**form, "csrf_token": csrf})
        assert r.status_code == 200 and "3" in r.text
        assert client.get("/api/search", params={"q": "csrf"}, headers=admin).json()["total"] == 3
        r = client.post("/api/bulk", json={**form, "value": "viaheader"},
                        headers={"X-CSRF-Token": csrf})
        assert r.status_code == 200 and r.json()["count"] == 3
        # another session's token is not this one's
        other = TestClient(client.app)
        assert web_login(other, "bob", "bob-password").status_code == 303
        bobs = page_csrf(other, "/upload")
        assert bobs != csrf
        r = client.post("/bulk", data={**form, "csrf_token": bobs})
        assert r.status_code == 403
        # the upload form without script posts multipart, the token its first field
        import re
        page = client.get("/upload").text
        action = re.search(r'id="upload"[^>]*action="([^"]+)"', page)
        assert action.group(1) == "/api/upload"
        assert re.search(r'action="/api/upload" enctype="multipart/form-data">\s*'
                         r'<input type="hidden" name="csrf_token" value="([0-9a-f]{64})">',
                         page).group(1) == csrf
        png = (tmp_path / "photos" / "animals" / "dogs" / "dog-01.png").read_bytes()
        r = client.post("/api/upload", data={"csrf_token": csrf},
                        files=[("files", ("d.png", png, "image/png"))])
        assert r.status_code == 200 and r.json()["ingest"]["files_seen"] == 1, r.text
        r = client.post("/api/upload", data={"csrf_token": bobs},
                        files=[("files", ("d.png", png, "image/png"))])
        assert r.status_code == 403
        # never from the query string (it reaches logs, history and Referer)
        r = client.post("/api/upload?csrf_token=" + csrf,
                        files=[("files", ("d.png", png, "image/png"))])
        assert r.status_code == 403
        r = client.post("/bulk?csrf_token=" + csrf, data=form)
        assert r.status_code == 403
        r = client.post("/api/bulk?csrf_token=" + csrf, json={**form, "value": "viaquery"})
        assert r.status_code == 403
        # the field only counts as the first part, read from at most 64 KiB
        r = client.post("/api/upload", files=[("files", ("d.png", png, "image/png")),
                                              ("csrf_token", (None, csrf))])
        assert r.status_code == 403
        # a Cookie header the standard library's parser gives up on still names
        # the session for the Guard as it does for the login
        session = client.cookies["loupe_session"]
        bare = TestClient(client.app)
        for header in (f'x="; loupe_session={session}', f"a=1;;loupe_session={session}",
                       f'loupe_x="\\; loupe_session={session}'):
            r = bare.post("/api/bulk", json={**form, "value": "malformed"},
                          headers={"Cookie": header})
            assert r.status_code == 403, (header, r.text)
            assert r.json()["detail"] == (
                "CSRF token missing or wrong: reload the page and try again")
            r = bare.post("/api/bulk", json={**form, "value": "malformed"},
                          headers={"Cookie": header, "X-CSRF-Token": csrf})
            assert r.status_code == 200 and r.json()["count"] == 3, header
        # a bearer token is exempt (a browser never adds it by itself)
        r = client.post("/api/bulk", json={**form, "value": "tok"}, headers=admin)
        assert r.status_code == 200 and r.json()["count"] == 3
        # logging out with the token works
        r = client.post("/logout", data={"csrf_token": csrf}, follow_redirects=False)
        assert r.status_code == 303
        assert client.get("/", follow_redirects=False).status_code == 303
