"""The import layers hold: the contract in pyproject.toml (``[tool.importlinter]``:
interfaces above the facade, the facade above the entry points, the pipeline
above the lanes, the lanes above the statement room) is kept by the code; a
lane that imports the pipeline breaks it; and no Loupe module imports another
inside a function except to defer FastAPI for the CLI. Pure static analysis:
no database, a few seconds."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[1]
SRC = ROOT / "src"

#: The only imports of Loupe modules allowed inside a function: each defers
#: FastAPI or Starlette (about half a second to import), which every ``loupe``
#: command would otherwise pay because the command tree includes ``serve``.
DEFERRED = {
    ("loupe.web", "loupe.web.app"),
    ("loupe.web.cli", "loupe.web.app"),
    ("loupe.web.cli", "loupe.web.security"),
    ("loupe.web.cli", "loupe.web.auth"),
    ("loupe.eval.cli", "loupe.eval.judging"),
}


def lint(src: Path, cwd: Path) -> subprocess.CompletedProcess:
    """``lint-imports`` with the contracts of ``cwd/pyproject.toml`` over the
    package under ``src``."""
    code = ("import sys; from importlinter.cli import lint_imports; "
            "sys.exit(lint_imports(config_filename='pyproject.toml', no_cache=True, "
            "no_logo=True))")
    env = {**os.environ, "PYTHONPATH": str(src)}
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def test_import_layers_contract_is_kept():
    out = lint(SRC, ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "0 broken" in out.stdout


def test_a_lane_importing_the_pipeline_breaks_the_contract(tmp_path):
    shutil.copytree(SRC / "loupe", tmp_path / "src" / "loupe",
                    ignore=shutil.ignore_patterns("__pycache__", "static", "templates"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    lane = tmp_path / "src" / "loupe" / "lexical" / "search.py"
    lane.write_text(lane.read_text(encoding="utf-8")
                    + "\nfrom ..search import pipeline as _climb  # noqa\n", encoding="utf-8")
    out = lint(tmp_path / "src", tmp_path)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "loupe.lexical.search -> loupe.search.pipeline" in out.stdout


def _module(path: Path) -> str:
    name = ".".join(path.relative_to(SRC).with_suffix("").parts)
    return name.removesuffix(".__init__")


def _target(module: str, is_pkg: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    parts = module.split(".") if is_pkg else module.split(".")[:-1]
    parts = parts[: len(parts) - (node.level - 1)]
    return ".".join(parts + ([node.module] if node.module else []))


def test_no_loupe_import_inside_a_function_but_the_deferred_web_ones():
    found = set()
    for path in sorted((SRC / "loupe").rglob("*.py")):
        module = _module(path)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.ImportFrom):
                    target = _target(module, path.name == "__init__.py", node)
                elif isinstance(node, ast.Import):
                    target = node.names[0].name
                else:
                    continue
                if target.split(".")[0] == "loupe":
                    found.add((module, target))
    assert found == DEFERRED
