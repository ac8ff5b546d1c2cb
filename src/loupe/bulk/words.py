"""Bulk actions in words, for the web app and the CLI alike: each action's
label and the sentence of what it did (never a raw ``None``: a cleared date
reads "(cleared)")."""

from __future__ import annotations

ACTION_LABELS = {
    "add_keyword": "Add keyword",
    "remove_keyword": "Remove keyword",
    "add_to_collection": "Add to collection",
    "remove_from_collection": "Remove from collection",
    "set_rights_expiry": "Set usage-rights expiry",
    "set_embargo": "Set embargo until",
}


def bulk_sentence(action: str, value: str | None, count: int, dry_run: bool = False) -> str:
    """What a bulk action did: "Add keyword “x”: applied to 30 assets.", or
    on a dry run (``count``: the assets the match rule keeps) what it would
    do: "Add keyword “x”: would apply to 7 assets; nothing changed."."""
    label = ACTION_LABELS.get(action, action)
    shown = f" “{value}”" if value else (" (cleared)" if action.startswith("set_") else "")
    assets = f"{count:,} asset{'s' if count != 1 else ''}"
    if dry_run:
        return f"{label}{shown}: would apply to {assets}; nothing changed."
    return f"{label}{shown}: applied to {assets}."
