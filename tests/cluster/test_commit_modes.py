"""Commit modes on a real group: each consumes every record once without faults, and commits as it says."""
import pytest

from run_logs import rows
from scenario_files import catalog

pytestmark = pytest.mark.cluster
PROCESSING_MS = 300


@pytest.mark.parametrize("commit", ["auto", pytest.param("before_process", marks=pytest.mark.slow)])
def test_a_commit_mode_without_faults_consumes_everything_once_and_commits(chaos_run, commit):
    outcome = chaos_run({"producer": {"records": 10_000, "rate": 2500},
                         "consumer_group": {"commit": commit, "auto_commit_interval_ms": 500,
                                            "processing": {"per_batch_ms": PROCESSING_MS}}})
    assert outcome.errors == [] and outcome.drained, outcome.errors
    summary = outcome.summary
    assert summary["lost_records"] == 0 and summary["duplicated_offsets"] == 0, summary
    events = rows(outcome.run_dir / "events")
    committed = [e for e in events if e["kind"] == "committed"]
    assert committed, "no commit was ever reported"
    if commit == "before_process":
        # each batch is committed before it is processed (PROCESSING_MS) and logged: a commit is requested
        # within PROCESSING_MS of consume() handing over the batch whose last record it covers
        received = {(r["member"], f"{r['topic']}:{r['partition']}", r["offset"]): r["consumed_at_ms"]
                    for r in rows(outcome.run_dir / "consumed")}
        gaps = [e["requested_at_ms"] - received[(e["member"], tp, offset - 1)] for e in committed
                for tp, offset in e["offsets"].items() if (e["member"], tp, offset - 1) in received]
        assert gaps and sorted(gaps)[len(gaps) // 2] < PROCESSING_MS, f"commits requested after processing: {gaps[:10]}"


@pytest.mark.parametrize("commit", [pytest.param("before_process", marks=pytest.mark.slow), "sync"])  # before_process in the nightly: make test's 30 minutes
def test_a_member_crash_loses_only_what_the_commit_mode_allows(chaos_run, commit):
    """From 3 s, member-1 spends 15 s on its next batch (slow_processing); it is killed at 6 s, inside that
    batch, every time. before_process had committed the batch first: it is lost, and the analysis counts it
    within the loss budget (the run stays valid). The same crash under sync (log, then commit) loses nothing."""
    outcome = chaos_run(catalog("at-most-once-crash", commit=commit))
    assert outcome.errors == [] and outcome.drained, outcome.errors
    summary = outcome.summary
    assert summary["lost_records"] == 0 and summary["valid"] is True, summary["anomalies"][:3]
    acked = {(r["topic"], r["partition"], r["offset"]) for r in rows(outcome.run_dir / "produced") if r["status"] == "ok"}
    consumed = {(r["topic"], r["partition"], r["offset"]) for r in rows(outcome.run_dir / "consumed")}
    within = [a for a in summary["anomalies"] if a["type"] == "lost_within_budget"]
    assert summary["lost_within_budget_records"] == len(acked - consumed)  # every real loss, explained
    if commit == "before_process":
        assert summary["lost_within_budget_records"] > 0
        assert {m for a in within for m in a["members"]} == {"member-1"}
        faults = rows(outcome.run_dir, "faults")
        crash = [f["id"] for f in faults if f["ends_process"]]  # what the analysis reads (issue 24)
        assert crash == [f["id"] for f in faults if f["kind"] == "member_crash"] and crash
        assert all(set(crash) <= set(a["fault_ids"]) for a in within)
    else:
        assert summary["lost_within_budget_records"] == 0 and not within
