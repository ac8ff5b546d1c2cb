"""A model's identity is its content, not its name (V3): a
model folder replaced by another model under the same name invalidates its
vectors, the lane stops comparing across models until ``loupe embed`` has
computed them again, and ``--explain`` names the model of each distance."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from loupe import Library
from loupe.models import registry

from imaging import make_image, write_sidecar
from tinymodels import build_clip
from conftest import without_machine_words

LOUPE = [sys.executable, "-m", "loupe.cli"]


@pytest.fixture
def colours(lib: Library, photos: Path) -> Library:
    for name, color, title in [("teapot.png", (255, 0, 0), "Scarlet teapot"),
                               ("lawn.png", (0, 255, 0), "Lawn"),
                               ("ocean.png", (0, 0, 255), "Ocean view")]:
        img = make_image(photos / name, size=(16, 16), color=color, fmt="PNG")
        write_sidecar(img, f"-XMP-dc:Title={title}")
    lib.ingest(photos)
    without_machine_words(lib)  # the pixels' colours reach search through the image lane only
    return lib


def replace_folder(installed: Path, other: Path) -> None:
    """What a user does: copy another model's files over the installed
    folder (loupe-model.json, with its thresholds, stays)."""
    for p in other.rglob("*"):
        if p.is_file():
            dest = installed / p.relative_to(other)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(p, dest)


def test_a_replaced_model_invalidates_its_vectors(colours: Library, tmp_path: Path, db_url,
                                                  home):
    lib = colours
    lib.install_model(build_clip(tmp_path / "a" / "tiny-clip"))
    lib.use_model("tiny-clip", "image")
    lib.use_model("tiny-clip", "text")
    first = {s.lane: (s.written, s.unchanged) for s in lib.embed()}
    assert first == {"image": (3, 0), "text": (3, 0)}
    res = lib.search("red photo")
    assert [h.title for h in res.hits] == ["Scarlet teapot"]
    first_explain = res.hits[0].explain

    # the folder now holds another model under the same name ("red" is green there)
    installed = lib.home / "models" / "tiny-clip"
    replace_folder(installed, build_clip(tmp_path / "b" / "tiny-clip", swap=True))

    # until embed runs, the lanes do not compare the new model's query vector
    # with the old model's vectors: they sit out, and say why
    res = lib.search("red photo")
    assert res.hits == [] and res.lanes == ["lexical"]
    before = lib.conn.execute("SELECT content_sha256 FROM embedding_model "
                              "WHERE name = 'tiny-clip'").fetchone()[0]
    after = registry.fingerprint(registry.get_model(lib.home, "tiny-clip"))
    assert after != before
    assert first_explain["image"]["model"] == "tiny-clip"
    assert first_explain["image"]["model_sha256"] == before[:12]
    assert res.notices == [
        f"{lane} lane off: model tiny-clip changed since its vectors were computed (content "
        f"{before[:12]} → {after[:12]}): its vectors are not compared with the new model's; "
        f"run 'loupe embed' to compute them again" for lane in ("image", "text")]

    env = {k: v for k, v in os.environ.items() if not k.startswith("LOUPE_")}
    out = subprocess.run(LOUPE + ["--home", str(home), "--database-url", db_url, "embed"],
                         env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        f"image lane: model tiny-clip changed (content now {after[:12]}): 6 vectors of its "
        f"previous content removed, computed again",
        "image lane (tiny-clip): 3 vectors written, 0 unchanged, 0 failed",
        "text lane (tiny-clip): 3 vectors written, 0 unchanged, 0 failed"]
    # computed with the new model on both sides: "red" is the lawn now
    res = lib.search("red photo")
    assert [h.title for h in res.hits] == ["Lawn"]
    assert res.hits[0].explain["image"]["model_sha256"] == after[:12]
    # a second embed finds nothing to do
    again = {s.lane: (s.written, s.unchanged, s.replaced) for s in lib.embed()}
    assert again == {"image": (0, 0, 0), "text": (0, 3, 0)}
    stored = lib.conn.execute("SELECT content_sha256 FROM embedding_model "
                              "WHERE name = 'tiny-clip'").fetchone()[0]
    assert stored == after
    # explain in the CLI names the model of each distance
    out = subprocess.run(LOUPE + ["--home", str(home), "--database-url", db_url, "search",
                                  "red photo", "--explain"],
                         env=env, capture_output=True, text=True, timeout=300)
    assert f"d=" in out.stdout and f"(tiny-clip {after[:12]})" in out.stdout


def test_fingerprint_is_content_and_cheap_when_unchanged(tmp_path: Path, home: Path):
    a = registry.install(home, build_clip(tmp_path / "a" / "clip-a"))
    b = registry.install(home, build_clip(tmp_path / "b" / "clip-b"))
    c = registry.install(home, build_clip(tmp_path / "c" / "clip-c", swap=True))
    fa, fb, fc = (registry.fingerprint(m) for m in (a, b, c))
    assert fa == fb != fc                       # same content, same identity, whatever the name
    recorded = json.loads((a.folder / registry.CONFIG_FILE).read_text())["content"]
    assert recorded["sha256"] == fa and "visual/model.onnx" in recorded["files"]
    # thresholds are not identity; the task prefixes are
    registry.set_thresholds(home, "clip-a", {"2": 0.3})
    assert registry.fingerprint(registry.get_model(home, "clip-a")) == fa
    m = registry.get_model(home, "clip-a")
    m.config["prefixes"] = {"query": "q: ", "document": "d: "}
    assert registry.fingerprint(m) != fa
    # a touched but identical file hashes again and gives the same identity
    f = b.folder / "visual" / "model.onnx"
    os.utime(f, ns=(f.stat().st_atime_ns, f.stat().st_mtime_ns + 10**9))
    assert registry.fingerprint(registry.get_model(home, "clip-b")) == fb
