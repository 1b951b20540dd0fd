"""The bug zoo (issue 12) on the session cluster. KAFKA-14024 is deterministic, so `make test` runs it on both
releases; the races run under `kafka-chaos zoo --repeat N` in `make nightly`, whose table gives their rates."""
import pytest

from harness.zoo import on_release, select

pytestmark = pytest.mark.cluster


def test_kafka_14024_a_cooperative_join_stalls_the_group_on_3_2_0_and_not_on_3_2_1(chaos_run):
    [(_, scenario)] = select(["KAFKA-14024"])
    affected = chaos_run(on_release(scenario, scenario.zoo.affected))
    fixed = chaos_run(on_release(scenario, scenario.zoo.fixed))
    for run in (affected, fixed):
        assert not run.errors and run.drained, run.errors
    waits = [a for a in affected.summary["anomalies"] if a["type"] == "stall" and a["waiting_for"] == "assignment"]
    # the joining member waits for the old ones, stuck in onJoinPrepare until max.poll.interval.ms (30 s) evicts them
    assert any("member-3" in a["members"] and a["stalled_ms"] >= 20_000 for a in waits), affected.summary["anomalies"]
    assert fixed.summary["anomaly_counts"]["stall"] == 0, fixed.summary["anomalies"]
