"""The leak check (E4, E5): recall@10 of every index variant and of the production
search by query provenance, failing when caption-derived queries beat blind ones
on the image variant by more than the margin. Called by
:meth:`loupe.eval.instrument.Evaluation.leak_check`."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..library import Library
from ..models import registry
from . import metrics as mx
from . import queries as q
from .common import LEAK_MARGIN, VARIANTS, EvalError, readonly_connection
from .queryset import Query


def leak_check(ev, query_sets: list[str], *, model: str | None = None,
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
    model = model or ev._image_model()
    queries: list[Query] = []
    for s in query_sets:
        queries += [Query(f"{s}/{qu.id}", qu.text, qu.provenance, qu.register, qu.strata,
                          qu.truth) for qu in ev.queries(s)]
    truth, _ = ev._resolve_truth(queries)
    prov = {qu.id: qu.provenance for qu in queries}
    for p in ("blind", "caption-derived"):
        if not any(prov[qid] == p for qid, d in truth.items() if any(d.values())):
            raise EvalError(f"the leak check needs {p} queries with ground truth")
    reader = readonly_connection(ev.conn)
    try:
        built = []
        for v in VARIANTS:
            try:
                ev._variant(reader, model, v)
                built.append(v)
            except EvalError:
                if v == "image":
                    raise
        emb = registry.embedder(ev.lib.home, model)
        vecs = emb.encode_texts([qu.text for qu in queries], task="query")
        table: dict[str, dict[str, mx.Figure]] = {}
        runs: dict[str, dict[str, dict[str, float]]] = {}
        for v in built:
            model_id, dims = ev._variant(reader, model, v)
            stmt = q.variant_search(model_id, v, dims)
            run = runs[v] = {}
            for qu, vec in zip(queries, vecs):
                rows = reader.execute(stmt, {**ev.lib.viewer.params(),
                                             "tenant_id": ev.tenant_id, "vec_cap": k,
                                             "qv_variant": np.asarray(vec, np.float32),
                                             "maxd_variant": 2.0}).fetchall()
                run[qu.id] = {str(a): 1.0 / r for a, _d, r in rows}
        if hybrid:
            rlib = Library(reader, ev.lib.home, ev.tenant_id, ev.lib.tenant,
                           ev.lib.viewer)
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
