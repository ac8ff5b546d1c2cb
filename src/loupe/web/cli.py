"""``loupe serve``: the web app and REST API on one port (uvicorn)."""

from __future__ import annotations

import json
import sys

import click

from ..access.users import UnknownUser
from ..terminal import echo
from .connections import (ACCEPT_BACKLOG, AcceptErrorFilter, ConnectionLimits,
                          guarded_protocol, fit_descriptor_limit)


def exit_on_sigterm() -> None:
    """Make SIGTERM a normal exit. uvicorn shuts down on SIGTERM and then
    raises the signal again under the handler that was there before it; with
    the default handler the process died before its exit hooks ran, leaving
    the embedded PostgreSQL running (a fresh user found it after
    ``timeout ... loupe serve``). With this handler the hooks run and the
    server is stopped when its last user exits."""
    import signal

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))


def proxy_options(trusted_proxies: tuple[str, ...] | list[str]) -> dict[str, object]:
    """uvicorn's proxy settings for ``loupe serve``: ``{"proxy_headers",
    "forwarded_allow_ips"}``.

    uvicorn by default believes ``X-Forwarded-For`` / ``X-Forwarded-Proto``
    from 127.0.0.1 and ::1, so any local process (or a same-host reverse
    proxy that passes the header through) could pick the client address the
    login throttle counts by. Off unless the admin names the
    proxies it trusts (``--trusted-proxy``); then only those.
    """
    trusted = [p.strip() for p in trusted_proxies if p.strip()]
    return {"proxy_headers": bool(trusted), "forwarded_allow_ips": ",".join(trusted)}


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on (0.0.0.0 exposes the library to the network).")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(1, 65535))
@click.option("--pool", "pool_size", default=4, show_default=True, type=click.IntRange(1, 64),
              help="Database connections (= searches running at once).")
@click.option("--log-level", default="info", show_default=True,
              type=click.Choice(["critical", "error", "warning", "info", "debug"]))
@click.option("--max-upload-mb", default=256, show_default=True, type=click.IntRange(1, 1 << 20),
              help="Largest body of one upload request, in MiB (refused with 413 before it "
                   "is read).")
@click.option("--upload-quota-mb", default=2048, show_default=True,
              type=click.IntRange(1, 1 << 30), help="Bytes each user may keep uploaded, in MiB.")
@click.option("--upload-quota-files", default=10_000, show_default=True,
              type=click.IntRange(1, 1 << 30), help="Files each user may keep uploaded.")
@click.option("--upload-max-words", default=300, show_default=True,
              type=click.IntRange(1, 100_000),
              help="Distinct words an uploaded image's name and metadata may hold (each is "
                   "indexed in every library language); an image over it is refused.")
@click.option("--statement-timeout-s", default=15.0, show_default=True,
              type=click.FloatRange(0.1, 3600),
              help="Longest database statement of a web request, in seconds (PostgreSQL's "
                   "statement_timeout on the server's connections); past it the request "
                   "answers 503.")
@click.option("--trusted-proxy", "trusted_proxies", multiple=True, metavar="ADDRESS",
              help="A reverse proxy (IP address or network) whose X-Forwarded-For and "
                   "X-Forwarded-Proto headers are believed; repeat for several. Default: none, "
                   "the headers are ignored (the login throttle counts the connecting address).")
@click.option("--slot-wait-s", default=5.0, show_default=True, type=click.FloatRange(0.1, 600),
              help="Longest wait for an upload slot, the decode slot of a picture to "
                   "search by, or a password-hashing slot (waited for without holding a "
                   "worker thread or database connection); then 503 with Retry-After.")
@click.option("--max-connections", default=1024, show_default=True,
              type=click.IntRange(1, 1 << 20),
              help="Open TCP connections at once, all clients; past it a new connection "
                   "is answered 503 and closed.")
@click.option("--max-connections-per-client", default=64, show_default=True,
              type=click.IntRange(1, 1 << 20),
              help="Open TCP connections of one client address (all of loopback is one "
                   "client, an IPv6 /64 is one; a --trusted-proxy is held only to "
                   "--max-connections).")
@click.option("--header-timeout-s", default=10.0, show_default=True,
              type=click.FloatRange(0.1, 3600),
              help="Seconds a connection may take to send a request's complete headers, "
                   "from its opening or its previous response; then it is closed.")
@click.option("--keep-alive-s", default=5.0, show_default=True, type=click.FloatRange(0.1, 3600),
              help="An idle connection is closed this long after its last response.")
@click.option("--min-body-rate", default=1024, show_default=True,
              type=click.IntRange(1, 1 << 30),
              help="Bytes a second a request body must arrive at, over each "
                   "--header-timeout-s window while the server is ready to read it; a "
                   "slower body's connection is closed.")
@click.option("--send-timeout-s", default=60.0, show_default=True,
              type=click.FloatRange(0.1, 3600),
              help="Seconds a response may wait for its client to take its bytes (a full "
                   "write buffer); then the connection is aborted. A download never holds "
                   "a database connection while it streams.")
@click.option("--body-timeout-s", default=30.0, show_default=True,
              type=click.FloatRange(0.1, 3600),
              help="Seconds a request body of any route but the upload and the picture to "
                   "search by may take to arrive in full; it is read before the route takes "
                   "a database connection, and a slower one is answered 408.")
@click.option("--background-every-s", default=10.0, show_default=True,
              type=click.FloatRange(0, 86_400),
              help="Seconds between the server's passes over what ingests and uploads leave "
                   "to do (hashes, machine words, people from names written in files, "
                   "vectors; an upload starts one at once); 0 leaves it to 'loupe hash', "
                   "'loupe enrich', 'loupe faces' and 'loupe embed'.")
@click.pass_obj
def serve(obj, host: str, port: int, pool_size: int, log_level: str, max_upload_mb: int,
          upload_quota_mb: int, upload_quota_files: int, upload_max_words: int = 300,
          statement_timeout_s: float = 15.0, trusted_proxies: tuple[str, ...] = (),
          max_connections: int = 1024, max_connections_per_client: int = 64,
          header_timeout_s: float = 10.0, keep_alive_s: float = 5.0,
          slot_wait_s: float = 5.0, min_body_rate: int = 1024,
          send_timeout_s: float = 60.0, body_timeout_s: float = 30.0,
          background_every_s: float = 10.0) -> None:
    """Serve the web app and the REST API (OpenAPI at /openapi.json).

    Log in with a user of the tenant ('loupe users add NAME [--admin]').
    Limits and defences: docs/security.md.
    """
    import uvicorn  # noqa: PLC0415 - only this command needs the server

    from .app import create_app  # noqa: PLC0415
    from .security import MiB, WebLimits  # noqa: PLC0415

    conn_limits = ConnectionLimits(max_connections=max_connections,
                                   max_per_client=max_connections_per_client,
                                   header_timeout_s=header_timeout_s, keep_alive_s=keep_alive_s,
                                   trusted_proxies=tuple(trusted_proxies),
                                   min_body_rate=min_body_rate,
                                   send_timeout_s=send_timeout_s)
    try:
        fit_descriptor_limit(conn_limits)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--max-connections") from exc
    # Fail here, with the CLI's clear message, if the library cannot be opened.
    obj.open().close()
    limits = WebLimits(max_upload_request_bytes=max_upload_mb * MiB,
                       upload_quota_bytes=upload_quota_mb * MiB,
                       upload_quota_files=upload_quota_files,
                       upload_max_words=upload_max_words,
                       statement_timeout_s=statement_timeout_s, slot_wait_s=slot_wait_s,
                       body_timeout_s=body_timeout_s)
    app = create_app(obj.home, database_url=obj.database_url, tenant=obj.tenant,
                     pool_size=pool_size, limits=limits, background_every_s=background_every_s)
    echo(f"Loupe on http://{host}:{port}/ (tenant {obj.tenant}; Ctrl-C stops)", err=True)
    exit_on_sigterm()
    uvicorn.run(app, host=host, port=port, log_level=log_level, access_log=log_level == "debug",
                **proxy_options(trusted_proxies), **connection_options(conn_limits))


def connection_options(limits) -> dict[str, object]:
    """uvicorn's settings for the connection limits of ``loupe serve``
    (:class:`loupe.web.connections.ConnectionLimits`): ``http`` (uvicorn's
    HTTP protocol class wrapped by :func:`~loupe.web.connections.guarded_protocol`)
    ``timeout_keep_alive`` and ``backlog`` (:data:`~loupe.web.connections.ACCEPT_BACKLOG`,
    the most connections asyncio accepts in one go). Also quiets asyncio's accept-error log to
    one line per 10 s (106 MB of it in ~40 s)."""
    import logging  # noqa: PLC0415

    from uvicorn.protocols.http.auto import AutoHTTPProtocol  # noqa: PLC0415

    asyncio_log = logging.getLogger("asyncio")
    if not any(isinstance(f, AcceptErrorFilter) for f in asyncio_log.filters):
        asyncio_log.addFilter(AcceptErrorFilter())
    return {"http": guarded_protocol(AutoHTTPProtocol, limits),
            "timeout_keep_alive": limits.keep_alive_s, "backlog": ACCEPT_BACKLOG}


@click.command("token")
@click.argument("name")
@click.option("--label", default="", help="What the token is for.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def users_token(obj, name: str, label: str, as_json: bool) -> None:
    """Print a new API bearer token for user NAME (shown once; stored as a hash)."""
    from .auth import issue_token  # noqa: PLC0415

    with obj.open() as lib:
        try:
            user = lib.as_user(name).user
        except UnknownUser as exc:
            raise click.ClickException(str(exc)) from exc
        token = issue_token(lib, user["id"], "api", label=label)
    if as_json:
        echo(json.dumps({"user": name, "label": label, "token": token["token"]}))
    else:
        echo(token["token"])
