"""The loss budget (issue 9): records an at-most-once member committed but never logged before its crash are
`lost_within_budget` and the run stays valid; every other loss stays `lost`, and invalid."""
import pytest

from analysis import analyze
from analysis_runs import Run

def of(s, kind):
    return [a for a in s["anomalies"] if a["type"] == kind]


def crash_run(root, fmt, commit="before_process", crash=True, b_from=60):
    """a owns t:0 and logs 0-49; its last commit says 60 (before_process: the batch 50-59 was committed,
    then a was killed before it logged it). b takes t:0 over in generation 2 from `b_from`."""
    r = Run(root, fmt)
    r.produce("t", 0, range(100))
    for m in ("a", "b"):
        r.event(m, "started", 0, protocol="classic", assignor="range", commit=commit)
    r.event("a", "assigned", 10, ["t:0"], generation=1).event("b", "assigned", 10, [], generation=1)
    r.consume("a", "t", 0, range(0, 50), at=100, generation=1)
    r.event("a", "committed", 120, offsets={"t:0": 50}, generation=1)
    r.event("a", "committed", 250, offsets={"t:0": 60}, generation=1)
    if crash:
        r.fault("f1", 300, 2000, kind="member_crash", target="a")
    r.event("b", "revoked", 1200, [], generation=1).event("b", "assigned", 1300, ["t:0"], generation=2)
    r.consume("b", "t", 0, range(b_from, 100), at=1400, generation=2)
    r.event("b", "committed", 1600, offsets={"t:0": 100}, generation=2)
    r.event("b", "stopped", 2500)
    return r


def test_a_crashed_at_most_once_member_loses_within_its_budget(tmp_path, spark, fmt):
    s = analyze(crash_run(tmp_path / "run", fmt).write(), spark=spark)
    within = of(s, "lost_within_budget")
    assert [(a["offsets"], a["count"], a["members"]) for a in within] == [([50, 59], 10, ["a"])]
    assert "before_process" in within[0]["reason"] and within[0]["fault_ids"] == ["f1"]
    assert s["lost_records"] == 0 and s["anomaly_counts"]["lost_within_budget"] == 10
    assert s["valid"] is True


@pytest.mark.parametrize("commit", ["auto", "before_process"])
def test_a_loss_beyond_the_last_commit_stays_lost(tmp_path, spark, commit):
    """b starts at 65 although a committed 60: 50-59 are in a's budget, 60-64 nobody can explain."""
    s = analyze(crash_run(tmp_path / "run", "jsonl", commit=commit, b_from=65).write(), spark=spark)
    assert [(a["offsets"], a["count"]) for a in of(s, "lost_within_budget")] == [([50, 59], 10)]
    assert [(a["offsets"], a["count"]) for a in of(s, "lost")] == [([60, 64], 5)]
    assert s["valid"] is False


@pytest.mark.parametrize("commit, crash", [("sync", True), ("async", True), ("before_process", False)])
def test_no_budget_under_log_then_commit_or_without_a_crash(tmp_path, spark, commit, crash):
    s = analyze(crash_run(tmp_path / "run", "jsonl", commit=commit, crash=crash).write(), spark=spark)
    assert s["anomaly_counts"]["lost_within_budget"] == 0
    assert [(a["offsets"], a["count"]) for a in of(s, "lost")] == [([50, 59], 10)]
    assert s["valid"] is False


def test_the_commit_mode_is_read_from_old_started_details(tmp_path, spark):
    """Run directories from before the typed `commit` field say it in detail ("commit=before_process")."""
    r = crash_run(tmp_path / "run", "jsonl")
    for m in ("a", "b"):
        r.events[m][0].pop("commit")
        r.events[m][0]["detail"] = "commit=before_process"
    s = analyze(r.write(), spark=spark)
    assert s["anomaly_counts"]["lost_within_budget"] == 10 and s["valid"] is True
