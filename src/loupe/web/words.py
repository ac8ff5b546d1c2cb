"""What a result means, in plain words (SPEC C4, C5): the total and the
completeness verdict as one sentence the UI shows, and bulk outcomes."""

from __future__ import annotations

ACTION_LABELS = {
    "add_keyword": "Add keyword",
    "add_to_collection": "Add to collection",
    "set_rights_expiry": "Set usage-rights expiry",
}


def verdict_sentence(query: str, total: int, total_exact: bool, verdict: str,
                     reachable: int | None = None,
                     corrections: dict[str, str] | None = None) -> str:
    """The total and verdict of a result as a sentence.

    ``complete`` → "All 1,240 results" (or "No results for “q”."),
    ``truncated`` → "At least 1,000 results — narrow the search to act on all
    of them" (or the exact total when known), ``unknown`` → "About N results,
    not proven complete — …", naming any typo correction.
    """
    fixed = ""
    if corrections:
        fixed = " (searched " + ", ".join(f"“{new}” for “{old}”"
                                          for old, new in sorted(corrections.items())) + ")"
    if verdict == "complete":
        if total == 0:
            return f"No results for “{query}”."
        if total == 1:
            return "1 result — the only one."
        return f"All {total:,} results."
    if verdict == "truncated":
        if total_exact and reachable is not None and reachable < total:
            return (f"{total:,} results, of which the first {reachable:,} can be shown — "
                    f"narrow the search to act on all of them.")
        return f"At least {total:,} results — narrow the search to act on all of them."
    if total == 0:
        return f"No results for “{query}”{fixed} — not proven: this search path may miss matches."
    return (f"About {total:,} results{fixed}, not proven complete — "
            f"acting on all of them needs a confirmation.")


def bulk_sentence(action: str, value: str | None, count: int) -> str:
    """What a bulk action did: "Add keyword “x”: applied to 30 assets."."""
    label = ACTION_LABELS.get(action, action)
    shown = f" “{value}”" if value else (" (cleared)" if action == "set_rights_expiry" else "")
    return f"{label}{shown}: applied to {count:,} asset{'s' if count != 1 else ''}."
