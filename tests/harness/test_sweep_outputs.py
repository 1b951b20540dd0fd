"""Issues 40 and 51: the curve a sweep publishes from its cells: each figure over the settled and valid repeats with
its n (the median and range from 3 values, the values under 3); unsettled and invalid cells counted and left out;
a latency figure from a saturated steady state never a number; styles in the grid's order; the cells the machine
strained counted, with the median CPU pressure."""
import pytest

from harness.sweep.outputs import SATURATED_MS, curve, figure_text, markdown, strained, took


def row(style, repeat, status="ok", stable=None, members=10, **more):
    return {"cell": f"c-{style}-{members}-{repeat}", "client": "librdkafka", "partitions_per_member": 4, "style": style,
            "trigger": "join", "members": members, "repeat": repeat, "status": status, "time_to_stable_ms": stable,
            "unserved_longest_ms": stable, "unserved_partition_s": 1.0, "revoked": 3, "moved": 3, "needed": 3,
            "latency_steady_p99_ms": 400.0, "latency_rise_p99_ms": 10.0, "latency_hit_steady_p99_ms": 450.0,
            "latency_hit_rise_p99_ms": 900.0, "join_phase_ms": None if stable is None else stable + 740,
            "assignment_ms": 41, **more}


def test_a_point_is_the_median_of_its_valid_repeats_with_its_n_and_counts_the_others_apart():
    rows = [row("cooperative-sticky", 1, stable=1000), row("cooperative-sticky", 2, stable=3000),
            row("cooperative-sticky", 3, stable=2500), row("cooperative-sticky", 4, "unsettled"),
            row("eager-range", 1, stable=800)]
    points = curve(rows)
    assert [p["style"] for p in points] == ["eager-range", "cooperative-sticky"]  # the grid's order, not the alphabet's
    coop = points[1]
    assert (coop["cells"], coop["settled"], coop["valid"], coop["unsettled"]) == (4, 3, 3, 1)
    assert (coop["time_to_stable_ms_median"], coop["time_to_stable_ms_min"], coop["time_to_stable_ms_max"],
            coop["time_to_stable_ms_n"]) == (2500, 1000, 3000, 3)
    table = markdown(points)
    assert "| cooperative-sticky | 10 | 3 / 3 / 4 | 2.5 [1–3] n=3 |" in table
    assert "| eager-range | 10 | 1 / 1 / 1 | 0.8 n=1 |" in table
    assert "| 0.01 n=3 | 3,240 [1,740–3,740] n=3 | 41 n=3 |" in table  # milliseconds as whole numbers


def test_under_three_usable_repeats_a_figure_is_its_values_never_a_median_and_a_range():
    """Two repeats: their median would be their mean, a number no cell had."""
    [point] = curve([row("eager-range", 1, stable=1000), row("eager-range", 2, stable=3000)])
    assert point["time_to_stable_ms_median"] is None and point["time_to_stable_ms_n"] == 2
    assert figure_text(point, "time_to_stable_ms") == "1, 3 n=2"


def test_a_settled_but_invalid_cell_enters_no_figure_and_is_counted_as_invalid():
    """The 500-member librdkafka crash: an invalid cell (1,272 duplicates) beside a calm one gave a 'median' of
    32.6 s that no cell had; now the point has the calm cell's figure alone."""
    rows = [row("consumer-uniform", 1, stable=11_700, members=500),
            row("consumer-uniform", 2, "invalid", stable=53_560, members=500, valid=False,
                anomalies={"duplicate_over_budget": 1272}),
            row("consumer-uniform", 3, "unsettled", members=500)]
    [point] = curve(rows)
    assert (point["settled"], point["valid"], point["invalid"], point["unsettled"]) == (2, 1, 1, 1)
    assert point["time_to_stable_ms_n"] == 1 and point["time_to_stable_ms_max"] == 11_700
    assert "| consumer-uniform | 500 | 2 / 1 / 3 | 11.7 n=1 |" in markdown([point])


def test_a_point_whose_repeats_all_failed_to_settle_has_no_figures():
    [point] = curve([row("consumer-range", 1, "unsettled", members=500)])
    assert point["settled"] == 0 and point["time_to_stable_ms_median"] is None and point["time_to_stable_ms_n"] == 0
    assert "| consumer-range | 500 | 0 / 0 / 1 | – |" in markdown([point])


def test_a_latency_figure_from_a_saturated_steady_state_is_never_a_number():
    """A steady p99 over twice the members' batch wait: the members were behind before the trigger, so a rise
    against it measures the machine (the 200-member Java cells: steady p99 2.5 s, rises down to -5.7 s)."""
    busy = dict(latency_hit_steady_p99_ms=SATURATED_MS + 1.0, latency_hit_rise_p99_ms=-5700.0)
    rows = [row("eager-range", r, stable=1000, members=200, **busy) for r in (1, 2, 3)]
    [point] = curve(rows)
    assert point["latency_hit_rise_p99_ms_n"] == 0 and point["latency_hit_rise_p99_ms_saturated"] == 3
    assert figure_text(point, "latency_hit_rise_p99_ms") == "saturated"
    assert "-5.7" not in markdown([point])
    [mixed] = curve(rows[:1] + [row("eager-range", r, stable=1000, members=200) for r in (2, 3, 4)])
    assert figure_text(mixed, "latency_hit_rise_p99_ms") == "0.9 n=3, 1 saturated"


def test_the_time_a_sweep_took_is_its_cells_time_by_size():
    rows = [{**row("eager-range", 1, stable=1), "seconds": 90.0}, {**row("eager-range", 2, stable=1), "seconds": 96.0},
            {**row("eager-range", 1, stable=1, members=50), "seconds": 120.0}]
    assert took(rows) == "5.1 min of cells (10 members 3.1 min, 50 members 2.0 min)"


@pytest.mark.parametrize("trigger, expired, stalls, expect", [
    ("crash", 1, 0, False),   # the crashed member's own session: the trigger's
    ("crash", 2, 0, True),    # one more: the machine let a live member's session lapse
    ("join", 1, 0, True),
    ("join", 0, 3, True),     # the brokers' controller stalled in the window
    ("join", None, None, False),  # measured before these figures existed: not known, not strained
])
def test_a_cell_is_strained_when_more_sessions_expired_than_its_trigger_explains_or_the_brokers_stalled(
        trigger, expired, stalls, expect):
    assert strained({"trigger": trigger, "sessions_expired": expired, "broker_stalls": stalls}) is expect


def test_a_point_counts_its_strained_cells_and_shows_the_median_cpu_pressure():
    rows = [{**row("consumer-uniform", r, stable=1000, members=500), "sessions_expired": e, "broker_stalls": 0,
             "cpu_pressure_pct": p} for r, e, p in ((1, 430, 91.0), (2, 0, 85.5), (3, 0, 88.0))]
    [point] = curve(rows)
    assert point["strained"] == 1 and point["cpu_pressure_pct_median"] == 88.0
    assert markdown([point]).splitlines()[4].endswith("| CPU 88 %, strained 1 / 3 |")
    [calm] = curve([{**row("eager-range", 1, stable=800), "cpu_pressure_pct": None}])
    assert markdown([calm]).splitlines()[4].endswith("| 41 n=1 | – |")
