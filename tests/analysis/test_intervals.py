"""The one rule for the stretches of a range that no span covers (analysis/intervals.py), half-open and inclusive."""
from analysis.intervals import gaps, gaps_inclusive


def test_gaps_between_overlapping_spans_and_at_both_ends():
    spans = [(2, 5, "a"), (3, 4, "b"), (5, 7, "c"), (9, 20, "d")]
    assert gaps(spans, 0, 12) == [(0, 2), (7, 9)]
    assert gaps(spans, 0, 25) == [(0, 2), (7, 9), (20, 25)]
    assert gaps([], 3, 8) == [(3, 8)] and gaps(spans, 3, 7) == []


def test_inclusive_ranges_touching_leave_no_gap():
    assert gaps_inclusive([(0, 4), (5, 9)], 0, 9) == []
    assert gaps_inclusive([(2, 4), (7, 9)], 0, 12) == [(0, 1), (5, 6), (10, 12)]
    assert gaps_inclusive([], 5, 5) == [(5, 5)] and gaps_inclusive([(1, 9)], 3, 4) == []
