"""The evaluation instrument's Python API (SPEC E1–E9, V7). Each
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
import random
import secrets
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from psycopg.conninfo import make_conninfo

from ..library import Library
from ..queries import LEXICAL_CAPS
from ..models import registry
from ..models.embedders import ModelError
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
from .report import render

#: Systems a run can use: the production hybrid search, its lexical lane
#: alone, its text lane alone, the index variants of an image-text model
#: (V7, E4), and the reference peer (BM25 + dense
#: RRF, :mod:`loupe.eval.peer`).
SYSTEMS = ("hybrid", "lexical", "text", "image", "caption", "both", "peer")
VARIANTS = ("image", "caption", "both")
#: Default margin of the leak check (E5): recall@10 points by which
#: caption-derived queries may beat blind ones on the image variant.
LEAK_MARGIN = 0.05
#: Pool depth (E7: the top 10 of every system).
POOL_DEPTH = 10


class EvalError(ValueError):
    """Bad input to the instrument (unknown set, run, pool, system, model)."""


def readonly_connection(conn: psycopg.Connection) -> psycopg.Connection:
    """A new connection to the database behind ``conn`` that can only read:
    role ``loupe_eval_reader`` (SELECT only, migration 0006) and
    ``default_transaction_read_only``. Any write through it raises
    ``psycopg.errors.ReadOnlySqlTransaction`` or ``InsufficientPrivilege``.
    This guards against the instrument's own code writing (settings, index
    builds); it is not a sandbox for hostile code in the same process, which
    could ``RESET ROLE``.

    Raises:
        EvalError: the role is missing or this database user may not use it.
    """
    from pgvector.psycopg import register_vector

    info = conn.info
    url = make_conninfo(info.dsn, password=info.password) if info.password else info.dsn
    reader = psycopg.connect(url, autocommit=True)
    try:
        try:
            for stmt in q.READ_ONLY_SESSION:
                reader.execute(stmt)
        except (psycopg.errors.InsufficientPrivilege, psycopg.errors.InvalidParameterValue,
                psycopg.errors.UndefinedObject) as exc:
            raise EvalError(
                f"the evaluation instrument runs only as the read-only role {q.READER_ROLE}, "
                f"which this database user cannot use ({exc}); ask the administrator for: "
                f"CREATE ROLE {q.READER_ROLE} NOLOGIN; GRANT {q.READER_ROLE} TO {info.user}; "
                f"GRANT USAGE ON SCHEMA public TO {q.READER_ROLE}; GRANT SELECT ON ALL "
                f"TABLES IN SCHEMA public TO {q.READER_ROLE}") from exc
        register_vector(reader)
        for stmt in vq.hnsw_session():
            reader.execute(stmt)
    except BaseException:
        reader.close()
        raise
    return reader


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
                    "set_id": set_id, "qid": qu.id, "text": qu.text, "provenance": qu.provenance,
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
                    {"run_id": run_id, "query_id": ids[qid], "rank": i, "asset_id": a,
                     "score": s, "distance": d}
                    for qid, hs in rr.hits.items() for i, (a, s, d) in enumerate(hs, 1)])
                cur.executemany(q.INSERT_RUN_QUERY, [
                    {"run_id": run_id, "query_id": ids[qid], "rows": n, "verdict": v,
                     "meaning_only": mo} for qid, (n, v, mo) in rr.answers.items()])
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
        """What each run returned for its queries, truth or not — for a set
        of absent subjects (things the library does not hold; issue 14,
        item 4) every row is a false alarm. Per run: ``{"run", "query_set",
        "system", "queries", "with_rows"`` (queries that got any row),
        ``"mean_rows"``, ``"median_rows"`` (rows returned in all, the search's
        total; None when the system records none), ``"mean_top_k"`` (rows in
        the top k), ``"meaning_only"`` (queries whose rows all came from
        vector lanes), ``"verdicts"`` ({verdict: queries})}.

        Raises:
            EvalError: an unknown run.
        """
        out = []
        for name in runs:
            rr = self.load_run(name)
            totals = [a[0] for a in rr.answers.values() if a[0] is not None]
            verdicts: dict[str, int] = defaultdict(int)
            for _n, v, _mo in rr.answers.values():
                if v is not None:
                    verdicts[v] += 1
            n = len(rr.hits)
            out.append({
                "run": name, "query_set": rr.query_set, "system": rr.system, "queries": n,
                "with_rows": sum(bool(hs) for hs in rr.hits.values()),
                "mean_rows": float(np.mean(totals)) if totals else None,
                "median_rows": float(np.median(totals)) if totals else None,
                "mean_top_k": float(np.mean([len(hs) for hs in rr.hits.values()])) if n else 0.0,
                "meaning_only": sum(bool(a[2]) for a in rr.answers.values()),
                "verdicts": dict(sorted(verdicts.items()))})
        return out

    def tradeoff(self, pairs: list[tuple[str, str]], *, seed: int = 0) -> list[dict[str, Any]]:
        """The trade-off of looser cut-offs (issue 14, item 4): per
        configuration, a run over a set with truth (blind queries) and a run
        of the same configuration over absent subjects. Returns per pair
        ``{"blind_run", "absent_run", "recall@10", "ndcg@10"`` (figures with
        95 % intervals, see :meth:`metrics`), ``"absent"`` (:meth:`absent`'s row)}."""
        out = []
        for blind_run, absent_run in pairs:
            fig = self.metrics(blind_run, seed=seed)["rows"][0]["figures"]
            out.append({"blind_run": blind_run, "absent_run": absent_run,
                        "recall@10": fig["recall@10"], "ndcg@10": fig["ndcg@10"],
                        "absent": self.absent([absent_run])[0]})
        return out

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
        """Seed 000's ablation as an assertion (E4, E5): recall@10 of every
        built variant (image, caption, both) and of the production ``hybrid``
        search (unless ``hybrid`` is false) × provenance (blind,
        caption-derived) over the queries of ``query_sets``, read-only. The
        check fails when recall@10 of the image variant on caption-derived
        queries exceeds its recall@10 on blind queries by more than ``margin``.

        Returns ``{"passed", "gap", "margin", "model", "table": {variant:
        {provenance: figure}}, "warnings"}``.

        Raises:
            EvalError: no blind or no caption-derived query with ground truth,
                or no image variant of the model.
        """
        model = model or self._image_model()
        queries: list[Query] = []
        for s in query_sets:
            queries += [Query(f"{s}/{qu.id}", qu.text, qu.provenance, qu.register, qu.strata,
                              qu.truth) for qu in self.queries(s)]
        truth, _ = self._resolve_truth(queries)
        prov = {qu.id: qu.provenance for qu in queries}
        for p in ("blind", "caption-derived"):
            if not any(prov[qid] == p for qid, d in truth.items() if any(d.values())):
                raise EvalError(f"the leak check needs {p} queries with ground truth")
        reader = readonly_connection(self.conn)
        try:
            built = []
            for v in VARIANTS:
                try:
                    self._variant(reader, model, v)
                    built.append(v)
                except EvalError:
                    if v == "image":
                        raise
            emb = registry.embedder(self.lib.home, model)
            vecs = emb.encode_texts([qu.text for qu in queries], task="query")
            table: dict[str, dict[str, mx.Figure]] = {}
            runs: dict[str, dict[str, dict[str, float]]] = {}
            for v in built:
                model_id, dims = self._variant(reader, model, v)
                stmt = q.variant_search(model_id, v, dims)
                run = runs[v] = {}
                for qu, vec in zip(queries, vecs):
                    rows = reader.execute(stmt, {**self.lib.viewer.params(),
                                                 "tenant_id": self.tenant_id, "vec_cap": k,
                                                 "qv_variant": np.asarray(vec, np.float32),
                                                 "maxd_variant": 2.0}).fetchall()
                    run[qu.id] = {str(a): 1.0 / r for a, _d, r in rows}
            if hybrid:
                rlib = Library(reader, self.lib.home, self.tenant_id, self.lib.tenant,
                               self.lib.viewer)
                runs["hybrid"] = {qu.id: {str(h.asset_id): 1.0 / h.rank
                                          for h in rlib.search(qu.text, limit=k).hits}
                                  for qu in queries}
            for v, run in runs.items():
                table[v] = {}
                for p in ("blind", "caption-derived"):
                    sub = {qid: d for qid, d in truth.items() if prov[qid] == p}
                    vals = mx.per_query(sub, run, ("recall@10",))["recall@10"]
                    table[v][p] = mx.bootstrap(np.array(list(vals.values())), seed=seed)
        finally:
            reader.close()
        img = table["image"]
        gap = img["caption-derived"].mean - img["blind"].mean
        warns = mx.resolution_warnings([("image/blind", img["blind"]),
                                        ("image/caption-derived", img["caption-derived"])],
                                       "recall@10")
        return {"passed": gap <= margin, "gap": gap, "margin": margin, "model": model,
                "table": {v: {p: f.as_dict() for p, f in row.items()} for v, row in table.items()},
                "warnings": warns}

    # -- pooled blind judging (E6, E7) ---------------------------------------------

    def pool(self, name: str, runs: list[str], *, depth: int = POOL_DEPTH,
             seed: int = 0) -> dict[str, Any]:
        """Pool the top ``depth`` of ``runs`` for blind judging (E7): each
        distinct (query, asset) pair once, in an order shuffled by
        ``random.Random(seed + round)``. Pooling again with more runs queues
        only the pairs not already in the pool (re-pooling), after the
        existing ones; runs already pooled are skipped. Every pair gets a
        random opaque token, by which the judging page names it.

        Returns ``{"pool", "round", "runs_added", "new_pairs", "pairs"}``.

        Raises:
            EvalError: no runs, unknown run, or runs over another query set.
        """
        if not runs:
            raise EvalError("pool needs at least one run")
        loaded = [self.load_run(r) for r in runs]
        sets = {rr.query_set for rr in loaded}
        if len(sets) != 1:
            raise EvalError(f"runs of one pool must share a query set, not {', '.join(sorted(sets))}")
        set_id = self._set_id(sets.pop())
        with self.conn.transaction():
            self.conn.execute(q.INSERT_POOL, {"tenant_id": self.tenant_id, "set_id": set_id,
                                              "name": name, "depth": depth, "seed": seed})
            pool_id, pset, pdepth, pseed = self.conn.execute(q.POOL_BY_NAME, {
                "tenant_id": self.tenant_id, "name": name}).fetchone()
            if pset != set_id:
                raise EvalError(f"pool {name!r} is over another query set")
            done = dict(self.conn.execute(q.POOL_RUNS, {"pool_id": pool_id}).fetchall())
            run_ids = {r: self.conn.execute(q.RUN_BY_NAME, {"tenant_id": self.tenant_id,
                                                            "name": r}).fetchone()[0]
                       for r in runs}
            new = [rid for rid in dict.fromkeys(run_ids.values()) if rid not in done]
            count, last_pos, last_round = self.conn.execute(q.POOL_SIZE,
                                                            {"pool_id": pool_id}).fetchone()
            if not new:
                return {"pool": name, "round": last_round, "runs_added": 0, "new_pairs": 0,
                        "pairs": count}
            rnd = last_round + 1
            pairs = self.conn.execute(q.NEW_POOL_PAIRS, {"run_ids": new, "depth": pdepth,
                                                         "pool_id": pool_id}).fetchall()
            random.Random(pseed + rnd).shuffle(pairs)
            for rid in new:
                self.conn.execute(q.INSERT_POOL_RUN, {"pool_id": pool_id, "run_id": rid,
                                                      "round": rnd})
            with self.conn.cursor() as cur:
                cur.executemany(q.INSERT_POOL_ITEM, [
                    {"pool_id": pool_id, "query_id": qid, "asset_id": aid,
                     "token": secrets.token_urlsafe(16), "position": last_pos + i, "round": rnd}
                    for i, (qid, aid) in enumerate(pairs, 1)])
        return {"pool": name, "round": rnd, "runs_added": len(new), "new_pairs": len(pairs),
                "pairs": count + len(pairs)}

    def pool_id(self, name: str) -> int:
        """The id of a pool. Raises EvalError when there is none of that name."""
        row = self.conn.execute(q.POOL_BY_NAME, {"tenant_id": self.tenant_id,
                                                 "name": name}).fetchone()
        if row is None:
            raise EvalError(f"no pool named {name!r} (create one with 'loupe eval pool')")
        return row[0]

    def pool_items(self, name: str) -> list[dict[str, Any]]:
        """A pool's pairs in judging order: qid, asset_id, token, position, round."""
        return [{"qid": r[0], "asset_id": r[1], "token": r[2], "position": r[3], "round": r[4]}
                for r in self.conn.execute(q.POOL_ITEMS, {"pool_id": self.pool_id(name)})]

    def next_item(self, pool: str, judge: str) -> dict[str, Any] | None:
        """The next pair ``judge`` has not judged: ``{"token", "query", "total",
        "done"}`` — nothing that names the asset, its files or its system —
        or None when the judge is done. Only pairs whose asset the library's
        viewer may read are served and counted (SPEC P1)."""
        row = self.conn.execute(q.NEXT_ITEM, {"pool_id": self.pool_id(pool), "judge": judge,
                                              **self.lib.viewer.params()}).fetchone()
        if row is None:
            return None
        return {"token": row[0], "query": row[1], "total": row[2], "done": row[3]}

    def progress(self, pool: str, judge: str) -> dict[str, int]:
        """``{"total", "done"}`` pairs of the pool for one judge, counting only
        pairs whose asset the library's viewer may read."""
        total, done = self.conn.execute(q.PROGRESS, {"pool_id": self.pool_id(pool),
                                                     "judge": judge,
                                                     **self.lib.viewer.params()}).fetchone()
        return {"total": total, "done": done}

    def judge(self, pool: str, token: str, judge: str, grade: int) -> None:
        """Record (or change) ``judge``'s grade 0/1/2 for the pair ``token``.

        Raises:
            EvalError: unknown token (or one whose asset the viewer may not
                read: the same error), empty judge name, or a grade not in 0..2.
        """
        if grade not in (0, 1, 2):
            raise EvalError("grade must be 0 (no), 1 (near miss) or 2 (satisfies)")
        if not judge or not judge.strip():
            raise EvalError("a judge needs a name")
        row = self.conn.execute(q.ITEM_BY_TOKEN, {"pool_id": self.pool_id(pool),
                                                  "token": token,
                                                  **self.lib.viewer.params()}).fetchone()
        if row is None:
            raise EvalError("unknown pair")
        self.conn.execute(q.UPSERT_JUDGEMENT, {"item_id": row[0], "judge": judge.strip(),
                                               "grade": grade})

    def item_image(self, pool: str, token: str) -> Path:
        """The picture of a pair, for the judging page: the asset's thumbnail
        (a WebP under the library home) or, without one, its primary file.

        Raises:
            EvalError: unknown token, or one whose asset the viewer may not read.
        """
        row = self.conn.execute(q.ITEM_BY_TOKEN, {"pool_id": self.pool_id(pool),
                                                  "token": token,
                                                  **self.lib.viewer.params()}).fetchone()
        if row is None:
            raise EvalError("unknown pair")
        return self.lib.home / row[2] if row[2] else Path(row[3])

    def agreement(self, pool: str) -> dict[str, Any]:
        """Inter-judge agreement on the pairs two judges both graded
        (:func:`loupe.eval.metrics.judge_agreement`: count, share of identical
        grades, Cohen's kappa unweighted and linearly weighted, per pair of
        judges). Returns ``{"pool", "judges", "judgements": {judge: count},
        "pairs": [...]}``."""
        by_judge: dict[str, dict[tuple[str, int], int]] = defaultdict(dict)
        for qid, a, judge, g in self.conn.execute(q.POOL_JUDGEMENTS,
                                                  {"pool_id": self.pool_id(pool)}):
            by_judge[judge][(qid, a)] = g
        return {"pool": pool, "judges": sorted(by_judge),
                "judgements": {j: len(d) for j, d in by_judge.items()},
                "pairs": mx.judge_agreement(by_judge)}

    # -- threshold calibration (V4) --------------------------------------------------

    def calibrate(self, runs: list[str], *, unjudged_nonrelevant: bool = False) -> dict[str, Any]:
        """Propose per-model distance thresholds by query-length band (V4)
        from judged results of vector runs (systems ``image``, ``caption``,
        ``both``: they record each result's cosine distance).

        For each model and band (1, 2, 3-5, 6-10, 11+ words), the graded
        results (ground truth or judgements; relevant = grade ≥ 1) of the
        runs' queries in that band are the evidence. The proposal is the
        distance ``t`` (keep results with distance ≤ t) that maximises
        Youden's J = share of relevant kept − share of non-relevant kept
        (Youden, "Index for rating diagnostic tests", Cancer 1950), the
        largest such ``t`` on ties. A band without both a relevant and a
        non-relevant graded result gets no proposal. With
        ``unjudged_nonrelevant`` (for known-item truth without pooled
        judgements), a result without a grade counts as non-relevant — a
        pessimistic assumption the result reports (``unjudged_nonrelevant``).
        Runs of the ``text`` system count too. Nothing is changed:
        the result says what each proposal would keep and cut next to the
        threshold in force, and the command that applies it.

        Raises:
            EvalError: an unknown run, or a run without distances (hybrid).
        """
        evidence: dict[str, dict[str, list[tuple[float, bool]]]] = defaultdict(
            lambda: defaultdict(list))
        for name in runs:
            rr = self.load_run(name)
            if rr.system not in VARIANTS + ("text",):
                raise EvalError(f"run {name!r} ({rr.system}) has no distances: calibrate "
                                "from runs of the text system or the image, caption or "
                                "both variants")
            qrels = self.qrels(rr.query_set)
            texts = {qu.id: qu.text for qu in self.queries(rr.query_set)}
            for qid, hs in rr.hits.items():
                band = _band(len(texts[qid].split()))
                for a, _s, d in hs:
                    g = qrels.get(qid, {}).get(str(a))
                    if g is None and unjudged_nonrelevant:
                        g = 0
                    if g is not None and d is not None:
                        evidence[rr.model][band].append((d, g >= 1))
        out: dict[str, Any] = {}
        for model, bands in evidence.items():
            try:
                current = registry.get_model(self.lib.home, model).config
            except ModelError:
                current = {}
            rows = []
            for band in registry.DEFAULT_THRESHOLDS:
                ev = bands.get(band, [])
                n_rel = sum(r for _, r in ev)
                n_non = len(ev) - n_rel
                cur = registry.threshold_for(current, _band_words(band))
                row: dict[str, Any] = {"band": band, "relevant": n_rel, "non_relevant": n_non,
                                       "current": cur, "current_effect": _effect(ev, cur),
                                       "proposed": None, "proposed_effect": None}
                if n_rel and n_non:
                    best = max(sorted({d for d, _ in ev}),
                               key=lambda t: (_youden(ev, t), t))
                    row["proposed"] = round(best, 4)
                    row["proposed_effect"] = _effect(ev, best)
                rows.append(row)
            proposals = " ".join(f"{r['band']}={r['proposed']}" for r in rows if r["proposed"])
            out[model] = {"bands": rows,
                          "apply": f"loupe models thresholds {model} {proposals}" if proposals else None}
        return {"runs": runs, "models": out, "unjudged_nonrelevant": unjudged_nonrelevant}


    # -- report ---------------------------------------------------------------------

    def report(self, runs: list[str], path: str | Path, *,
               leak_sets: list[str] | None = None, model: str | None = None,
               seed: int = 0, tradeoff: list[tuple[str, str]] | None = None) -> dict[str, Any]:
        """Write ``<path>.html`` (self-contained: tables and inline SVG, no
        scripts or external resources) and ``<path>.json`` with the metrics of
        ``runs``, the leak check over ``leak_sets`` (when given), the
        absent-subject trade-off of ``tradeoff`` pairs (blind run, absent run;
        see :meth:`tradeoff`) and the
        threshold calibration of the runs that have distances. Returns the
        report dict (what the JSON holds) with ``html`` and ``json`` paths.

        Raises:
            EvalError: an unknown run or query set.
        """
        from datetime import datetime

        data: dict[str, Any] = {"generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
                                "seed": seed, "runs": [self.metrics(r, seed=seed) for r in runs]}
        if leak_sets:
            data["leak_check"] = self.leak_check(leak_sets, model=model, seed=seed)
        if tradeoff:
            data["tradeoff"] = self.tradeoff(tradeoff, seed=seed)
        vector_runs = [m["run"] for m in data["runs"] if m["system"] in VARIANTS]
        if vector_runs:
            data["calibration"] = self.calibrate(vector_runs)
        base = Path(path)
        html_path, json_path = base.with_suffix(".html"), base.with_suffix(".json")
        html_path.write_text(render(data), encoding="utf-8")
        json_path.write_text(json.dumps(data, indent=2, default=str), encoding="utf-8")
        return {**data, "html": str(html_path), "json": str(json_path)}


def _band(n_words: int) -> str:
    """The threshold band (keys of registry.DEFAULT_THRESHOLDS) of a query length."""
    if n_words <= 1:
        return "1"
    if n_words == 2:
        return "2"
    if n_words <= 5:
        return "3-5"
    return "6-10" if n_words <= 10 else "11+"


def _band_words(band: str) -> int:
    return {"1": 1, "2": 2, "3-5": 3, "6-10": 6, "11+": 11}[band]


def _effect(ev: list[tuple[float, bool]], t: float) -> dict[str, int]:
    """Relevant and non-relevant graded results kept (distance ≤ t) and cut."""
    return {"relevant_kept": sum(1 for d, r in ev if r and d <= t),
            "relevant_cut": sum(1 for d, r in ev if r and d > t),
            "non_relevant_kept": sum(1 for d, r in ev if not r and d <= t),
            "non_relevant_cut": sum(1 for d, r in ev if not r and d > t)}


def _youden(ev: list[tuple[float, bool]], t: float) -> float:
    e = _effect(ev, t)
    rel = e["relevant_kept"] + e["relevant_cut"]
    non = e["non_relevant_kept"] + e["non_relevant_cut"]
    return e["relevant_kept"] / rel - e["non_relevant_kept"] / non
