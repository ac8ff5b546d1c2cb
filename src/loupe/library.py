"""The Python API. Each ``loupe`` CLI command is one method here.

    >>> from loupe import Library
    >>> with Library.open("~/.loupe", create=True) as lib:    # doctest: +SKIP
    ...     lib.init(languages=["en", "fr"])
    ...     result = lib.search("cheetah")

``Library`` is a facade: each method checks who may call it, then delegates
to the stage function its docstring names, whose own docstring gives the
shapes, units, errors raised and sources in full. Methods that write for the
tenant are for the owner and admins only (:class:`AccessError` for a member).
"""

from __future__ import annotations

import os
from collections.abc import Callable
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
from .conversation import search as conversation_search
from .conversation import store as conversation_store
from .bulk.actions import audit_log as read_audit_log
from .db import DATABASE_URL_ENV, replica, session
from .db.retry import retrying
from .db.session import LibraryNotInitialized, UnknownTenant
from .document import rebuild
from .document.languages import query_language
from .filters import facets as filter_facets
from .fusion import settings as fusion_config
from .ingest import pipeline as ingest_pipeline
from .ingest.pipeline import MAX_PIXELS_LIMIT, IngestSummary, ProgressFn
from .lexical import settings as lexical_bounds
from .lexical.search import analyze_terms
from .library_models import ModelMethods
from .library_people import PeopleMethods
from .library_jobs import JobMethods
from .library_reads import ReadMethods
from .models import runtime
from .search import entry
from .search.pipeline import BULK_MAX, OFFSET_MAX
from .search.result import Hit, SearchResult

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


class Library(ReadMethods, JobMethods, ModelMethods, PeopleMethods):
    """One tenant's view of a Loupe library; more of its methods are in the mixins
    :mod:`loupe.library_models`, ``library_people``, ``library_reads`` and ``library_jobs``.

    Args:
        conn: an autocommit psycopg connection to a migrated database.
        home: the library home (embedded database, thumbnails).
        tenant_id: every read and write is bound to this tenant.
        viewer: who is asking (default: the local owner, who sees everything
            in the tenant); see :meth:`as_user`.
        reads: the standbys of reads (:class:`loupe.db.replica.ReadRoute`), or None.
    """

    #: Query-encoder failures (V6) and recent query vectors: the process's
    #: (:mod:`loupe.models.runtime`), shared by its libraries; an instance
    #: may be given its own (a test's clock).
    encoder_health = runtime.ENCODER_HEALTH
    query_vectors = runtime.QUERY_VECTORS
    #: Bounds of the fusion settings (see :data:`loupe.fusion.settings.FUSION_BOUNDS`).
    FUSION_BOUNDS = fusion_config.FUSION_BOUNDS

    def __init__(self, conn: psycopg.Connection, home: Path, tenant_id: int, tenant: str,
                 viewer: Viewer = OWNER, reads: replica.ReadRoute | None = None):
        self.conn = conn
        self.home = home
        self.tenant_id = tenant_id
        self.tenant = tenant
        self.viewer = viewer
        self.reads = reads

    # -- lifecycle (loupe.db.session) ------------------------------------------------

    @classmethod
    def open(cls, home: str | Path | None = None, *, database_url: str | None = None,
             tenant: str = "default", create: bool = False,
             read_database_url: str | None = None) -> "Library":
        """Connect, migrate and bind to ``tenant`` (``create``: as ``loupe init``); reads
        on the standbys of ``read_database_url`` (:meth:`_read_route`). Stage:
        :func:`loupe.db.session.open_tenant`."""
        home_path = _home(home)
        reads = cls._read_route(read_database_url)   # URLs checked before connecting
        conn, tenant_id = session.open_tenant(home_path, database_url, tenant, create=create)
        return cls(conn, home_path, tenant_id, tenant, reads=reads)

    @staticmethod
    def stop(home: str | Path | None = None, *, database_url: str | None = None,
             force: bool = False) -> dict[str, Any]:
        """Stop library ``home``'s embedded PostgreSQL server (``loupe stop``).
        Stage: :func:`loupe.db.session.stop`."""
        return session.stop(_home(home), database_url, force=force)

    # -- library, ingest, search -----------------------------------------------------

    def init(self, languages: list[str] | None = None) -> dict[str, Any]:
        """Set the library languages; returns ``{"tenant", "home", "languages"}``.
        Stage: :func:`loupe.document.rebuild.set_languages`."""
        if languages is not None:
            rebuild.set_languages(self.conn, self.tenant_id, languages)
        return {"tenant": self.tenant, "home": str(self.home), "languages": self.languages()}

    def languages(self) -> list[str]:
        """The library languages. Stage: :func:`loupe.document.rebuild.languages`."""
        return rebuild.languages(self.conn, self.tenant_id)

    def ingest(self, path: str | Path, *, progress: ProgressFn | None = None,
               max_pixels: int | None = None,
               on_wait: Callable[[str], None] | None = None) -> IngestSummary:
        """Ingest every image under ``path``. Stage: :func:`loupe.ingest.pipeline.ingest`."""
        return ingest_pipeline.ingest(self.conn, self.tenant_id, self.home, path,
                                      progress=progress, max_pixels=max_pixels, on_wait=on_wait)

    def search(self, query: str, *, lang: str | None = None, limit: int = 20,
               offset: int = 0, scope: str | list[str] | None = None,
               title_band: bool = False, filters: Any = None,
               facets: bool = False) -> SearchResult:
        """Search as the viewer (standbys: :meth:`_read`). Stage: :func:`loupe.search.entry.search`."""
        res, notice = self._read(lambda lib: entry.search(
            lib, query, lang=lang, limit=limit, offset=offset, scope=scope,
            title_band=title_band, filters=filters, facets=facets))
        res.notices += [notice] if notice else []
        return res

    def facets(self, query: str = "", *, filters: Any = None,
               scope: str | list[str] | None = None, lang: str | None = None,
               top: int = filter_facets.TOP) -> dict[str, Any]:
        """Top values per facet of :meth:`search`'s whole result (on a standby:
        :meth:`_read`). Stage: :func:`loupe.search.entry.facets`."""
        return self._read(lambda lib: entry.facets(lib, query, filters=filters, scope=scope,
                                                   lang=lang, top=top))[0]

    def analyze(self, text: str, *, lang: str | None = None, query: bool = False) -> list[str]:
        """Terms of ``text`` (``query``: as searched): :func:`loupe.lexical.search.analyze_terms`"""
        return analyze_terms(self.conn, text, self._lang(lang), query=query)

    def _lang(self, lang: str | None) -> str:
        return query_language(self.languages(), lang)

    # -- assets as the viewer may see them (loupe.assets.view) -----------------------

    def _asset_row(self, asset_id: int) -> tuple:
        return view.asset_row(self.conn, self.tenant_id, self.tenant, self.viewer, asset_id)

    def show(self, asset_id: int) -> dict[str, Any]:
        """Everything about one readable asset. Stage: :func:`loupe.assets.view.asset_record`."""
        return view.asset_record(self.conn, self.home, self.tenant_id,
                                 self._asset_row(asset_id), self.viewer, self.languages())

    def thumbnail(self, asset_id: int) -> Path:
        """The asset's thumbnail file. Stage: :func:`loupe.assets.view.thumbnail_path`."""
        return view.thumbnail_path(self.home, self._asset_row(asset_id))

    def original(self, asset_id: int) -> Path:
        """The path of the asset's primary file (prefer :meth:`open_original`).
        Stage: :func:`loupe.assets.view.open_original`."""
        fh, path = self.open_original(asset_id)
        fh.close()
        return path

    def open_original(self, asset_id: int) -> tuple[Any, Path]:
        """The asset's original, opened: ``(file object, path)``.
        Stage: :func:`loupe.assets.view.open_original`."""
        return view.open_original(self.conn, self.tenant_id, self.viewer,
                                  self._asset_row(asset_id))

    def collections(self) -> list[dict[str, Any]]:
        """Collections the viewer can read in. Stage: :func:`loupe.assets.view.collections`."""
        return view.collections(self.conn, self.tenant_id, self.viewer)

    def failures(self, run_id: int | None = None) -> list[dict[str, Any]]:
        """Problems of an ingest run. Stage: :func:`loupe.assets.view.failures`."""
        return view.failures(self.conn, self.tenant_id, run_id)

    def stats(self) -> dict[str, Any]:
        """Asset, file, collection, document counts. Stage: :func:`loupe.assets.view.stats`."""
        return {"tenant": self.tenant, **view.stats(self.conn, self.tenant_id),
                "languages": self.languages()}

    # -- users, groups, grants (P1; loupe.access.users) ------------------------------

    @property
    def user(self) -> dict[str, Any] | None:
        """The bound user, or None for the local owner.
        Stage: :meth:`loupe.access.viewer.Viewer.as_dict`."""
        return self.viewer.as_dict()

    def as_user(self, name: str) -> "Library":
        """This library as user ``name`` sees it. Stage: :func:`loupe.access.users.viewer_for`."""
        viewer = access.viewer_for(self.conn, self.tenant_id, name)
        return Library(self.conn, self.home, self.tenant_id, self.tenant, viewer, self.reads)

    def _manage(self) -> None:
        if not self.viewer.see_all:
            raise AccessError(f"{self.viewer.name} is not an admin of this tenant")

    def authenticate(self, name: str, password: str) -> dict[str, Any] | None:
        """The user if the password is right. Stage: :func:`loupe.access.users.authenticate`."""
        viewer = access.authenticate(self.conn, self.tenant_id, name, password)
        return viewer.as_dict() if viewer else None

    def create_user(self, name: str, password: str, *, admin: bool = False) -> dict[str, Any]:
        """Create a user. Stage: :func:`loupe.access.users.create_user`."""
        self._manage()
        return access.create_user(self.conn, self.tenant_id, name, password, admin=admin,
                                  actor=self.viewer)

    def set_password(self, name: str, password: str) -> dict[str, Any]:
        """A new password for ``name``. Stage: :func:`loupe.access.users.set_password`."""
        self._manage()
        return access.set_password(self.conn, self.tenant_id, self.viewer, name, password)

    def disable_user(self, name: str) -> dict[str, Any]:
        """No login for ``name``. Stage: :func:`loupe.access.users.set_disabled`."""
        self._manage()
        return access.set_disabled(self.conn, self.tenant_id, self.viewer, name, True)

    def enable_user(self, name: str) -> dict[str, Any]:
        """Let a disabled user log in. Stage: :func:`loupe.access.users.set_disabled`."""
        self._manage()
        return access.set_disabled(self.conn, self.tenant_id, self.viewer, name, False)

    def revoke_tokens(self, name: str) -> dict[str, Any]:
        """End ``name``'s sessions and tokens. Stage: :func:`loupe.access.users.revoke_tokens`."""
        self._manage()
        return access.revoke_tokens(self.conn, self.tenant_id, self.viewer, name)

    def delete_user(self, name: str) -> dict[str, Any]:
        """Delete ``name``. Stage: :func:`loupe.access.users.delete_user`."""
        self._manage()
        return access.delete_user(self.conn, self.tenant_id, self.viewer, name)

    def create_group(self, name: str) -> dict[str, Any]:
        """Create a group. Stage: :func:`loupe.access.users.create_group`."""
        self._manage()
        return access.create_group(self.conn, self.tenant_id, name, actor=self.viewer)

    def add_member(self, group: str, user: str) -> None:
        """Put ``user`` in ``group``. Stage: :func:`loupe.access.users.add_member`."""
        self._manage()
        access.add_member(self.conn, self.tenant_id, group, user, actor=self.viewer)

    def principals(self) -> list[dict[str, Any]]:
        """Users and groups of the tenant. Stage: :func:`loupe.access.users.principals`."""
        self._manage()
        return access.principals(self.conn, self.tenant_id)

    def grant(self, principal: str, *, collection: str | None = None,
              asset_id: int | None = None, path: str | None = None,
              revoke: bool = False) -> None:
        """Let a user or group read a collection, an asset or one file (its
        full ``path``) (``revoke``: take it back).
        Stage: :func:`loupe.access.users.grant_named` (audited)."""
        self._manage()
        access.grant_named(self.conn, self.tenant_id, principal, collection=collection,
                           asset_id=asset_id, path=path, revoke=revoke, actor=self.viewer)

    def revoke(self, principal: str, *, collection: str | None = None,
               asset_id: int | None = None, path: str | None = None) -> None:
        """Take back a grant (see :meth:`grant`)."""
        self.grant(principal, collection=collection, asset_id=asset_id, path=path,
                   revoke=True)

    def grants(self) -> list[dict[str, Any]]:
        """Every grant of the tenant. Stage: :func:`loupe.access.users.grants`."""
        self._manage()
        return access.grants(self.conn, self.tenant_id)

    def set_embargo(self, asset_ids: list[int], until: datetime | None) -> int:
        """Hide assets from members until ``until``. Stage: :func:`loupe.access.users.set_dates`."""
        self._manage()
        return access.set_dates(self.conn, self.tenant_id, list(asset_ids), embargo=until)

    def set_rights_expiry(self, asset_ids: list[int], until: datetime | None) -> int:
        """Hide assets from members from ``until``. Stage: :func:`loupe.access.users.set_dates`."""
        self._manage()
        return access.set_dates(self.conn, self.tenant_id, list(asset_ids),
                                rights_expiry=until)

    # -- bulk actions (C6; loupe.bulk) -----------------------------------------------

    def bulk(self, action: str, value: Any, *, query: str,
             scope: str | list[str] | None = None, lang: str | None = None,
             confirm: bool = False, any_term: bool = False,
             dry_run: bool = False, filters: Any = None,
             confirmation: str | None = None) -> dict[str, Any]:
        """Apply ``action`` to every asset ``query`` finds, audited
        (``confirmation``: the set confirmed, "COUNT:DIGEST").
        Stage: :func:`loupe.bulk.run.bulk`."""
        self._manage()
        lang = self._lang(lang) if lang else None   # without one, every language's
        return bulk_run.bulk(self._primary(), action, value, query=query, scope=scope, lang=lang,
                             confirm=confirm, any_term=any_term, dry_run=dry_run,
                             filters=filters, confirmation=confirmation)

    def audit_log(self, limit: int = 50) -> list[dict[str, Any]]:
        """The latest audited actions. Stage: :func:`loupe.bulk.actions.audit_log`."""
        self._manage()
        return read_audit_log(self.conn, self.tenant_id, limit)

    # -- vocabularies and settings ---------------------------------------------------

    def import_vocabulary(self, path: str | Path, *, name: str | None = None,
                          progress: ProgressFn | None = None) -> dict[str, Any]:
        """Import (or replace) a controlled vocabulary.
        Stage: :func:`loupe.document.rebuild.import_vocabulary`."""
        languages = self.languages()
        # its one transaction rebuilds many assets' documents: a deadlock
        # with another writer of them is run again (loupe.db.retry)
        return retrying(self.conn, lambda: rebuild.import_vocabulary(
            self.conn, self.tenant_id, languages, path, name, progress=progress))

    def vocabularies(self) -> list[dict[str, Any]]:
        """The tenant's vocabularies. Stage: :func:`loupe.document.rebuild.vocabularies`."""
        return rebuild.vocabularies(self.conn, self.tenant_id)

    def lexical_settings(self) -> dict[str, Any]:
        """The lexical lane's settings. Stage: :func:`loupe.lexical.settings.read`."""
        return lexical_bounds.read(self.conn, self.tenant_id)

    def set_lexical_settings(self, **changes: Any) -> dict[str, Any]:
        """Change lexical settings. Stage: :func:`loupe.lexical.settings.change`."""
        return lexical_bounds.change(self.conn, self.tenant_id, self.languages(), **changes)

    def fusion_settings(self) -> dict[str, Any]:
        """The fusion settings (F1). Stage: :func:`loupe.fusion.settings.read`."""
        return fusion_config.read(self.conn, self.tenant_id)

    def set_fusion_settings(self, **changes: Any) -> dict[str, Any]:
        """Change fusion settings. Stage: :func:`loupe.fusion.settings.change`."""
        return fusion_config.change(self.conn, self.tenant_id, **changes)

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
        return conversation_search.ask(self, sentence, conversation=conversation, lang=lang,
                              limit=limit, offset=offset, clock=clock, run_search=run)

    def conversation(self, conversation: int) -> dict[str, Any]:
        """One of the viewer's conversations with its turns
        (:func:`loupe.conversation.store.get`). Raises ConversationNotFound."""
        return conversation_store.get(self.conn, self.tenant_id, self.viewer, conversation)

    def conversations(self) -> list[dict[str, Any]]:
        """The viewer's conversations, most recent first (at most 50)
        (:func:`loupe.conversation.store.listing`)."""
        return conversation_store.listing(self.conn, self.tenant_id, self.viewer)

    def edit_conversation(self, conversation: int, *, filter: dict | None, text: str = "",
                          limit: int = 20, offset: int = 0, run: bool = True) -> dict[str, Any]:
        """Set a conversation's state by hand (a chip removed or edited) and
        search it, as :meth:`ask`. Raises FilterError: a tree outside the contract."""
        return conversation_search.edit(self, conversation, filter=filter, text=text, limit=limit,
                               offset=offset, run_search=run)

    def delete_conversation(self, conversation: int) -> None:
        """Delete one of the viewer's conversations. Raises ConversationNotFound.
        Stage: :func:`loupe.conversation.store.delete`."""
        conversation_store.delete(self.conn, self.tenant_id, self.viewer, conversation)
