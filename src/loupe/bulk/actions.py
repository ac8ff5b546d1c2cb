"""Bulk actions on a result set (C6).

A bulk action is applied to every asset a search returns — all of them,
not the page on screen — and only when the search can prove it returned
all of them: on a ``complete`` result it runs directly; on ``truncated`` or
``unknown`` the caller is told (:class:`ConfirmationRequired`, with the
verdict and the honest total) and must confirm. The rows, the verdict and
the action come from one transaction; the audit log records who, what,
the query, the verdict, the total and the assets touched.

**Match rule.** By default (``match="all"``) an action reaches only the
assets whose search document holds **every** term of the query: a search
ranks assets that hold some of the terms (and, with vector lanes, assets
close in meaning), which is right for finding but not for changing 30
assets when the query named 10. ``match="any"`` (CLI ``--any-term``)
acts on the whole ranked result instead. Either way the answer (and the
confirmation request) gives both counts: ``matched_all_terms`` and
``matched_any``.
"""

from __future__ import annotations

import json
from datetime import date, datetime, timezone
from typing import Any, Callable

import psycopg

from ..access.viewer import Viewer
from ..terminal import unsafe
from ..document.compile import rebuild_documents
from ..lexical.search import query_terms_in
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

    def __init__(self, verdict: str, total: int, total_exact: bool, reachable: int,
                 match: str = "any", matched_all_terms: int | None = None):
        self.verdict, self.total = verdict, total
        self.total_exact, self.reachable = total_exact, reachable
        self.match, self.matched_all_terms = match, matched_all_terms
        bound = "" if total_exact else "at least "
        rule = ""
        if matched_all_terms is not None:
            rule = (f" ({matched_all_terms:,} of the {reachable:,} it reached hold every "
                    f"query term; the action applies to "
                    + ("those" if match == "all" else f"all {reachable:,}") + ")")
        super().__init__(
            f"the result is {verdict}: {bound}{total:,} assets match and the search would "
            f"reach {reachable:,} of them{rule}; confirm to apply it anyway")


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
    """A keyword or collection name: 1 to 200 characters after stripping,
    none of them a control character (Unicode Cc: ESC, CR, NUL…), a line or
    paragraph separator or a bidirectional control (U+202E…): they would
    reach the terminals and pages that print the keyword or the audit log,
    or reorder what follows them
    (:func:`loupe.terminal.unsafe`).

    Raises:
        BulkError: empty, too long, or holding such a character (named).
    """
    text = str(value or "").strip()
    if not 1 <= len(text) <= 200:
        raise BulkError(f"{what} must be 1 to 200 characters")
    bad = next((c for c in text if unsafe(c)), None)
    if bad is not None:
        raise BulkError(f"{what} holds the control character {bad!r}: "
                        f"write it without control or direction characters")
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


#: The match rules: which of a search's rows a bulk action reaches.
MATCH_RULES = {
    "all": "assets holding every query term",
    "any": "every asset the search ranks (some term, or close in meaning)",
}


def by_match_rule(match: str, every: Any, reached: Any) -> Any:
    """What the match rule keeps (:data:`MATCH_RULES`): ``every`` (the
    assets holding every query term) for ``all``, ``reached`` (every row the
    search ranked) for ``any`` — as lists of ids or as their counts."""
    return reached if match == "any" else every


def _terms_by_language(conn: psycopg.Connection, query: str, res: Any) -> dict[str, Any]:
    """The query's terms in each language the search looked in (``langs``,
    ``qlangs``, ``qterms``), as the search read them: each language's analysis,
    with the typo fallback's corrections applied where it made some."""
    langs = list(res.langs or [res.lang])
    pairs = [(lg, res.corrections.get(t, t)) for lg, t in query_terms_in(conn, query, langs).pairs]
    return {"langs": langs, "qlangs": [lg for lg, _ in pairs], "qterms": [t for _, t in pairs]}


def apply_action(conn: psycopg.Connection, tenant_id: int, viewer: Viewer, languages: list[str],
                 action: str, value: Any, *, run_search: Callable[[], Any], query: str,
                 scope: str | None, confirm: bool, match: str = "all",
                 dry_run: bool = False) -> dict[str, Any]:
    """Run the search, check its verdict, apply ``action`` to the assets the
    match rule keeps of it and write the audit row, in one transaction.

    ``run_search`` returns a :class:`loupe.library.SearchResult` holding every
    reachable row (the caller asks for all of them). ``match``: ``all`` (the
    default: assets whose search document holds every query term) or
    ``any`` (every row of the search); see :data:`MATCH_RULES`. With
    ``dry_run`` nothing is changed or logged: the answer gives the counts.

    Returns ``{"action", "value", "match", "matched_all_terms",
    "matched_any", "count", "verdict", "total", "total_exact", "confirmed",
    "audit_id", "dry_run"}``; ``matched_any`` is the number of rows the
    search reached, ``matched_all_terms`` those holding every term, ``count``
    the number of assets changed or already in the requested state (0 and
    ``audit_id`` None on a dry run).

    Raises:
        BulkError: unknown action, unusable value or match rule (nothing is
            searched).
        ConfirmationRequired: the verdict is not ``complete`` and ``confirm``
            is false (nothing is changed).
    """
    checked = check_action(action, value)
    if match not in MATCH_RULES:
        raise BulkError(f"unknown match rule {match!r} (one of {', '.join(MATCH_RULES)})")
    with conn.transaction():
        res = run_search()
        reached = sorted({h.asset_id for h in res.hits})
        every = [r[0] for r in conn.execute(q.ALL_TERMS, {
            "tenant_id": tenant_id, "ids": reached, **_terms_by_language(conn, query, res)})]
        counts = {"match": match, "matched_all_terms": len(every), "matched_any": len(reached)}
        if dry_run:
            shown = checked.isoformat() if isinstance(checked, datetime) else checked
            return {"action": action, "value": shown, **counts, "count": 0,
                    "verdict": res.verdict, "total": res.total, "total_exact": res.total_exact,
                    "confirmed": confirm, "audit_id": None, "dry_run": True}
        if res.verdict != "complete" and not confirm:
            raise ConfirmationRequired(res.verdict, res.total, res.total_exact, len(reached),
                                       match, len(every))
        ids = by_match_rule(match, every, reached)
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
            "asset_ids": touched, "match": match}).fetchone()[0]
    return {"action": action, "value": shown, **counts, "count": len(touched),
            "verdict": res.verdict, "total": res.total, "total_exact": res.total_exact,
            "confirmed": confirm, "audit_id": audit_id, "dry_run": False}


def audit_log(conn: psycopg.Connection, tenant_id: int, limit: int = 50) -> list[dict[str, Any]]:
    """The latest audit rows, newest first: bulk actions (``query`` ... ``count``;
    ``match`` is the match rule, ``all``/``any``, None for actions logged before
    the rule existed) and actions on users (``target`` names the user; no
    query, verdict or total)."""
    cols = ["id", "at", "actor", "action", "value", "query", "scope", "lang", "verdict",
            "total", "total_exact", "confirmed", "count", "match", "target"]
    out = []
    for r in conn.execute(q.AUDIT_LOG, {"tenant_id": tenant_id, "limit": limit}):
        row = dict(zip(cols, r))
        row["at"] = row["at"].isoformat()
        out.append(row)
    return out
