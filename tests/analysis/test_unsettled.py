"""Issue 38, item 2: a group that does not settle is a finding. The harness writes group.jsonl (harness/settling.py);
the `unsettled` check turns each `unsettled` row into an anomaly that invalidates the run, with the group's last
description, the lag per partition and each lagging partition's last owner. Planted histories, a real Spark."""
import json

import pytest

from analysis import InputError, analyze
from analysis_runs import T0, Run


def caught_up_until(root) -> Run:
    """m1 owns t:0 and t:1, hands t:1 to m2 at 5000; the group stops consuming t:1 at offset 60 of 100."""
    r = Run(root)
    r.produce("t", 0, range(100)).produce("t", 1, range(100))
    for m in ("m1", "m2"):
        r.event(m, "started", 0, client="librdkafka", protocol="classic", assignor="range", commit="sync")
    r.event("m1", "assigned", 10, ["t:0", "t:1"], generation=1).event("m2", "assigned", 10, [], generation=1)
    r.consume("m1", "t", 0, range(100), at=100, generation=1)
    r.consume("m1", "t", 1, range(40), at=100, generation=1)
    r.event("m1", "committed", 1000, offsets={"t:0": 100, "t:1": 40}, generation=1, requested_at_ms=T0 + 990)
    r.event("m1", "revoked", 4900, ["t:1"], generation=1).event("m2", "assigned", 5000, ["t:1"], generation=2)
    r.consume("m2", "t", 1, range(40, 60), at=5100, generation=2)
    r.event("m2", "committed", 6000, offsets={"t:1": 60}, generation=2, requested_at_ms=T0 + 5990)
    r.event("m1", "stopped", 20000).event("m2", "stopped", 20000)
    return r


def group_rows(rd, *rows):
    (rd / "group.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


DESCRIBED = {"state": "PREPARING_REBALANCE", "members": 1, "assigned": 1, "coordinator": 2}


def test_a_drain_that_timed_out_is_an_anomaly_with_the_groups_last_state_lag_and_owner(tmp_path, spark):
    rd = caught_up_until(tmp_path / "run").write()
    group_rows(rd, {"ts_ms": T0 + 7000, "kind": "described", "phase": "drain", **DESCRIBED},
               {"ts_ms": T0 + 19000, "kind": "unsettled", "phase": "drain", "limit_ms": 12000, "expected_members": 2,
                "partitions": 2, "last_described": DESCRIBED, "lag": {"t:1": 40, "t:0": 0}})
    s = analyze(rd, spark=spark)
    assert s["valid"] is False and s["anomaly_counts"]["unsettled"] == 1
    [a] = [a for a in s["anomalies"] if a["type"] == "unsettled"]
    assert a["phase"] == "drain" and a["reason"] == "not caught up within 12 s"
    assert a["lag"] == {"t:1": 40} and a["last_owner"] == {"t:1": "m2"} and a["members"] == ["m2"]
    assert a["owned_until"] == {"t:1": None} and a["coordinator_owner"] == {}  # m2 still held it; nothing sampled
    assert a["last_described"] == DESCRIBED and a["time_ms"] == [T0 + 7000, T0 + 19000]
    assert s["checks"]["unsettled"]["observed"] is True


def test_a_partition_no_member_applied_is_named_with_the_member_the_coordinator_gave_it_to(tmp_path, spark):
    """Issue 39's 500-member KIP-848 run: t:1's owner revoked it, no member's events ever show it assigned again, and
    the coordinator said member m3 held it. The anomaly says all three: the last owner, when it let go, and m3."""
    r = caught_up_until(tmp_path / "run")
    r.event("m2", "revoked", 6000, ["t:1"], generation=2)
    r.group_state(0, "sampler", interval_ms=500, protocol="consumer", api="ConsumerGroupDescribe v0")
    r.group_state(8000, state="Stable", members=3, assigned=2, group_epoch=3, assignment_epoch=3,
                  member_epochs={"m1": 3, "m2": 3, "m3": 3}, assignments={"m1": ["t:0"], "m2": [], "m3": ["t:1"]},
                  since=7500)
    rd = r.write()
    group_rows(rd, {"ts_ms": T0 + 19000, "kind": "unsettled", "phase": "drain", "limit_ms": 12000, "expected_members": 3,
                    "partitions": 2, "last_described": DESCRIBED, "lag": {"t:1": 40}})
    s = analyze(rd, spark=spark)
    [a] = [a for a in s["anomalies"] if a["type"] == "unsettled"]
    assert a["last_owner"] == {"t:1": "m2"} and a["owned_until"] == {"t:1": T0 + 6000}
    assert a["coordinator_owner"] == {"t:1": "m3"} and a["members"] == ["m2", "m3"]


def test_a_group_not_stable_at_its_join_is_an_anomaly(tmp_path, spark):
    rd = caught_up_until(tmp_path / "run").write()
    group_rows(rd, {"ts_ms": T0 + 3000, "kind": "unsettled", "phase": "join", "limit_ms": 3000, "expected_members": 2,
                    "partitions": 2, "last_described": DESCRIBED, "lag": None})
    s = analyze(rd, spark=spark)
    [a] = [a for a in s["anomalies"] if a["type"] == "unsettled"]
    assert a["reason"] == "not stable within 3 s" and a["lag"] == {} and a["last_owner"] == {}
    assert s["valid"] is False


@pytest.mark.parametrize("overdue", [False, True], ids=["no-debug-log", "its-debug-log"])
def test_a_member_that_never_joined_is_named(tmp_path, spark, overdue):
    """The 200-member sweep cell of 2026-11-28: one hosted librdkafka member started and polled, and the coordinator
    never listed it (199 of 200). The anomaly names it from the coordinator's described member ids (client.id is the
    member's name); a member that had ended is not named. A librdkafka member not assigned within the group's stable
    limit writes its client's group debug lines (workloads/client_debug.py) and logs `join_overdue`: the anomaly
    points at the file."""
    r = caught_up_until(tmp_path / "run")
    r.event("m3", "started", 0, client="librdkafka", protocol="classic", assignor="range", commit="sync")
    r.event("m3", "stopped", 1000)
    if overdue:
        r.event("m2", "join_overdue", 2900, debug_log="logs/m2.cgrp.log", waited_ms=2900)
    r.group_state(0, "sampler", interval_ms=500, protocol="classic", api="DescribeGroups v5")
    r.group_state(2500, state="Stable", members=1, assigned=2, member_ids={"m1-5b1e": "m1"}, since=2000)
    rd = r.write()
    group_rows(rd, {"ts_ms": T0 + 3000, "kind": "unsettled", "phase": "join", "limit_ms": 3000, "expected_members": 2,
                    "partitions": 2, "last_described": DESCRIBED, "lag": None})
    s = analyze(rd, spark=spark)
    [a] = [a for a in s["anomalies"] if a["type"] == "unsettled"]
    assert a["unlisted"] == ["m2"] and a["members"] == ["m2"]
    assert a["debug_logs"] == ({"m2": "logs/m2.cgrp.log"} if overdue else {})
    assert a["reason"] == ("not stable within 3 s; m2: started, alive, and not in the group the coordinator "
                           "described" + (" (its client's group log: logs/m2.cgrp.log)" if overdue else ""))
    assert not any("unknown kind" in w for w in s.get("warnings") or []), s.get("warnings")


def test_a_settled_group_and_a_run_without_group_jsonl_are_valid(tmp_path, spark):
    rd = caught_up_until(tmp_path / "run").write()
    s = analyze(rd, spark=spark)
    assert s["anomaly_counts"]["unsettled"] == 0 and s["checks"]["unsettled"]["observed"] is False
    group_rows(rd, {"ts_ms": T0 + 100, "kind": "described", "phase": "join", **DESCRIBED})
    s = analyze(rd, spark=spark)
    assert s["anomaly_counts"]["unsettled"] == 0 and s["checks"]["unsettled"]["observed"] is True


def test_a_broken_group_row_is_bad_input_naming_the_line(tmp_path, spark):
    rd = caught_up_until(tmp_path / "run").write()
    group_rows(rd, {"ts_ms": T0, "kind": "unsettled", "limit_ms": "soon"})
    with pytest.raises(InputError, match=r"group.jsonl:1: column 'limit_ms'"):
        analyze(rd, spark=spark)
