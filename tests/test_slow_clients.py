"""One member's slow or stalled clients never take the server from others.

Against a real ``loupe serve`` (its default pool of 4 database
connections): a member opens four downloads of a large original and never
reads them, and trickles four form posts just above the minimum body rate;
meanwhile another user's search, ``/api/me`` and login all answer 200. A
route gives its pooled connection back before its response streams
(``loupe.web.auth.UserLib``), a body is read before the route takes one
(``loupe.web.security.Guard``), one user holds at most half the pool
(``LibraryPool.admit``), and a reader that takes nothing for
``--send-timeout-s`` is aborted."""

from __future__ import annotations

import os
import socket
import threading
import time

import httpx
import pytest
from PIL import Image

from liveserver import LiveServer
from loupe import Library
from test_web_security import populate

#: Side of the noise PNG: 2000 x 2000 x 3 bytes, about 12 MB — more than
#: a loopback socket's buffers on both ends hold, so an unread download
#: really stalls the server's sending.
SIDE = 2000


@pytest.fixture
def library(db_url, home, tmp_path):
    """The web fixture library plus one large original, in a collection the
    member bob may read; ``(asset id of the large original, its size)``."""
    photos = tmp_path / "photos"
    populate(home, db_url, photos)
    big = photos / "travel" / "big" / "noise.png"
    big.parent.mkdir(parents=True)
    Image.frombytes("RGB", (SIDE, SIDE), os.urandom(SIDE * SIDE * 3)).save(big, compress_level=0)
    with Library.open(home, database_url=db_url) as lib:
        lib.ingest(photos)
        lib.grant("bob", collection="travel")
        asset_id = lib.conn.execute("SELECT asset_id FROM asset_file WHERE rel_path LIKE "
                                    "'%noise.png'").fetchone()[0]
    return asset_id, big.stat().st_size


@pytest.fixture
def serve(db_url, home, tmp_path):
    started: list[LiveServer] = []

    def start(*args: str) -> LiveServer:
        s = LiveServer(home, db_url, tmp_path, *args)
        started.append(s)
        return s
    yield start
    for s in started:
        s.stop()


def _stalled_download(port: int, path: str, headers: dict[str, str]) -> socket.socket:
    """A GET whose response is never read (a small receive buffer)."""
    c = socket.socket()
    c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    c.connect(("127.0.0.1", port))
    head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    c.sendall(f"GET {path} HTTP/1.1\r\nhost: 127.0.0.1\r\n{head}\r\n".encode())
    return c


def _trickle(port: int, path: str, headers: dict[str, str], stop: threading.Event,
             step: int = 2048, every_s: float = 1.0) -> None:
    """POST a large urlencoded form ``step`` bytes every ``every_s`` seconds
    (above the server's minimum body rate) until ``stop``."""
    body = b"text=" + b"a" * 400_000
    c = socket.create_connection(("127.0.0.1", port))
    head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    c.sendall(f"POST {path} HTTP/1.1\r\nhost: 127.0.0.1\r\n{head}content-type: "
              f"application/x-www-form-urlencoded\r\ncontent-length: {len(body)}\r\n\r\n"
              .encode())
    sent = 0
    try:
        while not stop.is_set() and sent < len(body):
            c.sendall(body[sent:sent + step])
            sent += step
            stop.wait(every_s)
    except OSError:
        pass
    finally:
        c.close()


def test_a_members_stalled_downloads_and_trickled_forms_leave_others_served(library, serve):
    """Four unread downloads of a 12 MB original and four form posts
    trickled at 2 KiB/s by the member bob, against the default pool of 4:
    the admin's search, ``/api/me`` and a new login each answer 200 while
    they are held (before, each waited 30 s for a connection, then 503)."""
    asset_id, size = library
    s = serve()
    bob = s.token("bob", "bob-password")
    admin = s.token("admin", "admin-password")
    r = httpx.post(s.base + "/api/conversations", json={"sentence": "sunsets"}, headers=bob,
                   timeout=60)
    assert r.status_code == 200, r.text
    cid = r.json()["conversation"]
    stalled = [_stalled_download(s.port, f"/api/assets/{asset_id}/original", bob)
               for _ in range(4)]
    stop = threading.Event()
    trickles = [threading.Thread(target=_trickle, args=(s.port, f"/ask/{cid}/chips", bob, stop))
                for _ in range(4)]
    for t in trickles:
        t.start()
    try:
        time.sleep(3)          # every download has filled its buffers, every form is under way
        with httpx.Client(timeout=60) as c:
            for _ in range(3):
                r = c.get(s.base + "/api/search", params={"q": "sunset"}, headers=admin)
                assert r.status_code == 200, r.text
                assert r.json()["total"] == 30
            r = c.get(s.base + "/api/me", headers=admin)
            assert r.status_code == 200 and r.json()["name"] == "admin"
            r = c.post(s.base + "/api/tokens", json={"name": "admin",
                                                     "password": "admin-password"})
            assert r.status_code == 200, r.text
        # the downloads are really stalled: none was read to its end
        for sock in stalled:
            sock.setblocking(False)
            try:
                got = len(sock.recv(1 << 20))
            except BlockingIOError:
                got = 0
            assert got < size
    finally:
        stop.set()
        for t in trickles:
            t.join()
        for sock in stalled:
            sock.close()


def test_a_reader_that_takes_nothing_is_aborted_after_the_send_timeout(library, serve):
    """A download nobody reads is aborted after --send-timeout-s (1 s here):
    the client gets fewer bytes than the file and a reset or end, within a
    few seconds, and the server logs it once."""
    asset_id, size = library
    s = serve("--send-timeout-s", "1")
    bob = s.token("bob", "bob-password")
    sock = _stalled_download(s.port, f"/api/assets/{asset_id}/original", bob)
    time.sleep(4)
    got = 0
    sock.settimeout(5)
    try:
        while chunk := sock.recv(1 << 20):
            got += len(chunk)
    except (ConnectionResetError, TimeoutError):
        pass
    sock.close()
    assert got < size
    assert "aborted connections that took no bytes of their response for 1 s" in s.log()
    r = httpx.get(s.base + f"/api/assets/{asset_id}/original", headers=bob, timeout=60)
    assert r.status_code == 200 and len(r.content) == size


def test_one_user_holds_at_most_its_share_of_the_pool(db_url, home):
    """A pool of 4 lends one user at most 2 Libraries at once: its third
    request waits (holding none) and is refused with UserBusy after the
    wait, while another user still gets one; when the user gives one back,
    its next request is served."""
    from loupe.web.pool import LibraryPool, UserBusy

    pool = LibraryPool(lambda: Library.open(home, database_url=db_url), size=4, wait_s=0.5)
    try:
        assert pool.per_user == 2
        with pool.admit(lambda lib: "bob") as (_a, who_a), pool.admit(lambda lib: "bob") as _b:
            assert who_a == "bob"
            with pytest.raises(UserBusy, match="2 of the database connections one user"):
                with pool.admit(lambda lib: "bob"):
                    pass
            with pool.admit(lambda lib: "admin") as (lib, who):
                assert who == "admin" and lib.conn.execute("SELECT 1").fetchone() == (1,)
        with pool.admit(lambda lib: "bob") as (_lib, who):
            assert who == "bob"
        assert pool._free.qsize() == 4
    finally:
        pool.close()
