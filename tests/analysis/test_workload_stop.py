"""The workload's stop is not a fault's doing: once the harness stops the members, their leaving (the revocations on
close, the rounds the others then go through) and what it re-delivers are blamed on no fault, however close the last
heal was (analysis.history.workload_stop, History.blame_windows: the one attribution rule)."""
from analysis.checks.attribution import attribute
from analysis.figures.run_figures import fault_recovery, no_owner_windows, rounds
from analysis.rundir.history import OPEN, Event, Fault, History, rebuild_ownership, workload_stop

GRACE_MS = 30_000
HEALED = 20_000      # the fault heals 7 s before the stop: the grace covers all of it
STOP = 27_000        # member a begins its close


def event(ts: int, member: str, kind: str, generation: int, partitions=None) -> Event:
    return Event(ts, member, kind, generation, partitions, None, None, ts * 10 + ord(member))


def stopped_run(faults: list[Fault]) -> History:
    """Two eager members; a rebalance during the fault; at the end a leaves (its close revokes), b goes through one
    more round, then b is stopped too."""
    both, p0, p1 = [("t", 0), ("t", 1)], [("t", 0)], [("t", 1)]
    events = [event(0, "a", "started", -1), event(10, "a", "assigned", 1, both),
              event(5_000, "b", "started", -1), event(5_100, "a", "revoked", 1, both),
              event(5_200, "a", "assigned", 2, p0), event(5_200, "b", "assigned", 2, p1),
              event(12_000, "a", "revoked", 2, p0), event(12_000, "b", "revoked", 2, p1),   # during the fault
              event(12_300, "a", "assigned", 3, p0), event(12_300, "b", "assigned", 3, p1),
              event(STOP, "a", "revoked", 3, p0), event(STOP + 5, "a", "stopped", 3),        # the stop
              event(STOP + 100, "b", "revoked", 3, p1), event(STOP + 300, "b", "assigned", 4, both),
              event(STOP + 900, "b", "revoked", 4, both), event(STOP + 905, "b", "stopped", 4)]
    h = History(events=sorted(events, key=lambda e: (e.ts, e.order)), faults=faults, has_events=True, has_faults=True)
    rebuild_ownership(h)
    return h


def recovery(h: History) -> dict:
    rnds = rounds(h)
    return fault_recovery(h, rnds, no_owner_windows(h, [("t", 0), ("t", 1)], STOP + 905), GRACE_MS, STOP + 905)


def test_the_stop_begins_at_the_first_close_after_the_last_heal():
    assert workload_stop(stopped_run([Fault("f", "broker_freeze", "kafka-1", 10_000, HEALED)])) == STOP


def test_a_member_that_a_fault_stops_is_not_the_workloads_stop():
    """member_leave stops its target inside its window: that stop is the fault's, and ends no blame window."""
    h = stopped_run([Fault("leave", "member_leave", "b", 10_000, STOP + 950)])
    assert workload_stop(h) == OPEN


def test_an_unhealed_fault_leaves_no_stop_to_cut_at():
    assert workload_stop(stopped_run([Fault("f", "broker_freeze", "kafka-1", 10_000, None)])) == OPEN


def test_the_stops_rounds_are_no_faults():
    h = stopped_run([Fault("f", "broker_freeze", "kafka-1", 10_000, HEALED)])
    assert [r["start_ms"] for r in rounds(h)][-1] == STOP  # the leave round exists, and begins at a's close
    got = recovery(h)["f"]
    assert got["rebalances"] == 1 and got["rebalance_indexes"] == [3], got  # the round during the fault only


def test_what_the_stop_re_delivers_is_no_faults():
    h = stopped_run([Fault("f", "broker_freeze", "kafka-1", 10_000, HEALED)])
    during, after_heal, after_stop, across = ({"type": "duplicate", "time_ms": t} for t in
                                              ([12_400, 12_500], [21_000, 21_000], [STOP + 400, STOP + 600], [26_000, STOP + 600]))
    found = [during, after_heal, after_stop, across]
    attribute(found, h, GRACE_MS)
    assert [a["fault_ids"] for a in found] == [["f"], ["f"], [], ["f"]]


def test_without_a_stop_the_grace_runs_its_full_length():
    h = stopped_run([Fault("f", "broker_freeze", "kafka-1", 10_000, HEALED)])
    h.events = [e for e in h.events if e.kind != "stopped"]  # a user's run directory whose members never logged one
    found = [{"type": "duplicate", "time_ms": [STOP + 400, STOP + 600]}]
    attribute(found, h, GRACE_MS)
    assert found[0]["fault_ids"] == ["f"] and recovery(h)["f"]["rebalances"] == 2
