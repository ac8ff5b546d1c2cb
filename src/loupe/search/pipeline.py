"""The one search pipeline: every search — library-wide or inside a scope,
lexical only or fused with vector lanes — runs these stages, in order:

1. **analyze** — the query's terms in each searched language, after the
   query-size checks (N3): :func:`loupe.lexical.search.query_terms_in`;
   the scope's collections resolved (C1).
2. **lanes** — the query encoded for each active vector lane, a lane left
   out with a notice when its encoder fails or its model changed
   (V3, V6): :meth:`SearchPipeline.query_lanes`.
3. **fuse + band** — one statement (:mod:`loupe.search.statements`: the
   lexical lane, the vector lanes joined by RRF, the title band or the
   scope's band, the page and the counts), run once; when no term matched
   as typed, the typo fallback (L2) runs it once more with the corrected
   terms and without the vector lanes (a lexical path: vectors encoded
   from the misspelt query sit it out). This is the only place the
   fallback is written.
4. **verdict** — complete / truncated / unknown and the total, from the
   statement's counts: :func:`loupe.search.verdict.decide` (C4, C5).
5. **page** — titles and paths of the page's assets as the viewer may see
   them (P1), and the :class:`~loupe.search.result.SearchResult`.

:class:`loupe.Library` delegates :meth:`~loupe.Library.search` here.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from psycopg.rows import dict_row

from .. import queries as q
from ..fusion.search import VectorLane
from ..lexical import settings as lexical_bounds
from ..lexical.queries import TITLE_BAND_CAP
from ..db.plans import fetch_generic
from ..lexical import forms as fm
from ..lexical.search import known_share, searched_terms, unproven_words
from ..models import registry
from ..models.embedders import ModelError
from ..scopes.queries import DEEP_MAX
from ..scopes.search import Scope, resolve_scope, scope_collections, scope_size, regime_for
from ..vector import identity as model_identity
from ..vector import queries as vq
from ..vector.waiting import waiting_notice
from . import statements as st
from .context import SearchContext
from .fallback import execute_with_fallback
from .clause import AssetClause
from .facts import NO_FACTS, QueryFacts
from . import answer as ans
from . import verdict as vd
from .result import Hit, SearchResult
from ..filters.words import sentence

#: Most assets one search page (and one bulk action) may reach: the deep
#: band's ceiling (C3).
BULK_MAX = 50_000
#: Largest search offset accepted (row numbers are bigint; no result is larger).
OFFSET_MAX = 1_000_000_000


def check_page(limit: Any, offset: Any) -> None:
    """A page's bounds, checked before any work.

    Raises:
        ValueError: ``limit`` not a whole number within 1 and :data:`BULK_MAX`,
            or ``offset`` not one within 0 and :data:`OFFSET_MAX`.
    """
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= BULK_MAX:
        raise ValueError(f"limit = {limit!r} is out of range: it must be within 1 and "
                         f"{BULK_MAX:,}")
    if isinstance(offset, bool) or not isinstance(offset, int) or not 0 <= offset <= OFFSET_MAX:
        raise ValueError(f"offset = {offset!r} is out of range: it must be within 0 and "
                         f"{OFFSET_MAX:,}")

@dataclass(frozen=True)
class SearchRequest:
    """One search: the query text, the languages whose documents are
    searched (first: titles shown), the page (``limit`` rows from
    ``offset``), the scope (None: the whole library) and whether the title
    band (C2) follows the ranked rows (library-wide only); ``clause``: a
    condition every row and count satisfies (a filter, :mod:`.clause`);
    ``facts``: the machine facts the query names, whose rows are ranked
    first (:func:`loupe.conversation.facts.query_facts`)."""

    query: str
    langs: list[str]
    limit: int
    offset: int
    scope: str | list[str] | None = None
    title_band: bool = False
    clause: AssetClause | None = None
    facts: QueryFacts = NO_FACTS

    @property
    def one_word(self) -> bool:
        """V5's one-word rule applies (at most one whitespace-separated word)."""
        return len(self.query.split()) <= 1


def stem_notices(stems: list[fm.StemMatch]) -> list[str]:
    """One notice per query term left out because the library writes its
    stem only in other words (:mod:`loupe.lexical.forms`), e.g. “madrid”
    is not in the library as itself: its es stem “madr” is written only as
    madre, madres — not counted as this word."""
    out = []
    for m in stems:
        if m.kind == fm.COLLISION:
            words = ", ".join(f"“{w}”" for w in m.words)
            out.append(f"{words} is not in the library as itself: its {m.lang} stem "
                       f"“{m.term}” is written only as {', '.join(m.forms)}, another word "
                       f"(not counted as a match)")
    return out


def _where(scope: Scope) -> str:
    """A scope as a notice names it: ``scope 'travel' + 'work'``, or a
    filter in words, ``filter (creator “Jane Doe”, captured in 2019)``."""
    return scope.label if not scope.roots and scope.label.startswith("filter (") \
        else f"scope {scope.quoted}"


def members_text(n: int) -> str:
    """A scope's size as told to the user (counted up to DEEP_MAX + 1)."""
    return f"more than {DEEP_MAX:,} members" if n > DEEP_MAX else f"{n:,} members"


class SearchPipeline:
    """The stages above for one library view (``lib``: its connection,
    tenant, home, viewer, settings and the process's encoder caches).
    One pipeline object serves one search (it remembers which model each
    vector lane used, to name it in the hits' explain data)."""

    def __init__(self, lib: SearchContext):
        self.lib = lib
        self.conn = lib.conn
        self.lane_models: dict[str, dict[str, str]] = {}
        #: each lane's answerability cut-offs (its model's, V4/V8; None: none)
        self.lane_cutoffs: dict[str, ans.Cutoffs | None] = {}

    # -- stage 2: lanes ---------------------------------------------------------

    def query_lanes(self, query: str, langs: list[str], notices: list[str]) -> list[VectorLane]:
        """Encode the query for each active vector lane; a lane whose encoder
        fails (or failed less than 30 s ago) is left out with a notice (V6),
        and so is a lane whose model folder now holds other content than the
        model its vectors came from (V3: never compared across models), and
        a lane whose model reads none of ``langs`` (the languages the search
        reads the query in, :func:`loupe.search.entry.search_languages`;
        the model's languages from its own files,
        :func:`loupe.models.registry.model_languages`): an English model
        embeds a French sentence as noise, which outranked the lexical
        lane's exact matches ("une photo de chat")."""
        lib = self.lib
        lanes = []
        self.lane_models = {}
        for lane, model_id, name, kind, dims, n_vec, n_assets, stored in self.conn.execute(
                vq.LANE_MODELS, {"tenant_id": lib.tenant_id}).fetchall():
            try:
                info = registry.get_model(lib.home, name)
                cfg, content = info.config, registry.fingerprint(info)
            except ModelError as exc:
                notices.append(f"{lane} lane off: {exc}")
                continue
            readable = registry.model_languages(info)
            if readable is not None and not readable & set(langs):
                notices.append(f"{lane} lane off for this query: its model {name} reads "
                               f"{'/'.join(sorted(readable))} and the query reads as "
                               f"{'/'.join(langs)}")
                continue
            vec, reason = lib.encoder_health.encode(
                name, lambda n=name, c=content: lib.query_vectors.vector(
                    str(lib.home), n, c, query,
                    lambda: registry.embedder(lib.home, n).encode_texts([query],
                                                                        task="query")[0]))
            if vec is None:
                notices.append(f"{lane} lane off for about {int(lib.encoder_health.ttl)} s, "
                               f"answering without it: {reason}")
                continue
            if model_identity.changed(stored, content):
                notices.append(
                    f"{lane} lane off: model {name} changed since its vectors were computed "
                    f"(content {model_identity.short(stored)} → "
                    f"{model_identity.short(content)}): its vectors are not compared with the "
                    f"new model's; run 'loupe embed' to compute them again")
                continue
            try:
                self.lane_cutoffs[lane] = ans.cutoffs_from(cfg)
            except ValueError as exc:
                notices.append(f"{lane} lane: model {name}: {exc}; meaning-only rows are not "
                               f"counted")
                self.lane_cutoffs[lane] = None
            self.lane_models[lane] = {"model": name,
                                      "model_sha256": model_identity.short(content)}
            if n_vec < n_assets and (
                    note := waiting_notice(lib.conn, lib.tenant_id, lib.viewer, lane, model_id,
                                          name, n_assets - n_vec)):
                notices.append(note)
            try:
                max_dist = registry.threshold_for(cfg, len(query.split()))
            except ModelError as exc:
                notices.append(f"{lane} lane off: {exc}")
                continue
            lanes.append(VectorLane(name=lane, lane=lane, model_id=model_id, model=name,
                                    dims=dims, max_dist=max_dist, vector=vec))
        return lanes

    # -- the whole pipeline -----------------------------------------------------

    def run(self, req: SearchRequest) -> SearchResult:
        """Run the stages for ``req`` (limits already checked by the caller).

        Raises:
            ValueError: a stored lexical setting out of range, or the query
                is too long (:class:`loupe.lexical.search.QueryTooLong`).
            loupe.scopes.search.UnknownScope: the scope names no collection.
        """
        lib = self.lib
        settings = lib.lexical_settings()
        lexical_bounds.check_stored(settings)
        raw_cap, keep_cap = settings["raw_cap"], settings["keep_cap"]
        notices: list[str] = []
        scope: Scope | None = None
        # a filter whose set is the scope: its members, regime and bands
        filter_scope = req.clause is not None and hasattr(req.clause, "scope_members")
        if filter_scope:
            # (notices name it in words, loupe.filters.words; JSON stays in result.filter)

            scope = Scope(label="filter (" + sentence(req.clause.tree) + ")", roots=[])
        elif req.scope is not None and req.scope != [] and req.scope != ():
            scope = resolve_scope(self.conn, lib.tenant_id, req.scope, viewer=lib.viewer)
        # 1-2. analyze, lanes
        lanes = self.query_lanes(req.query, req.langs, notices)
        qt, stems = searched_terms(self.conn, lib.tenant_id, req.query, req.langs, lib.viewer)
        notices += stem_notices(stems)
        colls = (scope_collections(self.conn, lib.tenant_id, scope.roots)
                 if scope and not filter_scope else None)
        if not qt.terms and (scope is not None or not lanes):
            return self._nothing(req, scope, colls, notices)
        # 3. fuse + band: one statement; the typo fallback at most once
        kind = st.kind_for(scope is not None, bool(lanes))

        def params(terms, lanes_now: list[VectorLane], fallback: bool) -> dict[str, Any]:
            return st.parameters(
                tenant_id=lib.tenant_id, terms=terms.params(), query=req.query,
                raw_cap=raw_cap, keep_cap=keep_cap, limit=req.limit, offset=req.offset,
                viewer=lib.viewer, fallback=fallback, one_word=req.one_word,
                title_band=req.title_band and scope is None, fusion=lib.fusion_settings(),
                lanes=lanes_now, collections=colls, clause=req.clause, facts=req.facts)

        run = execute_with_fallback(self.conn, lib.tenant_id, lib.viewer, kind, lanes, qt,
                                    params, clause=req.clause)
        out, qt, lanes, corrections = run.outcome, run.terms, run.lanes, run.corrections
        if (filter_scope and req.one_word and not corrections and lanes and qt.terms
                and out.counts["candidates"] == 0 and qt.reached(self.conn, lib.tenant_id,
                                                                 lib.viewer)):
            # V5 under a filter: the fused statement's meaning fallback sees
            # only the filter's candidates, so it fired for a word the library
            # holds elsewhere ("cheetah" filtered to tuxpaint/animals answered
            # with 36 neighbours; the same collection as a scope, none). The
            # word is known: no row of the filter matches it, and the lexical
            # statement proves it (a search bridged to nothing had said "not
            # proven" for "sunset" in 13 members).
            lanes, kind = [], st.SCOPED
            out = st.execute(self.conn, kind, lanes, params(qt, lanes, False), req.clause)
            if run.outcome.rows:
                notices.append(f"other assets of the library hold “{req.query.strip()}”, so "
                               f"no meaning-based neighbours are shown (a one-word query's "
                               f"results hold its word)")
        # answerability (V8): rows no query word matched count only when the
        # search can show they answer the query; else they are shown apart
        related: list[st.Row] = []
        evidence: ans.Evidence | None = None
        # (decided from a lane of written words that found a neighbour:
        # without one, the pixels' lane keeps its per-row cut-offs, V4)
        words = [ln for ln in lanes if ln.words]
        bests = [out.counts[f"{ln.name}_best"] for ln in words
                 if out.kind == st.FUSED and out.counts[f"{ln.name}_best"] is not None]
        if out.kind == st.FUSED and bests and not corrections \
                and int(out.counts["meaning_rows"]) > 0:
            left_out = len(fm.collisions(stems))
            evidence = ans.Evidence(
                best_distance=float(min(bests)),
                known_share=round(known_share(self.conn, lib.tenant_id, qt, left_out,
                                              lib.viewer), 4),
                meaning_rows=int(out.counts["meaning_rows"]))
            cut = self.lane_cutoffs.get(words[0].name)
            if not ans.answerable(evidence, cut):
                related = [r for r in out.rows if r.lexical_rank is None and not r.in_band]
                lanes, kind = [], st.LEXICAL
                if not qt.terms:
                    notices.append(f"{ans.NOTHING}: the pictures nearest in meaning are "
                                   f"shown apart, not counted")
                    res = self._nothing(req, None, None, notices)
                    return self._with_related(res, related, evidence)
                out = st.execute(self.conn, kind, lanes, params(qt, lanes, False), req.clause)
                notices.append(
                    (f"{ans.NOTHING}: the pictures nearest in meaning are shown apart, not "
                     f"counted") if out.counts["candidates"] == 0 else
                    ("pictures close in meaning that no query word matched are shown apart, "
                     "not counted (the search cannot show they answer the query)"))
        if (not corrections and out.counts["candidates"] == 0 and out.rows and req.one_word
                and kind == st.FUSED):
            notices.append("nothing matched as typed: showing matches by meaning from "
                           "the text lane")
        # 4. verdict
        counts = self._counts(out, keep_cap, corrections, lanes, req)
        unproven = [] if corrections else unproven_words(self.conn, lib.tenant_id, qt,
                                                         lib.viewer)
        if unproven:
            counts = replace(counts, unproven=True)
            notices.append(f"{', '.join(f'“{w}”' for w in unproven)}: no document holds this "
                           f"identifier as one word; the library may write it with spaces "
                           f"between its parts, so its absence is not proven")
        v = vd.decide(counts)
        self._notices(out, scope, req, notices)
        if req.facts and out.rows:
            notices.append(f"every word of the query names what the pixels show "
                           f"({req.facts.words()}): the results whose machine facts match "
                           f"come first")
        # 5. page
        res = self._page(req, qt.terms, v, counts.rows, out, corrections, lanes, notices,
                         scoped=scope is not None)
        res.meaning_only = vd.meaning_only(counts)
        res.stems = [m.as_dict() for m in stems]
        return self._with_related(res, related, evidence)

    def _with_related(self, res: SearchResult, related: list[st.Row],
                      evidence: ans.Evidence | None) -> SearchResult:
        """``res`` with the answerability evidence and the rows shown apart
        (uncounted, related by meaning: :mod:`loupe.search.answer`), as
        hits ranked 1.. among themselves, at most the page's size."""
        res.evidence = evidence.as_dict() if evidence else None
        res.answerable = None if evidence is None else not related
        if related and res.offset == 0:
            res.related = self._hits(related[:res.limit], scoped=False, lang=res.lang)
            for i, h in enumerate(res.related, 1):
                h.rank = i
        return res

    # -- stage helpers ------------------------------------------------------------

    @staticmethod
    def _counts(out: st.Outcome, keep_cap: int, corrections: dict[str, str],
                lanes: list[VectorLane], req: SearchRequest) -> vd.Counts:
        """The verdict's inputs from a statement's count columns."""
        c = out.counts
        if out.kind == st.LEXICAL:
            rows = c["kept"] + c["band"]
        elif out.kind == st.FUSED:
            rows = c["fused_total"]
        else:
            rows = c["ranked"] + c["band"]
        scoped = out.kind in (st.SCOPED, st.SCOPED_FUSED)
        return vd.Counts(
            candidates=c["candidates"], all_read=bool(c["all_read"]), keep_cap=keep_cap,
            max_df=c["max_df"], title_band_unreached=0 if scoped else c["unreached"],
            rows=rows, regime=c["regime"] if scoped else None,
            deep_all_read=bool(c.get("deep_all_read")), waiting=int(c.get("waiting") or 0),
            corrected=bool(corrections), vector_lanes=len(lanes),
            word_lanes=any(ln.words for ln in lanes), one_word=req.one_word)

    @staticmethod
    def _notices(out: st.Outcome, scope: Scope | None, req: SearchRequest,
                 notices: list[str]) -> None:
        """The title band's or the scope's notice (C2, C3)."""
        c = out.counts
        if scope is None:
            if req.title_band and c["band"]:
                full = " (the band's limit: more titles may hold the terms)" \
                    if c["band"] >= TITLE_BAND_CAP else ""
                notices.append(f"{c['band']:,} assets whose title holds the query follow the "
                               f"ranked results (title band){full}")
            return
        fused = out.kind == st.SCOPED_FUSED
        if fused and c["waiting"]:
            notices.append(f"{c['waiting']:,} members of the scope wait for vectors: "
                           f"meaning-based matches among them are not shown yet")
        exact_scan = ", exact vector scan over members" if fused and c["regime"] == "direct" \
            else ""
        notices.append(f"{_where(scope)}: {members_text(c['members'])}, "
                       f"{c['ranked']:,} ranked, {c['band']:,} in the band "
                       f"({c['regime']} regime{exact_scan})")

    def _nothing(self, req: SearchRequest, scope: Scope | None, colls: list[int] | None,
                 notices: list[str]) -> SearchResult:
        """A query with no term and no vector lane to run (or in a scope):
        nothing matches, and that is complete (C5)."""
        if scope is not None:
            size = (scope_size(self.conn, self.lib.tenant_id, colls, self.lib.viewer)
                    if colls is not None else
                    self.conn.execute("SELECT count(*) FROM (" + req.clause.scope_members()
                                      + ") x", {**req.clause.params(),
                                                "tenant_id": self.lib.tenant_id,
                                                **self.lib.viewer.params()}).fetchone()[0])
            notices.append(f"{_where(scope)}: {members_text(size)}, 0 ranked, "
                           f"0 in the band ({regime_for(size)} regime)")
        return SearchResult(query=req.query, lang=req.langs[0], terms=[], total=0,
                            total_exact=True, verdict=vd.COMPLETE, reachable=0,
                            limit=req.limit, offset=req.offset, lanes=["lexical"],
                            notices=notices, langs=list(req.langs))

    def _explain(self, row: st.Row, scoped: bool) -> dict[str, Any]:
        """A hit's explain data: each lane's rank and score or distance (the
        vector lanes' with their model), and its band."""
        explain: dict[str, Any] = {"lexical": {"rank": row.lexical_rank,
                                               "score": row.lexical_score}}
        for lane, vals in row.lanes.items():
            explain[lane] = {**vals, **self.lane_models.get(lane, {})}
        if scoped:
            explain["band"] = row.in_band
        elif row.in_band:
            explain["title_band"] = True
        return explain

    def _hits(self, rows: list[st.Row], *, scoped: bool, lang: str) -> list[Hit]:
        """The rows as hits, with titles and paths as the viewer may see them (P1)."""
        lib = self.lib
        info: dict[int, dict[str, Any]] = {}
        if rows:   # (planned once per connection: loupe.db.plans; planning
            # it took 0.3 ms, running it 0.08 ms for a page of 10 at 10,000 assets)
            for r in fetch_generic(self.conn, q.HIT_DETAILS, {
                    "tenant_id": lib.tenant_id, "lang": lang,
                    "ids": [row.asset_id for row in rows], **lib.viewer.params()},
                    row_factory=dict_row):
                info[r["id"]] = r
        hits = []
        for row in rows:
            d = info.get(row.asset_id, {})
            hits.append(Hit(rank=row.rank, asset_id=row.asset_id, score=row.score,
                            bonus=row.bonus, title=d.get("title", ""), path=d.get("path", ""),
                            explain=self._explain(row, scoped)))
        return hits

    def _page(self, req: SearchRequest, terms: list[str], v: vd.Verdict, reachable: int,
              out: st.Outcome, corrections: dict[str, str], lanes: list[VectorLane],
              notices: list[str], *, scoped: bool) -> SearchResult:
        lang = req.langs[0]  # titles are shown in the first searched language
        hits = self._hits(out.rows, scoped=scoped, lang=lang)
        fused = out.kind in (st.FUSED, st.SCOPED_FUSED)
        return SearchResult(query=req.query, lang=lang, terms=terms, total=v.total,
                            total_exact=v.exact, verdict=v.verdict, reachable=reachable,
                            limit=req.limit, offset=req.offset, hits=hits,
                            corrections=corrections,
                            lanes=["lexical"] + ([ln.name for ln in lanes] if fused else []),
                            notices=notices, langs=list(req.langs))
