"""Bulk actions on a result set (SPEC C6).

A bulk action is applied to every asset a search returns — all of them,
not the page on screen — and only when the search can prove it returned
all of them: on a ``complete`` result it runs directly; on ``truncated`` or
``unknown`` the caller is told (:class:`ConfirmationRequired`, with the
verdict and the honest total) and must confirm. The rows, the verdict and
the action come from one transaction; the audit log records who, what,
the query, the verdict, the total and the assets touched.
"""

from __future__ import annotations

import json
from datetime import date, datetime, timezone
from typing import Any, Callable

import psycopg

from ..access.viewer import Viewer
from ..document.compile import rebuild_documents
from . import queries as q


class BulkError(ValueError):
    """An action Loupe does not know, or a value it cannot use."""


class ConfirmationRequired(Exception):
    """The result set is not proven complete: the action needs confirming.

    Attributes:
        verdict: ``truncated`` or ``unknown``.
        total: the honest total (a lower bound when ``total_exact`` is false).
        total_exact: whether ``total`` is exact.
        reachable: how many assets the action would be applied to.
    """

    def __init__(self, verdict: str, total: int, total_exact: bool, reachable: int):
        self.verdict, self.total = verdict, total
        self.total_exact, self.reachable = total_exact, reachable
        bound = "" if total_exact else "at least "
        super().__init__(
            f"the result is {verdict}: {bound}{total:,} assets match and the action would "
            f"reach {reachable:,} of them; confirm to apply it anyway")


def _date(value: Any) -> datetime | None:
    """An ISO date or date-time (UTC when no zone is given), or None/'' to clear."""
    if value in (None, ""):
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=timezone.utc)
    try:
        parsed = datetime.fromisoformat(str(value))
    except ValueError:
        raise BulkError(f"{value!r} is not an ISO date (YYYY-MM-DD)") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def _text(value: Any, what: str) -> str:
    text = str(value or "").strip()
    if not 1 <= len(text) <= 200:
        raise BulkError(f"{what} must be 1 to 200 characters")
    return text


#: The actions, with a description of their value.
ACTIONS = {
    "add_keyword": "a keyword (indexed with the asset's own keywords)",
    "add_to_collection": "the name of a hand-made collection (created if missing)",
    "set_rights_expiry": "an ISO date, or empty to clear (members lose sight of the asset then)",
    "set_embargo": "an ISO date, or empty to clear (members see the asset from then)",
}


def check_action(action: str, value: Any) -> Any:
    """The value ``action`` will use, checked before anything runs.

    Raises:
        BulkError: unknown action or unusable value.
    """
    if action not in ACTIONS:
        raise BulkError(f"unknown bulk action {action!r} (one of {', '.join(ACTIONS)})")
    if action in ("set_rights_expiry", "set_embargo"):
        return _date(value)
    return _text(value, "a keyword" if action == "add_keyword" else "a collection name")


def apply_action(conn: psycopg.Connection, tenant_id: int, viewer: Viewer, languages: list[str],
                 action: str, value: Any, *, run_search: Callable[[], Any], query: str,
                 scope: str | None, confirm: bool) -> dict[str, Any]:
    """Run the search, check its verdict, apply ``action`` to every asset it
    returned and write the audit row, in one transaction.

    ``run_search`` returns a :class:`loupe.library.SearchResult` holding every
    reachable row (the caller asks for all of them).

    Returns ``{"action", "value", "count", "verdict", "total", "total_exact",
    "confirmed", "audit_id"}``; ``count`` is the number of assets changed or
    already in the requested state.

    Raises:
        BulkError: unknown action or unusable value (nothing is searched).
        ConfirmationRequired: the verdict is not ``complete`` and ``confirm``
            is false (nothing is changed).
    """
    checked = check_action(action, value)
    with conn.transaction():
        res = run_search()
        if res.verdict != "complete" and not confirm:
            raise ConfirmationRequired(res.verdict, res.total, res.total_exact, len(res.hits))
        ids = sorted({h.asset_id for h in res.hits})
        params = {"tenant_id": tenant_id, "ids": ids, **viewer.params()}
        touched = [r[0] for r in conn.execute(q.READABLE_IDS, params)]
        if action == "set_rights_expiry":
            conn.execute(q.SET_RIGHTS_EXPIRY, {**params, "until": checked})
        elif action == "set_embargo":
            conn.execute(q.SET_EMBARGO, {**params, "until": checked})
        else:
            if action == "add_keyword":
                changed = [r[0] for r in conn.execute(q.ADD_KEYWORD, {**params,
                                                                      "keyword": checked})]
            else:
                row = conn.execute(q.HAND_MADE_COLLECTION, {"tenant_id": tenant_id,
                                                            "path": checked}).fetchone()
                coll = row[0] if row else conn.execute(q.CREATE_HAND_MADE_COLLECTION, {
                    "tenant_id": tenant_id, "path": checked}).fetchone()[0]
                changed = [r[0] for r in conn.execute(q.ADD_TO_COLLECTION, {
                    **params, "collection_id": coll})]
            for asset_id in changed:
                rebuild_documents(conn, tenant_id, asset_id, languages)
        shown = checked.isoformat() if isinstance(checked, datetime) else checked
        audit_id = conn.execute(q.AUDIT, {
            "tenant_id": tenant_id, "principal_id": viewer.user_id, "actor": viewer.name,
            "action": action, "value": json.dumps(shown), "query": query, "scope": scope,
            "lang": ",".join(res.langs) or res.lang, "verdict": res.verdict, "total": res.total,
            "total_exact": res.total_exact, "confirmed": confirm, "count": len(touched),
            "asset_ids": touched}).fetchone()[0]
    return {"action": action, "value": shown, "count": len(touched), "verdict": res.verdict,
            "total": res.total, "total_exact": res.total_exact, "confirmed": confirm,
            "audit_id": audit_id}


def audit_log(conn: psycopg.Connection, tenant_id: int, limit: int = 50) -> list[dict[str, Any]]:
    """The latest audit rows, newest first."""
    cols = ["id", "at", "actor", "action", "value", "query", "scope", "lang", "verdict",
            "total", "total_exact", "confirmed", "count"]
    out = []
    for r in conn.execute(q.AUDIT_LOG, {"tenant_id": tenant_id, "limit": limit}):
        row = dict(zip(cols, r))
        row["at"] = row["at"].isoformat()
        out.append(row)
    return out
