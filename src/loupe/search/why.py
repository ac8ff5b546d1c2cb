"""Why an asset is or is not in a search's results (C7).

Every answer comes from the search itself, never from a second model of
it: the asset's rank is read from the result of :meth:`loupe.Library.search`
run as the viewer (the same statement, to the bulk limit); a scope or
filter is judged by running that search without it; a cap by running the
lexical lane with caps as large as the bulk limit; the words from the
search's own terms (after the stem check of :mod:`loupe.lexical.forms`)
against the asset's indexed document; a vector lane's distance from the
query vector the search encoded, against that lane's cut-off (V4).

An asset the viewer may not read gets the answer of an asset that does not
exist (:class:`loupe.assets.view.AssetNotFound`), so the question reveals
nothing (P1).
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from ..lexical.search import lexical_search, searched_terms
from .entry import Facade, search_languages
from .pipeline import BULK_MAX, SearchPipeline


class WhyContext(Facade, Protocol):
    """What the answer reads of the library (:class:`loupe.Library` is one):
    the search facade and the check that the viewer may read the asset."""

    def _asset_row(self, asset_id: int) -> Any:
        """The asset's row; raises AssetNotFound when the viewer may not read it."""

#: The field groups of the index's weight letters (loupe.document.compile.FIELDS).
GROUPS = {"A": "title", "B": "keywords, file name or vocabulary",
          "C": "description, collections, location or people",
          "D": "creator, copyright or other text"}

# The asset's indexed terms among the query's, per language and field group:
# the whole document's tsvector (weight letters), its vocabulary terms (group
# B) and its machine words. Read only for a viewer who may read the whole
# document (every file of the asset), as the search's own probes do.
ASSET_TERMS = """
SELECT d.lang, u.lexeme, array_to_string(u.weights, '') AS groups
FROM search_document d
JOIN asset a ON a.id = d.asset_id
CROSS JOIN LATERAL unnest(d.tsv) AS u
WHERE d.tenant_id = %(tenant_id)s AND d.asset_id = %(asset_id)s
  AND u.lexeme = ANY (%(terms)s::text[])
  AND (%(see_all)s OR loupe_can_read_doc(a.readers, a.doc_readers, a.embargo_until,
                                         a.rights_expire_at, %(principals)s::bigint[]))
UNION ALL
SELECT d.lang, u.lexeme, 'B' FROM search_document d
JOIN asset a ON a.id = d.asset_id
CROSS JOIN LATERAL unnest(d.vocab_tsv) AS u
WHERE d.tenant_id = %(tenant_id)s AND d.asset_id = %(asset_id)s
  AND u.lexeme = ANY (%(terms)s::text[])
  AND (%(see_all)s OR loupe_can_read_doc(a.readers, a.doc_readers, a.embargo_until,
                                         a.rights_expire_at, %(principals)s::bigint[]))
UNION ALL
SELECT d.lang, u.lexeme, 'M' FROM search_document d
JOIN asset a ON a.id = d.asset_id
CROSS JOIN LATERAL unnest(d.machine_tsv) AS u
WHERE d.tenant_id = %(tenant_id)s AND d.asset_id = %(asset_id)s
  AND u.lexeme = ANY (%(terms)s::text[])
  AND (%(see_all)s OR loupe_can_read_doc(a.readers, a.doc_readers, a.embargo_until,
                                         a.rights_expire_at, %(principals)s::bigint[]))
"""

# The cosine distance of the asset's vector in a lane to the query vector.
ASSET_DISTANCE = """
SELECT v.embedding <=> %(qv)s::vector
FROM asset_vector v
WHERE v.tenant_id = %(tenant_id)s AND v.asset_id = %(asset_id)s
  AND v.model_id = %(model_id)s AND v.lane = %(lane)s
"""


def _rank(res: Any, asset_id: int) -> int | None:
    return next((h.rank for h in res.hits if h.asset_id == asset_id), None)


def words(lib: WhyContext, asset_id: int, query: str, langs: list[str]) -> dict[str, Any]:
    """The query's words against the asset's indexed document: ``matched``
    ({language: {term: [field groups]}}), ``missing`` (terms of no searched
    language the asset holds), ``other_languages`` ({language: [terms]}: held
    in a library language the search did not read), ``stems`` (the stem
    check's verdicts) and ``shown`` (False: the viewer may not read every
    file of the asset, so its words are not told)."""
    every = lib.languages()
    qt_all, stems = searched_terms(lib.conn, lib.tenant_id, query, every, lib.viewer)
    rows = lib.conn.execute(ASSET_TERMS, {"tenant_id": lib.tenant_id, "asset_id": asset_id,
                                          "terms": qt_all.terms, **lib.viewer.params()}).fetchall()
    wanted = set(qt_all.pairs)
    held: dict[str, dict[str, set[str]]] = {}
    for lang, term, groups in rows:
        if (lang, term) in wanted:
            names = {GROUPS.get(g, "machine words") for g in groups} or {"description"}
            held.setdefault(lang, {}).setdefault(term, set()).update(names)
    searched = {lg: t for lg, t in held.items() if lg in langs}
    matched = {lg: {t: sorted(g) for t, g in ts.items()} for lg, ts in searched.items()}
    searched_terms_ = {t for lg, t in qt_all.pairs if lg in langs}
    found = {t for ts in searched.values() for t in ts}
    other = {lg: sorted(t for t in ts if t not in found) for lg, ts in held.items()
             if lg not in langs}
    readable = lib.viewer.see_all or bool(lib.conn.execute(
        "SELECT loupe_can_read_doc(a.readers, a.doc_readers, a.embargo_until, "
        "a.rights_expire_at, %(principals)s::bigint[]) FROM asset a WHERE a.id = %(id)s",
        {"id": asset_id, **lib.viewer.params()}).fetchone()[0])
    return {"matched": matched, "missing": sorted(searched_terms_ - found),
            "other_languages": {lg: ts for lg, ts in other.items() if ts},
            "stems": [m.as_dict() for m in stems if m.kind == "collision"],
            "shown": readable}


def lanes(lib: WhyContext, asset_id: int, query: str, langs: list[str]) -> dict[str, Any]:
    """Each vector lane the search ran: the asset's cosine distance to the
    query vector, the lane's cut-off (V4) and whether it is within;
    ``distance`` None when the asset has no vector in that lane yet."""
    notices: list[str] = []
    pipe = SearchPipeline(lib)
    out: dict[str, Any] = {}
    for ln in pipe.query_lanes(query, langs, notices):
        row = lib.conn.execute(ASSET_DISTANCE, {
            "tenant_id": lib.tenant_id, "asset_id": asset_id, "model_id": ln.model_id,
            "lane": ln.lane, "qv": np.asarray(ln.vector, dtype=np.float32)}).fetchone()
        d = None if row is None else round(float(row[0]), 4)
        out[ln.name] = {"distance": d, "cut_off": ln.max_dist,
                        "within": d is not None and d <= ln.max_dist}
    return out


def why(lib: WhyContext, asset_id: int, query: str, *, lang: str | None = None,
        scope: str | list[str] | None = None, filters: Any = None) -> dict[str, Any]:
    """Why asset ``asset_id`` is or is not in the results of ``query`` (with
    the ``lang``, ``scope`` and ``filters`` of :meth:`loupe.Library.search`),
    as the library's viewer sees it.

    Returns ``{"asset_id", "query", "in_results", "rank", "total",
    "verdict", "related" (its place among the pictures shown apart, or
    None), "words" (:func:`words`), "lanes" (:func:`lanes`), "reasons"}``:
    ``reasons`` a list of ``{"reason", "text"}``, ``reason`` one of
    ``in_results``, ``related``, ``scope``, ``filter``, ``missing_words``,
    ``language``, ``stem``, ``cut_off``, ``cap``, ``one_word``.

    Raises:
        loupe.assets.view.AssetNotFound: no such asset, or one the viewer
            may not read (the same answer).
        ValueError, loupe.scopes.search.UnknownScope, loupe.filters.FilterError:
            as :meth:`loupe.Library.search`.
    """
    lib._asset_row(asset_id)   # P1: unreadable = missing
    res = lib.search(query, lang=lang, scope=scope, filters=filters, limit=BULK_MAX)
    langs = list(res.langs or search_languages(lib, query, lang)[0])
    rank = _rank(res, asset_id)
    related = next((h.rank for h in res.related if h.asset_id == asset_id), None)
    w = words(lib, asset_id, query, langs)
    ln = lanes(lib, asset_id, query, langs)
    reasons: list[dict[str, str]] = []

    def say(reason: str, text: str) -> None:
        reasons.append({"reason": reason, "text": text})

    if rank is not None:
        say("in_results", f"in the results at rank {rank:,} of {res.total:,}")
    else:
        if related is not None:
            say("related", "shown apart as related by meaning, not counted: no query word "
                           "matched it and the search could not show it answers the query")
        if scope is not None or filters is not None:
            free = lib.search(query, lang=lang, limit=BULK_MAX)
            r = _rank(free, asset_id)
            kind = "filter" if filters is not None else "scope"
            if r is not None:
                say(kind, f"outside the {kind}: without it, it stands at rank {r:,}")
        if w["shown"]:
            if not w["matched"]:
                say("missing_words", "no query word is in its document" +
                    (f" (missing: {', '.join(w['missing'])})" if w["missing"] else ""))
            elif w["missing"]:
                say("missing_words", f"missing words: {', '.join(w['missing'])}")
            for lg, ts in w["other_languages"].items():
                say("language", f"its {lg} document holds {', '.join(ts)}, but the search "
                                f"read {'/'.join(langs)}")
            for m in w["stems"]:
                say("stem", f"“{' '.join(m['words'])}” reaches its {m['lang']} stem "
                            f"“{m['term']}” only through other words: not a match")
        for name, info in ln.items():
            if info["distance"] is not None and not info["within"]:
                say("cut_off", f"{name} lane: distance {info['distance']:.3f} is over the "
                               f"cut-off {info['cut_off']:.3f}")
        if w["matched"] and res.verdict == "truncated":
            big = lexical_search(lib.conn, lib.tenant_id, query, langs, limit=BULK_MAX,
                                 raw_cap=BULK_MAX, keep_cap=BULK_MAX, viewer=lib.viewer)
            r = next((h.rank for h in big.hits if h.asset_id == asset_id), None)
            if r is not None:
                settings = lib.lexical_settings()
                say("cap", f"the caps cut it (raw cap {settings['raw_cap']:,} postings, keep "
                           f"cap {settings['keep_cap']:,} assets): it would stand at rank {r:,} "
                           f"of the words' {big.total:,} matches")
        if len(query.split()) <= 1 and not w["matched"] and any(i["within"] for i in ln.values()):
            say("one_word", "a one-word query's results hold its word (V5)")
    return {"asset_id": asset_id, "query": query, "in_results": rank is not None, "rank": rank,
            "total": res.total, "verdict": res.verdict, "related": related, "words": w,
            "lanes": ln, "reasons": reasons}
