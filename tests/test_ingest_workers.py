"""Ingest as jobs in PostgreSQL (docs/scaling.md, "Job workers"): one job
per file, run by worker processes; a worker killed with SIGKILL mid-job
leaves nothing of its file and its job is taken again; every file is
ingested exactly once; the queue's progress is visible."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest
from imaging import make_image, write_sidecar

from loupe import Library
from loupe.ingest.exiftool_reader import ExifToolReader
from loupe.ingest.single import FileIngester
from loupe.ingest.walk import found_file, walk
from loupe.jobs.queue import QueueFull, enqueue_ingest, queue_status

SRC = str(Path(__file__).resolve().parents[1] / "src")
#: A worker as ``loupe worker`` runs it, with short heartbeats so that the
#: killed worker's job is taken again within seconds.
WORKER = ("import sys; from loupe.jobs.worker import run_worker; "
          "run_worker(sys.argv[1], sys.argv[2], heartbeat_s=0.5, stalled_s=2)")


def _worker(home: Path, url: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": SRC}
    return subprocess.Popen([sys.executable, "-c", WORKER, str(home), url], env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)


def _wait(conn: psycopg.Connection, sql: str, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        row = conn.execute(sql).fetchone()
        if row is not None and row[0]:
            return row[0]
        time.sleep(0.01)
    raise TimeoutError(f"{what} within {timeout_s} s")


def _library(photos: Path, n: int) -> list[str]:
    titles = []
    for i in range(n):
        title = f"Picture{chr(97 + i % 26)}{chr(97 + i // 26)}"
        img = make_image(photos / f"set{i % 3}" / f"p{i:02d}.jpg", size=(640, 480),
                         color=(i * 9 % 256, 90, 200 - i * 5 % 200))
        write_sidecar(img, f"-XMP-dc:Title={title}")
        titles.append(title)
    return titles


def test_three_workers_one_killed_ingest_every_file_exactly_once(lib: Library, db_url: str,
                                                                 photos: Path):
    titles = _library(photos, 24)
    queued = enqueue_ingest(lib.conn, lib.tenant_id, lib.home, photos)
    assert queued["queued"] == 24
    assert queue_status(lib.conn, lib.tenant_id)["jobs"] == {"todo": 24}
    conn = lib.conn
    victim = _worker(lib.home, db_url)
    others: list[subprocess.Popen] = []
    try:
        job = _wait(conn, "SELECT min(id) FROM procrastinate_jobs WHERE status = 'doing'", 90,
                    "the first worker took no job")
        victim.send_signal(signal.SIGKILL)   # mid-job: its file is being read or stored
        victim.wait(10)
        status = conn.execute("SELECT status::text FROM procrastinate_jobs WHERE id = %s",
                              (job,)).fetchone()[0]
        others = [_worker(lib.home, db_url), _worker(lib.home, db_url)]
        _wait(conn, "SELECT count(*) = 24 FROM procrastinate_jobs WHERE status = 'succeeded'",
              180, "the two other workers did not finish the queue")
    finally:
        for w in others:
            w.send_signal(signal.SIGTERM)
        for w in others:
            try:
                w.wait(30)
            except subprocess.TimeoutExpired:
                w.kill()
    assert status == "doing"   # the killed worker held it
    # its job was taken again (started twice); no job ran more than that
    starts = dict(conn.execute(
        "SELECT job_id, count(*) FROM procrastinate_events WHERE type = 'started' "
        "GROUP BY job_id").fetchall())
    assert starts[job] == 2 and sum(starts.values()) == 25
    # every file exactly once, each its own asset, each searchable
    files = conn.execute("SELECT path, count(*) FROM asset_file WHERE tenant_id = %s "
                         "GROUP BY path", (lib.tenant_id,)).fetchall()
    assert sorted(p for p, _ in files) == sorted(f.path for f in walk(photos))
    assert {n for _, n in files} == {1}
    assert conn.execute("SELECT count(*) FROM asset WHERE tenant_id = %s",
                        (lib.tenant_id,)).fetchone()[0] == 24
    for title in titles:
        assert [h.title for h in lib.search(title).hits] == [title]
    st = queue_status(conn, lib.tenant_id)
    assert st["jobs"] == {"succeeded": 24}
    run = st["runs"][0]
    assert (run["run_id"], run["queued"], run["failures"], run["finished"]) == (
        queued["run_id"], 24, 0, True)
    assert run["new_assets"] + run["unchanged"] == run["done"] >= 24


def test_a_files_job_run_twice_stores_it_once(lib: Library, db_url: str, photos: Path):
    write_sidecar(make_image(photos / "a" / "one.jpg"), "-XMP-dc:Title=Lonely")
    run_id = enqueue_ingest(lib.conn, lib.tenant_id, lib.home, photos)["run_id"]
    reader = ExifToolReader()
    reader.start()
    try:
        ing = FileIngester(lib.conn, lib.tenant_id, lib.home, exiftool=reader)
        assert ing.ingest_file(photos, "a/one.jpg", run_id).new_assets == 1
        again = FileIngester(lib.conn, lib.tenant_id, lib.home, exiftool=reader)
        assert again.ingest_file(photos, "a/one.jpg", run_id).unchanged == 1
        assert ing.ingest_file(photos, "a/gone.jpg", run_id).files_seen == 0
        with pytest.raises(ValueError, match="not a path inside the folder"):
            ing.ingest_file(photos, "../a/one.jpg", run_id)
    finally:
        reader.close()
    assert lib.search("lonely").total == 1
    assert lib.conn.execute("SELECT count(*) FROM asset_file WHERE tenant_id = %s",
                            (lib.tenant_id,)).fetchone()[0] == 1


def test_a_queue_that_would_pass_its_bound_is_refused_before_any_job(
        lib: Library, db_url: str, photos: Path, monkeypatch: pytest.MonkeyPatch):
    _library(photos, 3)
    monkeypatch.setenv("LOUPE_QUEUE_MAX", "2")
    runs = lib.conn.execute("SELECT count(*) FROM ingest_run").fetchone()[0]
    with pytest.raises(QueueFull, match="3 more would pass its bound of 2"):
        enqueue_ingest(lib.conn, lib.tenant_id, lib.home, photos)
    assert queue_status(lib.conn, lib.tenant_id)["jobs"] == {}
    assert lib.conn.execute("SELECT count(*) FROM ingest_run").fetchone()[0] == runs


def test_found_file_reads_one_file_as_walk_lists_it(photos: Path):
    img = make_image(photos / "x" / "y.jpg")
    write_sidecar(img, "-XMP-dc:Title=Y")
    assert found_file(photos, "x/y.jpg") == walk(photos)[0]
    assert found_file(photos, "x/.hidden.jpg") is None
    assert found_file(photos, "x/notes.txt") is None
    for bad in ("", "/etc/passwd", "x/../../etc/passwd", "x//y.jpg"):
        with pytest.raises(ValueError):
            found_file(photos, bad)


def test_ingest_enqueue_worker_and_status_from_the_shell(lib: Library, db_url: str,
                                                        photos: Path):
    import json

    from click.testing import CliRunner

    from loupe.cli import main

    _library(photos, 3)
    base = ["--home", str(lib.home), "--database-url", db_url]
    res = CliRunner().invoke(main, base + ["ingest", str(photos), "--enqueue", "--json"])
    assert res.exit_code == 0, res.output
    run_id = json.loads(res.output)["run_id"]
    status = json.loads(CliRunner().invoke(main, base + ["status", "--json"]).output)
    assert status["queue"]["jobs"] == {"todo": 3} and status["standbys"] == []
    res = subprocess.run([sys.executable, "-m", "loupe.cli", *base, "worker", "--once"],
                         env={**os.environ, "PYTHONPATH": SRC}, capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    status = json.loads(CliRunner().invoke(main, base + ["status", "--json"]).output)
    assert status["queue"]["jobs"] == {"succeeded": 3}
    run = status["queue"]["runs"][0]
    assert (run["run_id"], run["queued"], run["done"], run["new_assets"], run["finished"]) == (
        run_id, 3, 3, 3, True)
    text = CliRunner().invoke(main, base + ["status"]).output
    assert text.startswith("ingest jobs: 3 succeeded; live workers: ")
