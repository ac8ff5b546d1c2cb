"""docs/cli.md's reference is the click tree's own help: the generated part
equals what ``scripts/cli_reference.py`` writes from the tree today, so a
new option or command cannot be missing from the docs (no database)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _generator():
    spec = importlib.util.spec_from_file_location("cli_reference", ROOT / "scripts" / "cli_reference.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_docs_cli_md_is_the_click_trees_help(monkeypatch):
    for key in [k for k in __import__("os").environ if k.startswith("LOUPE_")]:
        monkeypatch.delenv(key)
    gen = _generator()
    current = gen.DOC.read_text(encoding="utf-8")
    assert gen.rendered(current) == current, (
        "docs/cli.md is out of date: run python scripts/cli_reference.py")


def test_every_command_has_a_reference_section():
    from click import Group

    from loupe.cli import main

    def paths(group, prefix=()):
        for name, cmd in group.commands.items():
            yield prefix + (name,)
            if isinstance(cmd, Group):
                yield from paths(cmd, prefix + (name,))

    doc = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    missing = [" ".join(p) for p in paths(main) if f"### `loupe {' '.join(p)}`" not in doc]
    assert missing == []
