"""Your Kafka Streams program under chaos (slow: its first start builds it with Maven). The kafka-chaos plugin alone:
the run is judged from the output topic the program writes, and from the events the contract library's ChaosStreams
writes for it (its tasks, restores and standbys).

    pytest examples/streams/test_streams_app.py
"""
import json

import pytest


def events(run, kind: str) -> list[dict]:
    rows = (json.loads(line) for p in sorted((run.run_dir / "events").glob("member-*.jsonl"))
            for line in p.read_text().splitlines() if line)
    return [e for e in rows if e["kind"] == kind]


@pytest.mark.slow
def test_the_streams_app_loses_nothing_and_duplicates_nothing_with_exactly_once(chaos_run):
    run = chaos_run("scenario.yaml")
    run.assert_valid()
    run.assert_no_loss()
    assert run.summary["duplicate_extra_deliveries"] == 0, "exactly-once delivered a record twice"
    assert {e["protocol"] for e in events(run, "started")} == {"streams"}
    assert all(e.get("task") for e in events(run, "assigned")), "a task's open names the task"
    assert events(run, "restore_start"), "the crashed instance's tasks were restored from their changelog"


@pytest.mark.slow
def test_the_streams_app_on_the_classic_protocol_loses_nothing_through_a_cut(chaos_run):
    """At least once: a record may be delivered twice (Streams commits on its own, so no budget can be judged:
    duplicate_over_budget is not run), none lost, none skipped."""
    run = chaos_run("classic.yaml")
    run.assert_valid()
    run.assert_no_loss()
    assert {e["protocol"] for e in events(run, "started")} == {"classic"}
    assert events(run, "standby_start"), "standby_replicas: 1 gave each task a standby"
