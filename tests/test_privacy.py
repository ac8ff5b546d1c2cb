"""Library files are private and Loupe never widens a folder it did not create
(N5). Run with the real embedded PostgreSQL: as root (CI) it
runs as another OS user, which once made every parent of the home 0755."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from imaging import make_image

from loupe import Library

LOUPE = [sys.executable, "-m", "loupe.cli"]


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_init_keeps_private_parents_and_makes_the_library_private(tmp_path: Path,
                                                                  photos: Path):
    priv = tmp_path / "priv"
    (priv / "inner").mkdir(parents=True)
    os.chmod(priv, 0o700)
    os.chmod(priv / "inner", 0o700)
    make_image(photos / "a.jpg")
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOUPE_")}
    env["LOUPE_HOME"] = "priv/inner/h"
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    before = {p: _mode(p) for p in (tmp_path, *tmp_path.parents)}

    for args in (["init"], ["ingest", str(photos)]):
        subprocess.run(LOUPE + args, env=env, cwd=tmp_path, check=True, capture_output=True,
                       text=True, timeout=300)

    home = priv / "inner" / "h"
    assert (_mode(priv), _mode(priv / "inner"), _mode(home)) == (0o700, 0o700, 0o700)
    assert {p: _mode(p) for p in (tmp_path, *tmp_path.parents)} == before
    thumbs = [p for p in (home / "thumbnails").rglob("*")]
    assert len([p for p in thumbs if p.is_file()]) == 1
    for p in [home / "thumbnails", *thumbs]:
        assert _mode(p) == (0o700 if p.is_dir() else 0o600), p
    assert _mode(home / "pgdata") == 0o700
    # nothing in the home is open to the group or others, the database included
    for p in home.rglob("*"):
        if not p.is_socket():
            assert _mode(p) & 0o077 == 0, p
    # the server was stopped when the last command exited
    assert not (home / "pgdata" / "postmaster.pid").exists()


def test_library_folders_left_open_by_an_older_loupe_are_closed(db_url: str, home: Path):
    for name in ("thumbnails", "uploads"):
        (home / name / "ab").mkdir(parents=True)
        os.chmod(home / name, 0o755)
    os.chmod(home, 0o755)                 # a home Loupe finds keeps its mode
    with Library.open(home, database_url=db_url):
        pass
    assert (_mode(home), _mode(home / "thumbnails"), _mode(home / "uploads")) == (
        0o755, 0o700, 0o700)
