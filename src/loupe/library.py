"""The Python API. Each ``loupe`` CLI command is one method here.

    >>> from loupe import Library
    >>> with Library.open("~/.loupe", create=True) as lib:    # doctest: +SKIP
    ...     lib.init(languages=["en", "fr"])
    ...     summary = lib.ingest("~/Pictures/library")
    ...     result = lib.search("cheetah")
    ...     print(result.total, [h.title for h in result.hits])

``Library`` is a facade: each method checks who may call it, then delegates
to the stage that does the work (``db.session``, ``assets.view``,
``ingest``, ``search``, ``filters``, ``vector.lanes``, ``models.registry``,
``access.users``, ``bulk``, ``document.rebuild``, ``similar``, ``pixels``,
``faces.people``, ``conversation``), whose docstrings give the shapes and
errors in full. Methods that write for the tenant are for the owner and
admins only (:class:`AccessError` for a member).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import asdict
from datetime import datetime
from pathlib import Path
from typing import Any

import psycopg

from .access import users as access
from .access.users import AccessError, UnknownUser
from .access.viewer import OWNER, Viewer
from .assets import view
from .assets.view import AssetNotFound
from .bulk import run as bulk_run
from .bulk.actions import audit_log as read_audit_log
from .db import DATABASE_URL_ENV, session
from .db.session import LibraryNotInitialized, UnknownTenant
from .document import rebuild
from .document.languages import query_language, validate_languages
from .filters import facets as filter_facets, search as filter_search
from .fusion import settings as fusion_config
from .ingest.pipeline import MAX_PIXELS_LIMIT, IngestSummary, Ingester, ProgressFn, check_max_pixels
from .lexical import settings as lexical_bounds
from .lexical.search import analyze as analyze_text
from .models import registry, runtime
from .models.embedders import Embedder
from .scopes.search import collection_id
from .search.pipeline import BULK_MAX, OFFSET_MAX, SearchPipeline, SearchRequest, check_page
from .search.result import Hit, SearchResult
from .vector import lanes
from .vector.embed import EmbedSummary

__all__ = ["Library", "default_home", "AccessError", "AssetNotFound", "Hit",
           "LibraryNotInitialized", "SearchResult", "UnknownTenant", "UnknownUser",
           "BULK_MAX", "OFFSET_MAX", "MAX_PIXELS_LIMIT", "DATABASE_URL_ENV"]

HOME_ENV = "LOUPE_HOME"
DEFAULT_HOME = "~/.loupe"


def default_home() -> Path:
    """``$LOUPE_HOME`` or ``~/.loupe``."""
    return Path(os.environ.get(HOME_ENV) or DEFAULT_HOME).expanduser()


def _home(home: str | Path | None) -> Path:
    return Path(home).expanduser() if home else default_home()


# Stages imported when first used (``loupe`` commands start faster without them).
def _people():
    from .faces import people
    return people


def _store():
    from .conversation import store
    return store


def _csearch():
    from .conversation import search
    return search


def _enrich():
    from .pixels import enrich
    return enrich


class Library:
    """One tenant's view of a Loupe library.

    Args:
        conn: an autocommit psycopg connection to a migrated database.
        home: the library home (embedded database, thumbnails).
        tenant_id: every read and write is bound to this tenant.
        viewer: who is asking (default: the local owner, who sees everything
            in the tenant); see :meth:`as_user`.
    """

    #: Query-encoder failures (V6) and recent query vectors: the process's
    #: (:mod:`loupe.models.runtime`), shared by its libraries; an instance
    #: may be given its own (a test's clock).
    encoder_health = runtime.ENCODER_HEALTH
    query_vectors = runtime.QUERY_VECTORS
    #: Bounds of the fusion settings (see :data:`loupe.fusion.settings.FUSION_BOUNDS`).
    FUSION_BOUNDS = fusion_config.FUSION_BOUNDS

    def __init__(self, conn: psycopg.Connection, home: Path, tenant_id: int, tenant: str,
                 viewer: Viewer = OWNER):
        self.conn = conn
        self.home = home
        self.tenant_id = tenant_id
        self.tenant = tenant
        self.viewer = viewer

    # -- lifecycle --------------------------------------------------------------

    @classmethod
    def open(cls, home: str | Path | None = None, *, database_url: str | None = None,
             tenant: str = "default", create: bool = False) -> "Library":
        """Connect (starting the embedded PostgreSQL if no URL is configured),
        apply pending migrations and bind to ``tenant``; with ``create`` (what
        ``loupe init`` does) a missing library and tenant are created
        (:mod:`loupe.db.session`).

        Raises:
            loupe.db.DatabaseUnavailable: no database could be reached.
            LibraryNotInitialized: no library there and ``create`` is false.
            UnknownTenant: ``tenant`` does not exist and ``create`` is false.
            loupe.lexical.settings.SettingError: ``LOUPE_HNSW_EF_SEARCH`` or
                ``LOUPE_QUERY_VECTOR_CACHE`` is not a whole number in its range.
        """
        home_path = _home(home)
        conn = session.connect(home_path, database_url, create=create)
        try:
            return cls(conn, home_path, session.tenant_id(conn, tenant, create=create), tenant)
        except BaseException:
            conn.close()
            raise

    def close(self) -> None:
        """Close the connection (the embedded server stops when its last user exits)."""
        self.conn.close()

    @staticmethod
    def stop(home: str | Path | None = None, *, database_url: str | None = None,
             force: bool = False) -> dict[str, Any]:
        """Stop library ``home``'s embedded PostgreSQL server (``loupe stop``),
        after dropping the pids of dead processes from its users: ``{"pgdata",
        "was_running", "stopped", "stale_handles_removed", "users"}``.

        Raises:
            ValueError: a database URL is configured (not Loupe's server).
            loupe.db.server.ServerInUse: other live processes use it and
                ``force`` is false. loupe.db.DatabaseUnavailable: ``pg_ctl`` failed.
        """
        return session.stop(_home(home), database_url, force=force)

    def __enter__(self) -> "Library":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- library, ingest, search --------------------------------------------------

    def init(self, languages: list[str] | None = None) -> dict[str, Any]:
        """Set the library languages (one search document per asset per
        language; the list replaces the previous one and documents follow,
        :func:`loupe.document.rebuild.set_languages`). Returns the tenant's
        settings. Raises ValueError: an empty list or an unknown code."""
        if languages is not None:
            rebuild.set_languages(self.conn, self.tenant_id, validate_languages(languages))
        return {"tenant": self.tenant, "home": str(self.home), "languages": self.languages()}

    def languages(self) -> list[str]:
        """The tenant's library languages, first = default query language."""
        return rebuild.languages(self.conn, self.tenant_id)

    def ingest(self, path: str | Path, *, progress: ProgressFn | None = None,
               max_pixels: int | None = None,
               on_wait: Callable[[str], None] | None = None) -> IngestSummary:
        """Ingest every image under ``path`` (:mod:`loupe.ingest.pipeline`);
        while another ingest of the same folder runs, wait for it, telling
        ``on_wait``. ``max_pixels``: default 150,000,000, at most
        :data:`MAX_PIXELS_LIMIT`.

        Raises:
            NotADirectoryError: ``path`` is not a folder.
            ValueError: ``max_pixels`` out of its range.
        """
        check_max_pixels(max_pixels)
        kwargs = {"max_pixels": max_pixels} if max_pixels else {}
        ingester = Ingester(self.conn, self.tenant_id, self.home, **kwargs)
        return ingester.ingest(path, progress=progress, on_wait=on_wait)

    def search(self, query: str, *, lang: str | None = None, limit: int = 20,
               offset: int = 0, scope: str | list[str] | None = None,
               title_band: bool = False, filters: Any = None,
               facets: bool = False) -> SearchResult:
        """Search the library (:class:`loupe.search.pipeline.SearchPipeline`):
        in ``scope``, a collection (path, ``id:42``, full path) with its
        sub-collections, or a list (their union); in ``lang``'s documents, or
        every language's (an asset's best); ``title_band``: every asset whose
        title holds all the terms stays reachable (C2); ``filters``: a filter
        tree (docs/filters.md; empty ``query``: the filtered set, newest
        first); ``facets``: with :meth:`facets`.

        Raises:
            ValueError: ``limit`` outside [1, BULK_MAX], ``offset`` outside [0,
                OFFSET_MAX], a stored setting out of range, ``lang`` not a library
                language, or the query too long (loupe.lexical.search.MAX_QUERY_*).
            loupe.filters.FilterError: a bad filter tree (named) or collection.
        """
        check_page(limit, offset)
        langs = [self._lang(lang)] if lang else self.languages()
        if filters is not None:   # issue 17: the filtered set is the search's scope
            res = filter_search.filtered_search(self, query, langs, limit, offset, scope, filters)
        else:
            res = SearchPipeline(self).run(SearchRequest(query, langs, limit, offset, scope,
                                                         title_band))
        if facets:
            res.facets = self.facets(query, lang=lang, scope=scope, filters=filters)
        return res

    def facets(self, query: str = "", *, filters: Any = None,
               scope: str | list[str] | None = None, lang: str | None = None,
               top: int = filter_facets.TOP) -> dict[str, Any]:
        """Top ``top`` values per facet of the whole result of :meth:`search`
        with the same arguments, with counts and the filter node narrowing
        to each (:func:`loupe.filters.facets.facets`): exact when the result
        is complete, lower bounds otherwise.

        Raises: as :meth:`search`; ValueError for ``top`` outside [1, 100].
        """
        filter_facets.check_top(top)   # before the work
        full = self.search(query, lang=lang, scope=scope, filters=filters, limit=BULK_MAX)
        exact = (full.verdict == "complete" and full.total_exact
                 and len(full.hits) == full.total)
        return filter_facets.facets(self.conn, self.tenant_id, self.viewer,
                                    [h.asset_id for h in full.hits], exact=exact, top=top)

    def analyze(self, text: str, *, lang: str | None = None, query: bool = False) -> list[str]:
        """The terms the analyzer of ``lang`` emits for ``text``: every term in
        document order, or with ``query=True`` the distinct terms a query searches."""
        return analyze_text(self.conn, text, self._lang(lang), query=query)

    def _lang(self, lang: str | None) -> str:
        return query_language(self.languages(), lang)

    # -- models and vector lanes (loupe.vector.lanes, loupe.models.registry) --------

    def embedder(self, name: str) -> Embedder:
        """Installed model ``name``'s embedder, one per process shared by every
        Library (:func:`loupe.models.registry.embedder`). Raises ModelError."""
        return registry.embedder(self.home, name)

    def vectors_waiting(self) -> dict[str, int]:
        """Assets without a vector of their lane's active model, per lane."""
        return lanes.waiting(self.conn, self.tenant_id)

    def models(self) -> list[dict[str, Any]]:
        """Installed models, and the lanes of this tenant each one serves."""
        return lanes.installed(self.conn, self.home, self.tenant_id)

    def install_model(self, source: str | Path, *, name: str | None = None) -> dict[str, Any]:
        """Install a model from a folder or archive (:func:`loupe.models.registry.install`)."""
        m = registry.install(self.home, source, name=name)
        runtime.forget_model(self.home, m.name, m.folder)
        return {"name": m.name, "kind": m.kind, "dims": m.dims, "folder": str(m.folder)}

    def download_model(self, repo_id: str, *, name: str | None = None) -> dict[str, Any]:
        """Download a model from the model hub and install it (fails clearly offline)."""
        m = registry.download(self.home, repo_id, name=name)
        return {"name": m.name, "kind": m.kind, "dims": m.dims, "folder": str(m.folder)}

    def model_thresholds(self, name: str) -> dict[str, float]:
        """A model's distance thresholds by query length, read only
        (:func:`loupe.models.registry.thresholds`). Raises ModelError."""
        return registry.thresholds(self.home, name)

    def set_model_thresholds(self, name: str, thresholds: dict[str, float], *,
                             provenance: dict[str, str] | None = None) -> dict[str, float]:
        """Override a model's distance thresholds by query length (keys ``1``,
        ``2``, ``3-5``, ``6-10``, ``11+``; cosine distances in (0, 2]), with
        their ``provenance`` ``{"set", "split", "metric", "date"}``, else "by
        hand" (:func:`loupe.models.registry.set_thresholds`). Returns those in force.

        Raises:
            ModelError: unknown model. ValueError: unknown key, value out of
                range, or a bad provenance record.
        """
        return registry.set_thresholds(self.home, name, thresholds, provenance)

    def model_thresholds_provenance(self, name: str) -> dict[str, dict[str, str] | None]:
        """Where each of a model's thresholds came from, read only
        (:func:`loupe.models.registry.thresholds_provenance`). Raises ModelError."""
        return registry.thresholds_provenance(self.home, name)

    def verify_model(self, name: str) -> dict[str, Any]:
        """Load a model and check its encoders (:func:`loupe.models.registry.verify`)."""
        return registry.verify(registry.get_model(self.home, name))

    def use_model(self, name: str, lane: str) -> dict[str, Any]:
        """Make ``name`` the model of this tenant's ``image`` or ``text`` lane
        (:func:`loupe.vector.lanes.use`); run :meth:`embed` for its vectors.

        Raises:
            ModelError: unknown model, or a model that cannot encode what the lane needs.
            ValueError: a lane other than image/text.
        """
        return lanes.use(self.conn, self.home, self.tenant_id, name, lane)

    def build_variants(self, model: str) -> dict[str, int]:
        """Build the "image", "caption" and "both" vector sets of an image-text
        model, for the evaluation instrument (V7, E4; :func:`loupe.vector.lanes.variants`).
        Raises ModelError: unknown model, or not both images and text."""
        return lanes.variants(self.conn, self.home, self.tenant_id, model, self.languages()[0])

    def embed(self, *, lane: str | None = None, progress=None) -> list[EmbedSummary]:
        """Compute the vectors the tenant's active lanes are missing, one
        summary per lane; vectors of a model whose folder changed content (V3)
        are removed and computed again (:func:`loupe.vector.lanes.embed`)."""
        return lanes.embed(self.conn, self.home, self.tenant_id, self.languages()[0],
                           lane=lane, progress=progress)

    # -- assets as the viewer may see them (loupe.assets.view) ----------------------

    def _asset_row(self, asset_id: int) -> tuple:
        return view.asset_row(self.conn, self.tenant_id, self.tenant, self.viewer, asset_id)

    def show(self, asset_id: int) -> dict[str, Any]:
        """Everything stored about one asset the viewer may read: pixels
        (``width``/``height`` as displayed, ``stored_width``/``stored_height``,
        ``orientation``), files with metadata, search documents and machine
        facts (:func:`loupe.assets.view.asset_record`).

        Raises:
            AssetNotFound: no such asset in this tenant, or one the viewer
                may not read (the two are not told apart).
        """
        return view.asset_record(self.conn, self.home, self.tenant_id,
                                 self._asset_row(asset_id), self.viewer, self.languages())

    def thumbnail(self, asset_id: int) -> Path:
        """The asset's thumbnail file (WebP, longest side 384 px).
        Raises AssetNotFound: no such asset, not readable, or no thumbnail."""
        return view.thumbnail_path(self.home, self._asset_row(asset_id))

    def original(self, asset_id: int) -> Path:
        """The path of the asset's primary file, checked as by
        :meth:`open_original` (which see, and prefer). Raises AssetNotFound."""
        fh, path = self.open_original(asset_id)
        fh.close()
        return path

    def open_original(self, asset_id: int) -> tuple[Any, Path]:
        """The asset's original, opened: ``(binary file object at offset 0,
        path)``, the first of its files the viewer may read that still holds
        the asset's bytes as ingested; a file replaced by a link or by other
        bytes is never served (:func:`loupe.assets.view.open_verified`). Read
        what is returned, not the path.

        Raises:
            AssetNotFound: no such asset, one the viewer may not read, or no
                file of it holds its bytes any more.
        """
        return view.open_original(self.conn, self.tenant_id, self.viewer,
                                  self._asset_row(asset_id))

    def collections(self) -> list[dict[str, Any]]:
        """Collections the viewer can read something in, with asset counts
        (:func:`loupe.assets.view.collections`; a member sees no ``full_path``)."""
        return view.collections(self.conn, self.tenant_id, self.viewer)

    def failures(self, run_id: int | None = None) -> list[dict[str, Any]]:
        """Problems of an ingest run (default: the latest), ``severity``
        ``error`` or ``warning`` (:func:`loupe.assets.view.failures`)."""
        return view.failures(self.conn, self.tenant_id, run_id)

    def stats(self) -> dict[str, Any]:
        """Counts of assets, files, collections and documents per language."""
        return {"tenant": self.tenant, **view.stats(self.conn, self.tenant_id),
                "languages": self.languages()}

    # -- users, groups, grants (P1; loupe.access.users) --------------------------------

    @property
    def user(self) -> dict[str, Any] | None:
        """The user this library is bound to (``{"id", "name", "admin",
        "groups"}``), or None for the local owner."""
        return self.viewer.as_dict()

    def as_user(self, name: str) -> "Library":
        """This library seen by user ``name``, on the same connection.
        Raises UnknownUser: no such user in this tenant."""
        viewer = access.viewer_for(self.conn, self.tenant_id, name)
        return Library(self.conn, self.home, self.tenant_id, self.tenant, viewer)

    def _manage(self) -> None:
        if not self.viewer.see_all:
            raise AccessError(f"{self.viewer.name} is not an admin of this tenant")

    def authenticate(self, name: str, password: str) -> dict[str, Any] | None:
        """The user (``{"id", "name", "admin", "groups"}``) if the password is
        right, else None."""
        viewer = access.authenticate(self.conn, self.tenant_id, name, password)
        return viewer.as_dict() if viewer else None

    def create_user(self, name: str, password: str, *, admin: bool = False) -> dict[str, Any]:
        """Create a user; admins see everything in the tenant. Raises
        AccessError: not allowed, name taken or invalid, password too short."""
        self._manage()
        return access.create_user(self.conn, self.tenant_id, name, password, admin=admin)

    def set_password(self, name: str, password: str) -> dict[str, Any]:
        """A new password for ``name``, ending its login sessions; audited
        (:func:`loupe.access.users.set_password`). Raises AccessError, UnknownUser."""
        self._manage()
        return access.set_password(self.conn, self.tenant_id, self.viewer, name, password)

    def disable_user(self, name: str) -> dict[str, Any]:
        """No login for ``name``; its sessions and API tokens revoked at once;
        audited (:func:`loupe.access.users.set_disabled`). Raises AccessError
        (also: an admin disabling itself), UnknownUser."""
        self._manage()
        return access.set_disabled(self.conn, self.tenant_id, self.viewer, name, True)

    def enable_user(self, name: str) -> dict[str, Any]:
        """Let a disabled user log in again (see :meth:`disable_user`)."""
        self._manage()
        return access.set_disabled(self.conn, self.tenant_id, self.viewer, name, False)

    def revoke_tokens(self, name: str) -> dict[str, Any]:
        """Revoke every login session and API token of ``name``; audited
        (:func:`loupe.access.users.revoke_tokens`). Raises AccessError, UnknownUser."""
        self._manage()
        return access.revoke_tokens(self.conn, self.tenant_id, self.viewer, name)

    def delete_user(self, name: str) -> dict[str, Any]:
        """Delete ``name`` with its sessions, tokens, memberships and grants (its
        uploads stay); audited (:func:`loupe.access.users.delete_user`). Raises
        AccessError (also: an admin deleting itself), UnknownUser."""
        self._manage()
        return access.delete_user(self.conn, self.tenant_id, self.viewer, name)

    def create_group(self, name: str) -> dict[str, Any]:
        """Create a group. Raises AccessError: not allowed, name taken or invalid."""
        self._manage()
        return access.create_group(self.conn, self.tenant_id, name)

    def add_member(self, group: str, user: str) -> None:
        """Put ``user`` in ``group``. Raises AccessError, UnknownUser (group or user)."""
        self._manage()
        access.add_member(self.conn, self.tenant_id, group, user)

    def principals(self) -> list[dict[str, Any]]:
        """Users and groups of the tenant (:func:`loupe.access.users.principals`)."""
        self._manage()
        return access.principals(self.conn, self.tenant_id)

    def grant(self, principal: str, *, collection: str | None = None,
              asset_id: int | None = None, revoke: bool = False) -> None:
        """Let a user or group read a collection (named as for :meth:`search`,
        sub-collections included) or one asset; with ``revoke`` take it back.

        Raises:
            AccessError: not allowed, or not exactly one of collection / asset_id.
            UnknownUser: no such user or group.
            loupe.scopes.search.UnknownScope: no such collection, or a path
                that names several (the message lists their ids).
        """
        self._manage()
        coll = collection_id(self.conn, self.tenant_id, collection) if collection else None
        access.grant(self.conn, self.tenant_id, principal, collection_id=coll,
                     asset_id=asset_id, revoke=revoke)

    def revoke(self, principal: str, *, collection: str | None = None,
               asset_id: int | None = None) -> None:
        """Take back a grant (see :meth:`grant`)."""
        self.grant(principal, collection=collection, asset_id=asset_id, revoke=True)

    def grants(self) -> list[dict[str, Any]]:
        """Every grant of the tenant (:func:`loupe.access.users.grants`)."""
        self._manage()
        return access.grants(self.conn, self.tenant_id)

    def set_embargo(self, asset_ids: list[int], until: datetime | None) -> int:
        """Hide assets from members until ``until`` (None clears). Returns the
        number of assets updated."""
        self._manage()
        return access.set_dates(self.conn, self.tenant_id, list(asset_ids), embargo=until)

    def set_rights_expiry(self, asset_ids: list[int], until: datetime | None) -> int:
        """Hide assets from members from ``until`` on, when their usage rights
        expire (None clears). Returns the number updated."""
        self._manage()
        return access.set_dates(self.conn, self.tenant_id, list(asset_ids),
                                rights_expiry=until)

    # -- bulk actions (C6; loupe.bulk) ----------------------------------------------------

    def bulk(self, action: str, value: Any, *, query: str,
             scope: str | list[str] | None = None, lang: str | None = None,
             confirm: bool = False, any_term: bool = False,
             dry_run: bool = False, filters: Any = None) -> dict[str, Any]:
        """Apply ``action`` to every asset ``query`` finds for this viewer (in
        ``scope``, under ``filters``, as for :meth:`search`), in one
        transaction, audited (:func:`loupe.bulk.run.bulk`): directly when the
        result is complete, otherwise only with ``confirm``. By default only
        assets holding every query term; ``any_term``: every ranked asset.

        Raises:
            AccessError: the viewer is a member.
            loupe.bulk.BulkError: unknown action or bad value.
            loupe.bulk.ConfirmationRequired: not complete and not confirmed.
            loupe.scopes.search.UnknownScope: a collection that does not exist
                or a path naming several.
        """
        self._manage()
        lang = self._lang(lang) if lang else None   # without one, every language's
        return bulk_run.bulk(self, action, value, query=query, scope=scope, lang=lang,
                             confirm=confirm, any_term=any_term, dry_run=dry_run,
                             filters=filters)

    def audit_log(self, limit: int = 50) -> list[dict[str, Any]]:
        """The latest bulk actions and actions on users, newest first."""
        self._manage()
        return read_audit_log(self.conn, self.tenant_id, limit)

    # -- vocabularies and settings ---------------------------------------------------------

    def import_vocabulary(self, path: str | Path, *, name: str | None = None) -> dict[str, Any]:
        """Import (or replace) a controlled vocabulary (JSON, CSV or SKOS) and
        rebuild the documents it touches, in one transaction
        (:func:`loupe.document.rebuild.import_vocabulary`). Raises
        loupe.document.vocabulary.VocabularyError: the file cannot be imported."""
        return rebuild.import_vocabulary(self.conn, self.tenant_id, self.languages(), path, name)

    def vocabularies(self) -> list[dict[str, Any]]:
        """The tenant's vocabularies with their term and tagged-asset counts."""
        return rebuild.vocabularies(self.conn, self.tenant_id)

    def lexical_settings(self) -> dict[str, Any]:
        """The lexical lane's settings (:func:`loupe.lexical.settings.read`)."""
        return lexical_bounds.read(self.conn, self.tenant_id)

    def set_lexical_settings(self, **changes: Any) -> dict[str, Any]:
        """Change lexical settings; a change of k1, weights, b or vocab_decay
        rebuilds the tenant's lexical index in the same transaction
        (:func:`loupe.lexical.settings.change`). Raises ValueError (an unknown
        key) or SettingError (a value out of its range, named with the bound)."""
        return lexical_bounds.change(self.conn, self.tenant_id, self.languages(), **changes)

    def fusion_settings(self) -> dict[str, Any]:
        """The fusion settings (F1): ``w_lexical``, ``w_text``, ``w_image`` and
        ``rrf_k``; rrf(d) = Σ w_lane / (k + rank), defaults w 1, k 60 (plain
        RRF, Cormack et al. 2009; :func:`loupe.fusion.settings.read`)."""
        return fusion_config.read(self.conn, self.tenant_id)

    def set_fusion_settings(self, **changes: Any) -> dict[str, Any]:
        """Change fusion settings, for the next search; returns them. Raises
        ValueError: unknown key, not a finite number, outside
        :data:`FUSION_BOUNDS`, or every weight zero (:func:`loupe.fusion.settings.change`)."""
        return fusion_config.change(self.conn, self.tenant_id, **changes)

    # -- search by image (X1; loupe.similar) -------------------------------------------

    def similar(self, asset_id: int | None = None, *, file: str | Path | None = None,
                radius: int | None = None, limit: int = 20, offset: int = 0,
                max_pixels: int | None = None, full_decode_pixels: int | None = None):
        """Assets that look like asset ``asset_id`` or like the image ``file``
        (not ingested): pHash within ``radius`` bits, nearest first, fused with
        the image lane when one is installed (:func:`loupe.similar.search.find_similar`).

        Raises:
            AssetNotFound: no such asset, or one the viewer may not read.
            loupe.similar.search.SimilarError: ``file`` not an image Loupe can
                read, over ``max_pixels`` or (unless a JPEG) ``full_decode_pixels``
                (default 25 MP), radius outside 0..15, bad limit/offset.
        """
        from .similar.search import DEFAULT_RADIUS, QUERY_FULL_DECODE_PIXELS, find_similar

        return find_similar(self, asset_id, file=str(file) if file is not None else None,
                            radius=DEFAULT_RADIUS if radius is None else radius,
                            limit=limit, offset=offset, max_pixels=max_pixels,
                            full_decode_pixels=full_decode_pixels or QUERY_FULL_DECODE_PIXELS)

    def duplicates(self, *, radius: int | None = None) -> list[dict[str, Any]]:
        """Near-duplicate and exact-bytes groups of readable assets, with byte
        sizes (:func:`loupe.similar.search.duplicate_groups`); missing hashes
        are computed first. Raises SimilarError: radius outside 0..15."""
        from .similar.search import DEFAULT_RADIUS, backfill, duplicate_groups

        backfill(self.conn, self.tenant_id)
        return [asdict(g) for g in duplicate_groups(
            self.conn, self.tenant_id, radius=DEFAULT_RADIUS if radius is None else radius,
            viewer=self.viewer.params())]

    def hash(self, *, progress: ProgressFn | None = None) -> dict[str, int]:
        """Compute the perceptual hashes of assets ingested before they
        existed (migration 0015): ``{"hashed", "failed", "pending"}``."""
        from .similar.search import backfill

        return backfill(self.conn, self.tenant_id, progress=progress)

    # -- machine words (issue 15; loupe.pixels) ------------------------------------------

    def enrich(self, *, progress: ProgressFn | None = None) -> dict[str, int]:
        """Compute the machine words the tenant's assets are missing and
        rebuild their documents; resumable (:func:`loupe.pixels.enrich.enrich`)."""
        return _enrich().enrich(self.conn, self.tenant_id, self.languages(), progress=progress)

    def machine_settings(self) -> dict[str, Any]:
        """The machine words' settings: ``{"ocr", "ocr_budget_ms", "ocr_min_score"}``."""
        return _enrich().settings(self.conn, self.tenant_id)

    def set_machine_settings(self, **changes: Any) -> dict[str, Any]:
        """Change ``ocr``, ``ocr_budget_ms`` or ``ocr_min_score``
        (:func:`loupe.pixels.enrich.change_settings`); OCR turned on is
        "missing" for every asset at the next :meth:`enrich`. Raises
        ValueError: an unknown key or a value out of its bound (named)."""
        return _enrich().change_settings(self.conn, self.tenant_id, **changes)

    # -- people (X2; loupe.faces.people) ---------------------------------------------

    def _viewer_name(self) -> str:
        return self.viewer.name or "owner"

    def faces(self, *, progress: ProgressFn | None = None,
              limit: int | None = None) -> dict[str, Any]:
        """Find and cluster the faces of assets not scanned yet (resumable).
        Raises AccessError (a member), FacesUnavailable (dlib or its models missing)."""
        self._manage()
        return _people().scan(self.conn, self.tenant_id, self.languages(), progress=progress,
                              limit=limit)

    def faces_status(self) -> dict[str, Any]:
        """Whether face detection is installed (else why not) and the counts."""
        return _people().stats(self.conn, self.tenant_id)

    def people(self, *, hidden: bool = False) -> list[dict[str, Any]]:
        """People with faces on assets the viewer may read, counts of those only."""
        return _people().people(self.conn, self.tenant_id, self.viewer.params(),
                                hidden=hidden and self.viewer.see_all)

    def person(self, person_id: int) -> dict[str, Any]:
        """One person and its faces on readable assets. Raises PeopleError."""
        return _people().person(self.conn, self.tenant_id, self.viewer.params(), person_id)

    def asset_faces(self, asset_id: int) -> list[dict[str, Any]]:
        """The faces of one asset with their people's labels. Raises AssetNotFound."""
        self._asset_row(asset_id)
        return _people().asset_faces(self.conn, self.tenant_id, self.viewer.params(), asset_id)

    def face_crop(self, face_id: int) -> bytes:
        """A face's JPEG crop, only if its asset is readable (else PeopleError)."""
        return _people().crop(self.conn, self.tenant_id, self.viewer.params(), face_id)

    def name_person(self, person_id: int, name: str | None) -> dict[str, Any]:
        """Confirm a person's name (None: remove it); documents follow in the
        same transaction."""
        self._manage()
        return _people().name(self.conn, self.tenant_id, self.languages(), person_id, name,
                              by=self._viewer_name())

    def merge_people(self, source: int, target: int) -> dict[str, Any]:
        """Merge person ``source`` into ``target``."""
        self._manage()
        return _people().merge(self.conn, self.tenant_id, self.languages(), source, target,
                               by=self._viewer_name())

    def split_person(self, person_id: int, face_ids: list[int]) -> dict[str, Any]:
        """Move faces of a person to a new unnamed person."""
        self._manage()
        return _people().split(self.conn, self.tenant_id, self.languages(), person_id, face_ids)

    def hide_person(self, person_id: int, hidden: bool = True) -> dict[str, Any]:
        """Hide (or show again) a person."""
        self._manage()
        return _people().hide(self.conn, self.tenant_id, self.languages(), person_id, hidden)

    def reject_face(self, face_id: int) -> dict[str, Any]:
        """"Not this person": remembered, and the face is clustered anew."""
        self._manage()
        return _people().reject(self.conn, self.tenant_id, self.languages(), face_id,
                                by=self._viewer_name())

    # -- conversational search (X4; loupe.conversation) ---------------------------------

    def ask(self, sentence: str, *, conversation: int | None = None, lang: str | None = None,
            limit: int = 20, offset: int = 0, clock: datetime | None = None,
            run: bool = True) -> dict[str, Any]:
        """Compile ``sentence`` (en/fr) as the next turn of one of the viewer's
        conversations (a new one when ``conversation`` is None) and run the
        state through :meth:`search` (:func:`loupe.conversation.search.ask`).
        ``clock``: "now" for relative dates. Returns ``{"conversation", "n",
        "turn", "state", "search", "notices"}`` (docs/conversation.md).

        Raises:
            loupe.conversation.SentenceError: empty sentence, over 1000
                characters or 120 words, unsupported language, 200 turns.
            loupe.conversation.store.ConversationNotFound: not one of the viewer's.
        """
        return _csearch().ask(self, sentence, conversation=conversation, lang=lang,
                              limit=limit, offset=offset, clock=clock, run_search=run)

    def conversation(self, conversation: int) -> dict[str, Any]:
        """One of the viewer's conversations with its turns
        (:func:`loupe.conversation.store.get`). Raises ConversationNotFound."""
        return _store().get(self.conn, self.tenant_id, self.viewer, conversation)

    def conversations(self) -> list[dict[str, Any]]:
        """The viewer's conversations, most recent first (at most 50)."""
        return _store().listing(self.conn, self.tenant_id, self.viewer)

    def edit_conversation(self, conversation: int, *, filter: dict | None, text: str = "",
                          limit: int = 20, offset: int = 0, run: bool = True) -> dict[str, Any]:
        """Set a conversation's state by hand (a chip removed or edited) and
        search it, as :meth:`ask`. Raises FilterError: a tree outside the contract."""
        return _csearch().edit(self, conversation, filter=filter, text=text, limit=limit,
                               offset=offset, run_search=run)

    def delete_conversation(self, conversation: int) -> None:
        """Delete one of the viewer's conversations. Raises ConversationNotFound."""
        _store().delete(self.conn, self.tenant_id, self.viewer, conversation)
