"""Issue 40: the curve a sweep publishes from its cells: each point the median of its settled repeats with their
range; an unsettled cell counted and left out of the medians; styles in the grid's order; the cells the machine
strained counted, with the median CPU pressure."""
import pytest

from harness.sweep.outputs import curve, markdown, strained, took


def row(style, repeat, status="ok", stable=None, members=10):
    return {"cell": f"c-{style}-{members}-{repeat}", "client": "librdkafka", "partitions_per_member": 4, "style": style,
            "trigger": "join", "members": members, "repeat": repeat, "status": status, "time_to_stable_ms": stable,
            "unserved_longest_ms": stable, "unserved_partition_s": 1.0, "revoked": 3, "moved": 3, "needed": 3,
            "latency_rise_p99_ms": 10.0, "join_phase_ms": None if stable is None else stable + 740, "assignment_ms": 41}


def test_a_point_is_the_median_of_its_settled_repeats_and_counts_the_unsettled_apart():
    rows = [row("cooperative-sticky", 1, stable=1000), row("cooperative-sticky", 2, stable=3000),
            row("cooperative-sticky", 3, "unsettled"), row("eager-range", 1, stable=800)]
    points = curve(rows)
    assert [p["style"] for p in points] == ["eager-range", "cooperative-sticky"]  # the grid's order, not the alphabet's
    coop = points[1]
    assert (coop["cells"], coop["settled"], coop["unsettled"]) == (3, 2, 1)
    assert (coop["time_to_stable_ms_median"], coop["time_to_stable_ms_min"], coop["time_to_stable_ms_max"]) == (2000, 1000, 3000)
    table = markdown(points)
    assert "| cooperative-sticky | 10 | 2 / 3 | 2 [1–3] |" in table and "| eager-range | 10 | 1 / 1 | 0.8 |" in table
    assert "| 2,740 [1,740–3,740] | 41 |" in table  # milliseconds as whole numbers


def test_a_point_whose_repeats_all_failed_to_settle_has_no_figures():
    [point] = curve([row("consumer-range", 1, "unsettled", members=500)])
    assert point["settled"] == 0 and point["time_to_stable_ms_median"] is None
    assert "| consumer-range | 500 | 0 / 1 | – |" in markdown([point])


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
    assert markdown([calm]).splitlines()[4].endswith("| 41 | – |")
