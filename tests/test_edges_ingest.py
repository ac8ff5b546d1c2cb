"""Ingest at the edges (issue 12): oriented dimensions, oversized fields,
concurrent ingests, and the embedded server's lifecycle — real files, real
ExifTool, real PostgreSQL, real processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from fastapi.testclient import TestClient
from imaging import exiftool_write, make_image, write_sidecar

from loupe import Library
from loupe.web import create_app

LOUPE = [sys.executable, "-m", "loupe.cli"]


def cli(args: list[str], **env: str) -> subprocess.CompletedProcess:
    e = {k: v for k, v in os.environ.items() if not k.startswith("LOUPE_")}
    e.update(env)
    return subprocess.run(LOUPE + args, env=e, capture_output=True, text=True, timeout=300)


# -- oriented dimensions ---------------------------------------------------------


def test_dimensions_are_shown_as_displayed_with_the_stored_orientation_apart(
        lib: Library, photos: Path, db_url: str, home: Path):
    rot = make_image(photos / "rot.jpg", size=(80, 40))
    exiftool_write(rot, "-EXIF:Orientation#=6")      # 90° clockwise: shown 40 wide, 80 high
    mirror = make_image(photos / "mirror.jpg", size=(80, 40), color=(1, 200, 1))
    exiftool_write(mirror, "-EXIF:Orientation#=2")   # mirrored only: still 80×40
    lib.ingest(photos)
    ids = {r[0]: r[1] for r in lib.conn.execute("SELECT rel_path, asset_id FROM asset_file")}
    a = lib.show(ids["rot.jpg"])
    assert (a["width"], a["height"]) == (40, 80)
    assert (a["stored_width"], a["stored_height"], a["orientation"]) == (80, 40, 6)
    b = lib.show(ids["mirror.jpg"])
    assert (b["width"], b["height"], b["orientation"]) == (80, 40, 2)
    lib.create_user("admin", "admin-password", admin=True)

    # the API and the asset page
    app = create_app(home, database_url=db_url, pool_size=1)
    with TestClient(app) as client:
        tok = client.post("/api/tokens", json={"name": "admin", "password": "admin-password"})
        auth = {"Authorization": f"Bearer {tok.json()['token']}"}
        got = client.get(f"/api/assets/{ids['rot.jpg']}", headers=auth).json()
        assert (got["width"], got["height"], got["orientation"]) == (40, 80, 6)
        assert (got["stored_width"], got["stored_height"]) == (80, 40)
        page = client.get(f"/assets/{ids['rot.jpg']}", headers=auth).text
        assert "40×80" in page and "80×40" not in page.replace("stored 80×40", "")
        assert "stored 80×40, EXIF orientation 6" in page

    # the command line
    out = cli(["show", str(ids["rot.jpg"]), "--json"], LOUPE_HOME=str(home),
              LOUPE_DATABASE_URL=db_url)
    shown = json.loads(out.stdout)
    assert (shown["width"], shown["height"], shown["stored_width"]) == (40, 80, 80)
    text = cli(["show", str(ids["rot.jpg"])], LOUPE_HOME=str(home),
               LOUPE_DATABASE_URL=db_url).stdout
    assert "40×80 px" in text and "stored 80×40, EXIF orientation 6" in text
