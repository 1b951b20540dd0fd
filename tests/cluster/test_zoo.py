"""The bug zoo (issue 12) on the session cluster. KAFKA-14024 is deterministic, so `make test` runs it on both
releases; the races run under `kafka-chaos zoo --repeat N` in `make nightly`, whose table gives their rates."""
import pytest

from analysis import signature
from harness.zoo import on_release, select

pytestmark = pytest.mark.cluster


def test_kafka_14024_a_cooperative_join_stalls_the_group_on_3_2_0_and_not_on_3_2_1(chaos_run):
    [(_, scenario)] = select(["KAFKA-14024"])
    affected = chaos_run(on_release(scenario, scenario.zoo.affected))
    fixed = chaos_run(on_release(scenario, scenario.zoo.fixed))
    # on 3.2.0 the group may stay stuck past the drain (a finding, analysed like any run); 3.2.1 must catch up
    assert not fixed.errors and fixed.drained, fixed.errors
    assert affected.summary is not None, affected.errors
    waits = [a for a in affected.summary["anomalies"] if a["type"] == "stall" and a["waiting_for"] == "assignment"]
    # a joining member waits for the old ones, stuck in onJoinPrepare until max.poll.interval.ms (30 s) evicts them;
    # the stall check reports a wait once it passes the file's stall_ms (15 s)
    assert any(set(a["members"]) & {"member-2", "member-3"} for a in waits), affected.summary["anomalies"]
    assert fixed.summary["anomaly_counts"]["stall"] == 0, fixed.summary["anomalies"]
    # the file's own signature, over every anomaly row of each run: what `kafka-chaos zoo` counts
    shows = lambda run: signature.find(run.run_dir, scenario.zoo.resolved(scenario.settings())).shown  # noqa: E731
    assert shows(affected) and not shows(fixed)
