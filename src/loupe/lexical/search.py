"""The lexical lane: analyse the query, correct unknown terms, run the bounded
BM25F statement, report what it saw against its caps."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import psycopg

from ..access.viewer import OWNER, Viewer
from ..db.plans import fetch_generic
from ..document.languages import normalize_lang, ts_config
from . import compounds as cp
from . import forms as fm
from . import memo
from . import queries as q
from ..search import statements as st
from ..search import verdict as vd
from ..search.fallback import execute_with_fallback

#: Postings read per query term at most (F3 "raw scan"), and assets kept.
RAW_CAP = 3000
KEEP_CAP = 1000
#: Longest query accepted, in characters, and most distinct terms (N3: an
#: absurd query gets a clear error rather than minutes of work).
MAX_QUERY_CHARS = 1000
MAX_QUERY_TERMS = 64


class QueryTooLong(ValueError):
    """A query over :data:`MAX_QUERY_CHARS` characters or :data:`MAX_QUERY_TERMS` terms."""


@dataclass(frozen=True)
class LexicalHit:
    """One row. ``rank`` is 1-based over the result; ``score`` is BM25F (None
    for a title-band row, which the caps had left out); ``bonus`` the phrase
    bonus (2 title, 1 document, 0); ``in_band``: a title-band row (C2)."""

    rank: int
    asset_id: int
    score: float | None
    bonus: int = 0
    in_band: bool = False


@dataclass
class LexicalResult:
    """A page of the lexical lane, with what the lane saw.

    Attributes:
        terms: the query terms searched (after any correction).
        corrections: original term -> indexed term used instead (L2).
        total: matching assets; exact when ``total_exact``, else a lower bound.
        verdict: ``complete`` (every match is in ``kept`` and counted),
            ``truncated`` (a cap cut matches off) or ``unknown`` (a fallback
            path such as typo correction produced the result).
        candidates: assets reached by the postings read; kept: those kept.
        postings_read: postings read over all terms; max_df: largest df.
        raw_cap, keep_cap: the caps the lane ran under.
        title_band: rows of the title band (C2), after the kept rows; the
            band stops at TITLE_BAND_CAP rows.
    """

    terms: list[str]
    total: int
    total_exact: bool
    verdict: str
    hits: list[LexicalHit] = field(default_factory=list)
    corrections: dict[str, str] = field(default_factory=dict)
    candidates: int = 0
    kept: int = 0
    postings_read: int = 0
    max_df: int = 0
    raw_cap: int = RAW_CAP
    keep_cap: int = KEEP_CAP
    title_band: int = 0


def analyze(conn: psycopg.Connection, text: str, lang: str, *, query: bool = True) -> list[str]:
    """Terms the analyzer of ``lang`` emits for ``text``.

    ``query=True``: the distinct terms, sorted (what a query searches for).
    ``query=False``: every term in document order, repeats included (what a
    document indexes, before field weights).
    """
    params = {"cfg": ts_config(lang), "text": text}
    if query:   # a query's terms are remembered per connection (loupe.lexical.memo)
        def ask() -> tuple[str, ...]:
            return tuple(conn.execute(q.ANALYZE_QUERY, params).fetchone()[0])
        if len(text) > MAX_QUERY_CHARS:   # not a query: nothing that long is kept
            return list(ask())
        return list(memo.remembered(conn, ("analyze", params["cfg"], text), ask))
    return [r[0] for r in conn.execute(q.ANALYZE_DOCUMENT, params)]


def _check_length(query: str) -> None:
    """N3's character limit, on the query as typed.

    Raises:
        QueryTooLong: over :data:`MAX_QUERY_CHARS` characters."""
    if len(query) > MAX_QUERY_CHARS:
        raise QueryTooLong(f"query too long: {len(query):,} characters (the limit is "
                           f"{MAX_QUERY_CHARS:,})")


def analyze_many(conn: psycopg.Connection, texts: list[str], lang: str) -> list[list[str]]:
    """The distinct terms (sorted) the analyzer of ``lang`` emits for each
    of ``texts``, in their order; one round trip, remembered per connection
    (:mod:`loupe.lexical.memo`)."""
    cfg = ts_config(lang)
    rows = memo.remembered(conn, ("analyze many", cfg, tuple(texts)), lambda: tuple(
        tuple(r[0]) for r in conn.execute(q.ANALYZE_MANY, {"cfg": cfg, "texts": texts})))
    return [list(r) for r in rows]


def stop_words_among(conn: psycopg.Connection, lang: str, terms: list[str]) -> set[str]:
    """Which of ``terms`` the analyzer of ``lang`` drops as stop words
    (remembered per connection, :mod:`loupe.lexical.memo`)."""
    cfg = ts_config(lang)
    return set(memo.remembered(conn, ("stop words among", cfg, tuple(terms)), lambda: tuple(
        r[0] for r in conn.execute(q.STOP_WORDS_AMONG, {"cfg": cfg, "terms": terms}))))


def query_terms(conn: psycopg.Connection, query: str, lang: str) -> list[str]:
    """The distinct terms of a query, after the query-size checks (N3).

    Raises:
        QueryTooLong: over :data:`MAX_QUERY_CHARS` characters or :data:`MAX_QUERY_TERMS` terms.
    """
    _check_length(query)
    terms = analyze(conn, cp.normalise_dashes(query), lang)
    if len(terms) > MAX_QUERY_TERMS:
        raise QueryTooLong(f"query has {len(terms)} distinct terms (the limit is "
                           f"{MAX_QUERY_TERMS})")
    return terms


@dataclass(frozen=True)
class QueryTerms:
    """A query's terms in each searched language: ``pairs`` of (language,
    term), the query analysed by each language's analyzer (a
    search without a language looks in every library language's document).

    :meth:`params` gives the statement parameters of the lexical lane:
    ``lang`` (the first language: titles shown), ``langs``, the parallel
    arrays ``qlangs`` / ``qterms``, and ``terms`` (the distinct terms of all
    languages, sorted: what the result reports).
    """

    langs: tuple[str, ...]
    pairs: tuple[tuple[str, str], ...]
    #: (language, term) -> (group, need) for the parts of a hyphenated
    #: compound (:mod:`loupe.lexical.compounds`); a pair absent is a plain
    #: term, (0, 1).
    groups: tuple[tuple[tuple[str, str], tuple[int, int]], ...] = ()
    #: (term id, asset id) pairs that are no match: the asset's document
    #: writes the term's stem only in other words than the query's
    #: (:mod:`loupe.lexical.forms`).
    exclude: tuple[tuple[int, int], ...] = ()
    #: (language, term) pairs of query words the stem check found absent as
    #: themselves (:mod:`.forms`): the typo fallback never "corrects" them
    #: (it made "madrid" the stem of "madre" again).
    settled: tuple[tuple[str, str], ...] = ()

    @classmethod
    def single(cls, lang: str, terms: list[str]) -> "QueryTerms":
        """Already analysed ``terms`` of one language (for statements built by hand)."""
        return cls((lang,), tuple((lang, t) for t in terms))

    def group_of(self, lang: str, term: str) -> tuple[int, int]:
        """(group, need) of a term: (0, 1) for a plain term, else the
        compound it is a part of and how many terms that group holds."""
        return dict(self.groups).get((lang, term), (0, 1))

    @property
    def terms(self) -> list[str]:
        """The distinct terms of every language, sorted."""
        return sorted({t for _, t in self.pairs})

    def of(self, lang: str) -> list[str]:
        """The terms of one language, sorted."""
        return sorted(t for lg, t in self.pairs if lg == lang)

    def params(self) -> dict:
        """The lane's parameters ``lang``, ``langs``, ``qlangs``, ``qterms``,
        ``qgroups`` / ``qneed`` (each pair's compound group and its size,
        :mod:`loupe.lexical.compounds`) and ``terms``."""
        groups = [self.group_of(lg, t) for lg, t in self.pairs]
        return {"lang": self.langs[0], "langs": list(self.langs),
                "qlangs": [lg for lg, _ in self.pairs], "qterms": [t for _, t in self.pairs],
                "qgroups": [g for g, _ in groups], "qneed": [n for _, n in groups],
                "terms": self.terms, "xterm_ids": [t for t, _ in self.exclude],
                "xassets": [a for _, a in self.exclude]}

    def without(self, drop: set[tuple[str, str]],
                exclude: tuple[tuple[int, int], ...] = (),
                settled: set[tuple[str, str]] = frozenset()) -> "QueryTerms":
        """These terms less the (language, term) pairs of ``drop`` (a stem
        the query reaches only through other words: :mod:`.forms`), with
        ``exclude``: (term id, asset id) pairs that are no match, and
        ``settled``: pairs the typo fallback leaves as they are."""
        if not drop and not exclude and not settled:
            return self
        return QueryTerms(self.langs, tuple(p for p in self.pairs if p not in drop),
                          tuple(g for g in self.groups if g[0] not in drop),
                          tuple(exclude), tuple(sorted(settled)))

    def reached(self, conn: psycopg.Connection, tenant_id: int,
                viewer: Viewer = OWNER) -> bool:
        """Whether ``viewer`` may read some document, anywhere in the library,
        that holds one of these terms in its language (``TERMS_REACHED``;
        the typo fallback's "known", P1). Filters do not narrow it."""
        params = self.params()
        return bool(conn.execute(q.TERMS_REACHED, {
            "tenant_id": tenant_id, "qlangs": params["qlangs"], "qterms": params["qterms"],
            **viewer.params()}).fetchone()[0])

    def corrected(self, conn: psycopg.Connection, tenant_id: int,
                  viewer: Viewer = OWNER,
                  clause: Any = None) -> tuple["QueryTerms", dict[str, str]]:
        """The typo fallback (L2) in each language (:func:`suggest_corrections`):
        the terms with each absent term replaced by its correction, and the
        corrections made (typed term -> indexed term; the first language's
        when two languages correct a term differently). ``clause``: a filter
        the corrections must come from (see :func:`suggest_corrections`).
        A stop word of the language (kept as a term when the query holds
        nothing else, 0013) is never a typo: "the who" read as English was
        "corrected" to "thed" and matched a plantain stem."""
        pairs: list[tuple[str, str]] = []
        groups: dict[tuple[str, str], tuple[int, int]] = {}
        made: dict[str, str] = {}
        for lang in self.langs:
            stops = stop_words_among(conn, lang, self.of(lang))
            fix = suggest_corrections(conn, tenant_id, lang,
                                      [t for t in self.of(lang) if t not in stops
                                       and (lang, t) not in self.settled], viewer, clause)
            for term in sorted({fix.get(t, t) for t in self.of(lang)}):
                pairs.append((lang, term))
            for t in self.of(lang):  # a corrected part stays in its compound's group
                g = self.group_of(lang, t)
                if g[0] and groups.get((lang, fix.get(t, t)), g) == g:
                    groups[(lang, fix.get(t, t))] = g
            for typed, indexed in fix.items():
                made.setdefault(typed, indexed)
        return QueryTerms(self.langs, tuple(pairs), tuple(sorted(groups.items()))), made


def query_languages(conn: psycopg.Connection, query: str,
                    langs: Sequence[str]) -> tuple[list[str], dict[str, int]]:
    """The languages a query given without one is searched in, out of the
    library's ``langs``: those whose analyzer drops the most of the query's
    words as stop words, when some analyzer drops any; else every one.

    Language identification by stop words (Grefenstette, "Comparing two
    language identification schemes", JADT 1995: counting each language's
    most frequent words), with the analyzers' own Snowball stop-word lists.
    Why: every library language's analyzer reads an untagged (x-default)
    text, and an English question analysed by the German or Spanish
    analyzer keeps "with", "have", "and" as content words, so a distractor
    described in plain English outranked the picture the English analysis
    ranks first (E9 at 7,631 assets). A query of content words
    only ("galaxies", "madrid") names no language and is searched in all,
    as before; ties keep every tied language.

    Returns ``(languages, stop words per language)``, the languages in the
    library's order.

    Raises:
        ValueError: ``langs`` is empty.
    """
    codes = [normalize_lang(x) for x in langs]
    if not codes:
        raise ValueError("a search needs at least one language")
    if len(codes) == 1 or not query.strip():
        return codes, {}
    text, cfgs = query[:MAX_QUERY_CHARS], [ts_config(c) for c in codes]
    rows = memo.remembered(conn, ("stops by language", tuple(codes), tuple(cfgs), text),
                           lambda: tuple(conn.execute(q.STOP_WORDS_BY_LANGUAGE, {
                               "text": text, "langs": codes, "cfgs": cfgs}).fetchall()))
    stops = {lang: int(n) for lang, n in rows}
    most = max(stops.values())
    if most == 0:
        return codes, stops
    return [c for c in codes if stops[c] == most], stops


def query_terms_in(conn: psycopg.Connection, query: str, langs: str | Sequence[str]) -> QueryTerms:
    """The query's terms in each of ``langs`` (one code or several), after the
    query-size checks (N3) in each language, with the groups of the parts of
    its hyphenated compounds in each language (:mod:`loupe.lexical.compounds`:
    a part counts only in a document holding its whole group). A picture
    file's extension ending a word is not searched
    (:func:`~loupe.lexical.compounds.without_file_extensions`).

    Raises:
        QueryTooLong: over :data:`MAX_QUERY_CHARS` characters or
            :data:`MAX_QUERY_TERMS` terms in a language.
        ValueError: ``langs`` is empty.
    """
    codes = [normalize_lang(langs)] if isinstance(langs, str) else [normalize_lang(x) for x in langs]
    if not codes:
        raise ValueError("a search needs at least one language")
    pairs: list[tuple[str, str]] = []
    groups: dict[tuple[str, str], tuple[int, int]] = {}
    _check_length(query)   # as typed: dropping extensions must not lift the limit
    query = cp.without_file_extensions(query)   # a file name typed whole
    found = cp.find_compounds(query)
    for lang in codes:
        terms = query_terms(conn, query, lang)
        if found:  # the parts of each compound form a group (compounds.py)
            each = [p for c in found for p in c.parts]
            texts = [cp.with_joined(query)] + [" ".join(c.parts) for c in found] + each
            plain, *rest = [set(r) for r in analyze_many(conn, texts, lang)]
            parts, alone = rest[:len(found)], iter(rest[len(found):])
            # a part lost to stop words: its terms alone are not among the
            # compound's (a value of stop words alone keeps them, 0013)
            lost = []
            for c, ps in zip(found, parts):
                mine = [next(alone) for _ in c.parts]
                lost.append(any(not t <= ps for t in mine))
            kept = cp.term_groups(terms, plain, parts, lost)
            terms = [t for t in terms if t in kept]
            groups.update({(lang, t): g for t, g in kept.items() if g[0]})
        pairs += [(lang, t) for t in terms]
    return QueryTerms(tuple(codes), tuple(pairs), tuple(sorted(groups.items())))


def searched_terms(conn: psycopg.Connection, tenant_id: int, query: str,
                   langs: str | Sequence[str],
                   viewer: Viewer = OWNER) -> tuple[QueryTerms, list[fm.StemMatch]]:
    """The terms a search reads for ``query`` (:func:`query_terms_in`) less
    those that reach the library only through other words than the query's
    (:mod:`loupe.lexical.forms`: "madrid" through the Spanish stem of
    "madre"), with how each stemmed term reaches it (as ``viewer`` may read).

    Raises:
        QueryTooLong: over N3's limits.
        ValueError: ``langs`` is empty.
    """
    qt = query_terms_in(conn, query, langs)
    stems = fm.stem_matches(conn, tenant_id, query, list(qt.pairs), viewer)
    absent = {w for m in stems if m.kind == fm.COLLISION for w in m.words}
    settled = {(lg, t) for lg in qt.langs
               for t, ws in fm.query_words(conn, query, lg).items() if ws & absent} \
        if absent else set()
    return qt.without(fm.collisions(stems), fm.excluded(stems), settled), stems


def unproven_words(conn: psycopg.Connection, tenant_id: int, qt: QueryTerms,
                   viewer: Viewer = OWNER) -> list[str]:
    """The query's identifiers (terms holding letters and digits, e.g.
    ``ss26hero03``) that no document ``viewer`` may read holds in any
    searched language: words the search cannot prove absent, since the
    library may write them with spaces between their parts (verdict R1,
    :mod:`loupe.search.verdict`). Sorted."""
    out = []
    for term in qt.terms:
        if not (any(ch.isdigit() for ch in term) and any(ch.isalpha() for ch in term)):
            continue
        one = QueryTerms(qt.langs, tuple((lg, term) for lg in qt.langs))
        if not one.reached(conn, tenant_id, viewer):
            out.append(term)
    return out


def known_share(conn: psycopg.Connection, tenant_id: int, qt: QueryTerms,
                left_out: int = 0, viewer: Viewer = OWNER) -> float:
    """The share (0–1) of the query's terms the library holds in some
    document ``viewer`` may read, in the searched language where it holds
    the most; ``left_out``: terms of each language already left out as
    other words (:mod:`.forms`), counted as unknown. 0.0 for no term."""
    best = 0.0
    for lang in qt.langs:
        terms = qt.of(lang)
        if not terms:
            continue
        known = sum(QueryTerms((lang,), ((lang, t),)).reached(conn, tenant_id, viewer)
                    for t in terms)
        best = max(best, known / (len(terms) + left_out))
    return best


def analyze_terms(conn: psycopg.Connection, text: str, lang: str, *,
                  query: bool = False) -> list[str]:
    """What ``loupe analyze`` shows: every term a document indexes from
    ``text`` in ``lang`` (:func:`analyze`, ``query=False``), or with
    ``query`` exactly the terms a search reads in ``lang``
    (:func:`query_terms_in`: compound groups, a picture file's extension
    dropped), sorted.

    Raises:
        QueryTooLong: with ``query``, over N3's limits.
    """
    if query:
        return query_terms_in(conn, text, lang).of(lang)
    return analyze(conn, text, lang, query=False)


def suggest_corrections(conn: psycopg.Connection, tenant_id: int, lang: str,
                        terms: list[str], viewer: Viewer = OWNER,
                        clause: Any = None) -> dict[str, str]:
    """For each term absent from the lexicon, the closest indexed term (trigram
    similarity), when one is close enough. Absent terms with no neighbour are
    left out of the mapping. Only terms some asset readable by ``viewer``
    holds are known or suggested (P1); with ``clause`` (a filter, which has
    ``scope_members()``), only terms of readable assets that pass
    it (``SUGGEST_CORRECTIONS_IN``)."""
    params = {"tenant_id": tenant_id, "lang": lang, "terms": terms, **viewer.params()}
    if clause is not None and hasattr(clause, "scope_members"):
        # (a filter's own text, planned for its values)
        stmt = q.SUGGEST_CORRECTIONS_IN.replace("{members}", clause.scope_members())
        params.update(clause.params())
        rows = conn.execute(stmt, params).fetchall()
    else:   # one text, run again and again: planned once (loupe.db.plans)
        rows = fetch_generic(conn, q.SUGGEST_CORRECTIONS, params)
    return {r[0]: r[1] for r in rows if r[1]}


def lexical_search(conn: psycopg.Connection, tenant_id: int, query: str,
                   lang: str | Sequence[str], *,
                   limit: int = 20, offset: int = 0, raw_cap: int = RAW_CAP,
                   keep_cap: int = KEEP_CAP, correct_typos: bool = True,
                   viewer: Viewer = OWNER, title_band: bool = False) -> LexicalResult:
    """Run the lexical lane for ``query`` over the tenant's ``lang`` documents
    that ``viewer`` may read (P1: hidden assets take no cap slot and move no count).

    ``lang`` is one language code or several: with several, each language's
    documents are searched with the query analysed for that language and
    that language's statistics, and each asset is ranked by its best
    document (one row per asset; the total counts distinct assets).

    With ``correct_typos``, when no query term is in any document, each term
    is replaced by its closest indexed term if one is close enough (see
    ``SUGGEST_CORRECTIONS``); the result then says so (``corrections``) and is
    marked ``unknown`` with a total that is not claimed exact: a fallback
    never inherits completeness (L2, C4). A query that matches as typed
    is never corrected. With ``title_band``, documents whose title holds
    every query term follow the kept rows even when the caps left them out (C2).

    Raises:
        QueryTooLong: the query exceeds the character or term limit.
        ValueError: ``limit`` < 1, ``offset`` < 0 or a cap < 1.
    """
    if limit < 1 or offset < 0 or raw_cap < 1 or keep_cap < 1:
        raise ValueError("limit, raw_cap and keep_cap must be >= 1 and offset >= 0")
    qt, _stems = searched_terms(conn, tenant_id, query, lang, viewer)
    terms = qt.terms
    if not terms:
        return LexicalResult(terms=[], total=0, total_exact=True, verdict="complete",
                             raw_cap=raw_cap, keep_cap=keep_cap)
    def params(terms: QueryTerms, _lanes: list, fallback: bool) -> dict:
        return st.parameters(tenant_id=tenant_id, terms=terms.params(), query=query,
                             raw_cap=raw_cap, keep_cap=keep_cap, limit=limit, offset=offset,
                             viewer=viewer, fallback=fallback, title_band=title_band)

    run = execute_with_fallback(conn, tenant_id, viewer, st.LEXICAL, [], qt, params,
                                correct_typos=correct_typos)
    c = run.outcome.counts
    v = vd.decide(vd.Counts(candidates=c["candidates"], all_read=bool(c["all_read"]),
                            keep_cap=keep_cap, max_df=c["max_df"],
                            title_band_unreached=c["unreached"], rows=c["kept"] + c["band"],
                            corrected=bool(run.corrections),
                            unproven=bool(unproven_words(conn, tenant_id, qt, viewer))))
    hits = [LexicalHit(rank=r.rank, asset_id=r.asset_id, score=r.score, bonus=r.bonus,
                       in_band=r.in_band) for r in run.outcome.rows]
    return LexicalResult(
        terms=run.terms.terms, total=v.total, total_exact=v.exact, verdict=v.verdict, hits=hits,
        corrections=run.corrections, candidates=c["candidates"], kept=c["kept"],
        postings_read=c["postings_read"], max_df=c["max_df"], raw_cap=raw_cap,
        keep_cap=keep_cap, title_band=c["band"])
