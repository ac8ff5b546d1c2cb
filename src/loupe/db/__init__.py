"""Storage: the PostgreSQL server (embedded or by URL), migrations, named queries."""

from .migrate import migrate
from .server import DATABASE_URL_ENV, DatabaseUnavailable, resolve_database_url

__all__ = ["migrate", "resolve_database_url", "DatabaseUnavailable", "DATABASE_URL_ENV"]
