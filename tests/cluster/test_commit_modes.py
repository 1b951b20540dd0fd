"""Commit modes on a real group: each consumes every record once without faults, and commits as it says."""
import pytest

from run_logs import rows

pytestmark = pytest.mark.cluster


@pytest.mark.parametrize("commit", ["auto", pytest.param("before_process", marks=pytest.mark.slow)])
def test_a_commit_mode_without_faults_consumes_everything_once_and_commits(chaos_run, commit):
    outcome = chaos_run({"producer": {"records": 10_000, "rate": 2500},
                         "consumer_group": {"commit": commit, "auto_commit_interval_ms": 500,
                                            "processing": {"per_batch_ms": 5}}})
    assert outcome.errors == [] and outcome.drained, outcome.errors
    summary = outcome.summary
    assert summary["lost_records"] == 0 and summary["duplicated_offsets"] == 0, summary
    events = rows(outcome.run_dir / "events")
    committed = [e for e in events if e["kind"] == "committed"]
    assert committed, "no commit was ever reported"
    if commit == "before_process":  # each batch is committed before a single record of it is logged
        consumed = rows(outcome.run_dir / "consumed")
        first_logged = min(r["consumed_at_ms"] for r in consumed)
        assert min(e["ts_ms"] for e in committed) <= first_logged
