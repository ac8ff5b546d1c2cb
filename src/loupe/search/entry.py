"""The two entry points of a search, as :class:`loupe.Library` exposes them:
:func:`search` checks the page and the language, then runs the search
pipeline (:class:`loupe.search.pipeline.SearchPipeline`), or the filtered
search when a filter tree is given (:func:`loupe.filters.search.filtered_search`,
which runs the same pipeline with the tree as its clause and scope);
:func:`facets` counts values over a search's whole result.
"""

from __future__ import annotations

from typing import Any, Protocol

from ..conversation.facts import query_facts
from ..document.languages import query_language
from ..filters import facets as filter_facets, search as filter_search
from ..lexical.search import MAX_QUERY_CHARS, query_languages
from .context import SearchContext
from .pipeline import BULK_MAX, SearchPipeline, SearchRequest, check_page
from .result import SearchResult, without_scores



class Facade(SearchContext, Protocol):
    """A library view whose own ``search`` and ``facets`` (the access-checked
    methods of :class:`loupe.Library`) the entry points call back."""

    def search(self, query: str, **kw: Any) -> SearchResult:
        ...

    def facets(self, query: str = "", **kw: Any) -> dict[str, Any]:
        ...


def search(lib: Facade, query: str, *, lang: str | None = None, limit: int = 20,
           offset: int = 0, scope: str | list[str] | None = None, title_band: bool = False,
           filters: Any = None, facets: bool = False) -> SearchResult:
    """Search ``lib``'s tenant as its viewer (:meth:`loupe.Library.search`).

    ``scope``: a collection (path, ``id:42`` or full path) with its
    sub-collections, or a list of them (their union). ``lang``: search that
    language's documents, else every library language's (an asset's best).
    ``title_band``: every asset whose title holds all the terms stays
    reachable past the caps (C2). ``filters``: a filter tree
    (docs/filters.md); with an empty ``query`` the result is the filtered
    set, newest first. A query whose every word names a machine fact
    ("cut-out on white") ranks the results with those facts first
    (:mod:`loupe.search.facts`). ``facets``: the result carries :func:`facets` of the
    same arguments. ``limit`` hits from ``offset`` on. A viewer who does
    not see everything (a member) is shown no score
    (:func:`loupe.search.result.without_scores`).

    Raises:
        ValueError: ``limit`` outside [1, BULK_MAX], ``offset`` outside [0,
            OFFSET_MAX] (checked first), ``lang`` not a library language, a
            stored setting out of range, or the query too long
            (loupe.lexical.search.MAX_QUERY_*).
        loupe.scopes.search.UnknownScope: the scope names no collection.
        loupe.filters.FilterError: a bad filter tree (the node is named) or a
            collection it names does not exist.
    """
    check_page(limit, offset)
    langs, note = search_languages(lib, query, lang)
    if filters is not None:   # the filtered set is the search's scope
        res = filter_search.filtered_search(lib, query, langs, limit, offset, scope, filters)
    else:
        res = SearchPipeline(lib).run(SearchRequest(query, langs, limit, offset, scope,
                                                    title_band, facts=query_facts(query)))
    if note:
        res.notices.insert(0, note)
    if facets:
        res.facets = lib.facets(query, lang=lang, scope=scope, filters=filters)
    if not lib.viewer.see_all:   # a member is shown no score
        without_scores(res)
    return res


def search_languages(lib: Facade, query: str, lang: str | None) -> tuple[list[str], str | None]:
    """The languages whose documents a search reads, and the notice that
    says so when they were chosen for the query: ``lang`` when given (a
    library language), else the library languages whose analyzer finds the
    query's stop words (:func:`loupe.lexical.search.query_languages`), else
    all of them.

    Raises:
        ValueError: ``lang`` is not a library language, or the query is too long.
    """
    if lang:
        return [query_language(lib.languages(), lang)], None
    every = lib.languages()
    if len(query) > MAX_QUERY_CHARS:   # the pipeline refuses it, with its own message
        return every, None
    langs, stops = query_languages(lib.conn, query, every)
    if len(langs) == len(every):
        return langs, None
    named = " and ".join(langs)
    n = stops[langs[0]]
    are = "is a stop word" if n == 1 else "are stop words"
    return langs, (f"the query reads as {named} ({n} of its words {are} "
                   f"in {'each' if len(langs) > 1 else named}): only the documents "
                   f"in {named} were searched; give a language ({'/'.join(every)}) to "
                   f"choose another")


def facets(lib: Facade, query: str = "", *, filters: Any = None,
           scope: str | list[str] | None = None, lang: str | None = None,
           top: int = filter_facets.TOP) -> dict[str, Any]:
    """Top ``top`` values per facet of the whole result of :func:`search`
    with the same arguments (:meth:`loupe.Library.facets`), with counts and
    the filter node narrowing to each (:func:`loupe.filters.facets.facets`
    gives the shape): exact when the result is complete (verdict complete,
    total exact and every hit within BULK_MAX), lower bounds otherwise.

    Raises:
        ValueError: ``top`` outside [1, 100] (checked before the search), or
            as :func:`search`.
        loupe.filters.FilterError, loupe.scopes.search.UnknownScope: as :func:`search`.
    """
    filter_facets.check_top(top)   # before the work
    full = lib.search(query, lang=lang, scope=scope, filters=filters, limit=BULK_MAX)
    exact = full.verdict == "complete" and full.total_exact and len(full.hits) == full.total
    return filter_facets.facets(lib.conn, lib.tenant_id, lib.viewer,
                                [h.asset_id for h in full.hits], exact=exact, top=top)
