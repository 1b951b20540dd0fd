"""The bug zoo (issue 12) on real clusters. Every bug is a race with a measured rate (KAFKA-14024: 10 of 11, and
one miss in a make test at load 45), so these run under the slow marker in `make nightly`, beside `kafka-chaos zoo
--repeat N`, whose table judges them by their rates."""
import pytest

from analysis.api import signature
from harness.zoo.runner import on_side, select

pytestmark = pytest.mark.cluster


@pytest.mark.slow
def test_kafka_14024_a_cooperative_join_stalls_the_group_on_3_2_0_and_not_on_3_2_1(chaos_run):
    [(_, scenario)] = select(["KAFKA-14024"])
    affected = chaos_run(on_side(scenario, "affected"))
    fixed = chaos_run(on_side(scenario, "fixed"))
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


@pytest.mark.slow
def test_librdkafka_4605_the_admin_probe_aborts_once_the_cut_coordinator_is_back(tmp_path):
    """The open bug, as `kafka-chaos zoo librdkafka#4605 --repeat 1` runs it (its own cluster): the newest release
    only, the probe's death by SIGABRT after a describe timed out (the signature), the probe no group member."""
    import json
    from pathlib import Path

    from harness.zoo.runner import run_bug
    [(path, scenario)] = select(["librdkafka#4605"])
    result = run_bug(path, scenario, 1, tmp_path)
    assert list(result.tallies) == ["affected"]  # open: no fixed release to run
    tally = result.affected
    assert tally.failed == 0, tally.failures
    assert tally.shown == 1, (f"librdkafka#4605: the probe did not abort ({tally.runs}): fixed upstream? check the "
                              f"newest confluent-kafka and drop the workaround in harness/group.py")
    assert result.status() == "open" and result.gate() == []
    [run] = tally.runs
    summary = json.loads((Path(run["run_dir"]) / "report" / "summary.json").read_text())
    assert summary["members"] == ["member-1", "member-2"]  # the probe's events file is read, and it is no member
