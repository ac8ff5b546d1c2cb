"""Every benchmark still runs: each script in ``benchmarks/`` in its ``--smoke``
mode (tiny sizes, every code path the full run takes), as a subprocess the way
a developer runs it. The figures of a smoke run mean nothing; these tests
assert that each section of the report is printed and that the facts a smoke
run can check (the plan uses HNSW, counts of ingested files) hold."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def smoke(name: str, timeout: int = 600) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT / "src")] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []))}
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / f"{name}.py"), "--smoke"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"benchmarks/{name}.py --smoke failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def test_lexical_benchmark_runs_every_section():
    out = smoke("lexical")
    assert "documents: 2,000" in out
    assert "latency in ms at 2,000 documents" in out
    # the cap-effect section (it once overflowed an integer and crashed)
    cap = out.split("cap effect:")[1]
    assert len(re.findall(r"^(1 word|2-5 words|common|identifier|rare)\s+\S+$", cap, re.M)) == 5
    assert "Loupe/Tantivy p95 ratio:" in out


def test_vector_benchmark_runs_as_owner_and_member():
    out = smoke("vector")
    assert "--- as the owner: 3,000 readable vectors" in out
    assert "--- as the member (half the library granted): 1,500 readable vectors" in out
    # at a few thousand vectors the planner may rightly prefer an exact scan,
    # so the smoke run only checks the line is printed for both viewers (the
    # full run's figures in RESULTS.md say True; tests/test_plans.py asserts it)
    assert out.count("vector lane plan uses its HNSW index:") == 2
    assert out.count("hybrid statement (lexical + vector + RRF)") == 2
    assert "ViT-B/32-shaped image encoder via ClipOnnx, batch  8" in out


def test_scopes_benchmark_runs_every_regime():
    out = smoke("scopes")
    summary = out.split("p95 summary")[1]
    for regime in ("direct", "deep", "none"):
        for viewer in ("owner", "member"):
            assert re.search(rf"^\s+{regime}\s+{viewer}\s+lexical", summary, re.M), (regime, viewer)


def test_ingest_benchmark_runs():
    out = smoke("ingest")
    assert "first ingest:  40 assets + 0 duplicate paths, 1 failed" in out
    assert "re-ingest, nothing changed: 40 unchanged" in out


def test_http_benchmark_runs():
    out = smoke("http_search")
    assert re.search(r"requests: [\d,]+ ok, 0 errors", out)
    assert "madrid 0 complete" in out


def test_similar_benchmark_runs():
    out = smoke("similar")
    assert "duplicates: 2,000 random hashes, radius 10:" in out


def test_query_reading_benchmark_times_both_readings_and_the_search():
    out = smoke("query_reading")
    assert "library: 0 assets, languages en/fr/de; 10 queries x 2 rounds" in out
    for step in ("query_languages", "query_facts", "search (peer)"):
        assert re.search(rf"^{re.escape(step)} +\d+\.\d\d +\d+\.\d\d +\d+\.\d%$", out,
                         re.M), out


def test_cli_search_benchmark_runs():
    out = smoke("cli_search")
    assert "(20 documents, MiniLM text lane)" in out
    assert "loupe search 'autumn', text lane on, 2 runs: wall min" in out


def test_faces_benchmark_runs():
    pytest.importorskip("dlib")
    out = smoke("faces")
    assert "pictures: 5 (0 skipped by rule); faces stored: 5; people: 2" in out
    assert "detection recall: 5/5 = 1.000; false detections: 0" in out
    assert re.search(r"purity 1\.000, pairwise precision 1\.000, recall 1\.000, F1 1\.000", out)
    assert re.search(r"throughput: [\d.]+ faces/s", out)


def test_filters_benchmark_runs_every_filter_and_path():
    out = smoke("filters")
    for name in ("creator", "year+orientation", "country", "five"):
        for path in ("lexical filtered", "lexical unfiltered", "hybrid filtered",
                     "hybrid unfiltered"):
            assert re.search(rf"^{re.escape(name)}\s+[\d,]+\s+{path}\s", out, re.M), (name, path)
    assert out.count("x   hybrid") == 4


def test_visibility_ab_benchmark_finds_the_member_page_equal_to_the_owners():
    """A member who may read every asset gets the owner's page and counts
    (the A/B once reported every query as differing, comparing
    columns that had left the statements)."""
    out = smoke("visibility_ab")
    assert "queries whose compared rows differ between A and B: 0" in out
    assert "left out (returned by one side only): none" in out
    assert len(re.findall(r"^(owner|member)\s+all\s", out, re.M)) == 2


def test_ingest_cpu_benchmark_runs():
    out = smoke("ingest_cpu")
    assert re.search(r"^40 assets, 1 failed, .* CPU ms/asset: python [\d.]+, exiftool [\d.]+, "
                     r"postgres [\d.]+, total [\d.]+$", out, re.M), out


def test_pixel_work_cpu_benchmark_runs():
    out = smoke("pixel_work_cpu")
    assert out.startswith("40 files under ")
    for variant in ("before", "after m4", "after m2"):
        assert re.search(rf"^{variant} +[\d.]+ ms CPU per file, thumbnail +[\d.]+ KiB per file$",
                         out, re.M), out
