"""Absent subjects: the instrument records, per query of a
run, the rows the search returned in all, its verdict and whether every row
came from meaning-based lanes only; ``absent`` sums them up for a query set
without truth, ``report`` shows the trade-off table, and the verdict of a
search whose rows are all vector neighbours says they are approximate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from loupe import Library
from loupe.cli import main
from loupe.eval import Evaluation
from loupe.web.service import search_payload


@pytest.fixture
def tiny(kettle_swatches) -> Library:
    # tiny-clip's space: axis 0 = red, 1 = green, 2 = blue, 3 = "kettle"
    # (conftest.KETTLE_SWATCHES). No title holds the word "red"; two pictures are red.
    return kettle_swatches(title_a="Crimson kettle")


def write_set(path: Path, queries: list[tuple[str, str]]) -> Path:
    path.write_text("".join(json.dumps({"id": i, "text": t, "provenance": "blind",
                                        "register": "objects"}) + "\n" for i, t in queries))
    return path


def test_meaning_only_rows_are_called_approximate(tiny: Library):
    res = tiny.search("red photo")
    assert [h.title for h in res.hits] == ["Crimson kettle", "Untitled"]
    assert all(h.explain["lexical"]["rank"] is None for h in res.hits)
    assert res.verdict == "unknown" and res.meaning_only
    assert search_payload(res, None)["verdict_text"] == (
        "About 2 approximate results by meaning only — no word of “red photo” matched; "
        "not proven complete — acting on all of them needs a confirmation.")
    words = tiny.search("blue kettle")
    assert words.verdict == "unknown" and not words.meaning_only
    assert search_payload(words, None)["verdict_text"].startswith("About 2 results, not proven")


def test_absent_rows_verdicts_and_the_tradeoff_table(tiny: Library, tmp_path: Path,
                                                     db_url: str, home: Path):
    ev = Evaluation(tiny)
    ev.import_queries(write_set(tmp_path / "absent.jsonl", [
        ("a1", "red photo"), ("a2", "purple submarine"), ("a3", "blue kettle")]))
    truth = tmp_path / "known.jsonl"
    truth.write_text(json.dumps({"id": "k1", "text": "kettle", "provenance": "blind",
                                 "register": "objects",
                                 "truth": [{"path": "b.png", "grade": 2}]}) + "\n")
    ev.import_queries(truth)
    ev.run("absent", "hybrid", name="h-absent")
    ev.run("known", "hybrid", name="h-known")
    assert ev.load_run("h-absent").answers == {
        "a1": (2, "unknown", True), "a2": (0, "unknown", False), "a3": (2, "unknown", False)}
    assert ev.absent(["h-absent"]) == [{
        "run": "h-absent", "query_set": "absent", "system": "hybrid", "queries": 3,
        "with_rows": 2, "mean_rows": 4 / 3, "median_rows": 2.0, "mean_top_k": 4 / 3,
        "meaning_only": 1, "verdicts": {"unknown": 3}}]
    runner = CliRunner()
    base = ["--home", str(home), "--database-url", db_url, "eval"]
    out = runner.invoke(main, base + ["absent", "h-absent"])
    assert out.exit_code == 0, out.output
    assert out.output.splitlines()[1] == "h-absent\t3\t2\t1.3\t2\t1\tunknown 3"
    rep = runner.invoke(main, base + ["report", "h-known", "--out", str(tmp_path / "r"),
                                      "--tradeoff", "h-known:h-absent"])
    assert rep.exit_code == 0, rep.output
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["tradeoff"][0]["recall@10"]["mean"] == 1.0
    assert data["tradeoff"][0]["absent"]["with_rows"] == 2
    html = (tmp_path / "r.html").read_text()
    assert "Absent subjects" in html and "<td>2 of 3</td><td>1.3</td><td>2</td>" in html
    bad = runner.invoke(main, base + ["report", "h-known", "--out", str(tmp_path / "r"),
                                      "--tradeoff", "h-known"])
    assert bad.exit_code == 2 and "BLIND_RUN:ABSENT_RUN" in bad.output


def test_lexical_and_text_lanes_alone_as_systems(tiny: Library, tmp_path: Path):
    from loupe.lexical import lexical_search
    from loupe.models import registry

    tiny.use_model("tiny-clip", "text")
    tiny.embed()
    ev = Evaluation(tiny)
    ev.import_queries(write_set(tmp_path / "q.jsonl", [("q1", "kettle"), ("q2", "red kettle")]))
    ev.run("q", "lexical", name="lex")
    lex = ev.load_run("lex")
    for qid, text in (("q1", "kettle"), ("q2", "red kettle")):
        want = lexical_search(tiny.conn, tiny.tenant_id, text, "en", limit=10)
        assert [a for a, _, _ in lex.hits[qid]] == [h.asset_id for h in want.hits]
        assert lex.answers[qid] == (want.total, want.verdict, False)
    assert len(lex.hits["q1"]) == 2            # "Crimson kettle", "Kettle"
    ev.run("q", "text", name="text-none", max_distance=2.0)
    ev.run("q", "text", name="text-shipped")
    none, shipped = ev.load_run("text-none"), ev.load_run("text-shipped")
    cfg = registry.get_model(tiny.home, "tiny-clip").config
    for qid, n_words in (("q1", 1), ("q2", 2)):
        dists = [d for _, _, d in none.hits[qid]]
        assert len(dists) == 3 and dists == sorted(dists)     # every asset, nearest first
        cut = registry.threshold_for(cfg, n_words)
        assert shipped.hits[qid] == [h for h in none.hits[qid] if h[2] <= cut]
        assert shipped.answers[qid][0] == len(shipped.hits[qid])


def test_calibrate_from_text_runs_with_known_items_only(tiny: Library, tmp_path: Path):
    tiny.use_model("tiny-clip", "text")
    tiny.embed()
    ev = Evaluation(tiny)
    truth = tmp_path / "known.jsonl"
    truth.write_text(json.dumps({"id": "k1", "text": "kettle", "provenance": "blind",
                                 "register": "objects",
                                 "truth": [{"path": "b.png", "grade": 2}]}) + "\n")
    ev.import_queries(truth)
    ev.run("known", "text", name="t", max_distance=2.0)
    hits = ev.load_run("t").hits["k1"]
    b_id = next(iter(ev.qrels("known")["k1"]))
    plain = ev.calibrate(["t"])
    one = next(b for b in plain["models"]["tiny-clip"]["bands"] if b["band"] == "1")
    assert (one["relevant"], one["non_relevant"], one["proposed"]) == (1, 0, None)
    pess = ev.calibrate(["t"], unjudged_nonrelevant=True)
    one = next(b for b in pess["models"]["tiny-clip"]["bands"] if b["band"] == "1")
    assert (one["relevant"], one["non_relevant"]) == (1, len(hits) - 1)
    assert pess["unjudged_nonrelevant"] and not plain["unjudged_nonrelevant"]
    assert any(str(a) == b_id for a, _, _ in hits)
