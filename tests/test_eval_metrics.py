"""The instrument's metrics, file formats and read-only runs (E1–E3, E6, E8)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import ir_measures
import numpy as np
import psycopg
import pytest
from conftest import without_machine_words
from imaging import make_image, write_sidecar
from ir_measures import MRR, R, nDCG

from loupe import Library
from loupe.eval import EvalError, Evaluation, QuerySetError, readonly_connection
from loupe.eval import metrics as mx
from loupe.eval.queryset import (
    read_qrels,
    read_queries,
    read_run,
    write_qrels,
    write_run,
)

# A hand-made example: three queries, graded qrels, a run (best first).
QRELS = {"q1": {"d1": 2, "d2": 1, "d5": 2}, "q2": {"d7": 1}, "q3": {"d10": 2, "d11": 0}}
RUN_ORDER = {"q1": ["d3", "d1", "d4", "d2"], "q2": ["d8", "d9", "d7"], "q3": ["d11"]}
RUN = {q: {d: 1.0 / r for r, d in enumerate(ds, 1)} for q, ds in RUN_ORDER.items()}

# By hand: recall@10 = retrieved relevant / relevant; RR = 1 / rank of the
# first relevant; nDCG@10 = Σ grade / log2(rank + 1) over the ideal order's.
L2_3, L2_5 = math.log2(3), math.log2(5)
WANT = {
    "recall@10": {"q1": 2 / 3, "q2": 1.0, "q3": 0.0},
    "mrr": {"q1": 1 / 2, "q2": 1 / 3, "q3": 0.0},
    "ndcg@10": {"q1": (2 / L2_3 + 1 / L2_5) / (2 + 2 / L2_3 + 1 / 2), "q2": 1 / 2, "q3": 0.0},
}


def test_hand_made_example_equals_ranx_ir_measures_and_hand_values(tmp_path: Path):
    got = mx.per_query(QRELS, RUN)
    for m, per_q in WANT.items():
        assert got[m] == pytest.approx(per_q, abs=1e-12)
    # ir-measures (pytrec_eval, i.e. trec_eval) on the same data, through TREC files
    write_qrels(QRELS, tmp_path / "qrels.txt")
    write_run({q: list(d.items()) for q, d in RUN.items()}, tmp_path / "run.txt", "hand")
    qrels, run = read_qrels(tmp_path / "qrels.txt"), read_run(tmp_path / "run.txt")
    assert qrels == QRELS
    assert {q: sorted(d, key=lambda x: -d[x]) for q, d in run.items()} == RUN_ORDER
    irm = {(m.query_id, str(m.measure)): m.value for m in ir_measures.iter_calc(
        [R @ 10, nDCG @ 10, MRR], qrels, run)}
    names = {"recall@10": "R@10", "ndcg@10": "nDCG@10", "mrr": "RR"}
    for m, per_q in WANT.items():
        for q, v in per_q.items():
            assert irm[(q, names[m])] == pytest.approx(v, abs=1e-9)
    # means and their intervals
    rows = mx.table(QRELS, RUN, {"q1": {"register": "objects"}, "q2": {"register": "objects"},
                                 "q3": {"register": "style"}})
    assert [(r.group, r.value) for r in rows] == [("all", "all"), ("register", "objects"),
                                                  ("register", "style")]
    assert rows[0].figures["recall@10"].mean == pytest.approx(5 / 9)
    assert rows[0].figures["mrr"].mean == pytest.approx(5 / 18)
    assert rows[1].figures["ndcg@10"].mean == pytest.approx((WANT["ndcg@10"]["q1"] + 0.5) / 2)
    assert rows[2].figures["recall@10"].n == 1


def test_bootstrap_is_seeded_and_brackets_the_mean():
    x = np.array([0, 1, 1, 0, 1, 1, 1, 0, 1, 1], dtype=float)
    a, b = mx.bootstrap(x, seed=3), mx.bootstrap(x, seed=3)
    assert (a.lo, a.hi) == (b.lo, b.hi) and a.mean == 0.7 and a.lo < 0.7 < a.hi
    # 10 queries cannot resolve 0.7 against 0.6
    warns = mx.resolution_warnings([("A", a), ("B", mx.bootstrap(x[:5], seed=3))], "recall@10")
    assert any("cannot be resolved" in w for w in warns)
    assert any("A vs B" in w and "intervals overlap" in w for w in warns)
    with pytest.raises(ValueError):
        mx.bootstrap(np.array([]))


def test_paired_comparison_uses_ranx_fisher_test():
    run_b = {q: {d: 1.0 / r for r, d in enumerate(sorted(QRELS[q], key=lambda d: -QRELS[q][d]), 1)}
             for q in QRELS}   # the ideal run
    out = mx.compare(QRELS, RUN, run_b, names=("hand", "ideal"), permutations=2000, seed=1)
    assert out["n"] == 3
    assert out["recall@10"]["hand"] == pytest.approx(5 / 9)
    assert out["recall@10"]["ideal"] == pytest.approx(1.0)
    assert out["ndcg@10"]["diff"] == pytest.approx(1 - np.mean(list(WANT["ndcg@10"].values())))
    assert 0 < out["ndcg@10"]["p"] <= 1 and out["ndcg@10"]["p_se"] < 0.012
    # the paired t-test, by scipy on the same per-query values
    from scipy.stats import ttest_rel

    a = [WANT["ndcg@10"][q] for q in ("q1", "q2", "q3")]
    assert out["ndcg@10"]["p_student"] == pytest.approx(ttest_rel(a, [1.0, 1.0, 1.0]).pvalue)


def test_pooled_qrels_keeps_the_truth_and_takes_the_lower_median():
    truth = {"q1": {"d1": 2}}
    grades = {("q1", "d1"): [0, 0, 0],       # the truth names it: grade 2 stays
              ("q1", "d2"): [1, 2],          # a tie between 1 and 2 gives 1
              ("q1", "d3"): [2, 0, 1],       # median of 0, 1, 2 is 1
              ("q2", "d4"): [2, 2, 1, 0],    # lower median of 0, 1, 2, 2 is 1
              ("q2", "d5"): [2]}
    assert mx.pooled_qrels(truth, grades) == {"q1": {"d1": 2, "d2": 1, "d3": 1},
                                              "q2": {"d4": 1, "d5": 2}}
    assert truth == {"q1": {"d1": 2}}        # the truth given is not changed


def test_judge_agreement_counts_shared_pairs_and_cohens_kappa():
    # a and b share four pairs: 3 agree; a's marginals 1/4, 1/4, 2/4, b's 1/4, 2/4, 1/4:
    # chance agreement 5/16, kappa (3/4 - 5/16) / (1 - 5/16) = 7/11
    a = {"p1": 0, "p2": 1, "p3": 2, "p4": 2, "p9": 1}
    b = {"p1": 0, "p2": 1, "p3": 1, "p4": 2}
    c = {"p1": 1, "p2": 1}
    d = {"p7": 2}                            # shares nothing: no row
    rows = mx.judge_agreement({"b": b, "a": a, "c": c, "d": d})
    assert [r["judges"] for r in rows] == [["a", "b"], ["a", "c"], ["b", "c"]]
    ab = rows[0]
    assert ab["pairs"] == 4 and ab["agree"] == 0.75
    assert math.isclose(ab["kappa"], 7 / 11)
    # linear weights |i - j|: observed 1/4 (one pair one step apart), expected the
    # marginals' weighted sum; kappa_w = 1 - observed / expected (Cohen 1968)
    expected = sum(abs(i - j) * pa * pb for i, pa in enumerate([1 / 4, 1 / 4, 2 / 4])
                   for j, pb in enumerate([1 / 4, 2 / 4, 1 / 4]))
    assert math.isclose(ab["kappa_linear"], 1 - (1 / 4) / expected)
    bc = rows[2]
    assert bc["pairs"] == 2 and bc["agree"] == 0.5
    c1 = mx.judge_agreement({"x": {"p": 1, "q": 1}, "y": {"p": 1, "q": 1}})
    assert c1 == [{"judges": ["x", "y"], "pairs": 2, "agree": 1.0, "kappa": None,
                   "kappa_linear": None}]


def test_query_file_validation(tmp_path: Path):
    good = tmp_path / "q.jsonl"
    good.write_text('# a comment\n{"id": 1, "text": "red kettle", "provenance": "blind", '
                    '"register": "objects", "truth": [{"path": "a/b.jpg"}]}\n')
    [q] = read_queries(good)
    assert (q.id, q.truth) == ("1", [{"path": "a/b.jpg", "grade": 2}])
    cases = {
        '{"id": "x", "text": "", "provenance": "blind", "register": "objects"}': "'text'",
        '{"id": "x", "text": "t", "provenance": "seen", "register": "objects"}': "'provenance'",
        '{"id": "x", "text": "t", "provenance": "blind", "register": "mood"}': "'register'",
        '{"id": "x", "text": "t", "provenance": "blind", "register": "style", "truth": '
        '[{"path": "/abs.jpg"}]}': "relative",
        '{"id": "x", "text": "t", "provenance": "blind", "register": "style", "truth": '
        '[{"sha256": "zz"}]}': "64 hex",
        '{"id": "x", "text": "t", "provenance": "blind", "register": "style", "colour": 1}': "unknown field",
        'not json': "not JSON",
    }
    for line, msg in cases.items():
        bad = tmp_path / "bad.jsonl"
        bad.write_text(line + "\n")
        with pytest.raises(QuerySetError, match=msg):
            read_queries(bad)
    dup = tmp_path / "dup.jsonl"
    dup.write_text(good.read_text().splitlines()[1] + "\n" + good.read_text().splitlines()[1] + "\n")
    with pytest.raises(QuerySetError, match="duplicate id"):
        read_queries(dup)


def test_the_read_only_connection_cannot_write(lib: Library):
    reader = readonly_connection(lib.conn)
    try:
        assert reader.execute("SELECT count(*) FROM tenant").fetchone()[0] == 1
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            reader.execute("INSERT INTO tenant (name) VALUES ('intruder')")
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            reader.execute("UPDATE lexical_setting SET k1 = 9")
        # even a transaction declared read-write: the role may only SELECT
        with pytest.raises(psycopg.errors.InsufficientPrivilege), reader.transaction():
            reader.execute("SET TRANSACTION READ WRITE")
            reader.execute("INSERT INTO tenant (name) VALUES ('intruder')")
        with pytest.raises(psycopg.errors.InsufficientPrivilege), reader.transaction():
            reader.execute("SET TRANSACTION READ WRITE")
            reader.execute("DELETE FROM eval_judgement")
        # nor change a setting, nor build an index (E1)
        with pytest.raises(psycopg.errors.InsufficientPrivilege), reader.transaction():
            reader.execute("SET TRANSACTION READ WRITE")
            reader.execute("UPDATE lexical_setting SET k1 = 9")
        with pytest.raises((psycopg.errors.InsufficientPrivilege,
                            psycopg.errors.ReadOnlySqlTransaction)):
            reader.execute("CREATE INDEX ON asset (byte_size)")
    finally:
        reader.close()
    assert lib.conn.execute("SELECT count(*) FROM tenant WHERE name = 'intruder'").fetchone()[0] == 0


@pytest.fixture
def small(lib: Library, photos: Path) -> Library:
    for i, (name, title) in enumerate([("kettle.jpg", "Red enamel kettle"),
                                       ("teapot.jpg", "Blue teapot"),
                                       ("lorry.jpg", "Red lorry on a road"),
                                       ("fern.jpg", "Green fern")]):
        write_sidecar(make_image(photos / "kitchen" / name, color=(40 + 50 * i, 40, 40)),
                      f"-XMP-dc:Title={title}")
    lib.ingest(photos)
    without_machine_words(lib)  # titles only: the judged words are the metadata's
    return lib


def test_hybrid_run_is_the_production_search_and_scores_by_ground_truth(small: Library,
                                                                        tmp_path: Path):
    qfile = tmp_path / "kitchen.jsonl"
    rows = [{"id": "k1", "text": "red kettle", "provenance": "blind", "register": "objects",
             "truth": [{"path": "kitchen/kettle.jpg"}]},
            {"id": "k2", "text": "red", "provenance": "blind", "register": "style",
             "strata": {"room": "kitchen"},
             "truth": [{"path": "kitchen/lorry.jpg", "grade": 1}, {"path": "kitchen/kettle.jpg"}]},
            {"id": "k3", "text": "fern", "provenance": "caption-derived", "register": "question",
             "truth": [{"path": "kitchen/missing.jpg"}]}]
    qfile.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ev = Evaluation(small)
    info = ev.import_queries(qfile)
    assert info == {"query_set": "kitchen", "queries": 3, "blind": 2, "caption-derived": 1,
                    "truth_unresolved": 1}
    out = ev.run("kitchen", "hybrid", k=10)
    assert out["run"] == "hybrid-kitchen" and out["queries"] == 3
    rr = ev.load_run("hybrid-kitchen")
    for r in rows:
        want = [h.asset_id for h in small.search(r["text"], limit=10).hits]
        assert [a for a, _, _ in rr.hits[r["id"]]] == want
    m = ev.metrics("hybrid-kitchen")
    assert (m["queries"], m["measured"], m["without_relevant"]) == (3, 2, 1)
    allrow = m["rows"][0]["figures"]
    assert allrow["recall@10"]["mean"] == 1.0   # every relevant asset found
    assert [(p["id"], p["pass"], p["recall@10"], p["rr"]) for p in m["per_query"]] == [
        ("k1", True, 1.0, 1.0), ("k2", True, 1.0, 1.0)]
    # 5 results (k1: kettle, lorry; k2: kettle, lorry; k3: fern), 3 of them graded
    assert m["judged@10"] == pytest.approx(3 / 5)
    # export round trip: the qrels and run files name assets by content sha256
    ev.export_qrels("kitchen", tmp_path / "qrels.txt")
    ev.export_run("hybrid-kitchen", tmp_path / "run.txt")
    qr = read_qrels(tmp_path / "qrels.txt")
    assert all(len(d) == 64 for q in qr.values() for d in q)
    ev.export_queries("kitchen", tmp_path / "again.jsonl")
    assert [q.as_dict() for q in read_queries(tmp_path / "again.jsonl")] == \
        [q.as_dict() for q in read_queries(qfile)]
    # a set whose truth names nothing here: a clear error, not ranx's ValueError
    (tmp_path / "gone.jsonl").write_text(json.dumps(rows[2]) + "\n")
    ev.import_queries(tmp_path / "gone.jsonl")
    ev.run("gone", "hybrid", k=10)
    with pytest.raises(EvalError, match=r"no query of set 'gone' has a relevant asset in this "
                                        r"library \(1 ground-truth references name no asset"):
        ev.metrics("hybrid-gone")


def test_reimport_keeps_query_ids_and_runs(small: Library, tmp_path: Path):
    ev = Evaluation(small)
    qfile = tmp_path / "s.jsonl"
    qfile.write_text('{"id": "a", "text": "red kettle", "provenance": "blind", '
                     '"register": "objects", "truth": [{"path": "kitchen/kettle.jpg"}]}\n')
    ev.import_queries(qfile, name="s")
    ev.run("s", "hybrid", name="r1")
    ids = small.conn.execute("SELECT id FROM eval_query").fetchall()
    qfile.write_text('{"id": "a", "text": "enamel kettle", "provenance": "blind", '
                     '"register": "objects", "truth": [{"path": "kitchen/kettle.jpg"}]}\n'
                     '{"id": "b", "text": "fern", "provenance": "blind", "register": "style"}\n')
    assert ev.import_queries(qfile, name="s")["queries"] == 2
    assert small.conn.execute("SELECT id FROM eval_query WHERE qid = 'a'").fetchall() == ids
    assert [q.text for q in ev.queries("s")] == ["enamel kettle", "fern"]
    assert ev.load_run("r1").hits["a"]          # the run made before stays attached
    assert ev.query_sets() == [{"query_set": "s", "queries": 2, "blind": 2, "caption-derived": 0}]
