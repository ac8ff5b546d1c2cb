"""Running a conversation's state through the one search path.

The state (filter tree + free text) goes to ``Library.search(text,
filters=tree)`` — the same statement, permissions and completeness verdict as
every search.  Where a build's ``Library.search`` takes no filter tree, a state with a filter is NOT searched as text only
(that would silently drop the constraints): the answer says "filters not
available" instead.
"""
from __future__ import annotations

import inspect
from typing import Any
from ..filters import FilterError
from . import store

FILTERS_MISSING = ("filters not available: this build's search does not take a filter tree "
                   "yet, so the understood filter was not applied and no search was run")


def filters_supported(library) -> bool:
    """Whether ``Library.search`` takes ``filters=`` ."""
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


def ask(library, sentence: str, *, conversation: int | None, lang: str | None, limit: int,
        offset: int, clock, run_search: bool) -> dict[str, Any]:
    """``sentence`` stored as the next turn of one of ``library``'s viewer's
    conversations (:func:`loupe.conversation.store.ask`; the default language
    is the library's first when it is en or fr, else en), then its state
    searched (:func:`run`) unless ``run_search`` is false. The return shape
    and errors are :meth:`loupe.Library.ask`'s."""
    first = library.languages()[0] if library.languages() else "en"
    out = store.ask(library.conn, library.tenant_id, library.viewer, sentence,
                    conversation=conversation, lang=lang, clock=clock,
                    default_lang=first if first in ("en", "fr") else "en")
    return {**out, **_searched(library, out["state"], limit, offset, run_search)}


def edit(library, conversation: int, *, filter: dict | None, text: str, limit: int,
         offset: int, run_search: bool) -> dict[str, Any]:
    """A conversation's state set by hand (:func:`loupe.conversation.store.edit`),
    then searched as in :func:`ask`."""
    out = store.edit(library.conn, library.tenant_id, library.viewer, conversation,
                     filter=filter, text=text)
    return {**out, **_searched(library, out["state"], limit, offset, run_search)}


def _searched(library, state: dict[str, Any], limit: int, offset: int,
              run_search: bool) -> dict[str, Any]:
    return (run(library, state, limit=limit, offset=offset) if run_search
            else {"search": None, "notices": []})
