"""The evaluation instrument's Python API (E1–E9, V7). Each
``loupe eval`` command is one method of :class:`Evaluation`.

    >>> from loupe import Library
    >>> from loupe.eval import Evaluation
    >>> with Library.open("~/.loupe") as lib:                     # doctest: +SKIP
    ...     ev = Evaluation(lib)
    ...     ev.import_queries("blind.jsonl", name="blind")
    ...     ev.run("blind", "hybrid", name="hybrid-blind")
    ...     print(ev.metrics("hybrid-blind")["rows"][0])

Runs see what the library's viewer may read (``Library.as_user``; P1): the
owner sees everything. Runs are produced read-only: through a second connection that switches to
the SELECT-only role of migration 0006 (``loupe_eval_reader``) with every
transaction read-only, running the production search code (``Library.search``
for ``hybrid``, the production vector lane's CTE for the variants). Only the
results are then written, by the library's own connection, to the
instrument's tables.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

from ..library import Library
from ..queries import LEXICAL_CAPS
from ..models import registry
from ..vector import queries as vq
from . import metrics as mx
from . import queries as q
from .peer import Peer, document_text
from .queryset import (
    Query,
    parse_query,
    read_queries,
    write_qrels,
    write_queries,
    write_run,
)
from ..lexical import lexical_search
from . import absent, calibration, leak, pooling, report
from .common import LEAK_MARGIN as LEAK_MARGIN  # re-exported with the others
from .common import VARIANTS as VARIANTS
from .common import POOL_DEPTH, SYSTEMS, EvalError
from .common import readonly_connection as readonly_connection

@dataclass
class RunResult:
    """A run in memory: ``hits`` maps qid → [(asset_id, score, distance)]
    best first (score = 1/rank, so any tool re-sorting by score keeps the
    system's order); ``answers`` maps qid → (rows returned in all, verdict,
    meaning_only), None where the system has no such figure."""

    name: str
    query_set: str
    system: str
    model: str | None
    k: int
    hits: dict[str, list[tuple[int, float, float | None]]]
    answers: dict[str, tuple[int | None, str | None, bool | None]] = field(default_factory=dict)

    def ranx_run(self) -> dict[str, dict[str, float]]:
        return {qid: {str(a): s for a, s, _ in hs} for qid, hs in self.hits.items()}


class Evaluation:
    """The instrument over one tenant of a library.

    Args:
        lib: an open :class:`loupe.Library` (its connection writes the
            instrument's own tables; runs are read through a read-only one).
    """

    def __init__(self, lib: Library):
        self.lib = lib
        self.conn = lib.conn
        self.tenant_id = lib.tenant_id

    # -- query sets ---------------------------------------------------------------

    def import_queries(self, path: str | Path, *, name: str | None = None) -> dict[str, Any]:
        """Import (or update) a query set from a JSONL file (format:
        :mod:`loupe.eval.queryset`); ``name`` defaults to the file's stem.
        Queries already in the set keep their id (and their runs and
        judgements); a changed text replaces the old one; queries of the set
        that the file no longer holds are kept.

        Returns ``{"query_set", "queries", "blind", "caption-derived", "truth_unresolved"}``
        (ground-truth references that match no asset now).

        Raises:
            QuerySetError: the file is invalid.
        """
        queries = read_queries(path)
        name = name or Path(path).stem
        with self.conn.transaction():
            set_id = self.conn.execute(q.UPSERT_QUERY_SET, {"tenant_id": self.tenant_id,
                                                            "name": name}).fetchone()[0]
            for qu in queries:
                self.conn.execute(q.UPSERT_QUERY, {
                    "tenant_id": self.tenant_id, "set_id": set_id, "qid": qu.id, "text": qu.text, "provenance": qu.provenance,
                    "register": qu.register, "strata": json.dumps(qu.strata),
                    "truth": json.dumps(qu.truth)})
        _, missing = self._resolve_truth(queries)
        return {"query_set": name, "queries": len(queries),
                "blind": sum(qu.provenance == "blind" for qu in queries),
                "caption-derived": sum(qu.provenance == "caption-derived" for qu in queries),
                "truth_unresolved": missing}

    def query_sets(self) -> list[dict[str, Any]]:
        """The tenant's query sets with their query counts by provenance."""
        return [{"query_set": r[0], "queries": r[1], "blind": r[2], "caption-derived": r[3]}
                for r in self.conn.execute(q.QUERY_SETS, {"tenant_id": self.tenant_id})]

    def queries(self, query_set: str) -> list[Query]:
        """The queries of a set, by id. Raises EvalError for an unknown set."""
        set_id = self._set_id(query_set)
        return [parse_query({"id": r[1], "text": r[2], "provenance": r[3], "register": r[4],
                             "strata": r[5], "truth": r[6]})
                for r in self.conn.execute(q.QUERIES, {"set_id": set_id})]

    def export_queries(self, query_set: str, path: str | Path) -> int:
        """Write a query set back to JSONL; returns the number of queries."""
        qs = self.queries(query_set)
        write_queries(qs, path)
        return len(qs)

    def _set_id(self, name: str) -> int:
        row = self.conn.execute(q.QUERY_SET_ID, {"tenant_id": self.tenant_id,
                                                 "name": name}).fetchone()
        if row is None:
            raise EvalError(f"no query set named {name!r} (import one with "
                            "'loupe eval import-queries FILE')")
        return row[0]

    def _resolve_truth(self, queries: list[Query]) -> tuple[dict[str, dict[str, int]], int]:
        """Ground truth as qrels ``{qid: {asset_id: grade}}`` and the count of
        references that match no asset."""
        paths = sorted({r["path"] for qu in queries for r in qu.truth if "path" in r})
        hashes = sorted({r["sha256"] for qu in queries for r in qu.truth if "sha256" in r})
        by_path: dict[str, set[int]] = defaultdict(set)
        for p, a in self.conn.execute(q.RESOLVE_PATHS, {"tenant_id": self.tenant_id,
                                                        "paths": paths}):
            by_path[p].add(a)
        by_hash = dict(self.conn.execute(q.RESOLVE_SHA256, {
            "tenant_id": self.tenant_id, "hashes": [bytes.fromhex(h) for h in hashes]}).fetchall())
        out: dict[str, dict[str, int]] = {}
        missing = 0
        for qu in queries:
            for ref in qu.truth:
                ids = by_path.get(ref["path"], set()) if "path" in ref else (
                    {by_hash[ref["sha256"]]} if ref["sha256"] in by_hash else set())
                if not ids:
                    missing += 1
                for a in ids:
                    out.setdefault(qu.id, {})[str(a)] = ref["grade"]
        return out, missing

    # -- runs ---------------------------------------------------------------------

    def search_run(self, query_set: str, system: str, *, k: int = 10, model: str | None = None,
                   max_distance: float | None = None, name: str | None = None) -> RunResult:
        """Run ``system`` over a query set, read-only, without storing the run.

        ``hybrid`` is :meth:`Library.search` (limit ``k``); a variant
        (``image``, ``caption``, ``both``) is the vector lane over that
        variant's vectors of ``model`` (default: the tenant's image-lane
        model), the query encoded by the model's text encoder, keeping
        neighbours within ``max_distance`` (cosine; default 2.0 keeps all);
        ``lexical`` is the production lexical lane alone (its caps, typo
        fallback and verdict); ``text`` is the production text lane alone
        (the text lane's model, or ``model``), keeping neighbours within the
        model's threshold for the query's word count (V4) or, when given,
        within ``max_distance`` (2.0: no cut-off), at most ``k``; ``peer`` is the reference peer of :mod:`loupe.eval.peer` (Tantivy
        BM25 + brute-force dense over the plain English fields, plain RRF),
        its dense encoder ``model`` (default: the text lane's model, else the
        image lane's).

        Raises:
            EvalError: unknown system or set, no model, or no vectors of the variant.
            ModelError: the model cannot be loaded.
        """
        if system not in SYSTEMS:
            raise EvalError(f"unknown system {system!r}: use one of {', '.join(SYSTEMS)}")
        if k < 1:
            raise EvalError("k must be at least 1")
        queries = self.queries(query_set)
        hits: dict[str, list[tuple[int, float, float | None]]] = {}
        answers: dict[str, tuple[int | None, str | None, bool | None]] = {}
        reader = readonly_connection(self.conn)
        try:
            if system == "hybrid":
                rlib = Library(reader, self.lib.home, self.tenant_id, self.lib.tenant,
                               self.lib.viewer)
                for qu in queries:
                    res = rlib.search(qu.text, limit=k)
                    hits[qu.id] = [(h.asset_id, 1.0 / h.rank, None) for h in res.hits]
                    answers[qu.id] = (res.total, res.verdict, res.meaning_only)
                model_name = None
            elif system == "lexical":
                lang = self.lib.languages()[0]
                raw_cap, keep_cap = reader.execute(
                    LEXICAL_CAPS, {"tenant_id": self.tenant_id}).fetchone()
                for qu in queries:
                    res = lexical_search(reader, self.tenant_id, qu.text, lang, limit=k,
                                         raw_cap=raw_cap, keep_cap=keep_cap,
                                         viewer=self.lib.viewer)
                    hits[qu.id] = [(h.asset_id, 1.0 / h.rank, None) for h in res.hits]
                    answers[qu.id] = (res.total, res.verdict, False)
                model_name = None
            elif system == "text":
                model_name = model or self._lane_model("text")
                model_id, dims = self._variant(reader, model_name, "text")
                cfg = registry.get_model(self.lib.home, model_name).config
                vecs = registry.embedder(self.lib.home, model_name).encode_texts(
                    [qu.text for qu in queries], task="query")
                stmt = q.variant_search(model_id, "text", dims)
                for qu, vec in zip(queries, vecs):
                    maxd = (registry.threshold_for(cfg, len(qu.text.split()))
                            if max_distance is None else max_distance)
                    rows = reader.execute(stmt, {
                        **self.lib.viewer.params(), "tenant_id": self.tenant_id, "vec_cap": k,
                        "qv_variant": np.asarray(vec, np.float32),
                        "maxd_variant": float(maxd)}).fetchall()
                    hits[qu.id] = [(a, 1.0 / r, float(d)) for a, d, r in rows]
                    # rows within the cut-off, at most k (the lane's own cap is VEC_CAP)
                    answers[qu.id] = (len(rows), None, bool(rows))
            elif system == "peer":
                model_name = model or self._peer_model()
                peer = self._peer(reader, model_name)
                vecs = registry.embedder(self.lib.home, model_name).encode_texts(
                    [qu.text for qu in queries], task="query")
                for qu, vec in zip(queries, vecs):
                    hits[qu.id] = [(a, 1.0 / r, None)
                                   for r, (a, _s) in enumerate(peer.search(qu.text, vec, k), 1)]
                    # brute force with no cut-off: every document is a row
                    answers[qu.id] = (len(peer.ids), None, not peer.bm25(qu.text))
            else:
                model_name = model or self._image_model()
                model_id, dims = self._variant(reader, model_name, system)
                emb = registry.embedder(self.lib.home, model_name)
                vecs = emb.encode_texts([qu.text for qu in queries], task="query")
                stmt = q.variant_search(model_id, system, dims)
                for qu, vec in zip(queries, vecs):
                    rows = reader.execute(stmt, {
                        **self.lib.viewer.params(), "tenant_id": self.tenant_id, "vec_cap": k,
                        "qv_variant": np.asarray(vec, np.float32),
                        "maxd_variant": 2.0 if max_distance is None else float(max_distance)
                    }).fetchall()
                    hits[qu.id] = [(a, 1.0 / r, float(d)) for a, d, r in rows]
        finally:
            reader.close()
        return RunResult(name or f"{system}-{query_set}", query_set, system, model_name, k, hits,
                         answers)

    def run(self, query_set: str, system: str, *, name: str | None = None, k: int = 10,
            model: str | None = None, max_distance: float | None = None) -> dict[str, Any]:
        """Produce a run (see :meth:`search_run`) and store it under ``name``
        (default ``<system>-<query_set>``; an existing run of that name is
        replaced). Returns ``{"run", "query_set", "system", "model", "k",
        "queries", "hits"}``."""
        rr = self.search_run(query_set, system, k=k, model=model, max_distance=max_distance,
                             name=name)
        set_id = self._set_id(query_set)
        ids = {r[1]: r[0] for r in self.conn.execute(q.QUERIES, {"set_id": set_id})}
        with self.conn.transaction():
            self.conn.execute(q.DELETE_RUN, {"tenant_id": self.tenant_id, "name": rr.name})
            run_id = self.conn.execute(q.INSERT_RUN, {
                "tenant_id": self.tenant_id, "set_id": set_id, "name": rr.name,
                "system": system, "model": rr.model, "k": k}).fetchone()[0]
            with self.conn.cursor() as cur:
                cur.executemany(q.INSERT_RUN_HIT, [
                    {"tenant_id": self.tenant_id, "run_id": run_id, "query_id": ids[qid],
                     "rank": i, "asset_id": a, "score": s, "distance": d}
                    for qid, hs in rr.hits.items() for i, (a, s, d) in enumerate(hs, 1)])
                cur.executemany(q.INSERT_RUN_QUERY, [
                    {"tenant_id": self.tenant_id, "run_id": run_id, "query_id": ids[qid],
                     "rows": n, "verdict": v, "meaning_only": mo} for qid, (n, v, mo) in rr.answers.items()])
        return {"run": rr.name, "query_set": query_set, "system": system, "model": rr.model,
                "k": k, "queries": len(rr.hits), "hits": sum(len(h) for h in rr.hits.values())}

    def runs(self) -> list[dict[str, Any]]:
        """Stored runs: name, query set, system, model, k, created, queries answered."""
        return [{"run": r[0], "query_set": r[1], "system": r[2], "model": r[3], "k": r[4],
                 "created_at": r[5].isoformat(), "queries_with_hits": r[6]}
                for r in self.conn.execute(q.RUNS, {"tenant_id": self.tenant_id})]

    def load_run(self, name: str) -> RunResult:
        """A stored run. Raises EvalError when there is none of that name."""
        row = self.conn.execute(q.RUN_BY_NAME, {"tenant_id": self.tenant_id,
                                                "name": name}).fetchone()
        if row is None:
            raise EvalError(f"no run named {name!r} (see 'loupe eval runs')")
        run_id, _set_id, set_name, system, model, k = row
        hits: dict[str, list] = {qu.id: [] for qu in self.queries(set_name)}
        for qid, _rank, a, s, d in self.conn.execute(q.RUN_HITS, {"run_id": run_id}):
            hits[qid].append((a, s, d))
        answers = {r[0]: (r[1], r[2], r[3])
                   for r in self.conn.execute(q.RUN_QUERIES, {"run_id": run_id})}
        return RunResult(name, set_name, system, model, k, hits, answers)

    def absent(self, runs: list[str]) -> list[dict[str, Any]]:
        """Stage: :func:`loupe.eval.absent.absent`."""
        return absent.absent(self, runs)

    def tradeoff(self, pairs: list[tuple[str, str]], *, seed: int = 0) -> list[dict[str, Any]]:
        """Stage: :func:`loupe.eval.absent.tradeoff`."""
        return absent.tradeoff(self, pairs, seed=seed)

    def export_run(self, name: str, path: str | Path) -> int:
        """Write a stored run in TREC format, docno = the asset's content sha256.
        Returns the number of lines."""
        rr = self.load_run(name)
        ids = sorted({a for hs in rr.hits.values() for a, _, _ in hs})
        sha = self._sha256(ids)
        write_run({qid: [(sha[a], s) for a, s, _ in hs] for qid, hs in rr.hits.items()},
                  path, tag=name)
        return sum(len(h) for h in rr.hits.values())

    def _sha256(self, ids: list[int]) -> dict[int, str]:
        return dict(self.conn.execute(q.ASSET_SHA256, {"tenant_id": self.tenant_id,
                                                       "ids": ids}).fetchall())

    def _image_model(self) -> str:
        for lane, _mid, name, *_ in self.conn.execute(vq.LANE_MODELS,
                                                      {"tenant_id": self.tenant_id}):
            if lane == "image":
                return name
        raise EvalError("no model given and the image lane has none: pass --model NAME")

    def _lane_model(self, lane: str) -> str:
        for ln, _mid, name, *_ in self.conn.execute(vq.LANE_MODELS, {"tenant_id": self.tenant_id}):
            if ln == lane:
                return name
        raise EvalError(f"no model given and the {lane} lane has none: pass --model NAME")

    def _peer_model(self) -> str:
        lanes = {lane: name for lane, _mid, name, *_ in self.conn.execute(
            vq.LANE_MODELS, {"tenant_id": self.tenant_id})}
        if "text" in lanes:
            return lanes["text"]
        if "image" in lanes:
            return lanes["image"]
        raise EvalError("the peer needs a text encoder and no lane has a model: pass --model NAME")

    def _peer(self, conn: psycopg.Connection, model: str) -> Peer:
        """The peer over the documents the viewer may read, in the library's
        first language, encoded by ``model``'s text encoder (32 at a time)."""
        rows = conn.execute(q.PEER_DOCUMENTS, {
            **self.lib.viewer.params(), "tenant_id": self.tenant_id,
            "lang": self.lib.languages()[0]}).fetchall()
        ids = [r[0] for r in rows]
        texts = [document_text(*r[1:]) for r in rows]
        emb = registry.embedder(self.lib.home, model)
        parts = [emb.encode_texts(texts[i:i + 32], task="document")
                 for i in range(0, len(texts), 32)]
        dims = parts[0].shape[1] if parts else 1
        return Peer(ids, texts, np.vstack(parts) if parts else np.zeros((0, dims), np.float32))

    def _variant(self, conn: psycopg.Connection, model: str, lane: str) -> tuple[int, int]:
        row = conn.execute(q.MODEL_BY_NAME, {"name": model}).fetchone()
        if row is None:
            raise EvalError(f"model {model!r} has no vectors in this library "
                            f"(build them with 'loupe eval build-variants {model}')")
        n = conn.execute(q.VARIANT_COUNT, {"tenant_id": self.tenant_id, "model_id": row[0],
                                           "lane": lane}).fetchone()[0]
        if n == 0:
            raise EvalError(f"no {lane!r} vectors of {model!r}: build them with "
                            f"'loupe eval build-variants {model}'")
        return row[0], row[1]

    def build_variants(self, model: str) -> dict[str, int]:
        """Build the ``image``, ``caption`` and ``both`` vector sets of an
        image-text model (see :meth:`Library.build_variants`). This writes:
        it is the only command of the instrument that does."""
        return self.lib.build_variants(model)

    # -- qrels and metrics ---------------------------------------------------------

    def qrels(self, query_set: str) -> dict[str, dict[str, int]]:
        """Graded qrels ``{qid: {asset_id: grade}}`` of a query set: its agreed
        ground truth, and the judgements of its pools where no ground truth
        names the pair. Several judges of one pair: the lower median of their
        grades (so a tie between 1 and 2 gives 1)."""
        queries = self.queries(query_set)
        truth, _ = self._resolve_truth(queries)
        grades: dict[tuple[str, str], list[int]] = defaultdict(list)
        for qid, a, _judge, g in self.conn.execute(q.SET_JUDGEMENTS,
                                                  {"set_id": self._set_id(query_set)}):
            grades[(qid, str(a))].append(g)
        return mx.pooled_qrels(truth, grades)

    def export_qrels(self, query_set: str, path: str | Path) -> int:
        """Write the set's qrels in TREC format (docno = content sha256)."""
        qr = self.qrels(query_set)
        sha = self._sha256(sorted({int(a) for d in qr.values() for a in d}))
        write_qrels({qid: {sha[int(a)]: g for a, g in d.items()} for qid, d in qr.items()}, path)
        return sum(len(d) for d in qr.values())

    def _labels(self, queries: list[Query]) -> dict[str, dict[str, str]]:
        return {qu.id: {"provenance": qu.provenance, "register": qu.register,
                        **{f"stratum:{k}": v for k, v in qu.strata.items()}} for qu in queries}

    def metrics(self, run: str | RunResult, *, seed: int = 0) -> dict[str, Any]:
        """recall@10, nDCG@10 and MRR of a run, overall and per provenance,
        register and stratum, each with a 95 % bootstrap interval (seeded),
        the warnings of :func:`loupe.eval.metrics.resolution_warnings`, the
        seed-002-style per-query report (pass = a relevant asset in the top
        10, recall@10, reciprocal rank) and judged@10.

        Raises:
            EvalError: an unknown run, or no query of its set has a relevant
                asset in this library (nothing to measure).
        """
        rr = run if isinstance(run, RunResult) else self.load_run(run)
        queries = self.queries(rr.query_set)
        qrels = self._measurable_qrels(rr.query_set)
        rows = mx.table(qrels, rr.ranx_run(), self._labels(queries), seed=seed)
        warns: list[str] = []
        by_group: dict[str, list] = defaultdict(list)
        for r in rows:
            by_group[r.group].append(r)
        for group, grs in by_group.items():
            for m in mx.METRICS:
                warns += mx.resolution_warnings([(f"{group}={r.value}", r.figures[m])
                                                 for r in grs], m)
        pq = mx.per_query(qrels, rr.ranx_run())
        per_query = [{"id": qu.id, "text": qu.text, "pass": pq["recall@10"][qu.id] > 0,
                      "recall@10": pq["recall@10"][qu.id], "rr": pq["mrr"][qu.id]}
                     for qu in queries if qu.id in pq["recall@10"]]
        return {"run": rr.name, "query_set": rr.query_set, "system": rr.system,
                "model": rr.model, "queries": len(queries),
                "measured": len(per_query), "without_relevant": len(queries) - len(per_query),
                "rows": [r.as_dict() for r in rows], "warnings": warns,
                "per_query": per_query, "judged@10": self.judged_at(rr)}

    def _measurable_qrels(self, query_set: str) -> dict[str, dict[str, int]]:
        """The set's qrels, or EvalError when no query has a relevant asset
        here (its truth names no asset of this library and nothing relevant
        was judged): a clear error, not ranx's ValueError."""
        qrels = self.qrels(query_set)
        if not mx.relevant_only(qrels):
            _, missing = self._resolve_truth(self.queries(query_set))
            raise EvalError(f"no query of set {query_set!r} has a relevant asset in this "
                            f"library ({missing} ground-truth references name no asset "
                            "here, and no judgement graded one relevant): nothing to measure")
        return qrels

    def judged_at(self, run: RunResult, depth: int = 10) -> float | None:
        """Share of the run's top-``depth`` (query, asset) pairs that have a
        grade (ground truth or a judgement); None for an empty run (E7)."""
        qrels = self.qrels(run.query_set)
        pairs = [(qid, str(a)) for qid, hs in run.hits.items() for a, _, _ in hs[:depth]]
        if not pairs:
            return None
        return sum(a in qrels.get(qid, {}) for qid, a in pairs) / len(pairs)

    def compare(self, run_a: str, run_b: str, *, seed: int = 42,
                permutations: int = 10000) -> dict[str, Any]:
        """Paired comparison of two runs over the same query set (ranx Fisher
        randomization test; see :func:`loupe.eval.metrics.compare`).

        Raises:
            EvalError: the runs are over different query sets.
        """
        a, b = self.load_run(run_a), self.load_run(run_b)
        if a.query_set != b.query_set:
            raise EvalError(f"{run_a} and {run_b} are over different query sets "
                            f"({a.query_set}, {b.query_set})")
        out = mx.compare(self._measurable_qrels(a.query_set), a.ranx_run(), b.ranx_run(),
                         names=(run_a, run_b), seed=seed, permutations=permutations)
        return {"query_set": a.query_set, **out}

    # -- leak check ---------------------------------------------------------------

    def leak_check(self, query_sets: list[str], *, model: str | None = None,
                   margin: float = LEAK_MARGIN, seed: int = 0, k: int = 10,
                   hybrid: bool = True) -> dict[str, Any]:
        """Stage: :func:`loupe.eval.leak.leak_check`."""
        return leak.leak_check(self, query_sets, model=model, margin=margin, seed=seed, k=k, hybrid=hybrid)

    # -- pooled blind judging (E6, E7) ---------------------------------------------

    def pool(self, name: str, runs: list[str], *, depth: int = POOL_DEPTH,
             seed: int = 0) -> dict[str, Any]:
        """Stage: :func:`loupe.eval.pooling.pool`."""
        return pooling.pool(self, name, runs, depth=depth, seed=seed)

    def pool_id(self, name: str) -> int:
        """Stage: :func:`loupe.eval.pooling.pool_id`."""
        return pooling.pool_id(self, name)

    def pool_items(self, name: str) -> list[dict[str, Any]]:
        """Stage: :func:`loupe.eval.pooling.pool_items`."""
        return pooling.pool_items(self, name)

    def next_item(self, pool: str, judge: str) -> dict[str, Any] | None:
        """Stage: :func:`loupe.eval.pooling.next_item`."""
        return pooling.next_item(self, pool, judge)

    def progress(self, pool: str, judge: str) -> dict[str, int]:
        """Stage: :func:`loupe.eval.pooling.progress`."""
        return pooling.progress(self, pool, judge)

    def judge(self, pool: str, token: str, judge: str, grade: int) -> None:
        """Stage: :func:`loupe.eval.pooling.judge`."""
        return pooling.judge(self, pool, token, judge, grade)

    def item_image(self, pool: str, token: str) -> Path:
        """Stage: :func:`loupe.eval.pooling.item_image`."""
        return pooling.item_image(self, pool, token)

    def agreement(self, pool: str) -> dict[str, Any]:
        """Stage: :func:`loupe.eval.pooling.agreement`."""
        return pooling.agreement(self, pool)

    # -- threshold calibration (V4) --------------------------------------------------

    def calibrate(self, runs: list[str], *, unjudged_nonrelevant: bool = False) -> dict[str, Any]:
        """Stage: :func:`loupe.eval.calibration.calibrate`."""
        return calibration.calibrate(self, runs, unjudged_nonrelevant=unjudged_nonrelevant)


    # -- report ---------------------------------------------------------------------

    def report(self, runs: list[str], path: str | Path, *,
               leak_sets: list[str] | None = None, model: str | None = None,
               seed: int = 0, tradeoff: list[tuple[str, str]] | None = None) -> dict[str, Any]:
        """Stage: :func:`loupe.eval.report.write_report`."""
        return report.write_report(self, runs, path, leak_sets=leak_sets, model=model, seed=seed,
                                   tradeoff=tradeoff)
