"""A real ``loupe serve`` subprocess for tests that need real sockets
(slow readers, trickled bodies): started on a free loopback port over a
test library, stopped with SIGTERM."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

import loupe

SRC = str(Path(loupe.__file__).resolve().parents[1])


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on now."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class LiveServer:
    """``loupe serve ARGS`` over ``home`` / ``url``; ``base`` is its URL,
    :meth:`log` its output so far, :meth:`stop` ends it."""

    def __init__(self, home: Path, url: str, tmp: Path, *args: str):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log_path = tmp / f"serve-{self.port}.log"
        self._log = open(self.log_path, "w")
        env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "loupe.cli", "--home", str(home), "--database-url", url,
             "serve", "--port", str(self.port), *args],
            env=env, stdout=self._log, stderr=subprocess.STDOUT)
        for _ in range(300):
            if self.proc.poll() is not None:
                raise RuntimeError(self.log_path.read_text())
            try:
                if httpx.get(self.base + "/login", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        else:
            raise RuntimeError("loupe serve did not start: " + self.log_path.read_text())

    def log(self) -> str:
        self._log.flush()
        return self.log_path.read_text()

    def token(self, user: str, password: str) -> dict[str, str]:
        """``Authorization`` header of a fresh API token of ``user``."""
        r = httpx.post(self.base + "/api/tokens", json={"name": user, "password": password},
                       timeout=60)
        assert r.status_code == 200, r.text
        return {"Authorization": f"Bearer {r.json()['token']}"}

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        finally:
            self._log.close()
