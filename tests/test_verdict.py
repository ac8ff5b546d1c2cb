"""The verdict rules (loupe.search.verdict, C4/C5), without a database:
each rule R1–R5 and each total T1–T3 on the counts that decide it."""

import pytest

from loupe.search.verdict import (COMPLETE, TRUNCATED, UNKNOWN, Counts, Verdict, decide,
                                  lexical_complete, lexical_total, meaning_only,
                                  rows_are_lexical, scope_complete)


def lexical(**kw) -> Counts:
    """Counts of a library-wide lexical-only search (keep cap 1000)."""
    base = dict(candidates=10, all_read=True, keep_cap=1000, max_df=10, rows=10)
    return Counts(**{**base, **kw})


# -- R2 + T1: the lexical lane ------------------------------------------------------

def test_every_posting_read_within_the_keep_cap_is_complete_and_exact():
    assert decide(lexical()) == Verdict(COMPLETE, 10, True)


def test_keep_cap_reached_exactly_is_still_complete():
    c = lexical(candidates=1000, max_df=1000, rows=1000)
    assert decide(c) == Verdict(COMPLETE, 1000, True)


def test_one_asset_over_the_keep_cap_is_truncated_with_the_exact_count():
    # every posting was read, so the count of assets reached is exact
    c = lexical(candidates=1001, max_df=900, rows=1000)
    assert decide(c) == Verdict(TRUNCATED, 1001, True)


def test_a_term_not_read_to_its_end_is_truncated_at_least_max_df():
    c = lexical(candidates=3000, all_read=False, max_df=25_000, rows=1000)
    assert decide(c) == Verdict(TRUNCATED, 25_000, False)


def test_title_band_rows_the_walk_did_not_reach_join_the_total():
    c = lexical(candidates=1200, all_read=False, max_df=0, title_band_unreached=7, rows=1007)
    assert lexical_total(c) == 1207
    assert decide(c) == Verdict(TRUNCATED, 1207, False)


# -- R1: the typo fallback ------------------------------------------------------------

def test_a_corrected_query_is_unknown_and_never_exact_even_when_all_was_read():
    c = lexical(corrected=True, candidates=3, max_df=3, rows=3)
    assert decide(c) == Verdict(UNKNOWN, 3, False)


def test_a_corrected_fused_search_tells_the_largest_proven_count():
    c = lexical(corrected=True, candidates=1500, rows=1000, max_df=1500)
    assert decide(c) == Verdict(UNKNOWN, 1500, False)


def test_a_corrected_scoped_search_is_unknown_even_in_the_direct_regime():
    c = lexical(corrected=True, regime="direct", rows=4)
    assert decide(c) == Verdict(UNKNOWN, 4, False)


# -- R4/R5 + T2: fused with vector lanes ------------------------------------------

def test_one_word_that_matched_keeps_the_lexical_verdict_and_total():
    c = lexical(vector_lanes=2, word_lanes=True, one_word=True, rows=12)
    assert rows_are_lexical(c)
    assert decide(c) == Verdict(COMPLETE, 10, True)


def test_one_word_bridged_by_the_text_lane_is_unknown():
    c = lexical(candidates=0, max_df=0, vector_lanes=1, word_lanes=True, one_word=True, rows=5)
    assert not rows_are_lexical(c)
    assert decide(c) == Verdict(UNKNOWN, 5, False)
    assert meaning_only(c)


def test_one_word_with_only_the_image_lane_stays_lexical_even_with_no_match():
    c = lexical(candidates=0, max_df=0, vector_lanes=1, word_lanes=False, one_word=True,
                rows=0)
    assert rows_are_lexical(c)
    assert decide(c) == Verdict(COMPLETE, 0, True)
    assert not meaning_only(c)


def test_several_words_with_vector_lanes_are_unknown_at_least_the_larger_count():
    c = lexical(vector_lanes=1, word_lanes=True, rows=180, candidates=40, max_df=40)
    assert decide(c) == Verdict(UNKNOWN, 180, False)
    c = lexical(vector_lanes=1, rows=30, candidates=40, max_df=55)
    assert decide(c) == Verdict(UNKNOWN, 55, False)


def test_meaning_only_needs_rows_no_word_match_and_no_correction():
    bridge = dict(candidates=0, max_df=0, vector_lanes=1, word_lanes=True, rows=3)
    assert meaning_only(lexical(**bridge))
    assert not meaning_only(lexical(**{**bridge, "rows": 0}))
    assert not meaning_only(lexical(**{**bridge, "corrected": True}))
    assert not meaning_only(lexical(**{**bridge, "title_band_unreached": 1}))
    assert not meaning_only(lexical(**{**bridge, "vector_lanes": 0}))


# -- R3 + T3: inside a scope -----------------------------------------------------------

def test_direct_regime_is_complete_by_construction_whatever_the_lane_saw():
    c = lexical(regime="direct", candidates=5000, all_read=False, rows=31)
    assert scope_complete(c)
    assert decide(c) == Verdict(COMPLETE, 31, True)


@pytest.mark.parametrize("deep_all_read, want", [(True, COMPLETE), (False, TRUNCATED)])
def test_deep_regime_is_complete_when_every_term_fits_the_deep_cap(deep_all_read, want):
    c = lexical(regime="deep", candidates=5000, all_read=False, deep_all_read=deep_all_read,
                rows=800)
    assert decide(c) == Verdict(want, 800, want == COMPLETE)


@pytest.mark.parametrize("candidates, all_read, want",
                         [(900, True, COMPLETE), (1001, True, TRUNCATED),
                          (10, False, TRUNCATED)])
def test_no_band_regime_keeps_the_lanes_own_verdict(candidates, all_read, want):
    c = lexical(regime="none", candidates=candidates, all_read=all_read, rows=20)
    assert decide(c) == Verdict(want, 20, want == COMPLETE)


def test_scoped_vector_scan_is_exact_only_direct_and_with_no_member_waiting():
    fused = dict(vector_lanes=1, word_lanes=True, rows=14)
    assert decide(lexical(regime="direct", **fused)) == Verdict(COMPLETE, 14, True)
    assert decide(lexical(regime="direct", waiting=3, **fused)) == Verdict(UNKNOWN, 14, False)
    assert decide(lexical(regime="deep", deep_all_read=True, **fused)) == \
        Verdict(UNKNOWN, 14, False)


def test_scoped_one_word_keeps_the_scope_verdict():
    c = lexical(regime="deep", deep_all_read=False, vector_lanes=1, word_lanes=True,
                one_word=True, rows=9)
    assert decide(c) == Verdict(TRUNCATED, 9, False)


def test_an_unknown_regime_is_refused():
    with pytest.raises(ValueError, match="regime 'wide' is not one of direct, deep, none"):
        lexical(regime="wide")


def test_lexical_complete_compares_with_the_cap_it_ran_under():
    assert lexical_complete(lexical(candidates=50, keep_cap=50))
    assert not lexical_complete(lexical(candidates=51, keep_cap=50))
    assert not lexical_complete(lexical(all_read=False))


def test_a_scoped_one_word_bridge_by_the_text_lane_is_unknown():
    # no word matched: the rows are the text lane's neighbours, so the scope's
    # lexical completeness says nothing about them (before the one pipeline,
    # the scoped path called this "complete" in a deep scope read to its end)
    c = lexical(regime="deep", deep_all_read=True, candidates=0, max_df=0, vector_lanes=1,
                word_lanes=True, one_word=True, rows=4)
    assert decide(c) == Verdict(UNKNOWN, 4, False)
    # not even in the direct regime: its band keeps only rows the word matched
    # (V5), so the exact scan over members does not reach the bridge's rows
    assert decide(lexical(regime="direct", candidates=0, max_df=0, vector_lanes=1,
                          word_lanes=True, one_word=True, rows=4)) == Verdict(UNKNOWN, 4, False)
