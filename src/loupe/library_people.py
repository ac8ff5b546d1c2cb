"""The :class:`loupe.Library` methods of people (X2): a part of the
facade kept in its own module so that ``library.py`` stays short. Each method
delegates to the :mod:`loupe.faces.people` function its docstring names,
whose own docstring gives shapes and errors in full.
"""

from __future__ import annotations

from typing import Any

import psycopg

from .access.viewer import Viewer
from .db.retry import retrying
from .faces import people, regions
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
        """Find and cluster the faces not scanned yet, then make faces of the
        names written in files that no face covers (``regions``: ``{"assets",
        "faces", "people"}``). With face detection not installed, the names
        in files still become people before FacesUnavailable is raised.
        Stages: :func:`loupe.faces.people.scan`,
        :func:`loupe.faces.regions.faces_from_regions`."""
        self._manage()
        try:
            out = people.scan(self.conn, self.tenant_id, self.languages(),
                                 progress=progress, limit=limit)
        except people.detect.FacesUnavailable:
            regions.faces_from_regions(self.conn, self.tenant_id, self.languages())
            raise
        out["regions"] = regions.faces_from_regions(self.conn, self.tenant_id,
                                                       self.languages())
        return out

    def file_names_to_people(self) -> dict[str, int]:
        """Faces and people from the names written in files, without a
        detector. Stage: :func:`loupe.faces.regions.faces_from_regions`."""
        self._manage()
        return regions.faces_from_regions(self.conn, self.tenant_id, self.languages())

    def faces_status(self) -> dict[str, Any]:
        """Face detection's availability and counts. Stage: :func:`loupe.faces.people.stats`."""
        return people.stats(self.conn, self.tenant_id)

    def people(self, *, hidden: bool = False) -> list[dict[str, Any]]:
        """People on readable assets (``hidden``: admins only); this and the
        other people reads run on a standby when there is one
        (:meth:`loupe.Library._read`).
        Stage: :func:`loupe.faces.people.people`."""
        return self._read(lambda lib: people.people(
            lib.conn, lib.tenant_id, lib.viewer.params(),
            hidden=hidden and lib.viewer.see_all))[0]

    def person(self, person_id: int) -> dict[str, Any]:
        """One person and its readable faces. Stage: :func:`loupe.faces.people.person`."""
        return self._read(lambda lib: people.person(lib.conn, lib.tenant_id,
                                                       lib.viewer.params(), person_id))[0]

    def asset_faces(self, asset_id: int) -> list[dict[str, Any]]:
        """The faces of one readable asset. Stage: :func:`loupe.faces.people.asset_faces`."""
        self._asset_row(asset_id)   # AssetNotFound
        return self._read(lambda lib: people.asset_faces(lib.conn, lib.tenant_id,
                                                            lib.viewer.params(), asset_id))[0]

    def face_crop(self, face_id: int) -> bytes:
        """A readable face's JPEG crop. Stage: :func:`loupe.faces.people.crop`."""
        return people.crop(self.conn, self.tenant_id, self.viewer.params(), face_id)

    def name_person(self, person_id: int, name: str | None) -> dict[str, Any]:
        """Confirm a person's name (None: remove it). Stage: :func:`loupe.faces.people.name`."""
        self._manage()
        languages = self.languages()
        # a deadlock with another writer of the same documents is run again
        return retrying(self.conn, lambda: people.name(
            self.conn, self.tenant_id, languages, person_id, name, by=self._viewer_name()))

    def merge_people(self, source: int, target: int) -> dict[str, Any]:
        """Merge person ``source`` into ``target``. Stage: :func:`loupe.faces.people.merge`."""
        self._manage()
        languages = self.languages()
        return retrying(self.conn, lambda: people.merge(
            self.conn, self.tenant_id, languages, source, target, by=self._viewer_name()))

    def split_person(self, person_id: int, face_ids: list[int]) -> dict[str, Any]:
        """Move faces to a new unnamed person. Stage: :func:`loupe.faces.people.split`."""
        self._manage()
        languages = self.languages()
        return retrying(self.conn, lambda: people.split(
            self.conn, self.tenant_id, languages, person_id, face_ids))

    def hide_person(self, person_id: int, hidden: bool = True) -> dict[str, Any]:
        """Hide (or show again) a person. Stage: :func:`loupe.faces.people.hide`."""
        self._manage()
        languages = self.languages()
        return retrying(self.conn, lambda: people.hide(
            self.conn, self.tenant_id, languages, person_id, hidden))

    def reject_face(self, face_id: int) -> dict[str, Any]:
        """"Not this person", remembered. Stage: :func:`loupe.faces.people.reject`."""
        self._manage()
        languages = self.languages()
        return retrying(self.conn, lambda: people.reject(
            self.conn, self.tenant_id, languages, face_id, by=self._viewer_name()))
