"""What every command shares: the consoles, the options of the root group
(home, database, tenant, user) and how a command opens the library with them,
and the JSON printer of ``--json``."""

from __future__ import annotations

import json
from typing import Any

import click

from ..db import DatabaseUnavailable
from ..db.migrate import MigrationError
from ..access.users import UnknownUser
from ..lexical.settings import SettingError
from ..terminal import SafeConsole, echo
from ..library import Library, LibraryNotInitialized, UnknownTenant


# Off a terminal (pipes, logs) rich would wrap at 80 columns, breaking
# sentences and paths; use a wide page there instead.
console = SafeConsole()
if not console.is_terminal:
    console = SafeConsole(width=200)
err_console = SafeConsole(stderr=True)


def _assets(n: int) -> str:
    """``n`` assets, in words: "1 asset", "1,204 assets"."""
    return f"{n:,} asset{'' if n == 1 else 's'}"


def _emit_json(data: Any) -> None:
    echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))


class _Ctx:
    def __init__(self, home: str | None, database_url: str | None, tenant: str,
                 user: str | None = None):
        self.home = home
        self.database_url = database_url
        self.tenant = tenant
        self.user = user

    def open(self, create: bool = False) -> Library:
        try:
            lib = Library.open(self.home, database_url=self.database_url, tenant=self.tenant,
                               create=create)
        except (DatabaseUnavailable, UnknownTenant, LibraryNotInitialized,
                SettingError, MigrationError) as exc:
            raise click.ClickException(str(exc)) from exc
        if self.user:
            try:
                return lib.as_user(self.user)
            except UnknownUser as exc:
                lib.close()
                raise click.ClickException(str(exc)) from exc
        return lib
