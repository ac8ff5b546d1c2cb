"""Limits on what one user's uploads may cost: the quota walk stays right while
another request removes a folder, two concurrent uploads of one user both
answer, and an upload whose words would add more than the bound to the index
is refused with its sidecar. Real database, real files, real ExifTool, the
real app."""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

from fastapi.testclient import TestClient
from imaging import make_image

from loupe import Library
from loupe.web import create_app
from loupe.web.uploads import _usage


# -- the quota walk while another request removes a folder ----------------------------

def test_usage_tolerates_folders_vanishing_under_it(tmp_path: Path):
    """One thread writes and removes upload folders of a user (as a refused
    upload does) while another walks the user's folder for the quota: no
    FileNotFoundError, and every count lies between the fixed part and the
    fixed part plus one folder."""
    root = tmp_path / "uploads" / "bob"
    keep = root / "20261201T100000Z-000000"
    keep.mkdir(parents=True)
    (keep / "kept.jpg").write_bytes(b"k" * 100)
    stop = threading.Event()
    errors: list[BaseException] = []

    def churn() -> None:
        i = 0
        while not stop.is_set():
            folder = root / f"20261201T1100{i % 60:02d}Z-{i:06x}"
            folder.mkdir()
            for n in range(20):
                (folder / f"f{n}.jpg").write_bytes(b"x" * 10)
            shutil.rmtree(folder)
            i += 1

    worker = threading.Thread(target=churn)
    seen: set[int] = set()
    worker.start()
    try:
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            try:
                size, count = _usage(root)
            except BaseException as exc:  # noqa: BLE001 - the finding: it must not raise
                errors.append(exc)
                break
            assert 100 <= size <= 100 + 200 and 1 <= count <= 21, (size, count)
            seen.add(count)
    finally:
        stop.set()
        worker.join()
    assert errors == []
    assert _usage(root) == (100, 1)
    assert _usage(tmp_path / "nobody") == (0, 0)
    assert len(seen) > 1   # the walk did meet the other thread's folders


def test_two_concurrent_uploads_of_one_user_both_answer(lib: Library, home: Path,
                                                           db_url: str, tmp_path: Path):
    """Two threads of one member upload at once, many times, one of them
    sending a file that is refused (removed from disk): never a 500. (The
    quota walk's race with a removed folder is timing-bound: this end-to-end check did not reproduce it on
    main in one run; the walk above does, every run.)"""
    lib.create_user("bob", "bob-password")
    app = create_app(home, database_url=db_url, pool_size=2)
    statuses: list[int] = []
    with TestClient(app) as client:
        tok = client.post("/api/tokens", json={"name": "bob", "password": "bob-password"})
        bob = {"Authorization": f"Bearer {tok.json()['token']}"}

        def send(k: int) -> None:
            for i in range(6):
                if k == 0:
                    files = [("files", (f"n{i}.txt", b"not an image", "text/plain"))]
                else:
                    px = make_image(tmp_path / f"u{k}-{i}.png", color=(k, i, 7)).read_bytes()
                    files = [("files", (f"u{i}.png", px, "image/png"))]
                statuses.append(client.post("/api/upload", headers=bob, files=files).status_code)

        threads = [threading.Thread(target=send, args=(k,)) for k in (0, 1)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert statuses.count(200) == 12, statuses
    assert os.path.isdir(home / "uploads" / "bob")


# -- the index an upload adds is bounded ---------------------------------------------

def _keywords_sidecar(words: list[str]) -> bytes:
    items = "".join(f"<rdf:li>{w}</rdf:li>" for w in words)
    return ('<?xpacket begin="" id="W5M0MpCehiHzreSzNTczkc9d"?>'
            '<x:xmpmeta xmlns:x="adobe:ns:meta/">'
            '<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">'
            '<rdf:Description rdf:about="" xmlns:dc="http://purl.org/dc/elements/1.1/">'
            f'<dc:subject><rdf:Bag>{items}</rdf:Bag></dc:subject>'
            '</rdf:Description></rdf:RDF></x:xmpmeta><?xpacket end="w"?>').encode()


def test_an_upload_over_the_word_bound_is_refused_with_its_sidecar(lib: Library, home: Path,
                                                                     db_url: str, tmp_path):
    """An uploaded image whose name and metadata hold more distinct words
    than ``upload_max_words`` is refused before anything of it is stored,
    its sidecar removed with it; at the bound it is stored; and the byte
    quota counts the search terms a user's uploads hold."""
    from loupe.web.security import WebLimits

    lib.create_user("bob", "bob-password")
    app = create_app(home, database_url=db_url, pool_size=2,
                     limits=WebLimits(upload_max_words=40))
    # the name gives 2 words (pic, jpg); 38 keywords make 40, 39 make 41
    words = [f"kw{i:03d}x" for i in range(39)]
    with TestClient(app) as client:
        tok = client.post("/api/tokens", json={"name": "bob", "password": "bob-password"})
        bob = {"Authorization": f"Bearer {tok.json()['token']}"}
        over = make_image(tmp_path / "a.jpg", color=(3, 60, 90)).read_bytes()
        r = client.post("/api/upload", headers=bob, files=[
            ("files", ("pic.jpg", over, "image/jpeg")),
            ("files", ("pic.jpg.xmp", _keywords_sidecar(words), "application/rdf+xml"))])
        assert r.status_code == 200, r.text
        assert {k: v for k, v in r.json().items() if k != "folder"} == {
            "files_seen": 1, "stored": 0, "failed": 1, "failures": [{
                "file": "pic.jpg",
                "reason": "41 distinct words in its name and metadata, over the limit of 40 "
                          "per uploaded image (each word is indexed in every library "
                          "language): shorten its title, description or keywords"}]}
        assert list((home / r.json()["folder"]).iterdir()) == []
        assert lib.search("kw000x").total == 0
        assert lib.conn.execute("SELECT count(*) FROM lexicon_term WHERE term LIKE 'kw0%%'"
                                ).fetchone()[0] == 0
        at = make_image(tmp_path / "b.jpg", color=(3, 61, 90)).read_bytes()
        r = client.post("/api/upload", headers=bob, files=[
            ("files", ("pic.jpg", at, "image/jpeg")),
            ("files", ("pic.jpg.xmp", _keywords_sidecar(words[:38]), "application/rdf+xml"))])
        assert (r.json()["stored"], r.json()["failed"]) == (1, 0), r.text
    assert [h.title for h in lib.as_user("bob").search("kw037x").hits] == ["pic.jpg"]
    # the byte quota counts the index bob's uploads add: 39 terms (38
    # keywords and "pic"; one library language), 1 KiB each
    [(terms,)] = lib.conn.execute(
        "SELECT length(d.tsv) + length(d.vocab_tsv) FROM search_document d"
        " JOIN asset_file f ON f.asset_id = d.asset_id WHERE f.rel_path = 'pic.jpg'").fetchall()
    assert terms == 39
    on_disk = sum(p.stat().st_size for p in (home / "uploads" / "bob").rglob("*")
                  if p.is_file())
    extra = make_image(tmp_path / "c.jpg", color=(3, 62, 90)).read_bytes()
    quota = on_disk + len(extra) + 39 * 1024 - 1    # the files alone would fit
    app = create_app(home, database_url=db_url, pool_size=2,
                     limits=WebLimits(upload_max_words=40, upload_quota_bytes=quota))
    with TestClient(app) as client:
        tok = client.post("/api/tokens", json={"name": "bob", "password": "bob-password"})
        bob = {"Authorization": f"Bearer {tok.json()['token']}"}
        r = client.post("/api/upload", headers=bob,
                        files=[("files", ("extra.jpg", extra, "image/jpeg"))])
        assert (r.status_code, r.json()["detail"]) == (413, (
            f"upload quota: extra.jpg would bring your uploads over your quota of {quota:,} "
            f"bytes (counting the 39 search terms your uploads add to the index, 1,024 bytes "
            f"each)"))
    # the owner ingests a private copy of bob's bytes with 30
    # words of its own; the asset's whole document holds them, bob's count does not
    from loupe.web import queries as wq

    private = tmp_path / "private"
    private.mkdir()
    (private / "plan.jpg").write_bytes(at)
    (private / "plan.jpg.xmp").write_bytes(_keywords_sidecar([f"secret{i:02d}z"
                                                              for i in range(30)]))
    lib.ingest(private)
    [(whole, files)] = lib.conn.execute(
        "SELECT length(d.tsv) + length(d.vocab_tsv), (SELECT count(*) FROM asset_file o"
        " WHERE o.asset_id = d.asset_id) FROM search_document d JOIN asset_file f"
        " ON f.asset_id = d.asset_id WHERE f.rel_path = 'pic.jpg'").fetchall()
    assert (files, whole) == (2, 39 + 30 + 1)   # + "plan"
    bob_id = lib.conn.execute("SELECT id FROM principal WHERE name = 'bob'").fetchone()[0]
    prefix = str((home / "uploads" / "bob").resolve()) + "/"
    assert lib.conn.execute(wq.UPLOAD_INDEX_TERMS, {
        "user_id": bob_id, "tenant_id": lib.tenant_id, "prefix": prefix}).fetchone()[0] == 39
