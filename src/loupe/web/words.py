"""What a result means, in plain words (C4, C5): the total and the
completeness verdict as one sentence the UI shows, and bulk outcomes."""

from __future__ import annotations

ACTION_LABELS = {
    "add_keyword": "Add keyword",
    "add_to_collection": "Add to collection",
    "set_rights_expiry": "Set usage-rights expiry",
    "set_embargo": "Set embargo until",
}


def verdict_sentence(query: str, total: int, total_exact: bool, verdict: str,
                     reachable: int | None = None,
                     corrections: dict[str, str] | None = None,
                     meaning_only: bool = False) -> str:
    """The total and verdict of a result as a sentence.

    ``complete`` → "All 1,240 results" (or "No results for “q”."),
    ``truncated`` → "At least 1,000 results — narrow the search to act on all
    of them" (or the exact total when known), ``unknown`` → "About N results,
    not proven complete — …", naming any typo correction; with
    ``meaning_only`` (no word matched: every row is a vector neighbour) it
    says the rows are approximate matches by meaning.
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
    if meaning_only:
        return (f"About {total:,} approximate results by meaning only — no word of "
                f"“{query}” matched; not proven complete — acting on all of them needs a "
                f"confirmation.")
    return (f"About {total:,} results{fixed}, not proven complete — "
            f"acting on all of them needs a confirmation.")


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


LANE_NAMES = {"lexical": "word lane (BM25F)", "text": "text lane (meaning of the metadata)",
              "image": "image lane (pixels)"}


def explain_code(rank: int, bonus: int, explain: dict) -> str:
    """A hit's explain data as a short URL-safe code for the asset page's
    "why it matched": ``r=3;b=2;lexical=1,4.913;text=3,0.529;band``."""
    parts = [f"r={rank}", f"b={bonus}"]
    for lane, info in explain.items():
        if lane == "band":
            if info:
                parts.append("band")
        elif isinstance(info, dict) and info.get("rank") is not None:
            value = info.get("score", info.get("distance"))
            parts.append(f"{lane}={info['rank']},{value:.3f}" if value is not None
                         else f"{lane}={info['rank']}")
        elif isinstance(info, dict) and info.get("score") is not None:
            parts.append(f"{lane}=,{info['score']:.3f}")
    return ";".join(parts)


def explain_sentences(code: str) -> list[str]:
    """Sentences for an :func:`explain_code`; an unreadable code gives ``[]``
    (it travels in a URL, so it is display data, never trusted)."""
    out: list[str] = []
    try:
        for part in code.split(";")[:8]:
            key, _, value = part.partition("=")
            if key == "r":
                out.append(f"Rank {int(value):,} in this search.")
            elif key == "b" and int(value) in (1, 2):
                out.append("Phrase bonus: the title holds the query." if int(value) == 2
                           else "Phrase bonus: the document holds the query.")
            elif key == "band":
                out.append("In the scope's guaranteed band: a member the ranked list's cap "
                           "left out, shown after every ranked row.")
            elif key in LANE_NAMES:
                rank, _, num = value.partition(",")
                measure = "cosine distance" if key in ("text", "image") else "score"
                bits = ([f"rank {int(rank):,}"] if rank else []) + \
                       ([f"{measure} {float(num):.3f}"] if num else [])
                out.append(f"{LANE_NAMES[key][0].upper()}{LANE_NAMES[key][1:]}: "
                           f"{', '.join(bits)}.")
    except ValueError:
        return []
    return out
