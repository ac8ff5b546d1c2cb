"""The :class:`loupe.Library` methods of people (X2): a part of the
facade kept in its own module so that ``library.py`` stays short. Each method
delegates to the :mod:`loupe.faces.people` function its docstring names,
whose own docstring gives shapes and errors in full.
"""

from __future__ import annotations

from typing import Any

import psycopg

from .access.viewer import Viewer
from .faces import people
from .ingest.pipeline import ProgressFn


class PeopleMethods:
    """Mixed into :class:`loupe.Library`, whose attributes these methods use."""

    conn: psycopg.Connection
    tenant_id: int
    viewer: Viewer

    # -- people (X2; loupe.faces.people) ---------------------------------------------

    def _viewer_name(self) -> str:
        return self.viewer.name or "owner"

    def faces(self, *, progress: ProgressFn | None = None,
              limit: int | None = None) -> dict[str, Any]:
        """Find and cluster the faces not scanned yet. Stage: :func:`loupe.faces.people.scan`."""
        self._manage()
        return people.scan(self.conn, self.tenant_id, self.languages(),
                              progress=progress, limit=limit)

    def faces_status(self) -> dict[str, Any]:
        """Face detection's availability and counts. Stage: :func:`loupe.faces.people.stats`."""
        return people.stats(self.conn, self.tenant_id)

    def people(self, *, hidden: bool = False) -> list[dict[str, Any]]:
        """People on readable assets (``hidden``: admins only).
        Stage: :func:`loupe.faces.people.people`."""
        return people.people(self.conn, self.tenant_id, self.viewer.params(),
                                hidden=hidden and self.viewer.see_all)

    def person(self, person_id: int) -> dict[str, Any]:
        """One person and its readable faces. Stage: :func:`loupe.faces.people.person`."""
        return people.person(self.conn, self.tenant_id, self.viewer.params(), person_id)

    def asset_faces(self, asset_id: int) -> list[dict[str, Any]]:
        """The faces of one readable asset. Stage: :func:`loupe.faces.people.asset_faces`."""
        self._asset_row(asset_id)   # AssetNotFound
        return people.asset_faces(self.conn, self.tenant_id, self.viewer.params(), asset_id)

    def face_crop(self, face_id: int) -> bytes:
        """A readable face's JPEG crop. Stage: :func:`loupe.faces.people.crop`."""
        return people.crop(self.conn, self.tenant_id, self.viewer.params(), face_id)

    def name_person(self, person_id: int, name: str | None) -> dict[str, Any]:
        """Confirm a person's name (None: remove it). Stage: :func:`loupe.faces.people.name`."""
        self._manage()
        return people.name(self.conn, self.tenant_id, self.languages(),
                              person_id, name, by=self._viewer_name())

    def merge_people(self, source: int, target: int) -> dict[str, Any]:
        """Merge person ``source`` into ``target``. Stage: :func:`loupe.faces.people.merge`."""
        self._manage()
        return people.merge(self.conn, self.tenant_id, self.languages(),
                               source, target, by=self._viewer_name())

    def split_person(self, person_id: int, face_ids: list[int]) -> dict[str, Any]:
        """Move faces to a new unnamed person. Stage: :func:`loupe.faces.people.split`."""
        self._manage()
        return people.split(self.conn, self.tenant_id, self.languages(), person_id, face_ids)

    def hide_person(self, person_id: int, hidden: bool = True) -> dict[str, Any]:
        """Hide (or show again) a person. Stage: :func:`loupe.faces.people.hide`."""
        self._manage()
        return people.hide(self.conn, self.tenant_id, self.languages(), person_id, hidden)

    def reject_face(self, face_id: int) -> dict[str, Any]:
        """"Not this person", remembered. Stage: :func:`loupe.faces.people.reject`."""
        self._manage()
        return people.reject(self.conn, self.tenant_id, self.languages(),
                                face_id, by=self._viewer_name())
