"""Nothing under an ingested folder is passed over in silence: every file the
walk sees that Loupe does not read is counted and listed with its reason, in
the ingest's summary, in ``loupe failures`` and on the status page."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient
from imaging import make_image, write_sidecar
from weblib import web_login

from loupe import Library
from loupe.ingest.walk import SECOND_SIDECAR, unsupported_reason, walk
from loupe.web import create_app


def _folder(photos: Path) -> None:
    make_image(photos / "a.jpg")
    make_image(photos / "deep" / "b.png", fmt="PNG", color=(1, 2, 3))
    (photos / "layers.psd").write_bytes(b"8BPS" + bytes(40))
    (photos / "deep" / "notes.txt").write_text("shot list")
    (photos / "deep" / "README").write_text("no extension")
    (photos / ".DS_Store").write_bytes(b"hidden")          # hidden: not walked at all
    (photos / "orphan.xmp").write_text("<x:xmpmeta xmlns:x='adobe:ns:meta/'/>")
    write_sidecar(photos / "a.jpg", "-XMP-dc:Title=Kept")  # a.jpg.xmp: read with a.jpg
    (photos / "a.xmp").write_text("<x:xmpmeta xmlns:x='adobe:ns:meta/'/>")


EXPECTED = [
    ("a.xmp", SECOND_SIDECAR),
    ("deep/README", "not a supported format: no file extension"),
    ("deep/notes.txt", "not a supported format: .txt"),
    ("layers.psd", "not a supported format: .psd"),
    ("orphan.xmp", "an XMP sidecar with no supported picture beside it"),
]


def test_the_reason_names_the_extension():
    assert unsupported_reason("Layers.PSD") == "not a supported format: .psd"
    assert unsupported_reason("Makefile") == "not a supported format: no file extension"
    assert unsupported_reason("x." + "q" * 40) == "not a supported format: ." + "q" * 15 + "…"


def test_the_walk_lists_every_file_it_does_not_return(photos: Path):
    _folder(photos)
    passed: list[tuple[str, str]] = []
    found = walk(photos, unsupported=passed)
    assert [f.rel_path for f in found] == ["a.jpg", "deep/b.png"]
    assert [(str(Path(p).relative_to(photos)), why) for p, why in passed] == EXPECTED


def test_ingest_counts_and_lists_skipped_files(lib: Library, photos: Path):
    _folder(photos)
    summary = lib.ingest(photos)
    assert (summary.files_seen, summary.new_assets, summary.failed) == (2, 2, 0)
    assert [(Path(s.path).relative_to(photos).as_posix(), s.kind, s.reason)
            for s in summary.skipped] == [(p, "unsupported", why) for p, why in EXPECTED]
    assert summary.as_dict()["skipped"] == 5
    rows = [(r["severity"], Path(r["path"]).relative_to(photos).as_posix(), r["reason"])
            for r in lib.failures()]
    assert rows == [("skipped", p, why) for p, why in EXPECTED]


def test_the_status_page_lists_skipped_files(db_url: str, home: Path, photos: Path):
    _folder(photos)
    with Library.open(home, database_url=db_url) as lib:
        lib.ingest(photos)
        lib.create_user("admin", "admin-password", admin=True)
    app = create_app(home, database_url=db_url, pool_size=2)
    with TestClient(app) as client:
        tok = client.post("/api/tokens", json={"name": "admin", "password": "admin-password"})
        h = {"Authorization": f"Bearer {tok.json()['token']}"}
        s = client.get("/api/status", headers=h).json()
        assert s["ingest_runs"][0]["skipped"] == 5
        assert [(f["severity"], Path(f["path"]).name, f["reason"]) for f in s["failures"]] == [
            ("skipped", Path(p).name, why) for p, why in EXPECTED]
        # the page a person reads: the run's Skipped column and each file with its reason
        assert web_login(client, "admin", "admin-password").status_code == 303
        page = client.get("/status").text
        assert "<th>Skipped</th>" in page and "<td>5</td>" in page
        assert (f"<li><strong>skipped</strong> {photos / 'layers.psd'}: not a supported "
                f"format: .psd</li>") in page


def _cli(home: Path, url: str, *args: str):
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("LOUPE_")}
    return subprocess.run([sys.executable, "-m", "loupe.cli", "--home", str(home),
                           "--database-url", url, *args],
                          env=env, capture_output=True, text=True, timeout=300)


def test_loupe_ingest_and_failures_list_skipped_files(db_url: str, home: Path, photos: Path):
    _folder(photos)
    with Library.open(home, database_url=db_url):
        pass
    out = _cli(home, db_url, "ingest", str(photos))
    assert out.returncode == 0, out.stderr
    import re
    assert re.search(r"^\s*not read \(not a supported format\)\s+5\s*$", out.stdout, re.M), out.stdout
    assert "5 file(s) not read:" in out.stdout
    assert f"  {photos / 'layers.psd'}: not a supported format: .psd" in out.stdout
    rows = _cli(home, db_url, "failures")
    assert rows.returncode == 0, rows.stderr
    assert f"skipped\t{photos / 'deep' / 'notes.txt'}\tunsupported\tnot a supported format: " \
           f".txt" in rows.stdout.splitlines()
