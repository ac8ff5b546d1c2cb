"""Honest clients' search latency with and without one member's stall
attack, against a real ``loupe serve`` (default pool of 4) on loopback.

Usage:
    .venv/bin/python benchmarks/slow_clients.py [--images 300] [--clients 8] [--seconds 20]
    .venv/bin/python benchmarks/slow_clients.py --record       # append to RESULTS.md

A generated library (``benchmarks/http_search.py``'s ``generate``: small
PNGs named by words) plus one 12 MB original (a noise PNG) in a collection
the member ``mallory`` may read. Two phases on the same server, each
``--warmup`` then ``--seconds`` of recording: ``--clients`` honest clients
(threads with keep-alive ``httpx`` clients, each an admin of its own) cycling through ``http_search.QUERIES``; in the second
phase ``mallory`` at the same time holds four downloads of the large
original that it never reads and four form posts to ``/ask/{id}/chips``
trickled at 2 KiB/s (above ``--min-body-rate``), each re-opened as soon as
the server closes it. The answer is each phase's p50/p95/p99 and the ratio
of the p95s (the bound asked for: at most 2), and every honest request's
status (an answer other than 200 is counted as an error).
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from http_search import QUERIES, free_port, generate, pct  # noqa: E402
from loupe import Library  # noqa: E402

SIDE = 2000          # the large original: 2000 x 2000 noise, ~12 MB


def honest_tokens(home: Path, n: int) -> list[str]:
    """An API token for each of ``n`` admins ``honest0`` ... (one user each:
    the server's per-user share of the pool applies to each alone)."""
    from loupe.web.auth import issue_token

    out = []
    with Library.open(home) as lib:
        for k in range(n):
            user = lib.create_user(f"honest{k}", f"honest{k}-password", admin=True)
            out.append(issue_token(lib, user["id"], "api", label="slow_clients")["token"])
    return out


def prepare(home: Path, images: int) -> int:
    """The library, the member ``mallory`` and the large original; returns its asset id."""
    from PIL import Image

    generate(home, images)
    big = home.parent / "photos" / "big" / "noise.png"
    big.parent.mkdir(parents=True, exist_ok=True)
    Image.frombytes("RGB", (SIDE, SIDE), os.urandom(SIDE * SIDE * 3)).save(big, compress_level=0)
    with Library.open(home) as lib:
        lib.ingest(home.parent / "photos")
        lib.create_user("mallory", "mallory-password")
        lib.grant("mallory", collection="big")
        return lib.conn.execute("SELECT asset_id FROM asset_file WHERE rel_path LIKE "
                                "'%noise.png'").fetchone()[0]


class Attack:
    """Four unread downloads and four trickled forms of one member, each
    re-opened when the server closes it, until :meth:`stop`."""

    def __init__(self, port: int, token: str, asset_id: int, cid: int):
        self.port, self.stop_flag = port, threading.Event()
        self.auth = f"Authorization: Bearer {token}\r\n"
        self.asset_id, self.cid = asset_id, cid
        self.reopened = 0
        self.threads = [threading.Thread(target=self._download) for _ in range(4)] + \
            [threading.Thread(target=self._trickle) for _ in range(4)]
        for t in self.threads:
            t.start()

    def _download(self) -> None:
        while not self.stop_flag.is_set():
            c = socket.socket()
            c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            try:
                c.connect(("127.0.0.1", self.port))
                c.sendall(f"GET /api/assets/{self.asset_id}/original HTTP/1.1\r\n"
                          f"host: 127.0.0.1\r\n{self.auth}\r\n".encode())
                c.settimeout(0.5)
                while not self.stop_flag.is_set():     # never read: wait for the server's close
                    try:
                        if c.recv(1, socket.MSG_PEEK) == b"":
                            break
                    except TimeoutError:
                        continue
                    except OSError:
                        break
                    self.stop_flag.wait(0.5)
            except OSError:
                pass
            finally:
                c.close()
            self.reopened += 1

    def _trickle(self) -> None:
        body = b"text=" + b"a" * 400_000
        while not self.stop_flag.is_set():
            c = socket.socket()
            try:
                c.connect(("127.0.0.1", self.port))
                c.sendall(f"POST /ask/{self.cid}/chips HTTP/1.1\r\nhost: 127.0.0.1\r\n"
                          f"{self.auth}content-type: application/x-www-form-urlencoded\r\n"
                          f"content-length: {len(body)}\r\n\r\n".encode())
                sent = 0
                while not self.stop_flag.is_set() and sent < len(body):
                    c.sendall(body[sent:sent + 2048])
                    sent += 2048
                    self.stop_flag.wait(1.0)
            except OSError:
                pass
            finally:
                c.close()
            self.reopened += 1

    def stop(self) -> None:
        self.stop_flag.set()
        for t in self.threads:
            t.join()


def phase(base: str, tokens: list[str], warmup: float, seconds: float) -> tuple[list[float], int]:
    """Latencies (ms) of the honest clients' searches after ``warmup``, and errors."""
    latencies: list[list[float]] = [[] for _ in tokens]
    errors = [0] * len(tokens)
    start = time.perf_counter()
    warm_until, stop_at = start + warmup, start + warmup + seconds

    def client(k: int) -> None:
        i = k
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {tokens[k]}"},
                          timeout=60) as c:
            while time.perf_counter() < stop_at:
                q = QUERIES[i % len(QUERIES)]
                i += 1
                t0 = time.perf_counter()
                try:
                    r = c.get("/api/search", params={"q": q, "limit": 24})
                    ok = r.status_code == 200
                except httpx.HTTPError:
                    ok = False
                dt = time.perf_counter() - t0
                if not ok:
                    errors[k] += 1
                elif t0 >= warm_until:
                    latencies[k].append(dt * 1000)

    threads = [threading.Thread(target=client, args=(k,)) for k in range(len(tokens))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return [x for xs in latencies for x in xs], sum(errors)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--images", type=int, default=300)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--warmup", type=float, default=5.0)
    ap.add_argument("--record", action="store_true", help="append the result to RESULTS.md")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="loupe-slow-"))
    try:
        home = tmp / "home"
        print(f"generating a library of {args.images:,} images and a 12 MB original …",
              flush=True)
        asset_id = prepare(home, args.images)
        tokens = honest_tokens(home, args.clients)
        port = free_port()
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            [str(ROOT / "src")] + ([os.environ["PYTHONPATH"]]
                                   if os.environ.get("PYTHONPATH") else []))}
        server = subprocess.Popen([sys.executable, "-m", "loupe.cli", "--home", str(home),
                                   "serve", "--port", str(port), "--log-level", "warning"],
                                  env=env)
        base = f"http://127.0.0.1:{port}"
        try:
            for _ in range(300):
                try:
                    if httpx.get(base + "/login", timeout=1).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                time.sleep(0.2)
            else:
                raise SystemExit("loupe serve did not start")
            mallory = httpx.post(base + "/api/tokens", json={
                "name": "mallory", "password": "mallory-password"}, timeout=60).json()["token"]
            cid = httpx.post(base + "/api/conversations", json={"sentence": "cats"},
                             headers={"Authorization": f"Bearer {mallory}"},
                             timeout=60).json()["conversation"]
            load0 = os.getloadavg()[0]
            quiet, quiet_err = phase(base, tokens, args.warmup, args.seconds)
            attack = Attack(port, mallory, asset_id, cid)
            try:
                loud, loud_err = phase(base, tokens, args.warmup, args.seconds)
            finally:
                attack.stop()
            load1 = os.getloadavg()[0]
        finally:
            server.terminate()
            server.wait(timeout=30)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    if not quiet or not loud:
        raise SystemExit(f"no successful request (errors {quiet_err}, {loud_err})")
    rows = []
    for name, lat, err in (("without the attacker", quiet, quiet_err),
                           ("with the attacker", loud, loud_err)):
        rows.append((name, len(lat), err, pct(lat, 50), pct(lat, 95), pct(lat, 99)))
    ratio = rows[1][4] / rows[0][4]
    lines = [f"{r[0]}: {r[1]:,} ok, {r[2]} not 200; p50 {r[3]:.1f} ms, p95 {r[4]:.1f} ms, "
             f"p99 {r[5]:.1f} ms" for r in rows]
    lines.append(f"p95 with / without the attacker: {ratio:.2f} (bound: 2)")
    lines.append(f"machine load (1-min average, all users): {load0:.1f} before, {load1:.1f} "
                 f"after; attacker connections re-opened: {attack.reopened}")
    print("\n".join(lines))
    if args.record:
        cmd = "python benchmarks/slow_clients.py " + " ".join(sys.argv[1:])
        with open(ROOT / "benchmarks/RESULTS.md", "a", encoding="utf-8") as f:
            f.write(f"\n## Honest clients beside a member's stall attack — "
                    f"`benchmarks/slow_clients.py`, {datetime.now(timezone.utc):%Y-%m-%d %H:%M} "
                    f"UTC\n\n```sh\n{cmd}\n```\n\n"
                    f"{args.clients} honest clients searching on loopback against `loupe serve` "
                    f"(default pool of 4), {args.seconds:.0f} s after {args.warmup:.0f} s "
                    f"warm-up per phase, on one server; the attacker: 4 unread downloads of a "
                    f"12 MB original and 4 forms trickled at 2 KiB/s.\n\n"
                    f"| phase | searches ok | not 200 | p50 ms | p95 ms | p99 ms |\n"
                    f"|---|---|---|---|---|---|\n"
                    + "".join(f"| {r[0]} | {r[1]:,} | {r[2]} | {r[3]:.1f} | {r[4]:.1f} | "
                              f"{r[5]:.1f} |\n" for r in rows)
                    + f"\np95 with / without the attacker: **{ratio:.2f}** (bound: 2). Machine "
                      f"load {load0:.1f} before, {load1:.1f} after (2 cores shared with other "
                      f"work).\n")


if __name__ == "__main__":
    main()
