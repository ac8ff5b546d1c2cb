"""The viewer a statement runs for.

Every search statement takes two parameters from the viewer, ``see_all``
and ``principals``, and passes them to ``loupe_can_read`` (migration 0005)
wherever it reads assets: the postings walk, the vector scans, the bands,
the counts. The local owner (the CLI, the Python API without a user) and a
tenant's admins see everything in their tenant; a member sees the assets
granted to it or to one of its groups, once their embargo has passed and
before their usage rights expire.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Viewer:
    """Who is asking.

    Attributes:
        see_all: reads every asset of the tenant (owner, admin).
        principals: the user's principal id and its groups' ids (members).
        user_id: the user's principal id; None for the local owner.
        name: the user's name, or ``"owner"``.
        admin: whether the user is an admin of its tenant.
        groups: the names of its groups.
    """

    see_all: bool
    principals: tuple[int, ...] = ()
    user_id: int | None = None
    name: str = "owner"
    admin: bool = False
    groups: tuple[str, ...] = field(default_factory=tuple)

    def params(self) -> dict[str, Any]:
        """The statement parameters ``see_all`` and ``principals``."""
        return {"see_all": self.see_all, "principals": list(self.principals)}

    def as_dict(self) -> dict[str, Any] | None:
        """``{"id", "name", "admin", "groups"}``, or None for the local owner."""
        if self.user_id is None:
            return None
        return {"id": self.user_id, "name": self.name, "admin": self.admin,
                "groups": list(self.groups)}


#: The local owner: the CLI and the Python API without a user.
OWNER = Viewer(see_all=True)
