"""One upload request has one ExifTool time budget, all its batches and
retries together (before, each batch of 48 files had 60 s,
so a request of 200 slow files could hold a pooled Library about 5 minutes).
Real files written by Pillow, real ExifTool, real embedded PostgreSQL, the
real web app; the bounds are lowered as in ``test_xmp_bounds``."""

from __future__ import annotations

import io
import time

from fastapi.testclient import TestClient
from PIL import Image

from loupe import Library
from loupe.ingest import exiftool_reader, pipeline
from loupe.web.app import create_app
from loupe.web.security import WebLimits

from test_xmp_bounds import SLOW_LEVELS, deep_xmp


def _jpeg(colour: tuple[int, int, int]) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (16, 16), colour).save(buf, "JPEG")
    return buf.getvalue()


def _slow_webp(colour: tuple[int, int, int], xmp: str) -> bytes:
    """A WebP whose ``XMP `` chunk is ExifTool's to parse (a JPEG's APP1 packet
    is measured before ExifTool, so it is not slow)."""
    buf = io.BytesIO()
    Image.new("RGB", (16, 16), colour).save(buf, "WEBP", xmp=xmp.encode())
    return buf.getvalue()


def test_an_upload_request_has_one_exiftool_budget_for_all_its_batches(
        tmp_path, db_url, home, monkeypatch):
    """Six slow WebPs (a 4,000-level XMP packet each, ExifTool's to parse) in
    batches of two, a fine one last; 2 s a call, 3 s for the request. Before,
    each of the four batches had its own budget (60 s): about (1 + 2) x 2 s a
    batch, and the fine file was read. Now the files whose turn comes after
    the request's 3 s fail, saying so, before they are decoded."""
    monkeypatch.setattr(exiftool_reader, "READ_TIMEOUT_S", 2.0)
    monkeypatch.setattr(pipeline, "BATCH_SIZE", 2)
    with Library.open(home, database_url=db_url) as owner:
        owner.create_user("bob", "bob-password")
    limits = WebLimits(upload_exiftool_budget_s=3.0)
    files = [("files", (f"slow{i}.webp", _slow_webp((i * 40, 2, 3), deep_xmp(SLOW_LEVELS, f"deep {i}")),
                        "image/webp")) for i in range(6)]
    files.append(("files", ("z-fine.jpg", _jpeg((9, 99, 9)), "image/jpeg")))
    with TestClient(create_app(home, database_url=db_url, pool_size=2, limits=limits)) as client:
        tok = client.post("/api/tokens", json={"name": "bob", "password": "bob-password"})
        bob = {"Authorization": f"Bearer {tok.json()['token']}"}
        started = time.monotonic()
        r = client.post("/api/upload", headers=bob, files=files)
        took = time.monotonic() - started
    assert r.status_code == 200, r.text
    out = r.json()
    assert (out["files_seen"], out["stored"], out["failed"]) == (7, 0, 7)
    reasons = {f["file"]: f["reason"] for f in out["failures"]}
    spent = ("ExifTool could not read the metadata: not read: ExifTool spent this upload's "
             "time budget (3 s, Loupe's bound) on other files of the same upload; upload it "
             "again")
    assert reasons["z-fine.jpg"] == spent                 # the last batch: never read
    assert sum(r == spent for r in reasons.values()) >= 3
    assert all(r == spent or r.endswith(("(the bound per call): stopped",
                                         "(what was left of the upload's time budget): "
                                         "stopped",
                                         "(its share of what was left of the upload's time "
                                         "budget): stopped")) for r in reasons.values()), reasons
    assert took < 3.0 + 8.0, took        # the budget, plus ExifTool restarts and the rest


def test_an_upload_does_not_hold_the_pooled_library_while_exiftool_runs(
        tmp_path, db_url, home, monkeypatch):
    """With ``--pool 1`` alice's search waited 28.7 s
    behind bob's upload of one slow file. Now the upload gives its pooled
    Library back before ExifTool runs (the ingest has a Library of its own,
    outside the pool), so the search is answered while the upload goes on."""
    import threading

    monkeypatch.setattr(exiftool_reader, "READ_TIMEOUT_S", 3.0)
    with Library.open(home, database_url=db_url) as owner:
        owner.create_user("bob", "bob-password")
        owner.create_user("alice", "alice-password")
    files = [("files", (f"slow{i}.webp", _slow_webp((i * 60, 5, 5), deep_xmp(SLOW_LEVELS, f"deep {i}")),
                        "image/webp")) for i in range(3)]
    with TestClient(create_app(home, database_url=db_url, pool_size=1)) as client:
        heads = {}
        for name in ("bob", "alice"):
            tok = client.post("/api/tokens", json={"name": name, "password": f"{name}-password"})
            heads[name] = {"Authorization": f"Bearer {tok.json()['token']}"}
        done: dict = {}

        def bob_uploads():
            done["upload"] = client.post("/api/upload", headers=heads["bob"], files=files)

        uploading = threading.Thread(target=bob_uploads)
        uploading.start()
        uploads = home / "uploads" / "bob"
        deadline = time.monotonic() + 30
        while not (uploads.is_dir() and any(uploads.iterdir())) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(1.0)                 # the files are written: ExifTool is at work
        assert uploading.is_alive()
        started = time.monotonic()
        r = client.get("/api/search", params={"q": "harbour"}, headers=heads["alice"])
        waited = time.monotonic() - started
        upload_running = uploading.is_alive()
        uploading.join(120)
    assert r.status_code == 200, r.text
    assert upload_running, waited       # answered while the upload still ran
    assert waited < 5.0, waited
    assert done["upload"].status_code == 200, done["upload"].text
    assert done["upload"].json()["failed"] == 3        # each slow file stopped at 3 s
