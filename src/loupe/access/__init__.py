"""Who may see what (P1, P3): users, groups, grants, embargoes and
usage-rights expiry, applied as WHERE clauses of the search statement."""

from .viewer import OWNER, Viewer

__all__ = ["OWNER", "Viewer"]
