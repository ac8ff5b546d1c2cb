"""The :class:`loupe.Library` methods of models, vector lanes, search by
image and machine words: a part of the facade kept in its own module so that
``library.py`` stays short. Each method delegates to the stage function its
docstring names, whose own docstring gives shapes, units and errors in full.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg

from .access.viewer import Viewer
from .ingest.pipeline import ProgressFn
from .models import registry, runtime
from .models.embedders import Embedder
from .pixels import enrich as machine_words
from .vector import lanes
from .vector.embed import EmbedSummary
from .similar import search


def _similar():   # imported when first used (``loupe`` commands start faster without it)
    return search


class ModelMethods:
    """Mixed into :class:`loupe.Library`, whose attributes these methods use."""

    conn: psycopg.Connection
    home: Path
    tenant_id: int
    viewer: Viewer

    # -- models and vector lanes (loupe.vector.lanes, loupe.models.registry) ---------

    def embedder(self, name: str) -> Embedder:
        """Model ``name``'s embedder. Stage: :func:`loupe.models.registry.embedder`."""
        return registry.embedder(self.home, name)

    def vectors_waiting(self) -> dict[str, int]:
        """Assets waiting for vectors, per lane. Stage: :func:`loupe.vector.lanes.waiting`."""
        return lanes.waiting(self.conn, self.tenant_id)

    def models(self) -> list[dict[str, Any]]:
        """Installed models and their lanes. Stage: :func:`loupe.vector.lanes.installed`."""
        return lanes.installed(self.conn, self.home, self.tenant_id)

    def install_model(self, source: str | Path, *, name: str | None = None) -> dict[str, Any]:
        """Install a model: ``{"name", "kind", "dims", "folder"}``; this process forgets
        its old copy. Stage: :func:`loupe.models.registry.install`."""
        m = registry.install(self.home, source, name=name)
        runtime.forget_model(self.home, m.name, m.folder)
        return {"name": m.name, "kind": m.kind, "dims": m.dims, "folder": str(m.folder)}

    def download_model(self, repo_id: str, *, name: str | None = None) -> dict[str, Any]:
        """Download and install a model: as :meth:`install_model`.
        Stage: :func:`loupe.models.registry.download`."""
        m = registry.download(self.home, repo_id, name=name)
        return {"name": m.name, "kind": m.kind, "dims": m.dims, "folder": str(m.folder)}

    def model_thresholds(self, name: str) -> dict[str, float]:
        """A model's distance thresholds. Stage: :func:`loupe.models.registry.thresholds`."""
        return registry.thresholds(self.home, name)

    def set_model_thresholds(self, name: str, thresholds: dict[str, float], *,
                             provenance: dict[str, str] | None = None) -> dict[str, float]:
        """Override a model's distance thresholds by query length.
        Stage: :func:`loupe.models.registry.set_thresholds`."""
        return registry.set_thresholds(self.home, name, thresholds, provenance)

    def model_thresholds_provenance(self, name: str) -> dict[str, dict[str, str] | None]:
        """Where each of a model's thresholds came from.
        Stage: :func:`loupe.models.registry.thresholds_provenance`."""
        return registry.thresholds_provenance(self.home, name)

    def verify_model(self, name: str) -> dict[str, Any]:
        """Load a model and check its encoders. Stage: :func:`loupe.models.registry.verify`."""
        return registry.verify(registry.get_model(self.home, name))

    def use_model(self, name: str, lane: str) -> dict[str, Any]:
        """Make ``name`` the model of a lane. Stage: :func:`loupe.vector.lanes.use`."""
        return lanes.use(self.conn, self.home, self.tenant_id, name, lane)

    def build_variants(self, model: str) -> dict[str, int]:
        """Build the evaluation's vector sets. Stage: :func:`loupe.vector.lanes.variants`."""
        return lanes.variants(self.conn, self.home, self.tenant_id, model, self.languages()[0])

    def embed(self, *, lane: str | None = None, progress=None) -> list[EmbedSummary]:
        """Compute the missing vectors of the active lanes.
        Stage: :func:`loupe.vector.lanes.embed`."""
        return lanes.embed(self.conn, self.home, self.tenant_id, self.languages()[0],
                           lane=lane, progress=progress)

    # -- search by image (X1; loupe.similar) -----------------------------------------

    def similar(self, asset_id: int | None = None, *, file: str | Path | None = None,
                radius: int | None = None, limit: int = 20, offset: int = 0,
                max_pixels: int | None = None, full_decode_pixels: int | None = None):
        """Assets that look like an asset or an image file, on a standby when
        there is one (:meth:`loupe.Library._read`).
        Stage: :func:`loupe.similar.search.find_similar`."""
        return self._read(lambda lib: _similar().find_similar(
            lib, asset_id, file=file, radius=radius, limit=limit, offset=offset,
            max_pixels=max_pixels, full_decode_pixels=full_decode_pixels))[0]

    def duplicates(self, *, radius: int | None = None) -> list[dict[str, Any]]:
        """Near-duplicate and exact-bytes groups of readable assets.
        Stage: :func:`loupe.similar.search.duplicates`."""
        return _similar().duplicates(self.conn, self.tenant_id, self.viewer, radius=radius)

    def hash(self, *, progress: ProgressFn | None = None) -> dict[str, int]:
        """Compute missing perceptual hashes. Stage: :func:`loupe.similar.search.backfill`."""
        return _similar().backfill(self.conn, self.tenant_id, progress=progress)

    # -- machine words (loupe.pixels) --------------------------------------

    def enrich(self, *, progress: ProgressFn | None = None) -> dict[str, Any]:
        """Compute missing machine words. Stage: :func:`loupe.pixels.enrich.enrich`."""
        return machine_words.enrich(self.conn, self.tenant_id, self.languages(), progress=progress)

    def machine_settings(self) -> dict[str, Any]:
        """The machine words' settings. Stage: :func:`loupe.pixels.enrich.settings`."""
        return machine_words.settings(self.conn, self.tenant_id)

    def set_machine_settings(self, **changes: Any) -> dict[str, Any]:
        """Change the machine words' settings.
        Stage: :func:`loupe.pixels.enrich.change_settings`."""
        return machine_words.change_settings(self.conn, self.tenant_id, **changes)
