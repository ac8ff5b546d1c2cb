"""Golden SQL (pgvector's test/sql + test/expected habit):
every statement the search pipeline composes is rendered to a file under
tests/sql/, so a change to any fragment shows up as a readable diff of the
statements it reaches.

Statements: lexical and scoped (no vector lane), fused and scoped_fused with
0, 1 and 2 vector lanes, each for the owner (sees everything) and a member;
and each kind with a condition on assets (what a filter compiles to, see
loupe.search.clause), to show where it enters: those are kept as unified
diffs against the member's statement without one (``*_clause_member.diff``),
not as a second copy of that statement.

Regenerate after an intended change, then read the diff before committing:

    LOUPE_REGEN_SQL=1 python -m pytest tests/test_golden_sql.py
    git diff tests/sql/
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

import pytest

from loupe.search import statements as st

GOLDEN = Path(__file__).parent / "sql"
REGEN = os.environ.get("LOUPE_REGEN_SQL") == "1"

#: Two vector lanes as the registry would give them (ids and widths are
#: literals of the statement; the vectors are parameters, not rendered).
TEXT = st.VectorLane(name="text", lane="text", model_id=11, model="minilm", dims=384,
                     max_dist=0.5, vector=[0.0] * 384)
IMAGE = st.VectorLane(name="image", lane="image", model_id=12, model="clip", dims=512,
                      max_dist=0.5, vector=[0.0] * 512)


class ExampleClause:
    """A stand-in condition on assets (a filter's compiled form)."""

    def sql(self, asset: str) -> str:
        return f"{asset} = ANY (%(example_ids)s::bigint[])"

    def params(self) -> dict:
        return {"example_ids": []}


class ExampleFilter(ExampleClause):
    """A stand-in filter: a condition that is also the search's scope (its
    set is materialised first and probed at the entry points)."""

    def scope_members(self) -> str:
        return ("SELECT a.id AS asset_id FROM asset a"
                " WHERE a.id = ANY (%(example_ids)s::bigint[]) LIMIT %(filter_limit)s")

    def params(self) -> dict:
        return {"example_ids": [], "filter_limit": 50_001}


def cases() -> dict[str, tuple[str, list, bool, object]]:
    out = {}
    for who, member in (("owner", False), ("member", True)):
        out[f"lexical_{who}"] = (st.LEXICAL, [], member, None)
        out[f"scoped_{who}"] = (st.SCOPED, [], member, None)
        for kind in (st.FUSED, st.SCOPED_FUSED):
            for lanes in ([], [IMAGE], [TEXT, IMAGE]):
                out[f"{kind}_{len(lanes)}lanes_{who}"] = (kind, lanes, member, None)
    # a filter used as the search's scope: its set is materialised first and
    # probed at the entry points, whole statements
    for kind in (st.SCOPED, st.SCOPED_FUSED):
        lanes = [TEXT, IMAGE] if kind == st.SCOPED_FUSED else []
        for who, member in (("owner", False), ("member", True)):
            out[f"{kind}_filter_{who}"] = (kind, lanes, member, ExampleFilter())
    return out


def clause_cases() -> dict[str, tuple[str, str, list]]:
    """name → (kind, the golden statement it is a diff against, lanes)."""
    out = {}
    for kind in st.KINDS:
        fused = kind in (st.FUSED, st.SCOPED_FUSED)
        out[f"{kind}_clause_member"] = (kind, f"{kind}_2lanes_member" if fused
                                        else f"{kind}_member", [TEXT, IMAGE] if fused else [])
    return out


def render(kind: str, lanes: list, member: bool, clause) -> str:
    stmt = st.compose(kind, lanes, member, clause)
    text = stmt if isinstance(stmt, str) else stmt.as_string(None)
    # one statement per file, no trailing blanks: diffs stay line-aligned
    return "\n".join(line.rstrip() for line in text.strip().splitlines()) + "\n"


def clause_diff(name: str) -> str:
    """The unified diff from the member's statement to the same statement
    with :class:`ExampleClause` (where a filter enters it)."""
    kind, base, lanes = CLAUSE_CASES[name]
    return "".join(difflib.unified_diff(
        render(kind, lanes, True, None).splitlines(keepends=True),
        render(kind, lanes, True, ExampleClause()).splitlines(keepends=True),
        fromfile=f"{base}.sql", tofile=f"{name} (with a condition on assets)"))


CASES = cases()
CLAUSE_CASES = clause_cases()


@pytest.mark.parametrize("name", sorted(CASES))
def test_statement_matches_its_golden_file(name: str):
    path = GOLDEN / f"{name}.sql"
    got = render(*CASES[name])
    if REGEN:
        path.write_text(got)
    assert path.exists(), f"{path} missing: regenerate with LOUPE_REGEN_SQL=1"
    assert got == path.read_text(), (f"{name}: the composed statement changed; if intended, "
                                     f"regenerate (LOUPE_REGEN_SQL=1) and review git diff tests/sql/")


@pytest.mark.parametrize("name", sorted(CLAUSE_CASES))
def test_a_condition_on_assets_enters_where_its_golden_diff_says(name: str):
    path = GOLDEN / f"{name}.diff"
    got = clause_diff(name)
    if REGEN:
        path.write_text(got)
    assert path.exists(), f"{path} missing: regenerate with LOUPE_REGEN_SQL=1"
    assert got == path.read_text(), (f"{name}: where the condition enters changed; if intended, "
                                     f"regenerate (LOUPE_REGEN_SQL=1) and review git diff tests/sql/")


def test_no_stale_golden_file():
    names = {p.stem for p in GOLDEN.glob("*.sql")}
    assert names == set(CASES), f"stale or missing: {sorted(names ^ set(CASES))}"
    diffs = {p.stem for p in GOLDEN.glob("*.diff")}
    assert diffs == set(CLAUSE_CASES), f"stale or missing: {sorted(diffs ^ set(CLAUSE_CASES))}"


def test_every_placeholder_is_a_parameter_the_pipeline_gathers():
    """Each %(name)s of each statement is a key of statements.parameters
    (plus the clause's own), so no statement runs short of a parameter."""
    import re

    from loupe.lexical.search import QueryTerms

    every = {**CASES, **{n: (k, lanes, True, ExampleClause())
                         for n, (k, _, lanes) in CLAUSE_CASES.items()}}
    for name, (kind, lanes, member, clause) in every.items():
        params = st.parameters(tenant_id=1, terms=QueryTerms.single("en", ["x"]).params(),
                               query="x", raw_cap=3000, keep_cap=1000, limit=20, offset=0,
                               lanes=lanes, collections=[1], clause=clause)
        used = set(re.findall(r"%\((\w+)\)s", render(kind, lanes, member, clause)))
        assert used <= set(params), (name, sorted(used - set(params)))
