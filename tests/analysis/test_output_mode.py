"""Issue 53 (3): output-topic mode on a hand-made run directory (what harness/output_topic.py writes): no events/,
consumed/ read back from the output topic, and output.json with the group's final commits. The checks that need
events are not run, saying why, with a null count (never 0); `lost`, `unseen` and `duplicate` run, and a record below
the group's final commit that no output names is `lost`, not `unseen`. A real Spark."""
import json

import pytest

from analysis import InputError, analyze
from analysis_runs import Run

EVENT_CHECKS = ("member_fatal", "commit_regression", "unapplied_assignment")


def output_run(root, commits) -> Run:
    """t:0 offsets 0-99 and t:1 0-99 acked; the output names t:0 0-99 and t:1 0-49 (member-1 and member-2)."""
    r = Run(root)
    r.produce("t", 0, range(100)).produce("t", 1, range(100))
    r.consume("member-1", "t", 0, range(100), at=100)
    r.consume("member-2", "t", 1, range(50), at=100)
    rd = r.write(events=False)
    (rd / "output.json").write_text(json.dumps({"topic": "enriched-x", "source": "headers", "isolation":
                                                "read_committed", "rows": 150, "unread": 0, "commits": commits}))
    return rd


def test_the_checks_that_need_events_are_not_run_in_output_mode(tmp_path):
    summary = analyze(output_run(tmp_path, {"t:0": 100, "t:1": 50}))
    for name in EVENT_CHECKS:
        check = summary["checks"][name]
        assert check["status"] == "not_run" and check["reason"] == "output-topic mode", (name, check)
        assert summary["anomaly_counts"][name] is None, name
    for name in ("lost", "unseen", "duplicate"):
        assert summary["checks"][name]["ran"], name
    assert summary["lost_records"] == 0 and summary["unseen_records"] == 50


def test_a_record_below_the_final_commit_never_output_is_lost_not_unseen(tmp_path):
    summary = analyze(output_run(tmp_path, {"t:0": 100, "t:1": 80}))
    assert summary["lost_records"] == 30 and summary["unseen_records"] == 20


def test_an_output_file_that_is_not_one_is_bad_input(tmp_path):
    rd = output_run(tmp_path, {"t:0": 100})
    (rd / "output.json").write_text(json.dumps({"commits": {"t0": 1}}))
    with pytest.raises(InputError, match="output.json"):
        analyze(rd)
