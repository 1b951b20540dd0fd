"""The interval arithmetic (analysis/intervals.py): the stretches of a range that no span covers, half-open and inclusive, and time spans merged across short gaps."""
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


def test_merge_spans_joins_spans_across_gaps_up_to_the_limit_only():
    from analysis.intervals import Span, merge_spans
    assert merge_spans([0, 15, 100], [10, 20, 110], [1, 2, 3], 5) == [Span(0, 20, 2), Span(100, 110, 3)]
    assert merge_spans([0, 16], [10, 20], [1, 2], 5) == [Span(0, 10, 1), Span(16, 20, 2)]


def test_merge_spans_keeps_keys_apart_and_sorts_by_key_and_time():
    from analysis.intervals import Span, merge_spans
    got = merge_spans([50, 0, 3], [60, 10, 4], [9, 1, 2], 5, key=[2, 1, 2])
    assert got == [(1, Span(0, 10, 1)), (2, Span(3, 4, 2)), (2, Span(50, 60, 9))]
    assert merge_spans([], [], [], 5) == []


def test_the_interval_arithmetic_imports_nothing_of_the_package():
    """The executors get it by value (analysis/engine/spark_plan.py by_value): an import of the package would need
    the package installed beside them."""
    import ast
    from pathlib import Path
    import analysis.intervals as intervals
    tree = ast.parse(Path(intervals.__file__).read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)} | \
        {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not {m for m in imported if m and m.split(".")[0] == "analysis"}, imported
