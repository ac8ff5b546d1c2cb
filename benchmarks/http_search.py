"""Search over HTTP: requests/s and latency percentiles of ``GET /api/search``
against a real ``loupe serve`` on loopback, at N concurrent clients.

Usage:
    .venv/bin/python benchmarks/http_search.py [--home demo/home] [--clients 8] [--seconds 30]
    .venv/bin/python benchmarks/http_search.py --generate 2000      # no demo: a generated library
    .venv/bin/python benchmarks/http_search.py --smoke              # seconds: every path (CI)

Library: ``--home`` (default ``./demo/home`` when ``scripts/demo.sh`` built
it), else, or with ``--generate N``, a fresh library of N generated images
(solid colours, file names drawn from a word list) in a temporary home. A
user ``bench`` (admin) is created in the library when missing, and an API
token issued for it; the server runs as a subprocess (``python -m loupe.cli
serve``, ``--pool`` connections). Each client is a thread with its own
keep-alive ``httpx.Client`` cycling through the query list (offset 0,
limit 24, the UI's page). After a warm-up (default 10 s) every request's wall time
is recorded, from sending the request to reading the whole JSON body.

The clients run on the same 2-core machine as the server and the database,
so the figures include that contention. Results are appended to
``benchmarks/RESULTS.md`` with ``--record``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import argparse
import math
import os
import random
import shutil
import socket
import statistics
import subprocess
import tempfile
import threading
import time
from datetime import datetime, timezone

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from loupe import Library  # noqa: E402

QUERIES = ["cat", "dog", "red apple", "bird", "flower", "tree", "car", "rice", "guitar",
           "house", "fish", "a yellow fruit", "madrid", "church", "horse", "bread",
           "musical instrument", "mountain", "train", "boat"]
WORDS = ["cat", "dog", "apple", "bird", "flower", "tree", "car", "rice", "guitar", "house",
         "fish", "banana", "church", "horse", "bread", "drum", "mountain", "train", "boat",
         "red", "blue", "green", "old", "small", "night", "summer", "river", "street"]


def pct(values: list[float], p: float) -> float:
    """Nearest-rank percentile."""
    values = sorted(values)
    return values[max(0, min(len(values) - 1, math.ceil(p / 100 * len(values)) - 1))]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def generate(home: Path, n: int) -> None:
    """A library of ``n`` generated images named by 3 random words each."""
    from PIL import Image

    rng = random.Random(7)
    photos = home.parent / "photos"
    for i in range(n):
        folder = photos / rng.choice(WORDS[:10])
        folder.mkdir(parents=True, exist_ok=True)
        name = "-".join(rng.sample(WORDS, 3)) + f"-{i:05d}.png"
        Image.new("RGB", (32, 24), (i % 256, (i // 256) % 256, 7)).save(folder / name)
    with Library.open(home, create=True) as lib:
        lib.init(languages=["en"])
        lib.ingest(photos)


def bench_token(home: Path) -> tuple[str, int]:
    """An API token of the admin user ``bench`` (created when missing), and the
    number of assets."""
    from loupe.web.auth import issue_token

    with Library.open(home) as lib:
        user = lib.authenticate("bench", "bench-password")
        if user is None:
            user = lib.create_user("bench", "bench-password", admin=True)
        return issue_token(lib, user["id"], "api", label="benchmarks/http_search.py")["token"], \
            lib.stats()["assets"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--home", type=Path, help="library home (default ./demo/home if built)")
    ap.add_argument("--generate", type=int, metavar="N", help="use a generated library of N images")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--warmup", type=float, default=10.0,
                    help="seconds of load before recording (each pooled Library loads its models)")
    ap.add_argument("--pool", type=int, default=4, help="loupe serve --pool")
    ap.add_argument("--record", action="store_true", help="append the result to RESULTS.md")
    ap.add_argument("--smoke", action="store_true",
                    help="seconds: a generated library of 60 images, 2 clients, 3 s (CI runs this)")
    args = ap.parse_args()
    if args.smoke:
        args.generate, args.clients, args.seconds, args.warmup = 60, 2, 3.0, 1.0
        args.home, args.record = None, False

    tmp = None
    if args.generate or (args.home is None and not (ROOT / "demo/home/pgdata").is_dir()):
        tmp = Path(tempfile.mkdtemp(prefix="loupe-http-"))
        home, n_gen = tmp / "home", args.generate or 2000
        print(f"generating a library of {n_gen:,} images in {home} …", flush=True)
        generate(home, n_gen)
        library = f"generated, {n_gen:,} images"
    else:
        home = (args.home or ROOT / "demo/home").resolve()
        library = f"{home} (demo library)" if args.home is None else str(home)
    token, n_assets = bench_token(home)

    port = free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT / "src")] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []))}
    server = subprocess.Popen([sys.executable, "-m", "loupe.cli", "--home", str(home), "serve",
                               "--port", str(port), "--pool", str(args.pool),
                               "--log-level", "warning"], env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                if httpx.get(base + "/openapi.json", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        else:
            raise SystemExit("loupe serve did not start")

        load_before = os.getloadavg()[0]
        headers = {"Authorization": f"Bearer {token}"}
        latencies: list[list[float]] = [[] for _ in range(args.clients)]
        errors = [0] * args.clients
        totals: dict[str, tuple[int, str]] = {}
        start = time.perf_counter()
        warm_until, stop_at = start + args.warmup, start + args.warmup + args.seconds

        def client(k: int) -> None:
            i = k
            with httpx.Client(base_url=base, headers=headers, timeout=30) as c:
                while True:
                    now = time.perf_counter()
                    if now >= stop_at:
                        return
                    q = QUERIES[i % len(QUERIES)]
                    i += 1
                    t0 = time.perf_counter()
                    r = c.get("/api/search", params={"q": q, "limit": 24})
                    if r.status_code != 200:
                        errors[k] += 1
                        continue
                    body = r.json()
                    dt = time.perf_counter() - t0
                    totals[q] = (body["total"], body["verdict"])
                    if t0 >= warm_until:
                        latencies[k].append(dt)

        threads = [threading.Thread(target=client, args=(k,)) for k in range(args.clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        server.terminate()
        server.wait(timeout=30)
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)

    load_after = os.getloadavg()[0]
    lat = [x * 1000 for xs in latencies for x in xs]
    n = len(lat)
    if not n:
        raise SystemExit(f"no successful request ({sum(errors)} errors)")
    if args.smoke and sum(errors):
        raise SystemExit(f"smoke run: {sum(errors)} requests failed")
    rps = n / args.seconds
    p50, p95, p99 = pct(lat, 50), pct(lat, 95), pct(lat, 99)
    lines = [
        f"library: {library}, {n_assets:,} assets; {args.clients} clients, {args.seconds:.0f} s "
        f"after {args.warmup:.0f} s warm-up, server pool {args.pool}",
        f"requests: {n:,} ok, {sum(errors)} errors → {rps:.1f} requests/s",
        f"latency ms: p50 {p50:.1f}, p95 {p95:.1f}, p99 {p99:.1f}, mean "
        f"{statistics.fmean(lat):.1f}, max {max(lat):.1f}",
        f"machine load (1-min average, all users): {load_before:.1f} before, "
        f"{load_after:.1f} after",
        "totals seen: " + ", ".join(f"{q} {t:,} {v}" for q, (t, v) in sorted(totals.items())),
    ]
    print("\n".join(lines))
    if args.record:
        cmd = "python benchmarks/http_search.py " + " ".join(sys.argv[1:])
        with open(ROOT / "benchmarks/RESULTS.md", "a", encoding="utf-8") as f:
            f.write(f"\n## HTTP search — `benchmarks/http_search.py`, "
                    f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC\n\n```sh\n{cmd}\n```\n\n"
                    f"| measure | value |\n|---|---|\n"
                    f"| library | {library}, {n_assets:,} assets |\n"
                    f"| load | {args.clients} concurrent clients (threads, keep-alive httpx) on "
                    f"loopback, same machine; {args.seconds:.0f} s after {args.warmup:.0f} s warm-up; "
                    f"`loupe serve --pool {args.pool}` |\n"
                    f"| throughput | **{rps:.1f} requests/s** ({n:,} ok, {sum(errors)} errors) |\n"
                    f"| latency | p50 {p50:.1f} ms, **p95 {p95:.1f} ms** (target ≤ 150), "
                    f"p99 {p99:.1f} ms |\n"
                    f"| machine load | 1-min load average {load_before:.1f} before, "
                    f"{load_after:.1f} after (2 cores, shared with other work) |\n")


if __name__ == "__main__":
    main()
