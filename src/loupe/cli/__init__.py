"""The ``loupe`` command. Each subcommand calls the :class:`loupe.Library` method
of the same name; ``--json`` prints that method's result for scripts.

The root group (:func:`main`, the console script ``loupe``) is here; the
commands live in one module per command group and are added to it below. The
modules import only :mod:`.context` (consoles, the library opener, ``--json``),
:mod:`.options` (shared option decorators) and each other's helpers, never
this package, so the tree has no import circle."""

from __future__ import annotations

import click

from ..eval.cli import eval_group
from ..terminal import SafeGroup
from ..web.cli import serve, users_token
from .admin import settings, stats, stop, vocabulary
from .ask import ask, conversations
from .bulk import audit, bulk
from .context import _Ctx
from .ingest import enrich_cmd, failures, hash_cmd, ingest, init
from .jobs import status, worker
from .models import embed, models
from .people import faces_cmd, people
from .search import analyze, collections, explain_cmd, original, search, show, thumbnail
from .similar import duplicates_cmd, similar_cmd
from .users import grant, users


@click.group(cls=SafeGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--home", envvar="LOUPE_HOME", type=click.Path(file_okay=False),
              help="Library home (embedded database, thumbnails). Default: $LOUPE_HOME or ~/.loupe")
@click.option("--database-url", envvar="LOUPE_DATABASE_URL",
              help="Use this PostgreSQL (with pgvector) instead of the embedded one.")
@click.option("--tenant", default="default", show_default=True, help="Tenant to act in.")
@click.option("--user", envvar="LOUPE_USER", metavar="NAME",
              help="Act as this user: search, show and bulk see only what it may read. "
                   "Default: the library's owner, who sees everything.")
@click.version_option(package_name="loupe")
@click.pass_context
def main(ctx: click.Context, home: str | None, database_url: str | None, tenant: str,
         user: str | None) -> None:
    """Loupe: search an image library by its words and its pixels."""
    ctx.obj = _Ctx(home, database_url, tenant, user)


# the web app's token command is a users subcommand
users.add_command(users_token, "token")
for _command in (init, ingest, search, show, analyze, settings, models, embed, vocabulary,
                 failures, stop, stats, thumbnail, original, users, grant, bulk, collections,
                 audit, serve, eval_group, enrich_cmd, similar_cmd, duplicates_cmd, hash_cmd,
                 faces_cmd, people, ask, conversations, worker, status, explain_cmd):
    main.add_command(_command)
del _command
