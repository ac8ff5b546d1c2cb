"""Code, tests and docs give reasons in product terms (requirement N8).

A comment, docstring, test name or doc line says what holds and why — the
threat, the invariant, the measured figure — never which review, run or
ticket found it: such labels mean nothing to a reader who has only the
repository, and they bury the reason. History belongs in git and in
CHANGELOG.md. This check is fast (no database): it reads the text files of
src/, tests/, docs/, README.md, benchmarks/ and scripts/ and fails with
``file:line`` for every history label it finds.

It also checks that every requirement ID the code cites (``S1``, ``X4``…)
has an entry in docs/requirements.md.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Where the check reads, and which files it reads there.
SCOPES = ("src", "tests", "docs", "README.md", "benchmarks", "scripts")
TEXT_SUFFIXES = {".py", ".md", ".sql", ".html", ".js", ".css", ".sh", ".toml", ".txt", ".cfg",
                 ".ini", ".yml", ".yaml"}

#: Labels of history, not reasons: a review run and its finding codes, a
#: stop or round of work, a ticket number, a session, a citation of a
#: document that is not in the repository.
HISTORY = re.compile(
    r"attack[ _]runs?|attack[- ]?[0-9]|\bstop [0-9]+|\bissue [0-9]+|new-user run"
    r"|this session|\bround [0-9]+"
    r"|(?-i:\bSPEC [A-Z][0-9])"                    # the spec is docs/requirements.md
    r"|(?-i:\b[A-D][0-9]{1,2}-[0-9]+\b)"          # finding codes such as A13-4
    r"|(?-i:\bD(?!65\b)[0-9]{1,2}\b)",             # finding codes such as D7; D65 is the CIE illuminant
    re.IGNORECASE)

#: Files not read, each with the reason.
EXEMPT_FILES = {
    # this file names the patterns it looks for
    "tests/test_code_says_why.py": "the patterns themselves",
}
#: Folders not read, each with the reason.
EXEMPT_DIRS = {
    # a landed migration is never edited (requirement N6: its hash is pinned
    # in tests/test_migration_pins.py); its comments stay as they landed
    "src/loupe/db/migrations": "landed migrations are immutable (N6)",
    # copies of landed migrations, byte for byte, for the upgrade tests
    "tests/fixtures": "byte-exact copies of landed files and test data",
}
#: Single lines allowed, as (file, exact text in the line): none today. A
#: line goes here only with its reason beside it.
EXEMPT_LINES: dict[tuple[str, str], str] = {}


def _files():
    for scope in SCOPES:
        base = ROOT / scope
        paths = [base] if base.is_file() else sorted(base.rglob("*"))
        for p in paths:
            rel = p.relative_to(ROOT).as_posix()
            if not p.is_file() or p.suffix not in TEXT_SUFFIXES or rel in EXEMPT_FILES:
                continue
            if any(rel.startswith(d + "/") for d in EXEMPT_DIRS):
                continue
            if "__pycache__" in rel or "/.pytest_cache/" in rel or ".egg-info/" in rel:
                continue   # written by tools, not by us
            yield rel, p


def history_hits() -> list[str]:
    """``file:line: text`` for every line that names history instead of a reason."""
    hits = []
    for rel, p in _files():
        try:
            text = p.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for n, line in enumerate(text.splitlines(), 1):
            if HISTORY.search(line) and not any(f == rel and s in line for f, s in EXEMPT_LINES):
                hits.append(f"{rel}:{n}: {line.strip()[:160]}")
    return hits


def test_no_history_labels_in_code_tests_or_docs():
    hits = history_hits()
    assert not hits, "history instead of a reason (put it in CHANGELOG.md):\n" + "\n".join(hits)


def test_the_pattern_finds_history_and_spares_reasons():
    assert HISTORY.search("the fix of attack run 13 (A13-4)")
    assert HISTORY.search("found in stop 27's new-user run")
    assert HISTORY.search("a member's token (D8)")
    assert HISTORY.search("Files (SPEC N5)")
    assert not HISTORY.search("named by the nearest reference in CIE Lab (D65)")
    assert not HISTORY.search("a search document per language (S1)")
    assert not HISTORY.search("the issue is that a 2 GB file")
    assert not HISTORY.search("SELECT d0.asset_id FROM t AS d0")   # an SQL alias
    assert not HISTORY.search(r"re.compile(r'^(\d0|1[89]\d0)$')")  # a regular expression


#: A requirement ID as the code cites it: a letter of the requirement areas
#: and a number, standing alone ("S1", "X4/C4"), not part of a name such as
#: "MiniLM-L6" or a CSS colour.
#: A requirement ID standing alone; an aperture after a focal length in a
#: lens's name ("RF24-105mm F4 L") is no citation.
_ID = re.compile(r"(?<![\w#.-])(?<!mm )([SLVFCPXEN](?:[1-9]|10))(?![\w-])")
#: Files whose letters-and-digits are not requirement IDs.
_NOT_CITATIONS = ("src/loupe/web/static/", "src/loupe/eval/report.py", "src/loupe/eval/judging.py")


def cited_ids() -> dict[str, str]:
    """Requirement ID -> the first ``file:line`` of src/ that cites it."""
    seen: dict[str, str] = {}
    for p in sorted((ROOT / "src").rglob("*.py")):
        rel = p.relative_to(ROOT).as_posix()
        if rel.startswith(_NOT_CITATIONS) or rel.startswith("src/loupe/db/migrations"):
            continue
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
            for m in _ID.finditer(line):
                seen.setdefault(m.group(1), f"{rel}:{n}")
    return seen


def test_every_requirement_the_code_cites_is_written_down():
    doc = (ROOT / "docs" / "requirements.md").read_text(encoding="utf-8")
    entries = set(re.findall(r"^#+ ([SLVFCPXEN]\d+)\b", doc, re.M))
    missing = {i: where for i, where in cited_ids().items() if i not in entries}
    assert not missing, f"cited but not in docs/requirements.md: {missing}"
