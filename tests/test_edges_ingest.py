"""Ingest at the edges: oriented dimensions, oversized fields,
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


# -- oversized fields ------------------------------------------------------------


def _words(n: int, prefix: str) -> list[str]:
    """``n`` distinct words of letters only (base-26 numbers), e.g. 'zqbaa'."""
    out = []
    for i in range(n):
        w = ""
        while True:
            i, r = divmod(i, 26)
            w += chr(97 + r)
            if i == 0:
                break
        out.append(prefix + w)
    return out


def _xmp(path: Path, *, title: str, description: str = "", keywords: list[str] = ()) -> Path:
    """An XMP sidecar written as XML (ExifTool reads it back; a 10 MB value
    cannot pass through a command line)."""
    subjects = "".join(f"<rdf:li>{k}</rdf:li>" for k in keywords)
    path.write_text(
        '<?xpacket begin="" id="W5M0MpCehiHzreSzNTczkc9d"?>\n'
        '<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF '
        'xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">'
        '<rdf:Description rdf:about="" xmlns:dc="http://purl.org/dc/elements/1.1/">'
        f'<dc:title><rdf:Alt><rdf:li xml:lang="x-default">{title}</rdf:li></rdf:Alt></dc:title>'
        + (f'<dc:description><rdf:Alt><rdf:li xml:lang="x-default">{description}</rdf:li>'
           '</rdf:Alt></dc:description>' if description else "")
        + (f"<dc:subject><rdf:Bag>{subjects}</rdf:Bag></dc:subject>" if keywords else "")
        + '</rdf:Description></rdf:RDF></x:xmpmeta>\n<?xpacket end="w"?>\n')
    return path


def test_an_oversized_field_is_truncated_with_a_warning(lib: Library, photos: Path,
                                                        db_url: str, home: Path):
    from loupe.ingest.metadata_bounds import MAX_LIST_CHARS, MAX_LIST_ITEMS, MAX_TEXT_CHARS

    words = _words(1_500_000, "q")                    # >10 MB of distinct words
    description = " ".join(words)
    assert len(description) > 10_000_000
    img = make_image(photos / "big.jpg", color=(9, 9, 99))
    _xmp(photos / "big.jpg.xmp", title="Lighthouse keeper", description=description)
    # a sibling: a sidecar with 5,000 distinct keywords of 30 characters (ExifTool
    # reads the first 1,000: 30,000 characters)
    many = make_image(photos / "many.jpg", color=(99, 9, 9))
    _xmp(photos / "many.jpg.xmp", title="Harbour crane",
         keywords=[w.ljust(30, "x") for w in _words(5_000, "k")])
    make_image(photos / "small.jpg", color=(9, 99, 9))
    summary = lib.ingest(photos)
    assert (summary.new_assets, summary.failed) == (3, 0), summary.failures
    # the description is cut in the normalised fields, and left out of the
    # stored raw metadata (over 64 KiB a value: a hostile file's metadata is bounded)
    assert sorted((w.path, w.kind) for w in summary.warnings) == [
        (str(img), "too_long"), (str(img), "too_long"), (str(img), "too_long"),
        (str(many), "too_long")]       # the third: cut as read (bounded memory)
    assert any(w.reason == f"{photos / 'big.jpg.xmp'}: 1 metadata value(s) over 16,384 "
                           "characters (or nested over 16 levels) not kept in the raw metadata"
               for w in summary.warnings)
    # the image and its other fields are in; the description is cut at the bound
    big = lib.search("lighthouse").hits
    assert len(big) == 1
    shown = lib.show(big[0].asset_id)
    kept = shown["files"][0]["metadata"]["description"]["x-default"]
    assert len(kept) <= MAX_TEXT_CHARS and description.startswith(kept)
    assert not kept.endswith(" ") and description[len(kept)] == " "   # cut between words
    assert [h.asset_id for h in lib.search(words[10]).hits] == [big[0].asset_id]
    assert lib.search(words[-1]).total == 0                           # past the bound
    crane = lib.search("crane").hits[0].asset_id
    kws = lib.show(crane)["files"][0]["metadata"]["keywords"]
    assert len(kws) == MAX_LIST_CHARS // 30 and len(kws) < MAX_LIST_ITEMS
    # recorded: `loupe failures` shows the warnings, naming the field and the bound
    out = cli(["failures"], LOUPE_HOME=str(home), LOUPE_DATABASE_URL=db_url).stdout
    line = next(x for x in out.splitlines() if x.startswith(f"warning\t{img}\ttoo_long")
                and "description" in x)
    assert f"description (x-default) truncated from {len(description):,} to" in line
    assert f"the bound is {MAX_TEXT_CHARS:,} characters" in line


# -- concurrent ingests ------------------------------------------------------------


def test_two_ingests_of_one_folder_at_once_report_truthfully(photos: Path, db_url: str,
                                                              home: Path):
    import time

    import psycopg

    n = 240
    for i in range(n):
        make_image(photos / f"d{i // 60}" / f"img-{i:03d}.jpg", size=(96, 64),
                   color=(i % 256, (7 * i) % 256, 90))
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOUPE_")}
    env.update(LOUPE_HOME=str(home), LOUPE_DATABASE_URL=db_url)
    with Library.open(home, database_url=db_url):
        pass
    first = subprocess.Popen(LOUPE + ["ingest", str(photos), "--json"], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # start the second while the first is writing
    with psycopg.connect(db_url, autocommit=True) as conn:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if conn.execute("SELECT count(*) FROM asset_file").fetchone()[0] >= 5:
                break
            time.sleep(0.05)
    second = subprocess.Popen(LOUPE + ["ingest", str(photos), "--json"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out1, err1 = first.communicate(timeout=600)
    out2, err2 = second.communicate(timeout=600)
    assert (first.returncode, second.returncode) == (0, 0), (err1, err2)
    a, b = json.loads(out1), json.loads(out2)
    assert (a["new_assets"], a["duplicates"], a["failed"], a["unchanged"]) == (n, 0, 0, 0)
    assert (b["new_assets"], b["duplicates"], b["failed"], b["unchanged"]) == (0, 0, 0, n)
    assert "waiting for another ingest of " + str(photos) in err2
    with Library.open(home, database_url=db_url) as lib:
        assert (lib.stats()["assets"], lib.stats()["files"]) == (n, n)


def test_two_ingests_of_identical_folders_at_once_report_truthfully(tmp_path: Path,
                                                                    db_url: str, home: Path):
    """The sibling: other folders (no common lock) holding the same bytes —
    each file is new in one run and a duplicate in the other, never a failure."""
    import time

    import psycopg

    n = 120
    for folder in ("left", "right"):
        for i in range(n):
            make_image(tmp_path / folder / f"img-{i:03d}.png", size=(48, 32),
                       color=(i % 256, 30, (5 * i) % 256), fmt="PNG")
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOUPE_")}
    env.update(LOUPE_HOME=str(home), LOUPE_DATABASE_URL=db_url)
    with Library.open(home, database_url=db_url):
        pass
    procs = []
    for folder in ("left", "right"):
        procs.append(subprocess.Popen(LOUPE + ["ingest", str(tmp_path / folder), "--json"],
                                      env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True))
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    a, b = (json.loads(o[0]) for o in outs)
    assert (a["failed"], b["failed"]) == (0, 0), (a["failures"][:3], b["failures"][:3])
    assert a["new_assets"] + b["new_assets"] == n
    assert a["duplicates"] + b["duplicates"] == n
    with Library.open(home, database_url=db_url) as lib:
        assert (lib.stats()["assets"], lib.stats()["files"]) == (n, 2 * n)


# -- lifecycle of the embedded server ------------------------------------------------


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _postmaster(pgdata: Path):
    """The running postmaster of ``pgdata`` (psutil.Process), or None."""
    import psutil

    pid_file = pgdata / "postmaster.pid"
    if not pid_file.is_file():
        return None
    try:
        proc = psutil.Process(int(pid_file.read_text().split()[0]))
        return proc if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE else None
    except (psutil.NoSuchProcess, ValueError):
        return None


def _handles(pgdata: Path) -> list[int]:
    """The pids in pgserver's handle file. The file is rewritten in place
    under pgserver's lock, which this reader does not take: an empty or cut
    read is a write in progress, read again (a fresh-clone CI run once read
    it empty)."""
    import time

    f = pgdata / ".handle_pids.json"
    for _ in range(50):
        if not f.is_file():
            return []
        try:
            return json.loads(f.read_text())
        except json.JSONDecodeError:
            time.sleep(0.02)
    return json.loads(f.read_text())


def _serve(home: Path, env: dict[str, str]) -> subprocess.Popen:
    import time

    proc = subprocess.Popen(LOUPE + ["serve", "--port", str(_free_port())], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while proc.pid not in _handles(home / "pgdata"):
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.1)
    return proc


def test_a_killed_command_leaves_no_stale_handle_and_loupe_stop_stops(tmp_path: Path):
    import signal

    home = tmp_path / "home"
    pgdata = home / "pgdata"
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOUPE_")}
    env["LOUPE_HOME"] = str(home)
    try:
        assert subprocess.run(LOUPE + ["init"], env=env, capture_output=True,
                              timeout=300).returncode == 0
        assert _postmaster(pgdata) is None                  # the last user stopped it
        served = _serve(home, env)
        served.send_signal(signal.SIGKILL)                  # no exit hook runs
        served.wait()
        assert _postmaster(pgdata) is not None and _handles(pgdata) == [served.pid]
        # the next command drops the dead pid and, being the last user, stops the server
        out = subprocess.run(LOUPE + ["stats"], env=env, capture_output=True, text=True,
                             timeout=300)
        assert out.returncode == 0, out.stderr
        assert _postmaster(pgdata) is None
        assert _handles(pgdata) == []

        # `loupe stop`: refused while another loupe process uses the server, then forced
        served = _serve(home, env)
        try:
            refused = subprocess.run(LOUPE + ["stop"], env=env, capture_output=True,
                                     text=True, timeout=300)
            assert refused.returncode == 1
            assert f"in use by 1 other loupe process(es) (pids {served.pid})" in refused.stderr
            assert _postmaster(pgdata) is not None
            forced = subprocess.run(LOUPE + ["stop", "--force", "--json"], env=env,
                                    capture_output=True, text=True, timeout=300)
            info = json.loads(forced.stdout)
            assert (info["was_running"], info["stopped"], info["users"]) == (
                True, True, [served.pid])
            assert _postmaster(pgdata) is None
        finally:
            served.terminate()
            served.wait(timeout=60)
        again = json.loads(subprocess.run(LOUPE + ["stop", "--json"], env=env,
                                          capture_output=True, text=True, timeout=300).stdout)
        assert (again["was_running"], again["stopped"]) == (False, False)
    finally:
        proc = _postmaster(pgdata)
        if proc is not None:  # (on the code before the fix) do not leave a server behind
            proc.terminate()


def test_serve_recovers_from_a_database_restart(tmp_path: Path, photos: Path, monkeypatch):
    """The app keeps working across a restart of the embedded server under it,
    answers 503 at once (not after a 30 s wait) while the server is down, and
    loses no pool slot."""
    import time

    from loupe.db.server import pg_ctl_command

    for key in [k for k in os.environ if k.startswith("LOUPE_")]:
        monkeypatch.delenv(key)
    home = tmp_path / "home"
    pgdata = home / "pgdata"
    make_image(photos / "cats" / "cat.jpg")
    with Library.open(home, create=True) as lib:
        lib.ingest(photos)
        lib.create_user("admin", "admin-password", admin=True)
    app = create_app(home, pool_size=2)
    try:
        with TestClient(app) as client:
            tok = client.post("/api/tokens", json={"name": "admin", "password": "admin-password"})
            auth = {"Authorization": f"Bearer {tok.json()['token']}"}

            def search() -> tuple[int, float]:
                t = time.monotonic()
                r = client.get("/api/search?q=cat", headers=auth)
                return r.status_code, time.monotonic() - t

            assert search()[0] == 200
            # a restart: every pooled connection is dead, none knows it yet
            pg_ctl_command(pgdata, ["-w", "-m", "fast", "restart"])
            for _ in range(5):  # more requests than slots: each slot replaced once
                code, took = search()
                assert (code, took < 10) == (200, True)
            # stopped: 503 at once, again and again (no slot lost waiting)
            pg_ctl_command(pgdata, ["-w", "-m", "fast", "stop"])
            for _ in range(5):
                code, took = search()
                assert code in (200, 503) and took < 10
                if code == 200:  # the pool started the server of its own library again
                    break
            else:
                raise AssertionError("the embedded server was not started again")
            for _ in range(4):
                assert search()[0] == 200
            # this process is listed again as a user of the server it restarted
            assert os.getpid() in _handles(pgdata)
    finally:
        Library.stop(home, force=True)
