"""A bulk action over what a search finds (C6): the search of
:meth:`loupe.Library.search` with the same scope, language and filter, run
inside :func:`loupe.bulk.actions.apply_action`'s transaction, and the
scope and filter written to the audit log as they were resolved."""

from __future__ import annotations

from typing import Any

from ..filters import search as filter_search
from ..scopes.search import resolve_scope
from ..search.pipeline import BULK_MAX
from .actions import apply_action


def audit_scope(lib: Any, scope: str | list[str] | None,
                filters: Any) -> tuple[list[str] | None, str | None]:
    """Collections named as the viewer of ``lib`` may resolve them, as
    ``(["id:N", ...] or None, label for the audit log)``; the label also
    holds the filter tree (canonical JSON) when there is one.

    Raises:
        loupe.scopes.search.UnknownScope: no such collection, or a path naming several.
        loupe.filters.FilterError: the filter tree is not valid.
    """
    label = None
    if scope:
        resolved = resolve_scope(lib.conn, lib.tenant_id, scope, viewer=lib.viewer)
        scope, label = [f"id:{i}" for i in resolved.roots], resolved.label
    if filters is not None:
        label = ((label + " ") if label else "") + "filter " + \
            filter_search.parse(filters).dumps()
    return scope, label


def bulk(lib: Any, action: str, value: Any, *, query: str, scope: str | list[str] | None,
         lang: str | None, confirm: bool, any_term: bool, dry_run: bool,
         filters: Any) -> dict[str, Any]:
    """``action`` applied to every asset ``lib.search`` finds (≤ :data:`BULK_MAX`)
    for ``lib``'s viewer (what :meth:`loupe.Library.bulk` does for an admin);
    ``lib`` is a :class:`loupe.Library` (its connection, tenant, viewer,
    languages and search). ``query``, ``scope``, ``lang`` (None: every
    language's) and ``filters`` as for :meth:`loupe.Library.search`. In one
    transaction, audited (:func:`loupe.bulk.actions.apply_action` gives the
    result's shape): directly when the result is complete, otherwise only
    with ``confirm``. By default only assets holding every query term;
    ``any_term``: every ranked asset. ``dry_run``: what would be done, nothing
    written.

    Raises:
        loupe.bulk.BulkError: unknown action or bad value.
        loupe.bulk.ConfirmationRequired: not complete and not confirmed.
        loupe.scopes.search.UnknownScope: a collection that does not exist
            or a path naming several.
    """
    scope_ids, label = audit_scope(lib, scope, filters)

    def run():
        return lib.search(query, lang=lang, scope=scope_ids, limit=BULK_MAX, filters=filters)

    return apply_action(lib.conn, lib.tenant_id, lib.viewer, lib.languages(), action, value,
                        run_search=run, query=query, scope=label, confirm=confirm,
                        match="any" if any_term else "all", dry_run=dry_run)
