"""Issue 40: what one trigger cost the group (analysis/figures/rebalance_cost.py) and the latency around it
(analysis/figures/latency.py), on planted histories; the latency through a real Spark."""
from analysis.rundir import history
from analysis.figures import latency
from analysis.figures import rebalance_cost
from analysis_runs import T0, Run, write_jsonl

P = [("t", p) for p in range(4)]


def two_members(r: Run) -> Run:
    """a owns t:0-1 and b t:2-3 from 100 ms (cooperative-sticky)."""
    for m in ("a", "b"):
        r.event(m, "started", 0, client="librdkafka", protocol="classic", assignor="cooperative-sticky", commit="sync")
    r.event("a", "assigned", 100, ["t:0", "t:1"], generation=1).event("b", "assigned", 100, ["t:2", "t:3"], generation=1)
    return r


def test_a_crash_costs_from_the_kill_not_from_the_coordinator_noticing(tmp_path):
    """b is killed at 10 s; the group gives its partitions to a at 21 s (its session expired). Both partitions went
    unserved from the kill: 11 s each, 22 partition-seconds; they had to move and did."""
    r = two_members(Run(tmp_path / "run"))
    r.fault("member_crash-1", 10_000, 40_000, kind="member_crash", target="b", ends_process=True)
    r.event("a", "assigned", 21_000, ["t:2", "t:3"], generation=2)
    r.event("b", "started", 40_000, client="librdkafka", protocol="classic", assignor="cooperative-sticky", commit="sync")
    h = history.build(r.write())
    cost = rebalance_cost.cost(h, h.faults[0], P, 2, T0 + 40_000)
    assert cost["trigger_ms"] == T0 + 10_000
    assert cost["settled"] and cost["time_to_stable_ms"] == 11_000
    assert cost["unserved_longest_ms"] == 11_000 and cost["unserved_partition_s"] == 22.0
    assert (cost["unserved_partitions"], cost["moved"], cost["needed"], cost["revoked"]) == (2, 2, 2, 0)


def test_a_join_counts_from_the_new_member_starting_and_an_eager_round_revokes_everything(tmp_path):
    """c is launched at 10 s and starts at 13 s (its process's start-up is not the rebalance); eager: a and b revoke
    all at 13.5 s and get their new assignment at 14 s, c at 14 s too: 4 revoked, 1 moved, 1 needed (4 // 3)."""
    r = Run(tmp_path / "run")
    for m in ("a", "b"):
        r.event(m, "started", 0, client="librdkafka", protocol="classic", assignor="range", commit="sync")
    r.event("a", "assigned", 100, ["t:0", "t:1"], generation=1).event("b", "assigned", 100, ["t:2", "t:3"], generation=1)
    r.fault("member_join-1", 10_000, 11_000, kind="member_join", target="group")
    r.event("c", "started", 13_000, client="librdkafka", protocol="classic", assignor="range", commit="sync")
    r.event("a", "revoked", 13_500, ["t:0", "t:1"], generation=1).event("b", "revoked", 13_500, ["t:2", "t:3"], generation=1)
    r.event("a", "assigned", 14_000, ["t:0", "t:1"], generation=2).event("b", "assigned", 14_000, ["t:2"], generation=2)
    r.event("c", "assigned", 14_000, ["t:3"], generation=2)
    h = history.build(r.write())
    cost = rebalance_cost.cost(h, h.faults[0], P, 2, T0 + 40_000)
    assert cost["trigger_ms"] == T0 + 13_000 and cost["time_to_stable_ms"] == 1_000 and cost["first_change_ms"] == 500
    assert cost["unserved_longest_ms"] == 500 and cost["unserved_partition_s"] == 2.0
    assert (cost["revoked"], cost["moved"], cost["needed"], cost["rebalances"]) == (4, 1, 1, 1)


def test_the_figures_read_what_the_row_declares_not_its_kind(tmp_path):
    """A kind the analysis has never heard of (a user's own scale-out) that declares `member_starts` is costed as a
    join: from the new member's first event, its fair share needed."""
    r = two_members(Run(tmp_path / "run"))
    r.fault("scale_out-1", 10_000, 11_000, kind="scale_out", target="group", group_change="member_starts")
    r.event("c", "started", 12_000, client="librdkafka", protocol="classic", assignor="cooperative-sticky", commit="sync")
    r.event("b", "revoked", 12_500, ["t:3"], generation=1).event("c", "assigned", 13_000, ["t:3"], generation=2)
    h = history.build(r.write())
    cost = rebalance_cost.cost(h, h.faults[0], P, 2, T0 + 30_000)
    assert cost["trigger_ms"] == T0 + 12_000 and cost["time_to_stable_ms"] == 1_000
    assert (cost["moved"], cost["needed"], cost["revoked"]) == (1, 1, 1)


def test_a_member_that_leaves_had_its_partitions_to_move(tmp_path):
    """A graceful leave (no process killed) ends a member too: its two partitions had to move."""
    r = two_members(Run(tmp_path / "run"))
    r.fault("member_leave-1", 10_000, 10_000, kind="member_leave", target="b")
    r.event("b", "revoked", 10_100, ["t:2", "t:3"], generation=1).event("a", "assigned", 10_600, ["t:2", "t:3"], generation=2)
    h = history.build(r.write())
    cost = rebalance_cost.cost(h, h.faults[0], P, 2, T0 + 30_000)
    assert cost["time_to_stable_ms"] == 600 and cost["unserved_partition_s"] == 1.0
    assert (cost["moved"], cost["needed"], cost["revoked"]) == (2, 2, 2)


def test_a_partition_still_unserved_at_the_window_end_is_not_settled(tmp_path):
    r = two_members(Run(tmp_path / "run"))
    r.fault("member_crash-1", 10_000, 40_000, kind="member_crash", target="b", ends_process=True)
    h = history.build(r.write())
    cost = rebalance_cost.cost(h, h.faults[0], P, 2, T0 + 30_000)
    assert not cost["settled"] and cost["time_to_stable_ms"] is None and cost["unserved_at_end"] == 2
    assert cost["unserved_longest_ms"] == 20_000


def test_partitions_added_are_unserved_from_the_trigger_until_assigned(tmp_path):
    r = two_members(Run(tmp_path / "run"))
    r.fault("partitions_add-1", 10_000, 11_000, kind="partitions_add", target="topic")
    r.event("a", "assigned", 12_000, ["t:4"], generation=2).event("b", "assigned", 12_500, ["t:5"], generation=2)
    h = history.build(r.write())
    cost = rebalance_cost.cost(h, h.faults[0], P + [("t", 4), ("t", 5)], 2, T0 + 30_000)
    assert cost["time_to_stable_ms"] == 2_500 and cost["unserved_partition_s"] == 4.5
    assert (cost["moved"], cost["needed"], cost["revoked"]) == (2, 2, 0)


def test_nothing_changed_costs_nothing(tmp_path):
    r = two_members(Run(tmp_path / "run"))
    r.fault("member_bounce-1", 10_000, 10_000, kind="member_bounce", target="group")
    h = history.build(r.write())
    cost = rebalance_cost.cost(h, h.faults[0], P, 2, T0 + 30_000)
    assert cost["time_to_stable_ms"] == 0 and cost["unserved_partition_s"] == 0 and cost["moved"] == 0
    assert cost["first_change_ms"] is None


def test_latency_is_first_delivery_minus_ack_in_each_window(tmp_path):
    """Steady: 100 records delivered 5 ms after their ack; in the window 100 more, of which the last 10 waited
    3 s (their partition had no owner) and one was delivered twice (its second delivery is not latency)."""
    r = Run(tmp_path / "run")
    r.produce("t", 0, range(200), at=0, step=100)
    r.consume("m", "t", 0, range(100), at=5, step=100)
    r.consume("m", "t", 0, range(100, 190), at=10_005, step=100)
    r.consume("m", "t", 0, range(190, 200), at=22_000)
    r.consume("m", "t", 0, [150], at=25_000)
    run_dir = r.write()
    from analysis.engine.spark import get_session
    got = latency.delivery_latency(get_session(), run_dir, {"steady": (T0, T0 + 10_000), "window": (T0 + 10_000, T0 + 30_000)})
    assert got["steady"] == {"records": 100, "p50_ms": 5.0, "p99_ms": 5.0, "max_ms": 5}
    assert got["window"]["records"] == 100 and got["window"]["p50_ms"] == 5.0
    assert got["window"]["max_ms"] == 22_000 - 19_000 and got["window"]["p99_ms"] > 2_000


def test_a_hosted_crash_is_timed_from_the_member_s_real_stop_not_from_the_injection(tmp_path):
    """Issue 51: b's host is asked to crash it at 10 s, finishes b's batch (b delivers t:2 until 10.4 s) and destroys
    its consumer at 10.5 s (the row's stopped_at_ms). The cost starts there: 10.5 s to the move at 21 s."""
    r = two_members(Run(tmp_path / "run"))
    r.fault("member_crash-1", 10_000, 40_000, kind="member_crash", target="b", ends_process=True,
            stopped_at_ms=T0 + 10_500)
    r.event("a", "assigned", 21_000, ["t:2", "t:3"], generation=2)
    h = history.build(r.write())
    cost = rebalance_cost.cost(h, h.faults[0], P, 2, T0 + 40_000)
    assert (cost["trigger_ms"], cost["trigger_from"], cost["stop_delay_ms"]) == (T0 + 10_500, "stop", 500)
    assert cost["time_to_stable_ms"] == 10_500 and cost["unserved_partition_s"] == 21.0
    old = two_members(Run(tmp_path / "old"))  # a row written before the field: from the injection, and it says so
    old.fault("member_crash-1", 10_000, 40_000, kind="member_crash", target="b", ends_process=True)
    h_old = history.build(old.write())
    assert rebalance_cost.trigger_time(h_old, h_old.faults[0]) == (T0 + 10_000, "injection")


def test_a_crash_window_ends_at_the_restart_and_a_join_window_runs_its_length(tmp_path):
    """The crashed member restarts at its heal (15 s), another rebalance: the window stops there, not 60 s on; a
    join's window (no member ended) runs its whole length; both are cut at the workload's stop."""
    r = two_members(Run(tmp_path / "run"))
    r.fault("member_crash-1", 10_000, 15_000, kind="member_crash", target="b", ends_process=True,
            group_change="member_ends")
    r.fault("member_join-1", 20_000, 21_000, kind="member_join", target="group", group_change="member_starts")
    for m in ("a", "b"):
        r.event(m, "stopped", 50_000)
    h = history.build(r.write())
    crash, join = h.faults
    assert rebalance_cost.window_end(h, crash, 60_000) == T0 + 15_000
    assert rebalance_cost.window_end(h, join, 60_000) == T0 + 50_000  # the workload stopped before 80 s
    assert rebalance_cost.window_end(h, join, 20_000) == T0 + 40_000


def test_a_cell_the_harness_found_unsettled_has_no_time_to_stable_whatever_its_window_shows(tmp_path):
    """The 200-member 'never joined' cell: every partition served in the window, but the group was not stable within
    its limit (group.jsonl's unsettled row). THE rule (rebalance_cost.settled) says unsettled: no time to stable,
    and its status is unsettled, as a settled one the analysis found invalid is `invalid`."""
    r = two_members(Run(tmp_path / "run"))
    r.fault("member_crash-1", 10_000, 40_000, kind="member_crash", target="b", ends_process=True)
    r.event("a", "assigned", 21_000, ["t:2", "t:3"], generation=2)
    run_dir = r.write()
    write_jsonl(run_dir / "group.jsonl", [{"ts_ms": T0 + 60_000, "kind": "unsettled", "phase": "join",
                                            "limit_ms": 160_000, "expected_members": 2, "partitions": 4}])
    h = history.build(run_dir)
    cost = rebalance_cost.cost(h, h.faults[0], P, 2, T0 + 40_000)
    assert cost["unserved_at_end"] == 0 and not cost["settled"] and cost["time_to_stable_ms"] is None
    assert rebalance_cost.status(cost["settled"], True) == "unsettled"
    assert rebalance_cost.status(True, False) == "invalid" and rebalance_cost.status(True, None) == "invalid"
    assert rebalance_cost.status(True, True) == "ok"


def test_latency_on_chosen_partitions_leaves_the_others_out(tmp_path):
    """The rise where the cost bites: only t:1's records (which waited 3 s), not t:0's."""
    r = Run(tmp_path / "run")
    r.produce("t", 0, range(100), at=0, step=100).produce("t", 1, range(100), at=0, step=100)
    r.consume("m", "t", 0, range(100), at=5, step=100)
    r.consume("m", "t", 1, range(100), at=3_000, step=100)
    from analysis.engine.spark import get_session
    got = latency.delivery_latency(get_session(), r.write(), {"all": (T0, T0 + 20_000)}, partitions=[("t", 1)])
    assert got["all"]["records"] == 100 and got["all"]["p50_ms"] == 3_000.0
