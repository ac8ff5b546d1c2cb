"""The CLI mirrors the API (in the manner of sqlite-utils'
documentation tests): every command of the click tree has help text and a
``--json`` option, and appears in docs/cli.md's command table, which names
methods that exist."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import click

from loupe.cli import main

CLI_DOC = (Path(__file__).parents[1] / "docs" / "cli.md").read_text(encoding="utf-8")
#: Commands whose output is not a record: a server, a page, a file format.
NO_JSON = {"serve", "eval judge", "eval export-queries", "eval export-run", "eval qrels",
           "eval report"}
_ROW = re.compile(r"^\| `loupe ([a-z -]+?)`[^|]*\| (.+) \|$", re.M)
_OWNERS = {"Library": "loupe.library", "Evaluation": "loupe.eval.instrument"}


def commands(group: click.Group = main, path: tuple[str, ...] = ()):
    """(command path, command) for every leaf command of the tree."""
    for name, cmd in sorted(group.commands.items()):
        if isinstance(cmd, click.Group):
            yield from commands(cmd, path + (name,))
        else:
            yield " ".join(path + (name,)), cmd


def _table() -> dict[str, list[str]]:
    return {m.group(1): re.findall(r"`([\w.]+)`", m.group(2)) for m in _ROW.finditer(CLI_DOC)}


def _resolve(dotted: str):
    head, _, rest = dotted.partition(".")
    obj = importlib.import_module(_OWNERS[head]) if head in _OWNERS else None
    if obj is None:
        parts = dotted.split(".")
        for i in range(len(parts), 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:i]))
            except ImportError:
                continue
            rest = ".".join(parts[i:])
            break
    else:
        obj = getattr(obj, head)
    for attr in filter(None, rest.split(".")):
        obj = getattr(obj, attr)
    return obj


def test_every_command_has_help_and_json():
    missing_help = [p for p, c in commands() if not (c.help or "").strip()]
    no_json = sorted(p for p, c in commands()
                     if "--json" not in {o for prm in c.params for o in getattr(prm, "opts", [])})
    assert missing_help == []
    assert no_json == sorted(NO_JSON)


def test_every_command_is_in_the_cli_doc_table_and_names_real_methods():
    table = _table()
    tree = {p for p, _ in commands()}
    assert sorted(tree - set(table)) == []   # commands docs/cli.md does not list
    assert sorted(set(table) - tree) == []   # rows for commands that do not exist
    for cmd, methods in table.items():
        assert methods, f"loupe {cmd}: docs/cli.md names no method"
        for dotted in methods:
            assert callable(_resolve(dotted)), f"loupe {cmd}: {dotted} is not callable"


def test_collections_thumbnail_and_original_commands(lib, db_url: str, home: Path,
                                                     photos: Path, tmp_path: Path):
    import json

    from click.testing import CliRunner
    from imaging import make_image

    (photos / "trip").mkdir()
    make_image(photos / "trip" / "kettle.png", size=(40, 30), color=(200, 10, 10), fmt="PNG")
    lib.ingest(photos)
    lib.create_user("ann", "correct horse battery")
    [asset_id] = [r[0] for r in lib.conn.execute("SELECT id FROM asset")]
    base = ["--home", str(home), "--database-url", db_url]

    def run(*args: str, user: str | None = None):
        res = CliRunner().invoke(main, base + (["--user", user] if user else []) + list(args))
        return res

    rows = json.loads(run("collections", "--json").output)
    assert [(r["path"], r["assets"]) for r in rows] == [("trip", 1)]
    out = tmp_path / "thumb.jpg"
    res = run("thumbnail", str(asset_id), "-o", str(out), "--json")
    assert res.exit_code == 0, res.output
    data = out.read_bytes()
    assert data[:4] == b"RIFF" and data[8:12] == b"WEBP"    # a WebP thumbnail
    assert json.loads(res.output)["copied_to"] == str(out)
    assert run("original", str(asset_id)).output.strip() == str(photos / "trip" / "kettle.png")
    # a member who may not read the asset gets "not found", and no collection
    denied = run("original", str(asset_id), user="ann")
    assert denied.exit_code == 1 and f"asset {asset_id}" in denied.output
    assert json.loads(run("collections", "--json", user="ann").output) == []


def test_python_dash_m_runs_the_whole_tree():
    """``python -m loupe.cli`` (what the ``loupe`` script and the docs run)
    knows every top-level command: its ``main()`` call comes after the last
    command is defined (it once ran before ``ask`` and ``conversations``)."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "loupe.cli", "--help"], capture_output=True,
                         text=True, check=True).stdout
    listed = set(re.findall(r"^  ([a-z][a-z-]*)\s", out, re.M))
    assert set(main.commands) <= listed, sorted(set(main.commands) - listed)
