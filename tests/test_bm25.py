"""BM25 in PostgreSQL equals the reference implementation (bm25s, method "lucene")
on the same tokens, to 1e-6 (L1); BM25F over field groups equals the pure
reference function; corpus statistics and postings stay exact."""

from __future__ import annotations

import math
import random

import bm25s
import pytest
from corpus import add_document

from loupe import Library
from loupe.lexical import B, K1, bm25_idf, bm25_tf, bm25f_term_score, bm25f_tf, lexical_search

WORDS = ("cheetah lion zebra savanna running resting sunset bridge river city night "
         "market bread coffee espresso kitchen mountain snow lake forest red blue").split()


def corpus_tokens(lib: Library, lang: str = "en") -> tuple[list[int], list[list[str]]]:
    """Each document's tokens as BM25 sees them: every lexeme repeated tf times."""
    rows = lib.conn.execute(
        "SELECT d.asset_id, coalesce(array_agg(u.lexeme) FILTER (WHERE u.lexeme IS NOT NULL), "
        "'{}') FROM search_document d LEFT JOIN LATERAL ("
        "  SELECT lexeme FROM unnest(d.tsv), generate_series(1, cardinality(positions))) u ON true"
        " WHERE d.lang = %s GROUP BY d.asset_id ORDER BY d.asset_id", (lang,)).fetchall()
    return [r[0] for r in rows], [list(r[1]) for r in rows]


@pytest.fixture
def corpus(lib: Library) -> Library:
    rng = random.Random(7)
    for i in range(1, 61):
        n = rng.randint(1, 25)
        words = [rng.choice(WORDS[: rng.randint(3, len(WORDS))]) for _ in range(n)]
        # all words in one field group: BM25F with one group of weight 1 is BM25
        add_document(lib, i, {"description": " ".join(words)})
    # stop words only: the value keeps them, so it can be found
    add_document(lib, 61, {"description": "the of and"})
    return lib


@pytest.mark.parametrize("query", ["cheetah", "lion running", "espresso coffee kitchen",
                                   "red blue snow night bridge", "cheetahs RUNNING"])
def test_scores_equal_bm25s(corpus: Library, query: str):
    ids, tokens = corpus_tokens(corpus)
    reference = bm25s.BM25(method="lucene", k1=K1, b=B, dtype="float64")
    reference.index(tokens, show_progress=False)
    result = lexical_search(corpus.conn, corpus.tenant_id, query, "en", limit=1000,
                            correct_typos=False)
    expected = reference.get_scores(result.terms)
    want = {ids[i]: float(s) for i, s in enumerate(expected) if s > 0}
    got = {h.asset_id: h.score for h in result.hits}
    assert (result.total, result.verdict) == (len(want), "complete")
    assert got.keys() == want.keys()
    for asset_id, score in want.items():
        assert got[asset_id] == pytest.approx(score, abs=1e-6)
    # order: phrase bonus, then score descending, then asset id
    bonus = {h.asset_id: h.bonus for h in result.hits}
    ordered = sorted(want, key=lambda a: (-bonus[a], -round(want[a], 9), a))
    assert [h.asset_id for h in result.hits] == ordered


def test_sql_formula_equals_python_formula(lib: Library):
    for n, df in [(10, 1), (10, 10), (1, 1), (1_000_000, 3)]:
        sql = lib.conn.execute("SELECT loupe_bm25_idf(%s, %s)", (n, df)).fetchone()[0]
        assert sql == pytest.approx(bm25_idf(n, df), abs=1e-12)
    for tf, dl, avg in [(1, 10, 10.0), (3, 5, 12.5), (7, 100, 8.0)]:
        sql = lib.conn.execute("SELECT loupe_bm25_tf(%s, %s, %s, %s, %s)",
                               (tf, dl, avg, K1, B)).fetchone()[0]
        assert sql == pytest.approx(bm25_tf(tf, dl, avg), abs=1e-12)
    assert bm25_idf(3, 1) == pytest.approx(math.log(1 + 2.5 / 1.5))


def test_corpus_statistics_are_exact_after_updates_and_deletes(corpus: Library):
    corpus.conn.execute("DELETE FROM asset WHERE id IN (3, 5, 8)")
    add_document(corpus, 10, {"description": "brand new words entirely"})  # update in place
    ids, tokens = corpus_tokens(corpus)
    n_docs, total_len, group_len = corpus.conn.execute(
        "SELECT n_docs, total_len, group_len FROM corpus_stat WHERE lang = 'en'").fetchone()
    assert (n_docs, total_len) == (len(ids), sum(len(t) for t in tokens))
    assert group_len == [0, 0, float(total_len), 0, 0]  # five groups since 0019
    # one posting per (term, document), nothing left of deleted documents
    postings = corpus.conn.execute("SELECT count(*) FROM lexical_posting").fetchone()[0]
    assert postings == sum(len(set(t)) for t in tokens)
    want_df: dict[str, int] = {}
    for toks in tokens:
        for t in set(toks):
            want_df[t] = want_df.get(t, 0) + 1
    got_df = dict(corpus.conn.execute("SELECT term, df FROM lexicon_term WHERE lang = 'en'"))
    assert got_df == want_df


def test_query_of_stop_words_only_finds_the_value_made_of_them(corpus: Library):
    # a query made only of stop words keeps them, as the value made only of
    # them does; the other documents' stop words are not indexed
    res = lexical_search(corpus.conn, corpus.tenant_id, "the of and", "en")
    assert (res.terms, res.total, [h.asset_id for h in res.hits]) == (
        ["and", "of", "the"], 1, [61])
    res = lexical_search(corpus.conn, corpus.tenant_id, "...", "en")
    assert (res.terms, res.total, res.hits) == ([], 0, [])


def test_word_in_no_document_returns_nothing(corpus: Library):
    res = lexical_search(corpus.conn, corpus.tenant_id, "madrid", "en")
    assert (res.terms, res.total, res.hits) == (["madrid"], 0, [])


def test_paging_is_a_window_of_one_ranking(corpus: Library):
    full = lexical_search(corpus.conn, corpus.tenant_id, "red blue", "en", limit=1000)
    page2 = lexical_search(corpus.conn, corpus.tenant_id, "red blue", "en", limit=5, offset=5)
    assert page2.total == full.total
    assert [(h.rank, h.asset_id) for h in page2.hits] == [
        (h.rank, h.asset_id) for h in full.hits[5:10]]
    beyond = lexical_search(corpus.conn, corpus.tenant_id, "red blue", "en", limit=5,
                            offset=10_000)
    assert (beyond.total, beyond.hits) == (full.total, [])



def test_bm25f_equals_the_reference_formula_over_field_groups(lib: Library):
    docs = {
        1: {"title": "red kettle", "description": "a kettle on a wooden countertop"},
        2: {"keywords": "kettle; kitchen", "description": "enamel kettle red red"},
        3: {"description": "a kettle", "creator": "Kettle Studio"},
        4: {"title": "wooden spoon", "description": "spoon"},
    }
    for asset_id, fields in docs.items():
        add_document(lib, asset_id, fields)
    weights, b = (3.0, 2.0, 1.0, 0.5), (0.75, 0.75, 0.75, 0.75)
    # per-group term frequencies and lengths, recomputed from the analysed fields
    group_of = {"title": 0, "filename": 1, "keywords": 1, "description": 2, "collections": 2,
                "location": 2, "people": 2, "creator": 3, "copyright": 3}
    tf: dict[int, dict[str, list[float]]] = {}
    lens: dict[int, list[float]] = {}
    for asset_id, fields in docs.items():
        tf[asset_id], lens[asset_id] = {}, [0.0] * 4
        for name, text in fields.items():
            for term in lib.analyze(text):
                tf[asset_id].setdefault(term, [0.0] * 4)[group_of[name]] += 1
                lens[asset_id][group_of[name]] += 1
    n = len(docs)
    avg = [sum(lens[a][g] for a in docs) / n for g in range(4)]
    for query in ["red kettle", "kettle", "wooden", "studio spoon"]:
        terms = lib.analyze(query, query=True)
        want = {}
        for a in docs:
            score = 0.0
            for t in terms:
                if t in tf[a]:
                    df = sum(1 for d in docs if t in tf[d])
                    score += bm25f_term_score(bm25_idf(n, df),
                                              bm25f_tf(tf[a][t], lens[a], avg, weights, b))
            if score:
                want[a] = score
        res = lexical_search(lib.conn, lib.tenant_id, query, "en", correct_typos=False)
        assert {h.asset_id: pytest.approx(h.score, abs=1e-9) for h in res.hits} == want, query


def test_title_weight_beats_repetition_without_length_bias(lib: Library):
    # same evidence ("lisbon" once), in the title of one and the description of another
    add_document(lib, 1, {"title": "Lisbon", "description": "tram street hill yellow"})
    add_document(lib, 2, {"title": "Tram", "description": "lisbon street hill yellow"})
    res = lexical_search(lib.conn, lib.tenant_id, "lisbon", "en")
    assert [h.asset_id for h in res.hits] == [1, 2]
    assert [h.bonus for h in res.hits] == [2, 1]
