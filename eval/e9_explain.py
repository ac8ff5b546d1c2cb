"""Which part of the text lane loses known items as the haystack grows (E9).

Usage (from the repository root, on COPIES of the two homes; read-only)::

    PYTHONPATH=$PWD/src python eval/e9_explain.py SMALL_HOME LARGE_HOME QUERYSET.jsonl OUTDIR \\
        [--extras]

For the query set's queries (the 195 blind test queries of ``eval/e9/runs/``)
and each home (tags ``demo-<n>`` and ``e9-<n>``, ``n`` its asset count), writes
TREC runs ``OUTDIR/<system>-<tag>.trec.gz`` (docno = the asset's content
SHA-256, top 10, rank order) of these rankings, each an exact (brute-force)
cosine or BM25 ranking over every asset (the owner reads every asset; no HNSW):

* ``peerbm25``: the peer's BM25 half alone (:meth:`loupe.eval.peer.Peer.bm25`:
  Tantivy over the plain English fields of :data:`loupe.eval.queries.PEER_DOCUMENTS`);
* ``peerdense``: the peer's dense half alone (:meth:`loupe.eval.peer.Peer.dense`:
  the plain fields through the text lane's model, every document, no cut-off);
* ``peerdensecut``: that ranking kept within the text lane's installed
  cut-off for the query's word count (:func:`loupe.models.registry.threshold_for`);
* ``textexact``: Loupe's stored text-lane vectors (the embedding text of
  :mod:`loupe.vector.embedtext`), exact scan, with the installed cut-off — what
  ``loupe eval run SET text`` returns, without pgvector's HNSW;
* ``textexactnocut``: the same with no cut-off;
* with ``--extras``: ``textnovocab`` (the embedding text re-encoded with its
  ``vocabulary``, the machine words, left out) and ``textfn`` (the embedding
  text plus the file-name words, which the peer holds and it does not), both
  exact, no cut-off.

Beside them ``OUTDIR/ranks-<tag>.json`` (per query, the 1-based rank of the
known item in each full ranking, null when absent; ``eval/e9_ranks.py``
summarises two of them) and ``OUTDIR/texts-<tag>.jsonl.gz`` (per asset its
SHA-256, peer text and embedding text).

Texts are encoded by the text lane's model (``task="document"``; queries
``task="query"``, as the text lane and the peer encode them), each distinct
text once across both homes (the demo part of the two homes is the same).
Ties break by asset id, as the peer does.
"""
from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import numpy as np

COLS = ("title", "description", "keywords", "vocabulary", "collections", "location",
        "people", "creator", "ocr")


def _unit(m) -> np.ndarray:
    m = np.asarray(m, np.float64)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def load(home: str) -> dict:
    """One home's assets (by id): SHA-256, peer text, file name, search-document
    fields, stored text vectors (unit rows), the text model's name and config."""
    from loupe.eval import queries as eq
    from loupe.eval.peer import document_text
    from loupe.library import Library
    from loupe.models import registry
    from loupe.vector import queries as vq

    lib = Library.open(home)
    try:
        conn, tid = lib.conn, lib.tenant_id
        lang = lib.languages()[0]
        lanes = {lane: (mid, name) for lane, mid, name, *_ in conn.execute(
            vq.LANE_MODELS, {"tenant_id": tid})}
        model_id, model = lanes["text"]
        sha = dict(conn.execute("SELECT id, encode(content_sha256, 'hex') FROM asset "
                                "WHERE tenant_id = %s", (tid,)).fetchall())
        prow = conn.execute(eq.PEER_DOCUMENTS, {"tenant_id": tid, "lang": lang, "see_all": True,
                                                "principals": []}).fetchall()
        ids = [r[0] for r in prow]
        docs: dict[int, dict] = {}
        after = 0
        while True:
            rows = conn.execute(vq.TEXT_DOCUMENTS, {"tenant_id": tid, "lang": lang,
                                                    "model_id": model_id, "lane": "text",
                                                    "after": after, "batch": 1000}).fetchall()
            if not rows:
                break
            after = rows[-1][0]
            docs.update({r[0]: dict(zip(COLS, (x or "" for x in r[1:10]))) for r in rows})
        stored = {a: json.loads(e) for a, e in conn.execute(
            "SELECT asset_id, embedding::text FROM asset_vector WHERE tenant_id = %s "
            "AND model_id = %s AND lane = 'text'", (tid, model_id))}
        assert ids == sorted(docs) and set(ids) == set(stored), f"{home}: documents and vectors disagree"
        return {"ids": ids, "sha": sha, "peer_texts": [document_text(*r[1:]) for r in prow],
                "filenames": {r[0]: r[6] or "" for r in prow}, "docs": docs,
                "text": _unit([stored[a] for a in ids]), "model": model,
                "cfg": registry.get_model(lib.home, model).config, "home": lib.home}
    finally:
        lib.close()


def main(argv: list[str]) -> int:
    extras = "--extras" in argv
    small_home, large_home, qpath, outdir = [x for x in argv if not x.startswith("--")]
    from loupe.eval.peer import Peer
    from loupe.models import registry
    from loupe.vector.embedtext import embedding_text

    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    homes = [load(small_home), load(large_home)]
    model = homes[1]["model"]
    assert homes[0]["model"] == model and homes[0]["cfg"].get("thresholds") == \
        homes[1]["cfg"].get("thresholds"), "the two homes' text models or cut-offs differ"
    cfg = homes[1]["cfg"]
    emb = registry.embedder(homes[1]["home"], model)
    cache: dict[str, np.ndarray] = {}

    def encode(texts: list[str]) -> np.ndarray:
        todo = sorted({t for t in texts if t not in cache})
        for i in range(0, len(todo), 64):
            chunk = todo[i:i + 64]
            for t, v in zip(chunk, emb.encode_texts(chunk, task="document")):
                cache[t] = np.asarray(v, np.float64)
        return _unit(np.vstack([cache[t] for t in texts]))

    queries = [json.loads(line) for line in Path(qpath).read_text(encoding="utf-8").splitlines()
               if line.strip() and not line.startswith("#")]
    qv = _unit(emb.encode_texts([x["text"] for x in queries], task="query"))
    # the large home first: its texts include the small home's
    for h in (homes[1], homes[0]):
        h["tag"] = f"{'demo' if h is homes[0] else 'e9'}-{len(h['ids'])}"
        h["mats"] = {"peer": encode(h["peer_texts"])}
        h["emb_texts"] = [embedding_text(h["docs"][a]) for a in h["ids"]]
    if extras:
        for h in homes:
            h["mats"]["novocab"] = encode([embedding_text({**h["docs"][a], "vocabulary": ""})
                                           for a in h["ids"]])
            h["mats"]["fn"] = encode([". ".join(x for x in (t, h["filenames"][a]) if x)
                                      for a, t in zip(h["ids"], h["emb_texts"])])
    for h in homes:
        ids, sha, mats = h["ids"], h["sha"], h["mats"]
        idarr = np.array(ids)
        peer = Peer(ids, h["peer_texts"], mats["peer"].astype(np.float32))

        def ranking(m: np.ndarray, v: np.ndarray, maxd: float | None):
            d = 1.0 - m @ v
            order = np.lexsort((idarr, d))
            return ([ids[i] for i in order if maxd is None or d[i] <= maxd],
                    [ids[i] for i in order])

        dense = {"peerdense": ("peer", False), "peerdensecut": ("peer", True),
                 "textexact": ("text", True), "textexactnocut": ("text", False)}
        if extras:
            dense.update({"textnovocab": ("novocab", False), "textfn": ("fn", False)})
        runs: dict[str, dict[str, list[int]]] = {s: {} for s in ["peerbm25", *dense]}
        ranks: dict[str, dict] = {}
        for x, v in zip(queries, qv):
            maxd = registry.threshold_for(cfg, len(x["text"].split()))
            full = {"peerbm25": peer.bm25(x["text"])}
            runs["peerbm25"][x["id"]] = full["peerbm25"]
            for s, (mat, cut) in dense.items():
                kept, fl = ranking(h["text"] if mat == "text" else mats[mat], v,
                                   maxd if cut else None)
                runs[s][x["id"]] = kept
                if not cut:
                    full[s] = fl
            truth = {t["sha256"] for t in x["truth"]}
            ranks[x["id"]] = {s: next((i for i, a in enumerate(r, 1) if sha[a] in truth), None)
                              for s, r in full.items()}
            ranks[x["id"]]["maxd"] = maxd
        for s, run in runs.items():
            lines = [f"{qid} Q0 {sha[a]} {r} {1.0 / r:.6f} {s}-{h['tag']}"
                     for qid, hs in run.items() for r, a in enumerate(hs[:10], 1)]
            (out / f"{s}-{h['tag']}.trec.gz").write_bytes(
                gzip.compress(("\n".join(lines) + "\n").encode(), mtime=0))
        (out / f"ranks-{h['tag']}.json").write_text(json.dumps(ranks, indent=0, sort_keys=True))
        with gzip.open(out / f"texts-{h['tag']}.jsonl.gz", "wt", encoding="utf-8") as f:
            for a, pt, et in zip(ids, h["peer_texts"], h["emb_texts"]):
                f.write(json.dumps({"sha256": sha[a], "peer": pt, "embedding": et}) + "\n")
        print(f"{h['tag']}: {len(ids)} assets, {len(queries)} queries, model {model}, "
              f"cut-offs {cfg.get('thresholds')}", flush=True)
    print(f"distinct texts encoded: {len(cache)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
