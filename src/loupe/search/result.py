"""What a search returns: :class:`SearchResult` and its :class:`Hit` rows."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Hit:
    """One search result. ``rank`` is 1-based over the whole result set;
    ``score`` is BM25F for lexical-only search, the RRF score when vector
    lanes are fused (None for a title-band row of a lexical-only search:
    such rows are not scored); ``bonus`` the phrase bonus (2: title holds
    the query, 1: the document does); ``path`` the asset's primary file;
    ``explain`` each lane's rank and score or cosine distance (None: not in
    that lane), ``band``/``title_band`` when the row is in a band (C2)."""

    rank: int
    asset_id: int
    score: float | None
    bonus: int
    title: str
    path: str
    explain: dict[str, Any] = field(default_factory=dict)


@dataclass
class SearchResult:
    """A page of results for a query, with an honest total (C4, C5).

    ``total`` counts matching assets, never the page size: exact when
    ``total_exact``, otherwise a lower bound ("at least"). ``verdict``:
    ``complete`` — every match is ranked and reachable by paging;
    ``truncated`` — a cap cut matches off (``reachable`` are reachable);
    ``unknown`` — a fallback path (typo correction) produced the result.
    ``corrections`` maps a typed term to the indexed term searched instead.
    ``langs``: the languages whose documents were searched (every library
    language when the search named none); ``lang`` is the first of them,
    the language the hits' titles are shown in.
    ``meaning_only``: every row comes from meaning-based (vector) lanes — no
    word of the query matched — so the rows are approximate neighbours.
    ``stems``: each query term the analyzer made by changing a query word,
    and how it reaches the library (:meth:`loupe.lexical.forms.StemMatch.as_dict`:
    ``exact``, ``form``, ``collision`` — left out —, ``unseen``).
    ``related``: pictures close in meaning that no query word matched and
    that the search could not show answer the query (V8,
    :mod:`loupe.search.answer`): shown apart, never counted in ``total``,
    never in ``hits``, never acted on by a bulk action (page 1 only).
    ``evidence``: what answerability was decided from (None: no meaning-only
    row to decide on); ``answerable``: whether meaning-only rows counted.
    ``filter``: the filter tree searched within (its JSON), or None.
    ``facets``: when asked for, top values per facet of the whole result
    (:func:`loupe.filters.facets.facets`), or None.
    """

    query: str
    lang: str
    terms: list[str]
    total: int
    total_exact: bool
    verdict: str
    reachable: int
    limit: int
    offset: int
    hits: list[Hit] = field(default_factory=list)
    corrections: dict[str, str] = field(default_factory=dict)
    lanes: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    langs: list[str] = field(default_factory=list)
    meaning_only: bool = False
    filter: Any = None
    facets: dict[str, Any] | None = None
    stems: list[dict[str, Any]] = field(default_factory=list)
    related: list[Hit] = field(default_factory=list)
    evidence: dict[str, Any] | None = None
    answerable: bool | None = None

    def as_dict(self) -> dict[str, Any]:
        """The result as plain data (:func:`dataclasses.asdict`)."""
        return asdict(self)


def without_scores(res: SearchResult) -> SearchResult:
    """``res`` with every score taken out, in place (and returned): each
    hit's ``score`` and each lane's ``score`` in its ``explain`` become None;
    ranks, phrase bonuses, bands and cosine distances stay.

    Why: BM25F weighs a term by its document frequency
    over the whole tenant (``lexicon_term.df``, ``corpus_stat``), hidden
    assets included, so a member who uploads two documents holding one word
    each reads from their scores how many assets it may not see hold that
    word. A member's results therefore show no score, in any surface (the
    Python API, ``loupe --user``, the REST API, the pages, "why it matched");
    an RRF score goes too (it is the ranks in other words). A cosine distance
    is the query's against the asset's own vector, which no other asset
    moves: it stays. What remains (the order of a member's own results still
    follows the tenant's statistics) is in docs/security.md, "Scores and document frequency"."""
    for hit in [*res.hits, *res.related]:
        hit.score = None
        for info in hit.explain.values():
            if isinstance(info, dict) and "score" in info:
                info["score"] = None
    return res
