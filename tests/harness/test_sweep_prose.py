"""Issue 51: numbers in a page's prose come from its curve (harness/sweep/prose.py): a figure slot's query selects
points of curve.csv and says one figure of them, in the tables' own units and rules (a median from 3 values, the
values under that, 'saturated' never a number)."""
import pytest

from harness.scenario import ScenarioError
from harness.sweep.outputs import curve
from harness.sweep.prose import answer, fill


def cell(style, members, repeat, stable, status="ok", **more):
    return {"cell": f"{style}-{members}-{repeat}", "client": "librdkafka", "partitions_per_member": 4, "style": style,
            "trigger": "crash", "members": members, "repeat": repeat, "status": status, "time_to_stable_ms": stable,
            **more}


CURVE = curve([cell("eager-range", 10, r, s) for r, s in ((1, 10_900), (2, 11_000), (3, 10_950))]
              + [cell("eager-range", 50, r, s) for r, s in ((1, 11_100), (2, 11_400))]
              + [cell("eager-range", 50, 3, 53_000, "invalid")]
              + [cell("consumer-uniform", 10, r, 10_300, latency_hit_steady_p99_ms=5_000.0,
                      latency_hit_rise_p99_ms=-900.0) for r in (1, 2, 3)])


@pytest.mark.parametrize("query, said", [
    ("crash eager-range 10 time_to_stable_ms", "10.9"),             # a median of 3
    ("crash eager-range 50 time_to_stable_ms", "11.1–11.4"),        # 2 valid repeats: their values (the invalid left out)
    ("crash eager-range 10-50 time_to_stable_ms range", "10.9–11.4"),
    ("crash * 10 time_to_stable_ms range", "10.3–10.9"),
    ("crash eager-range 10-50 time_to_stable_ms spread", "10.9–11.4"),   # every repeat's value, not the medians
    ("crash eager-range 10 time_to_stable_ms spread", "10.9–11"),
    ("crash eager-range,consumer-uniform 10 time_to_stable_ms range", "10.3–10.9"),
    ("crash * * cells sum", "9"), ("crash * * valid sum", "8"), ("crash eager-range 50 invalid sum", "1"),
    ("crash consumer-uniform 10 latency_hit_rise_p99_ms", "saturated"),
    ("crash consumer-uniform 10 join_phase_ms", "–"),
])
def test_a_slot_says_the_figure_its_query_selects(query, said):
    assert answer(query, CURVE) == said


def test_a_ratio_is_this_curve_s_median_over_the_other_s_for_the_same_points():
    other = [{**p, "client": "librdkafka", "time_to_stable_ms_median": p["time_to_stable_ms_median"] and
              p["time_to_stable_ms_median"] / 2} for p in CURVE]
    assert answer("crash eager-range 10 time_to_stable_ms ratio", CURVE, lambda: other) == "2×"
    assert answer("crash eager-range 50 time_to_stable_ms ratio", CURVE, lambda: other) == "–"  # no median of 2
    assert answer("crash eager-range 10 time_to_stable_ms theirs", CURVE, lambda: other) == "5.47"  # 10,950 ms / 2


@pytest.mark.parametrize("query, error", [
    ("crash eager-range time_to_stable_ms", r"give TRIGGER STYLES MEMBERS METRIC \[STAT\]"),
    ("crash eager-range 10 speed", "speed is no figure or count"),
    ("crash eager-range 10 time_to_stable_ms mean", "mean is not one of"),
    ("crash eager-range 500 time_to_stable_ms", "selects 0 points"),
    ("crash * 10 time_to_stable_ms", "selects 2 points of the curve; 'value' takes one"),
])
def test_a_slot_that_cannot_be_answered_is_refused_by_name(query, error):
    with pytest.raises(ScenarioError, match=error):
        answer(query, CURVE)


def test_fill_rewrites_each_slot_and_nothing_else(tmp_path):
    text = ("A crash takes <!-- fig: crash eager-range 10 time_to_stable_ms -->99<!-- /fig --> s at 10 members,\n"
            "<!-- fig: crash eager-range 50 time_to_stable_ms -->?<!-- /fig --> s at 50.\n")
    filled = fill(tmp_path / "page.md", text, CURVE)
    assert filled == ("A crash takes <!-- fig: crash eager-range 10 time_to_stable_ms -->10.9<!-- /fig --> s at 10 "
                      "members,\n<!-- fig: crash eager-range 50 time_to_stable_ms -->11.1–11.4<!-- /fig --> s at 50.\n")
    assert fill(tmp_path / "page.md", filled, CURVE) == filled
