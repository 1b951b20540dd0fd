"""benchmarks/range_moves' rule, the range assignor's layout (issue 40, docs/rebalance-cost.md): members in
member-id order, each a run of partitions, the first (partitions mod members) one more. Worked by hand."""
from benchmarks.range_moves import moved_by_rule, ranges


def names(n):
    return [f"member-{i}" for i in range(1, n + 1)]


def test_runs_follow_the_string_order_of_the_ids():
    owner = ranges(["member-2", "member-10", "member-1"], 7)
    assert [owner[p] for p in range(7)] == ["member-1"] * 3 + ["member-10"] * 2 + ["member-2"] * 2


def test_a_joining_member_shifts_the_runs_of_those_sorting_after_it():
    # 10 members, 40 partitions: member-11 sorts after member-10 and before member-2..9, which all shift
    assert moved_by_rule(names(10), names(11), 40) == 26
    # member-51 sorts between member-50 and member-6: only member-6..9's runs shift
    assert moved_by_rule(names(50), names(51), 200) == 10
    # even sorting last, runs shrink: a [0-2] b [3-5] -> a [0-1] b [2-3] c [4-5]: 2 to b, 4 and 5 to c
    assert moved_by_rule(["a", "b"], ["a", "b", "c"], 6) == 3
