"""The one search pipeline (loupe.search.pipeline): a condition on assets
(loupe.search.clause, what a filter compiles to) reaches every entry point
of every statement kind, with the real database and a tiny CLIP model."""

from __future__ import annotations

from pathlib import Path

import pytest
from imaging import make_image, write_sidecar
from tinymodels import build_clip

from loupe import Library
from loupe.search import statements as st
from loupe.search.clause import and_clause
from loupe.search.pipeline import SearchPipeline, SearchRequest


class OnlyIds:
    """A clause keeping the assets whose id is in ``ids`` (a statement parameter)."""

    def __init__(self, ids: list[int]):
        self.ids = ids

    def sql(self, asset: str) -> str:
        return f"{asset} = ANY (%(only_ids)s::bigint[])"

    def params(self) -> dict:
        return {"only_ids": self.ids}


@pytest.fixture
def colours(lib: Library, photos: Path, tmp_path: Path) -> Library:
    """Three one-colour pictures (asset ids by path: lawn 1, ocean 2,
    teapot 3) in two folders, with the tiny CLIP model on the image lane."""
    for name, color, title in [("sea/ocean.png", (0, 0, 255), "Ocean blue view"),
                               ("sea/teapot.png", (255, 0, 0), "Scarlet blue teapot"),
                               ("green/lawn.png", (0, 255, 0), "Lawn")]:
        img = make_image(photos / name, size=(16, 16), color=color, fmt="PNG")
        write_sidecar(img, f"-XMP-dc:Title={title}")
    lib.ingest(photos)
    lib.install_model(build_clip(tmp_path / "src" / "tiny-clip"))
    lib.use_model("tiny-clip", "image")
    lib.embed()
    return lib


def run(lib: Library, query: str, **kw):
    return SearchPipeline(lib).run(SearchRequest(query, ["en"], 20, 0, **kw))


def titles(res) -> list[str]:
    return [h.title for h in res.hits]


def test_a_clause_restricts_the_lexical_and_the_vector_lanes(colours: Library):
    lib = colours
    ids = {t: i for i, t in lib.conn.execute("SELECT a.id, d.title FROM asset a JOIN "
                                             "search_document d ON d.asset_id = a.id")}
    everything = run(lib, "red blue")
    assert titles(everything) == ["Ocean blue view", "Scarlet blue teapot"]
    only_teapot = run(lib, "red blue", clause=OnlyIds([ids["Scarlet blue teapot"]]))
    assert titles(only_teapot) == ["Scarlet blue teapot"]
    assert (only_teapot.total, only_teapot.reachable) == (1, 1)
    # the image lane alone (no word matches "red"): its neighbours are filtered too
    assert titles(run(lib, "red", clause=OnlyIds([ids["Lawn"]]))) == []


def test_a_clause_restricts_the_title_band_and_zeroes_max_df(colours: Library):
    lib = colours
    ocean = lib.conn.execute("SELECT asset_id FROM search_document "
                             "WHERE title LIKE 'Ocean%'").fetchone()[0]
    res = run(lib, "blue", title_band=True, clause=OnlyIds([ocean]))
    assert titles(res) == ["Ocean blue view"]
    assert (res.total, res.total_exact, res.verdict) == (1, True, "complete")


def test_a_clause_restricts_the_scope_members_and_its_regime_counts(colours: Library):
    lib = colours
    lawn = lib.conn.execute("SELECT asset_id FROM search_document "
                            "WHERE title = 'Lawn'").fetchone()[0]
    res = run(lib, "blue", scope="sea")
    assert titles(res) == ["Ocean blue view", "Scarlet blue teapot"]
    assert "'sea': 2 members" in res.notices[-1]
    res = run(lib, "blue", scope="sea", clause=OnlyIds([lawn]))
    assert (titles(res), res.total, res.verdict) == ([], 0, "complete")
    assert "'sea': 0 members" in res.notices[-1]


def test_the_clause_enters_every_statement_at_each_entry_point():
    clause = OnlyIds([1])
    lane = st.VectorLane(name="image", lane="image", model_id=7, model="m", dims=4,
                         max_dist=0.5, vector=[1, 0, 0, 0])
    want = {
        st.LEXICAL: ["raw.asset_id", "d.asset_id"],
        st.FUSED: ["raw.asset_id", "v.asset_id", "d.asset_id"],
        st.SCOPED: ["raw.asset_id", "m.asset_id"],
        st.SCOPED_FUSED: ["raw.asset_id", "v.asset_id", "m.asset_id"],
    }
    for kind, entries in want.items():
        lanes = [lane] if kind in (st.FUSED, st.SCOPED_FUSED) else []
        for member in (False, True):
            text = st.compose(kind, lanes, member, clause)
            text = text if isinstance(text, str) else text.as_string(None)
            for col in entries:
                assert clause.sql(col) in text, (kind, member, col)
            # nothing but the clause names the parameter
            assert text.count("%(only_ids)s") == sum(text.count(clause.sql(c))
                                                      for c in ("raw.asset_id", "v.asset_id",
                                                                "d.asset_id", "x.asset_id",
                                                                "m.asset_id"))
            without = st.compose(kind, lanes, member)
            without = without if isinstance(without, str) else without.as_string(None)
            assert "only_ids" not in without
    assert and_clause(None, "v.asset_id") == ""

