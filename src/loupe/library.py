"""The Python API. Each ``loupe`` CLI command is one method here.

    >>> from loupe import Library
    >>> with Library.open("~/.loupe", create=True) as lib:    # doctest: +SKIP
    ...     lib.init(languages=["en", "fr"])
    ...     summary = lib.ingest("~/Pictures/library")
    ...     result = lib.search("cheetah")
    ...     print(result.total, [h.title for h in result.hits])
"""

from __future__ import annotations

import os
from datetime import datetime
from dataclasses import asdict
from collections.abc import Callable
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
from .db import DATABASE_URL_ENV
from .db import session
from .db.session import LibraryNotInitialized, UnknownTenant
from .db.server import stop_embedded
from .document import rebuild
from .document.languages import query_language, validate_languages
from .ingest.pipeline import MAX_PIXELS_LIMIT, IngestSummary, Ingester, ProgressFn, check_max_pixels
from .fusion import settings as fusion_config
from .filters import facets as filter_facets, search as filter_search
from .lexical import settings as lexical_bounds
from .lexical.search import analyze as analyze_text
from .models import registry, runtime
from .models.embedders import Embedder
from .scopes.search import collection_id
from .search.pipeline import BULK_MAX, OFFSET_MAX, SearchPipeline, SearchRequest, check_page
from .search.result import Hit, SearchResult
from .vector import lanes
from .vector.embed import EmbedSummary
from . import queries as q

HOME_ENV = "LOUPE_HOME"
DEFAULT_HOME = "~/.loupe"


def default_home() -> Path:
    """``$LOUPE_HOME`` or ``~/.loupe``."""
    return Path(os.environ.get(HOME_ENV) or DEFAULT_HOME).expanduser()


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
        apply pending migrations and bind to ``tenant``.

        With ``create`` (what ``loupe init`` does) a missing library and a
        missing tenant are created; without it they are errors.

        Raises:
            loupe.db.DatabaseUnavailable: no database could be reached.
            LibraryNotInitialized: no library there and ``create`` is false.
            UnknownTenant: ``tenant`` does not exist and ``create`` is false.
            loupe.lexical.settings.SettingError: ``LOUPE_HNSW_EF_SEARCH`` or
                ``LOUPE_QUERY_VECTOR_CACHE`` is not a whole number in its range.
        """
        home_path = Path(home).expanduser() if home else default_home()
        conn = session.connect(home_path, database_url, create=create)
        try:
            tenant_id = session.tenant_id(conn, tenant, create=create)
        except BaseException:
            conn.close()
            raise
        return cls(conn, home_path, tenant_id, tenant)

    def close(self) -> None:
        """Close the connection (the embedded server stops when its last user exits)."""
        self.conn.close()

    @staticmethod
    def stop(home: str | Path | None = None, *, database_url: str | None = None,
             force: bool = False) -> dict[str, Any]:
        """Stop the embedded PostgreSQL server of library ``home`` (what
        ``loupe stop`` does), after dropping the pids of dead processes (a
        ``kill -9``-ed command) from its list of users.

        Returns ``{"pgdata", "was_running", "stopped", "stale_handles_removed",
        "users"}`` (``users``: live pids of other loupe processes using it).

        Raises:
            ValueError: a database URL is configured (Loupe does not manage
                that server).
            loupe.db.server.ServerInUse: other live processes use the server
                and ``force`` is false (with ``force`` their sessions end).
            loupe.db.DatabaseUnavailable: ``pg_ctl`` failed.
        """
        if database_url or os.environ.get(DATABASE_URL_ENV):
            raise ValueError(f"{DATABASE_URL_ENV} (or --database-url) is set: that server is "
                             f"not Loupe's to stop")
        home_path = Path(home).expanduser() if home else default_home()
        return stop_embedded(home_path / "pgdata", force=force)

    def __enter__(self) -> "Library":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- commands ---------------------------------------------------------------

    def init(self, languages: list[str] | None = None) -> dict[str, Any]:
        """Set the library languages (one search document per asset per
        language): the list replaces the previous one, documents of languages
        left out are removed and those of new ones built
        (:func:`loupe.document.rebuild.set_languages`). Returns the tenant's settings.

        Raises:
            ValueError: an empty list or a code Loupe has no analyzer for.
        """
        if languages is not None:
            rebuild.set_languages(self.conn, self.tenant_id, validate_languages(languages))
        return {"tenant": self.tenant, "home": str(self.home), "languages": self.languages()}

    def languages(self) -> list[str]:
        """The tenant's library languages, first = default query language."""
        return rebuild.languages(self.conn, self.tenant_id)

    def ingest(self, path: str | Path, *, progress: ProgressFn | None = None,
               max_pixels: int | None = None,
               on_wait: Callable[[str], None] | None = None) -> IngestSummary:
        """Ingest every image under ``path`` (see :mod:`loupe.ingest.pipeline`).
        While another ingest of the same folder runs this one waits for it,
        calling ``on_wait`` with a sentence saying so.

        ``max_pixels`` (default 150,000,000) is within 1 and
        :data:`MAX_PIXELS_LIMIT` (a billion pixels decode to 3 GB of RGB).

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
        """Search the library, or inside collection ``scope`` (its path, e.g.
        ``animals/mammals``, its id ``id:42`` or its full path
        ``/photos/animals/mammals``; see
        :func:`loupe.scopes.search.collection_id`), sub-collections included.
        A list of collections searches their **union**; the verdict is the
        union's (every member of any of them is in the scope). Without
        ``lang`` the search looks in every library language's document, the
        query analysed for each language, one row per asset ranked by its best
        document, the total counting distinct assets; ``lang`` restricts it
        to that language's documents. With ``title_band`` (library-wide
        search), every asset whose title holds all the query's terms stays
        reachable after the ranked rows even when a cap left it out (C2).
        ``filters``: a filter tree (JSON dict or text, or a
        :class:`loupe.filters.Node`; docs/filters.md): only assets it accepts
        are searched, ranked, banded and counted; with an empty ``query``
        the filtered set itself is listed, newest first. ``facets``: also
        the top values per facet of the whole result (:meth:`facets`).

        Raises:
            ValueError: ``limit`` outside [1, BULK_MAX] or ``offset`` outside
                [0, OFFSET_MAX], a stored lexical setting out of range
                (:class:`loupe.lexical.settings.SettingError`), ``lang`` is not a
                library language, or the query is too long (see
                :data:`loupe.lexical.search.MAX_QUERY_CHARS`, ``MAX_QUERY_TERMS``).
            loupe.filters.FilterError: the filter tree is not valid (the
                message names the node), or names an unknown collection.
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
        """Top ``top`` values per facet (collection, creator, keyword, year,
        format, orientation, country, kind, colour) of the whole result of
        :meth:`search` with the same arguments, each with its count and the
        filter node that narrows to it: ``{"exact", "facets": {facet:
        [{"value", "key", "count", "filter"}]}}`` (see
        :func:`loupe.filters.facets.facets`). Counts are exact when the
        result is complete, lower bounds ("at least") otherwise.

        Raises: as :meth:`search`; ValueError for ``top`` outside [1, 100].
        """
        filter_facets.check_top(top)   # before the work
        full = self.search(query, lang=lang, scope=scope, filters=filters, limit=BULK_MAX)
        exact = (full.verdict == "complete" and full.total_exact
                 and len(full.hits) == full.total)
        return filter_facets.facets(self.conn, self.tenant_id, self.viewer,
                                    [h.asset_id for h in full.hits], exact=exact, top=top)

    # -- models and vector lanes -------------------------------------------------

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
        """Install a model from a folder or archive (see :func:`loupe.models.registry.install`)."""
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
        ``2``, ``3-5``, ``6-10``, ``11+``; values cosine distances in (0, 2]),
        written to its ``loupe-model.json``, with where they came from:
        ``provenance`` = ``{"set", "split", "metric", "date"}`` (the judged
        query set, its split, the criterion, YYYY-MM-DD), else "by hand"
        (:func:`loupe.models.registry.set_thresholds`). Returns the
        thresholds now in force.

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
        """Load a model and check its encoders (see :func:`loupe.models.registry.verify`)."""
        return registry.verify(registry.get_model(self.home, name))

    def use_model(self, name: str, lane: str) -> dict[str, Any]:
        """Make ``name`` the model of this tenant's ``image`` or ``text`` lane and
        create its HNSW index (:func:`loupe.vector.lanes.use`). Vectors of a
        previous model stay until replaced; run :meth:`embed` to compute the new ones.

        Raises:
            ModelError: unknown model, or a model that cannot encode what the lane needs.
            ValueError: a lane other than image/text.
        """
        return lanes.use(self.conn, self.home, self.tenant_id, name, lane)

    def build_variants(self, model: str) -> dict[str, int]:
        """Build the "image", "caption" and "both" vector sets of an image-text
        model over this tenant's assets, for the evaluation instrument (V7, E4).

        Raises:
            ModelError: unknown model, or one that does not encode both images and text.
        """
        return lanes.variants(self.conn, self.home, self.tenant_id, model, self.languages()[0])

    def embed(self, *, lane: str | None = None, progress=None) -> list[EmbedSummary]:
        """Compute the vectors the tenant's active lanes are missing, one
        summary per lane; vectors of a model whose folder changed content (V3)
        are removed and computed again (:func:`loupe.vector.lanes.embed`)."""
        return lanes.embed(self.conn, self.home, self.tenant_id, self.languages()[0],
                           lane=lane, progress=progress)

    def analyze(self, text: str, *, lang: str | None = None, query: bool = False) -> list[str]:
        """The terms the analyzer of ``lang`` emits for ``text``: every term in
        document order, or with ``query=True`` the distinct terms a query searches."""
        lang = self._lang(lang)
        return analyze_text(self.conn, text, lang, query=query)

    def _lang(self, lang: str | None) -> str:
        return query_language(self.languages(), lang)

    def _asset_row(self, asset_id: int) -> tuple:
        return view.asset_row(self.conn, self.tenant_id, self.tenant, self.viewer, asset_id)

    def show(self, asset_id: int) -> dict[str, Any]:
        """Everything stored about one asset that the viewer may read: pixels
        (``width``/``height`` as displayed, ``stored_width``/``stored_height``,
        ``orientation``), files with metadata, collections, search documents
        and machine facts (:func:`loupe.assets.view.asset_record`).

        Raises:
            AssetNotFound: no such asset in this tenant, or one the viewer
                may not read (the two are not told apart).
        """
        return view.asset_record(self.conn, self.home, self.tenant_id,
                                 self._asset_row(asset_id), self.viewer, self.languages())

    def thumbnail(self, asset_id: int) -> Path:
        """The asset's thumbnail file (WebP, longest side 384 px).

        Raises:
            AssetNotFound: no such asset, one the viewer may not read, or no thumbnail.
        """
        return view.thumbnail_path(self.home, self._asset_row(asset_id))

    def original(self, asset_id: int) -> Path:
        """The asset's primary file (first by path among those the viewer may
        read) as it is on disk, checked to hold the asset's bytes (see
        :meth:`open_original`).

        Raises:
            AssetNotFound: no such asset, one the viewer may not read, or no
                file of it holds its bytes any more.
        """
        fh, path = self.open_original(asset_id)
        fh.close()
        return path

    def open_original(self, asset_id: int) -> tuple[Any, Path]:
        """The asset's original, opened: ``(binary file object at offset 0,
        path)``, the first of its files the viewer may read that still holds
        the asset's bytes as ingested: a file replaced after ingest by a link
        (to /etc/shadow, to a private file) or by other bytes is never served
        (:func:`loupe.assets.view.open_verified`). Read what is returned, not
        the path (the check holds for this descriptor only).

        Raises:
            AssetNotFound: no such asset, one the viewer may not read, or no
                file of it holds its bytes any more.
        """
        return view.open_original(self.conn, self.tenant_id, self.viewer,
                                  self._asset_row(asset_id))

    def collections(self) -> list[dict[str, Any]]:
        """Collections (folders as ingested, and hand-made ones) the viewer can
        read something in, with asset counts, sub-collections included
        (:func:`loupe.assets.view.collections`; a scope or grant names one by
        ``id:<id>`` or its full path when its path is ambiguous)."""
        return view.collections(self.conn, self.tenant_id, self.viewer)

    # -- users, groups, grants (P1) --------------------------------------------

    @property
    def user(self) -> dict[str, Any] | None:
        """The user this library is bound to (``{"id", "name", "admin",
        "groups"}``), or None for the local owner."""
        return self.viewer.as_dict()

    def as_user(self, name: str) -> "Library":
        """This library seen by user ``name``, on the same connection: search,
        show, thumbnail, original, collections and bulk apply its visibility.

        Raises:
            UnknownUser: no such user in this tenant.
        """
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
        """Create a user (owner and admins only). Admins see everything in the tenant.

        Raises:
            AccessError: not allowed, name taken or invalid, password too short.
        """
        self._manage()
        return access.create_user(self.conn, self.tenant_id, name, password, admin=admin)

    def set_password(self, name: str, password: str) -> dict[str, Any]:
        """Give user ``name`` a new password and end its login sessions (API
        tokens stay); owner and admins only, audited. Returns ``{"user",
        "sessions_revoked", "audit_id"}``.

        Raises:
            AccessError: not allowed, password too short. UnknownUser: no such user.
        """
        self._manage()
        return access.set_password(self.conn, self.tenant_id, self.viewer, name, password)

    def disable_user(self, name: str) -> dict[str, Any]:
        """Disable user ``name``: it cannot log in and its sessions and API
        tokens are revoked at once (grants and groups are kept); owner and
        admins only, audited. Returns ``{"user", "disabled", "tokens_revoked",
        "audit_id"}``.

        Raises:
            AccessError: not allowed, or an admin disabling itself.
            UnknownUser: no such user.
        """
        self._manage()
        return access.set_disabled(self.conn, self.tenant_id, self.viewer, name, True)

    def enable_user(self, name: str) -> dict[str, Any]:
        """Let a disabled user log in again (see :meth:`disable_user`)."""
        self._manage()
        return access.set_disabled(self.conn, self.tenant_id, self.viewer, name, False)

    def revoke_tokens(self, name: str) -> dict[str, Any]:
        """Revoke every login session and API token of user ``name``; owner and
        admins only, audited. Returns ``{"user", "tokens_revoked", "audit_id"}``.

        Raises:
            AccessError: not allowed. UnknownUser: no such user.
        """
        self._manage()
        return access.revoke_tokens(self.conn, self.tenant_id, self.viewer, name)

    def delete_user(self, name: str) -> dict[str, Any]:
        """Delete user ``name`` with its sessions, tokens, group memberships
        and grants (its uploads stay in the library); owner and admins only,
        audited. Returns ``{"user", "deleted", "audit_id"}``.

        Raises:
            AccessError: not allowed, or an admin deleting itself.
            UnknownUser: no such user.
        """
        self._manage()
        return access.delete_user(self.conn, self.tenant_id, self.viewer, name)

    def create_group(self, name: str) -> dict[str, Any]:
        """Create a group (owner and admins only).

        Raises:
            AccessError: not allowed, name taken or invalid.
        """
        self._manage()
        return access.create_group(self.conn, self.tenant_id, name)

    def add_member(self, group: str, user: str) -> None:
        """Put ``user`` in ``group`` (owner and admins only).

        Raises:
            AccessError: not allowed. UnknownUser: no such group or user.
        """
        self._manage()
        access.add_member(self.conn, self.tenant_id, group, user)

    def principals(self) -> list[dict[str, Any]]:
        """Users and groups of the tenant (owner and admins only)."""
        self._manage()
        return access.principals(self.conn, self.tenant_id)

    def grant(self, principal: str, *, collection: str | None = None,
              asset_id: int | None = None, revoke: bool = False) -> None:
        """Let a user or group read a collection (by path, ``id:N`` or full
        path as for :meth:`search`, sub-collections included) or one asset; with ``revoke`` take it back. Owner and admins only.

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
        """Every grant of the tenant: ``{"principal", "kind", "on", "target",
        "collection_id", "full_path"}`` (see :func:`loupe.access.users.grants`)."""
        self._manage()
        return access.grants(self.conn, self.tenant_id)

    def set_embargo(self, asset_ids: list[int], until: datetime | None) -> int:
        """Hide assets from members until ``until`` (None clears). Owner and
        admins only. Returns the number of assets updated."""
        self._manage()
        return access.set_dates(self.conn, self.tenant_id, list(asset_ids), embargo=until)

    def set_rights_expiry(self, asset_ids: list[int], until: datetime | None) -> int:
        """Hide assets from members from ``until`` on, when their usage rights
        expire (None clears). Owner and admins only. Returns the number updated."""
        self._manage()
        return access.set_dates(self.conn, self.tenant_id, list(asset_ids),
                                rights_expiry=until)

    # -- bulk actions (C6) -------------------------------------------------------

    def bulk(self, action: str, value: Any, *, query: str,
             scope: str | list[str] | None = None, lang: str | None = None,
             confirm: bool = False, any_term: bool = False,
             dry_run: bool = False, filters: Any = None) -> dict[str, Any]:
        """Apply ``action`` to the assets that ``query`` (in ``scope``: one
        collection or the union of several, as for :meth:`search`) finds for
        this viewer — all of them, not one page — in one transaction, and
        record it in the audit log (see :mod:`loupe.bulk.actions` for the
        actions). Allowed directly when the result is ``complete``; otherwise
        only with ``confirm``.

        Match rule: by default only the assets whose search document holds
        **every** query term; with ``any_term`` every asset the search ranks
        (some of the terms, or close in meaning). Both counts are returned;
        ``dry_run`` returns them without changing anything. ``filters``: a
        filter tree, as for :meth:`search` (the action reaches only assets it
        accepts; with an empty ``query``, every asset it accepts).

        Returns ``{"action", "value", "match", "matched_all_terms",
        "matched_any", "count", "verdict", "total", "total_exact",
        "confirmed", "audit_id", "dry_run"}``.

        Only the owner and admins act in bulk: a grant lets a member read,
        and a bulk action changes what others find (an embargo hides assets).

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
        """The latest bulk actions and actions on users, newest first (owner
        and admins only)."""
        self._manage()
        return read_audit_log(self.conn, self.tenant_id, limit)

    def import_vocabulary(self, path: str | Path, *, name: str | None = None) -> dict[str, Any]:
        """Import (or replace) a controlled vocabulary from a JSON, CSV or SKOS
        file and rebuild the documents of the assets it touches, in one
        transaction (:func:`loupe.document.rebuild.import_vocabulary`).

        Returns ``{"vocabulary", "terms", "assets_tagged", "documents_rebuilt"}``.

        Raises:
            loupe.document.vocabulary.VocabularyError: the file cannot be imported.
        """
        return rebuild.import_vocabulary(self.conn, self.tenant_id, self.languages(), path, name)

    def lexical_settings(self) -> dict[str, Any]:
        """The lexical lane's settings: k1, field-group weights and b (title,
        keywords, description, other, machine), vocabulary decay, raw and keep caps
        (:func:`loupe.lexical.settings.read`)."""
        return lexical_bounds.read(self.conn, self.tenant_id)

    def set_lexical_settings(self, **changes: Any) -> dict[str, Any]:
        """Change lexical settings (keys as returned by :meth:`lexical_settings`).

        A change of k1, weights, b or vocab_decay rebuilds the tenant's
        lexical index (statistics, impacts) in the same transaction
        (:func:`loupe.lexical.settings.change`).

        Raises:
            ValueError: an unknown key.
            loupe.lexical.settings.SettingError (a ValueError): a value out of
                its range, named with the bound (see :mod:`loupe.lexical.settings`).
        """
        return lexical_bounds.change(self.conn, self.tenant_id, self.languages(), **changes)

    #: Bounds of the fusion settings (see :data:`loupe.fusion.settings.FUSION_BOUNDS`).
    FUSION_BOUNDS = fusion_config.FUSION_BOUNDS

    def fusion_settings(self) -> dict[str, Any]:
        """The fusion settings (SPEC F1, migration 0016): ``w_lexical``,
        ``w_text``, ``w_image`` (each lane's weight in reciprocal rank fusion)
        and ``rrf_k`` (RRF's rank constant); rrf(d) = Σ w_lane / (k + rank).
        Defaults: weights 1, k 60 (plain RRF, Cormack et al. 2009)."""
        return fusion_config.read(self.conn, self.tenant_id)

    def set_fusion_settings(self, **changes: Any) -> dict[str, Any]:
        """Change fusion settings (keys as returned by :meth:`fusion_settings`);
        takes effect on the next search. Returns the settings.

        Raises:
            ValueError: an unknown key, a value that is not a finite number
                (k: an integer), a value outside :data:`FUSION_BOUNDS`, or
                every weight zero (:func:`loupe.fusion.settings.change`).
        """
        return fusion_config.change(self.conn, self.tenant_id, **changes)

    def vocabularies(self) -> list[dict[str, Any]]:
        """The tenant's vocabularies with their term and tagged-asset counts."""
        return [{"vocabulary": r[0], "terms": r[1], "assets_tagged": r[2]}
                for r in self.conn.execute(q.VOCABULARIES, {"tenant_id": self.tenant_id})]

    def failures(self, run_id: int | None = None) -> list[dict[str, Any]]:
        """Problems of an ingest run (default: the latest run): ``severity``
        ``error`` (file not ingested) or ``warning`` (ingested with a problem)."""
        rows = self.conn.execute(q.FAILURES, {"tenant_id": self.tenant_id, "run_id": run_id})
        return [{"run_id": r[0], "path": r[1], "kind": r[2], "reason": r[3], "severity": r[4]}
                for r in rows]

    def stats(self) -> dict[str, Any]:
        """Counts of assets, files, collections and documents per language."""
        row = self.conn.execute(q.STATS, {"tenant_id": self.tenant_id}).fetchone()
        docs = {r[0]: r[1] for r in self.conn.execute(q.DOC_COUNTS, {"tenant_id": self.tenant_id})}
        return {"tenant": self.tenant, "assets": row[0], "files": row[1], "collections": row[2],
                "documents": docs, "languages": self.languages()}

    # -- search by image (X1) ---------------------------------------------------

    def similar(self, asset_id: int | None = None, *, file: str | Path | None = None,
                radius: int | None = None, limit: int = 20, offset: int = 0,
                max_pixels: int | None = None, full_decode_pixels: int | None = None):
        """Assets that look like asset ``asset_id`` or like the image ``file``
        (not ingested): every readable asset whose 64-bit pHash is within
        ``radius`` bits (default :data:`loupe.similar.search.DEFAULT_RADIUS`),
        nearest first, fused with the image lane's nearest vectors when an
        image model serves that lane. Returns a
        :class:`loupe.similar.search.SimilarResult`.

        Raises:
            AssetNotFound: no such asset, or one the viewer may not read.
            loupe.similar.search.SimilarError: ``file`` is not an image Loupe
                can read (``NotAnImage``), or over ``max_pixels`` (default the
                ingest's ceiling) or, unless a JPEG, over ``full_decode_pixels``
                (default ``QUERY_FULL_DECODE_PIXELS``, 25 MP) read from its
                header before decoding (``PictureTooLarge``); radius outside
                0..15, bad limit/offset.
        """
        from .similar.search import DEFAULT_RADIUS, QUERY_FULL_DECODE_PIXELS, find_similar

        return find_similar(self, asset_id, file=str(file) if file is not None else None,
                            radius=DEFAULT_RADIUS if radius is None else radius,
                            limit=limit, offset=offset, max_pixels=max_pixels,
                            full_decode_pixels=full_decode_pixels or QUERY_FULL_DECODE_PIXELS)

    def duplicates(self, *, radius: int | None = None) -> list[dict[str, Any]]:
        """Near-duplicate groups (readable assets whose pHashes are within
        ``radius`` bits, chained) and exact-bytes groups (one asset held by
        several files), with byte sizes: ``[{"kind", "assets", "paths",
        "byte_size", "reclaimable"}]``. Hashes missing from older assets are
        computed first.

        Raises:
            loupe.similar.search.SimilarError: radius outside 0..15.
        """
        from .similar.search import DEFAULT_RADIUS, backfill, duplicate_groups

        backfill(self.conn, self.tenant_id)
        return [asdict(g) for g in duplicate_groups(
            self.conn, self.tenant_id, radius=DEFAULT_RADIUS if radius is None else radius,
            viewer=self.viewer.params())]

    def enrich(self, *, progress: ProgressFn | None = None) -> dict[str, int]:
        """Compute the machine words (issue 15) the tenant's assets are missing
        (never computed, older rules, or OCR not yet run while it is on) and
        rebuild their documents; resumable: ``{"computed", "warnings",
        "ocr_read", "pending"}``."""
        from .pixels.enrich import enrich

        return enrich(self.conn, self.tenant_id, self.languages(), progress=progress)

    def machine_settings(self) -> dict[str, Any]:
        """The machine words' settings: ``{"ocr", "ocr_budget_ms", "ocr_min_score"}``."""
        from .pixels.enrich import settings

        return settings(self.conn, self.tenant_id)

    def set_machine_settings(self, **changes: Any) -> dict[str, Any]:
        """Change ``ocr`` (bool), ``ocr_budget_ms`` (100-60,000) or
        ``ocr_min_score`` (0-1). Turning OCR on makes every asset "missing"
        its OCR for the next :meth:`enrich` (and ingest reads new files).

        Raises:
            ValueError: an unknown key or a value out of its bound (named).
        """
        from .pixels.enrich import change_settings

        return change_settings(self.conn, self.tenant_id, **changes)

    def hash(self, *, progress: ProgressFn | None = None) -> dict[str, int]:
        """Compute the perceptual hashes of assets ingested before they
        existed (migration 0015): ``{"hashed", "failed", "pending"}``."""
        from .similar.search import backfill

        return backfill(self.conn, self.tenant_id, progress=progress)

    # -- people (SPEC X2, issue 19; loupe.faces) ------------------------------------

    def _viewer_name(self) -> str:
        return self.viewer.name or "owner"

    def faces(self, *, progress: ProgressFn | None = None,
              limit: int | None = None) -> dict[str, Any]:
        """Find and cluster the faces of assets not scanned yet (resumable):
        ``{"scanned", "faces", "skipped", "failed", "pending", "people"}``.

        Raises:
            AccessError: a member (scanning writes people).
            loupe.faces.detect.FacesUnavailable: dlib or its models are missing.
        """
        from .faces import people

        self._manage()
        return people.scan(self.conn, self.tenant_id, self.languages(), progress=progress,
                           limit=limit)

    def faces_status(self) -> dict[str, Any]:
        """Whether face detection is installed (else why not) and the counts."""
        from .faces import people

        return people.stats(self.conn, self.tenant_id)

    def people(self, *, hidden: bool = False) -> list[dict[str, Any]]:
        """People with faces on assets the viewer may read, counts of those only
        (see :func:`loupe.faces.people.people`)."""
        from .faces import people

        return people.people(self.conn, self.tenant_id, self.viewer.params(),
                             hidden=hidden and self.viewer.see_all)

    def person(self, person_id: int) -> dict[str, Any]:
        """One person and its faces on readable assets.

        Raises:
            loupe.faces.people.PeopleError: unknown, or nothing of it readable.
        """
        from .faces import people

        return people.person(self.conn, self.tenant_id, self.viewer.params(), person_id)

    def asset_faces(self, asset_id: int) -> list[dict[str, Any]]:
        """The faces of one asset with their people's labels.

        Raises:
            AssetNotFound: no such asset, or one the viewer may not read.
        """
        from .faces import people

        self._asset_row(asset_id)
        return people.asset_faces(self.conn, self.tenant_id, self.viewer.params(), asset_id)

    def face_crop(self, face_id: int) -> bytes:
        """A face's JPEG crop, only if its asset is readable (else PeopleError)."""
        from .faces import people

        return people.crop(self.conn, self.tenant_id, self.viewer.params(), face_id)

    def name_person(self, person_id: int, name: str | None) -> dict[str, Any]:
        """Confirm a person's name (None: remove it); documents follow in the
        same transaction. Owner and admins only (AccessError)."""
        from .faces import people

        self._manage()
        return people.name(self.conn, self.tenant_id, self.languages(), person_id, name,
                           by=self._viewer_name())

    def merge_people(self, source: int, target: int) -> dict[str, Any]:
        """Merge person ``source`` into ``target`` (owner and admins only)."""
        from .faces import people

        self._manage()
        return people.merge(self.conn, self.tenant_id, self.languages(), source, target,
                            by=self._viewer_name())

    def split_person(self, person_id: int, face_ids: list[int]) -> dict[str, Any]:
        """Move faces of a person to a new unnamed person (owner and admins only)."""
        from .faces import people

        self._manage()
        return people.split(self.conn, self.tenant_id, self.languages(), person_id, face_ids)

    def hide_person(self, person_id: int, hidden: bool = True) -> dict[str, Any]:
        """Hide (or show again) a person (owner and admins only)."""
        from .faces import people

        self._manage()
        return people.hide(self.conn, self.tenant_id, self.languages(), person_id, hidden)

    def reject_face(self, face_id: int) -> dict[str, Any]:
        """"Not this person": remembered, and the face is clustered anew
        (owner and admins only)."""
        from .faces import people

        self._manage()
        return people.reject(self.conn, self.tenant_id, self.languages(), face_id,
                             by=self._viewer_name())

    # -- conversational search (X4, issue 17 part 2) ------------------------------

    def ask(self, sentence: str, *, conversation: int | None = None, lang: str | None = None,
            limit: int = 20, offset: int = 0, clock: datetime | None = None,
            run: bool = True) -> dict[str, Any]:
        """Compile ``sentence`` (en/fr) as the next turn of one of the viewer's
        conversations (a new one when ``conversation`` is None), store it, and
        run the resulting state through :meth:`search` (same permissions and
        verdict). ``clock``: "now" for relative dates (default: the current UTC
        time). Returns ``{"conversation", "n", "turn": {"intent", "filter",
        "text", "unparsed", "message"}, "state": {"filter", "text"}, "search":
        SearchResult dict | None, "notices"}``; see docs/conversation.md.

        Raises:
            loupe.conversation.SentenceError: empty sentence, over 1000
                characters or 120 words, unsupported language, 200 turns.
            loupe.conversation.store.ConversationNotFound: not one of the viewer's.
        """
        from .conversation import search as csearch, store

        first = self.languages()[0] if self.languages() else "en"
        out = store.ask(self.conn, self.tenant_id, self.viewer, sentence, conversation=conversation,
                        lang=lang, clock=clock, default_lang=first if first in ("en", "fr") else "en")
        return {**out, **(csearch.run(self, out["state"], limit=limit, offset=offset) if run
                          else {"search": None, "notices": []})}

    def conversation(self, conversation: int) -> dict[str, Any]:
        """One of the viewer's conversations with its turns: ``{"id", "lang",
        "state", "turns", "created_at", "updated_at", "history": [{"n",
        "sentence", "result", "state", "at"}]}``. Raises ConversationNotFound."""
        from .conversation import store

        return store.get(self.conn, self.tenant_id, self.viewer, conversation)

    def conversations(self) -> list[dict[str, Any]]:
        """The viewer's conversations, most recent first (at most 50)."""
        from .conversation import store

        return store.listing(self.conn, self.tenant_id, self.viewer)

    def edit_conversation(self, conversation: int, *, filter: dict | None, text: str = "",
                          limit: int = 20, offset: int = 0, run: bool = True) -> dict[str, Any]:
        """Set a conversation's state by hand (a chip removed or edited) and
        search it; same return shape as :meth:`ask`. Raises
        loupe.filters.FilterError for a tree outside the contract's shape."""
        from .conversation import search as csearch, store

        out = store.edit(self.conn, self.tenant_id, self.viewer, conversation, filter=filter, text=text)
        return {**out, **(csearch.run(self, out["state"], limit=limit, offset=offset) if run
                          else {"search": None, "notices": []})}

    def delete_conversation(self, conversation: int) -> None:
        """Delete one of the viewer's conversations. Raises ConversationNotFound."""
        from .conversation import store

        store.delete(self.conn, self.tenant_id, self.viewer, conversation)
