"""Issue 53 (3): output-topic mode on a hand-made run directory (what harness/output_topic.py writes): no events/,
consumed/ read back from the output topic, and output.json with the group's final commits. The checks that need
events are not run, saying why, with a null count (never 0); `lost`, `unseen` and `duplicate` run, and a record below
the group's final commit that no output names is `lost`, not `unseen`. A real Spark."""
import json

import pytest

from analysis import InputError, analyze
from analysis_runs import T0, Run

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


def crashed_writer_run(root, end: str) -> Run:
    """A Streams-like output-topic run with its members' events: member-2 owns t:1 and wrote outputs for 0-9 and
    11-19 (10's write was still in its producer) before `end` (crashed: its process killed; or revoked); member-1
    then owns t:1 and replays 5-29 from the last commit."""
    r = Run(root)
    r.produce("t", 1, range(30))
    r.event("member-2", "started", 0).event("member-2", "assigned", 10, ["t:1"])
    r.consume("member-2", "t", 1, [*range(10), *range(11, 20)], at=100)
    if end == "member_crash":  # the harness's kill: no event of the member's, the fault's row says when it stopped
        r.fault("f1", 190, 260, kind="member_crash", target="member-2", ends_process=True, stopped_at_ms=T0 + 200)
    else:
        r.event("member-2", end, 200, **({} if end == "crashed" else {"partitions": ["t:1"]}))
    r.event("member-1", "started", 0).event("member-1", "assigned", 300, ["t:1"])
    r.consume("member-1", "t", 1, range(5, 30), at=400)
    rd = r.write()
    (rd / "output.json").write_text(json.dumps({"topic": "out", "source": "headers", "isolation": "read_committed",
                                                "rows": 44, "unread": 0, "commits": {"t:1": 30}}))
    return rd


def test_an_output_write_lost_with_its_crashed_member_is_no_skip(tmp_path):
    """At least once: the crashed member's unflushed write of offset 10 is replayed by the next owner; the skip
    check counts it apart (unflushed_at_crash), the run stays valid. The same gap with the member alive (revoked)
    is a skip."""
    for end in ("crashed", "member_crash"):
        summary = analyze(crashed_writer_run(tmp_path / end, end))
        assert summary["anomaly_counts"]["skip"] == 0 and summary["lost_records"] == 0, end
        assert summary["checks"]["skip"]["unflushed_at_crash"] == 1, (end, summary["checks"]["skip"])
    revoked = analyze(crashed_writer_run(tmp_path / "revoked", "revoked"))
    assert revoked["anomaly_counts"]["skip"] == 1 and not revoked["valid"]
