"""``eval/e9_compare.py`` (E9): one system's run at two
haystack sizes, paired over the same queries, with the share of top-10 slots
taken by distractors and judged@10 — on small hand-made TREC files whose
figures are worked out by hand below."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _module():
    spec = importlib.util.spec_from_file_location("e9_compare", REPO / "eval/e9_compare.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _trec(path: Path, run: dict[str, list[str]], *, reverse_lines: bool = False) -> Path:
    lines = [f"{q} Q0 {d} {i} 0.500000 t\n" for q, ds in run.items() for i, d in enumerate(ds, 1)]
    if reverse_lines:
        lines.reverse()
    path.write_text("".join(lines), encoding="utf-8")
    return path


def _files(tmp_path: Path) -> tuple[Path, Path, Path, Path]:
    qs = tmp_path / "q.jsonl"
    rows = [("q1", "objects", "A"), ("q2", "style", "B"), ("q3", "objects", "D")]
    qs.write_text("# header line\n" + "".join(
        json.dumps({"id": q, "text": "t", "provenance": "blind", "register": reg,
                    "strata": {"source": "food"}, "truth": [{"sha256": sha, "grade": 2}]}) + "\n"
        for q, reg, sha in rows), encoding="utf-8")
    z = [f"Z{i}" for i in range(1, 12)]
    # every score is equal: only the rank column orders a run (lines written backwards)
    small = _trec(tmp_path / "s.trec", {"q1": ["A", "x"], "q2": ["B"], "q3": ["y", "D"]},
                  reverse_lines=True)
    large = _trec(tmp_path / "l.trec", {"q1": ["Z1", "A"], "q2": ["B", "Z2", "Z3"],
                                        "q3": z[:10] + ["D"]}, reverse_lines=True)
    man = tmp_path / "d.jsonl"
    man.write_text("".join(json.dumps({"sha256": s}) + "\n" for s in z + ["y"]), encoding="utf-8")
    return qs, small, large, man


def test_two_sizes_paired_with_distractor_share(tmp_path: Path, capsys) -> None:
    qs, small, large, man = _files(tmp_path)
    demo = tmp_path / "demo.txt"
    demo.write_text("y\n")  # a distractor with a demo asset's bytes is a demo asset
    _module().main([str(qs), str(small), str(large), str(man), "--demo", str(demo), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert out["n"] == 3 and out["distractors"] == 11
    top = out["rows"][0]
    assert (top["group"], top["n"]) == ("all", 3)
    # recall@10: small 1, 1, 1; large 1, 1, 0 (D is 11th behind ten distractors)
    assert top["recall@10"]["small"][0] == 1.0
    assert top["recall@10"]["large"][0] == pytest.approx(2 / 3, abs=1e-3)
    assert top["recall@10"]["diff"][0] == pytest.approx(-1 / 3, abs=1e-3)
    # nDCG@10: small q1 1, q2 1, q3 1/log2(3); large q1 1/log2(3), q2 1, q3 0
    g = 1 / math.log2(3)
    assert top["ndcg@10"]["small"][0] == pytest.approx((2 + g) / 3, abs=1e-3)
    assert top["ndcg@10"]["large"][0] == pytest.approx((1 + g) / 3, abs=1e-3)
    # distractor slots out of 10 per query: 1 + 2 + 10 of 30
    assert out["distractor_share"][0] == pytest.approx(13 / 30, abs=1e-3)
    assert out["distractor_share_small"] == 0.0   # "y" was taken out by --demo
    # judged@10: slots whose docno the known-item truth grades: A, B, D of 5 small
    # slots; A, B of 2 + 3 + 10 large slots (D is 11th)
    assert out["judged@10"] == {"small": 0.6, "large": pytest.approx(2 / 15, abs=1e-3)}
    assert out["hits_lost"] == ["q3"] and out["hits_gained"] == []
    by = {(r["group"], r["value"]): r for r in out["rows"]}
    assert by[("register", "objects")]["n"] == 2
    assert by[("register", "objects")]["recall@10"]["large"][0] == 0.5
    assert by[("register", "style")]["recall@10"]["diff"][0] == 0.0


def test_graded_qrels_measure_only_the_queries_they_name(tmp_path: Path, capsys) -> None:
    qs, small, large, man = _files(tmp_path)
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q2 0 B 2\nq2 0 Z2 1\nq2 0 x 0\n")
    _module().main([str(qs), str(small), str(large), str(man), "--qrels", str(qrels), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert out["n"] == 1
    # q2: small finds B only (recall 1/2); large finds B and Z2 (1)
    assert out["rows"][0]["recall@10"]["small"][0] == 0.5
    assert out["rows"][0]["recall@10"]["large"][0] == 1.0
    assert out["judged@10"] == {"small": 1.0, "large": pytest.approx(2 / 3, abs=1e-3)}


def test_a_gzipped_run_reads_as_the_plain_one(tmp_path: Path) -> None:
    import gzip
    _, small, _, _ = _files(tmp_path)
    gz = tmp_path / "s.trec.gz"
    gz.write_bytes(gzip.compress(small.read_bytes()))
    mod = _module()
    assert mod.read_trec_ranked(gz) == mod.read_trec_ranked(small) == {
        "q1": ["A", "x"], "q2": ["B"], "q3": ["y", "D"]}


def test_a_malformed_rank_is_refused_with_its_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.trec"
    bad.write_text("q1 Q0 A one 0.5 t\n")
    with pytest.raises(ValueError, match=r"bad.trec:1: rank must be a whole number"):
        _module().read_trec_ranked(bad)
