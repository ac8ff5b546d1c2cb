"""Running a conversation's state through the one search path.

The state (filter tree + free text) goes to ``Library.search(text,
filters=tree)`` — the same statement, permissions and completeness verdict as
every search.  Until the filter tree is part of ``Library.search`` (issue 17
part 1, branch *filters*), a state with a filter is NOT searched as text only
(that would silently drop the constraints): the answer says "filters not
available" instead.
"""
from __future__ import annotations

import inspect
from typing import Any

FILTERS_MISSING = ("filters not available: this build's search does not take a filter tree "
                   "yet, so the understood filter was not applied and no search was run")


def filters_supported(library) -> bool:
    """Whether ``Library.search`` takes ``filters=`` (issue 17 part 1 merged)."""
    return "filters" in inspect.signature(type(library).search).parameters


def result(library, state: dict[str, Any], *, lang: str | None = None, limit: int = 20,
           offset: int = 0):
    """``(SearchResult | None, notices)`` for a state: None when nothing can
    honestly be searched (empty state, a filter the search cannot apply)."""
    flt, text = state.get("filter"), state.get("text", "")
    if flt is None and not text:
        return None, ["nothing to search yet: the conversation holds no filter and no text"]
    if flt is not None and not filters_supported(library):
        return None, [FILTERS_MISSING]
    from ..filters import FilterError

    kwargs = {"filters": flt} if flt is not None else {}
    try:
        return library.search(text, lang=lang, limit=limit, offset=offset, **kwargs), []
    except FilterError as exc:
        # e.g. colour filters before machine words exist, an unknown collection,
        # a rights state a member may not ask for: said, never searched without
        return None, [f"the search was not run: {exc}"]


def run(library, state: dict[str, Any], *, lang: str | None = None, limit: int = 20,
        offset: int = 0) -> dict[str, Any]:
    """``{"search": SearchResult.as_dict() | None, "notices": [...]}`` for a state."""
    res, notices = result(library, state, lang=lang, limit=limit, offset=offset)
    return {"search": res.as_dict() if res is not None else None, "notices": notices}
