"""The ``loupe`` command as a user runs it: the embedded default end to end, and
an ingest killed at random moments that leaves only whole assets and resumes."""

from __future__ import annotations

import re

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest
from imaging import make_image, write_sidecar

LOUPE = [sys.executable, "-m", "loupe.cli"]


def run(args: list[str], env: dict[str, str], check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(LOUPE + args, env=env, capture_output=True, text=True, check=check,
                          timeout=300)


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOUPE_")}
    env.update(extra)
    return env


def test_embedded_default_end_to_end(tmp_path: Path, photos: Path):
    img = make_image(photos / "animals" / "cheetah.jpg")
    write_sidecar(img, "-XMP-dc:Title=Cheetah", "-XMP-dc:Description=A cheetah sprinting")
    make_image(photos / "animals" / "lion.jpg", color=(1, 2, 3))
    (photos / "broken.jpg").write_bytes(b"")
    env = clean_env(LOUPE_HOME=str(tmp_path / "home"))

    out = run(["init", "--languages", "en,fr", "--json"], env)
    assert json.loads(out.stdout) == {"tenant": "default", "home": str(tmp_path / "home"),
                                      "languages": ["en", "fr"]}
    summary = json.loads(run(["ingest", str(photos), "--json"], env).stdout)
    assert (summary["new_assets"], summary["failed"], summary["files_seen"]) == (2, 1, 3)
    assert summary["failures"] == [{"path": str(photos / "broken.jpg"), "kind": "empty",
                                    "reason": "empty file (0 bytes)"}]

    result = json.loads(run(["search", "cheetah", "--json"], env).stdout)
    assert (result["total"], result["verdict"]) == (1, "complete")
    assert [(h["rank"], h["title"], h["path"]) for h in result["hits"]] == [
        (1, "Cheetah", str(photos / "animals" / "cheetah.jpg"))]
    text = run(["search", "madrid"], env).stdout
    assert text.strip() == "No results for “madrid”."
    shown = json.loads(run(["show", str(result["hits"][0]["asset_id"]), "--json"], env).stdout)
    assert shown["files"][0]["metadata"]["description"] == {"x-default": "A cheetah sprinting"}
    assert [d["lang"] for d in shown["documents"]] == ["en", "fr"]
    missing = run(["show", "999"], env, check=False)
    assert missing.returncode == 1 and "no asset 999 in tenant 'default'" in missing.stderr
    assert run(["analyze", "Cheetahs sprinting"], env).stdout.strip() == "cheetah sprint"
    # the embedded server was stopped when the last command exited
    assert not (tmp_path / "home" / "pgdata" / "postmaster.pid").exists()


@pytest.mark.slow  # 90 files, three ingests killed with SIGKILL, resumed
def test_kill_at_any_moment_leaves_whole_assets_and_resume_finishes(db_url: str, tmp_path: Path,
                                                                    photos: Path):
    n = 90
    for i in range(n):
        img = make_image(photos / f"f{i // 30}" / f"img{i:03d}.png", size=(300, 200),
                         color=(i, 255 - i, (7 * i) % 256), fmt="PNG")
        if i % 3 == 0:
            write_sidecar(img, f"-XMP-dc:Title=Photo number {i}", "-XMP-dc:Subject=sample")
    env = clean_env(LOUPE_HOME=str(tmp_path / "home"), LOUPE_DATABASE_URL=db_url)
    run(["init", "--languages", "en,de"], env)
    rng = random.Random(11)
    with psycopg.connect(db_url, autocommit=True) as conn:
        for attempt in range(3):
            before = conn.execute("SELECT count(*) FROM asset").fetchone()[0]
            if before >= n:
                break
            proc = subprocess.Popen(LOUPE + ["ingest", str(photos), "--json"], env=env,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            target = before + rng.randint(3, 20)
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and proc.poll() is None:
                if conn.execute("SELECT count(*) FROM asset").fetchone()[0] >= target:
                    break
                time.sleep(0.01)
            time.sleep(rng.random() * 0.05)
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            assert_consistent(conn, languages=2)
        run(["ingest", str(photos)], env)
        assert_consistent(conn, languages=2)
        assert conn.execute("SELECT count(*) FROM asset").fetchone()[0] == n
        assert conn.execute("SELECT count(*) FROM asset_file").fetchone()[0] == n
    result = json.loads(run(["search", "sample", "--json", "--limit", "100"], env).stdout)
    assert result["total"] == 30
    assert sorted(h["title"] for h in result["hits"]) == sorted(
        f"Photo number {i}" for i in range(0, n, 3))


def assert_consistent(conn: psycopg.Connection, languages: int) -> None:
    """Every visible asset is whole: a file, a document per language, exact statistics."""
    bad = conn.execute("""
        SELECT a.id FROM asset a
        WHERE NOT EXISTS (SELECT 1 FROM asset_file f WHERE f.asset_id = a.id)
           OR (SELECT count(*) FROM search_document d WHERE d.asset_id = a.id) <> %s
    """, (languages,)).fetchall()
    assert bad == []
    docs, total_len = conn.execute(
        "SELECT count(*), coalesce(sum(doc_len), 0) FROM search_document WHERE lang = 'en'"
    ).fetchone()
    stat = conn.execute(
        "SELECT n_docs, total_len FROM corpus_stat WHERE lang = 'en'").fetchone() or (0, 0)
    assert tuple(stat) == (docs, total_len)


def test_models_from_the_command_line(tmp_path: Path, photos: Path):
    from tinymodels import build_clip

    for name, color, title in [("teapot.png", (255, 0, 0), "Scarlet teapot"),
                               ("lawn.png", (0, 255, 0), "Lawn")]:
        img = make_image(photos / name, size=(16, 16), color=color, fmt="PNG")
        write_sidecar(img, f"-XMP-dc:Title={title}")
    env = clean_env(LOUPE_HOME=str(tmp_path / "home"))
    run(["init"], env)
    run(["ingest", str(photos)], env)
    out = run(["models", "list"], env).stdout
    assert out.startswith("No models installed: image and text search by meaning are off")
    clip = build_clip(tmp_path / "tiny-clip")
    assert run(["models", "install", str(clip)], env).stdout.startswith(
        "installed tiny-clip (clip-onnx, 4 dims)")
    run(["models", "use", "tiny-clip", "--lane", "image", "--no-embed"], env)
    assert run(["embed"], env).stdout.strip() == (
        "image lane (tiny-clip): 2 vectors written, 0 unchanged, 0 failed")
    result = json.loads(run(["search", "red photo", "--json"], env).stdout)
    assert [h["title"] for h in result["hits"]] == ["Scarlet teapot"]
    assert result["hits"][0]["explain"]["image"]["rank"] == 1
    assert result["lanes"] == ["lexical", "image"]
    # offline: a clear message, not a traceback
    failed = run(["models", "download", "openai/clip-vit-base-patch32"], env, check=False)
    assert failed.returncode == 1
    assert "cannot download 'openai/clip-vit-base-patch32' from the model hub" in failed.stderr
    assert "Traceback" not in failed.stderr


def test_background_embedding_finishes_while_search_stays_correct(tmp_path: Path, photos: Path):
    from tinymodels import build_clip

    for i in range(6):
        img = make_image(photos / f"p{i}.png", size=(16, 16), color=(255, 0, i * 40), fmt="PNG")
        write_sidecar(img, f"-XMP-dc:Title=Picture {i}")
    env = clean_env(LOUPE_HOME=str(tmp_path / "home"))
    run(["init"], env)
    run(["ingest", str(photos)], env)
    run(["models", "install", str(build_clip(tmp_path / "tiny-clip"))], env)
    out = run(["models", "use", "tiny-clip", "--lane", "image"], env).stdout
    assert out.splitlines()[1].startswith("embedding in the background (pid ")
    # meanwhile, a search never mixes models: it sees only finished vectors
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        result = json.loads(run(["search", "picture", "--json"], env).stdout)
        assert result["total"] == 6  # one-word query: the lexical rows, whatever the vectors
        if not result["notices"]:
            break
        time.sleep(0.5)
    assert result["notices"] == []  # every asset has its vector now
    log = next((tmp_path / "home" / "logs").glob("embed-*.log")).read_text()
    assert "image lane (tiny-clip): 6 vectors written" in log


@pytest.mark.slow  # ~20 CLI processes (96 s measured on the loaded 2-core machine)
def test_users_grants_and_bulk_from_the_command_line(tmp_path: Path, photos: Path):
    for folder, name, title in [("shared", "a.jpg", "Harbour at dawn"),
                                ("shared", "b.jpg", "Harbour at noon"),
                                ("private", "c.jpg", "Harbour at night")]:
        img = make_image(photos / folder / name, color=(ord(name[0]), 9, 9))
        write_sidecar(img, f"-XMP-dc:Title={title}")
    env = clean_env(LOUPE_HOME=str(tmp_path / "home"))
    run(["init"], env)
    run(["ingest", str(photos)], env)
    run(["users", "add", "alice"], {**env, "LOUPE_NEW_PASSWORD": "alice-password"})
    assert run(["grant", "alice", "--collection", "shared"], env).stdout == \
        "alice may read collection shared\n"
    owner = json.loads(run(["search", "harbour", "--json"], env).stdout)
    alice = json.loads(run(["--user", "alice", "search", "harbour", "--json"], env).stdout)
    assert (owner["total"], alice["total"]) == (3, 2)
    assert sorted(h["title"] for h in alice["hits"]) == ["Harbour at dawn", "Harbour at noon"]
    denied = run(["--user", "alice", "grant", "alice", "--collection", "private"], env,
                 check=False)
    assert denied.returncode == 1 and "alice is not an admin of this tenant" in denied.stderr
    unknown = run(["--user", "mallory", "search", "harbour"], env, check=False)
    assert unknown.returncode == 1 and "no user named 'mallory'" in unknown.stderr

    member = run(["--user", "alice", "bulk", "add_keyword", "approved", "-q", "harbour"], env,
                 check=False)
    assert member.returncode == 1 and "alice is not an admin of this tenant" in member.stderr
    out = run(["bulk", "add_keyword", "approved", "-q", "harbour", "--in", "shared"], env)
    assert re.match(r"Add keyword “approved”: applied to 2 assets \(result complete, "
                    r"total 2; audit #\d+\)", out.stdout)
    run(["settings", "--raw-cap", "1", "--keep-cap", "1"], env)
    refused = run(["bulk", "set_rights_expiry", "2030-01-01", "-q", "harbour"], env, check=False)
    assert refused.returncode == 1
    assert "the result is truncated: at least 3 assets match" in refused.stderr
    confirmation = re.search(r"The action would change 1 asset \(confirmation (1:[0-9a-f]{16})\)"
                             r"\. To apply it to exactly those, repeat the command with "
                             r"--confirm \1$", refused.stderr, re.M).group(1)
    done = json.loads(run(["bulk", "set_rights_expiry", "2030-01-01", "-q", "harbour",
                           "--confirm", confirmation, "--json"], env).stdout)
    assert (done["count"], done["verdict"], done["confirmed"]) == (1, "truncated", True)
    log = json.loads(run(["audit", "--json"], env).stdout)
    assert [(r["actor"], r["action"], r["count"], r["confirmed"]) for r in log] == [
        ("owner", "set_rights_expiry", 1, True), ("owner", "add_keyword", 2, False),
        ("owner", "grant", 0, None), ("owner", "user_create", 0, None)]
