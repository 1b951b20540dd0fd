"""Stateful members on a real cluster (issue 54): hosted librdkafka members keep a per-key state, write it through to
the changelog and restore a moved partition from it; the exact state check finds every consumed record applied once."""
import json
from pathlib import Path

import pytest

from harness.scenario import read_yaml

ROOT = Path(__file__).resolve().parents[2]



def jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line]


def test_a_crashed_members_partitions_are_restored_and_the_state_is_exact(chaos_run):
    """member-2 of a hosted cooperative-sticky group crashed at 8 s for 6 s: each partition it owned at the crash is
    restored by its next owner (a restore_end; the restarted member-2 itself, when the assignor gives them back), and
    every key's final value holds each consumed record once."""
    run = chaos_run({
        "topic": {"partitions": 6, "replication_factor": 3},
        "producer": {"records": 15000, "rate": 500},
        "consumer_group": {"members": 3, "members_per_host": 3, "assignor": "cooperative-sticky"},
        "state": {"keys_per_partition": 100},
        "faults": [{"kind": "member_crash", "target": "member-2", "at_s": 8, "duration_s": 6}],
    })
    run.assert_valid()
    run.assert_state_exact()
    crash = next(f for f in jsonl(run.run_dir / "faults.jsonl") if f["kind"] == "member_crash")
    held: set = set()
    for e in jsonl(run.run_dir / "events" / "member-2.jsonl"):
        if e["ts_ms"] > crash["injected_at_ms"]:
            break
        if e["kind"] == "assigned":
            held |= set(e["partitions"])
        elif e["kind"] in ("revoked", "lost"):
            held -= set(e["partitions"])
    assert held, "member-2 owned nothing at its crash"
    restored = {p for path in (run.run_dir / "events").glob("member-*.jsonl") for e in jsonl(path)
                if e["kind"] == "restore_end" and not e["aborted"] and e["ts_ms"] > crash["injected_at_ms"]
                for p in e["partitions"]}
    assert held <= restored, (held, restored)
    final = jsonl(run.run_dir / "state" / "final.jsonl")
    assert sum(r["count"] for r in final) >= 15000 and len(final) == 600, len(final)


STATE_SCENARIOS = ROOT / "scenarios" / "state"


@pytest.mark.slow
@pytest.mark.parametrize("client", ["librdkafka", "java-member"])
@pytest.mark.parametrize("style", ["eager-range", "cooperative-sticky", "static-cooperative-sticky", "consumer-uniform"])
def test_stateful_members_through_a_join_a_crash_and_a_freeze(chaos_run, style, client):
    """scenarios/state/<style>.yaml (nightly: 8 runs, about 20 min): valid, or each state anomaly names its key, input
    offset, member and the fault it falls in; every fault that moved partitions was followed by a restore."""
    scenario = read_yaml(STATE_SCENARIOS / f"{style}.yaml", "scenario")
    if client == "java-member":
        scenario["consumer_group"] = {**scenario["consumer_group"], "client": client, "members_per_host": 2}
    run = chaos_run(scenario)
    state = [a for a in jsonl(run.run_dir / "report" / "anomalies.jsonl") if a["type"] in ("state_duplicate", "state_lost")]
    for a in state:
        assert a["key"] and a["input_offset"] is not None and a["members"] and a["fault_ids"], a
    if not state:
        run.assert_valid()
    restores = [e for path in (run.run_dir / "events").glob("member-*.jsonl") for e in jsonl(path)
                if e["kind"] == "restore_end" and not e["aborted"]]
    faults = jsonl(run.run_dir / "faults.jsonl")
    for fault in faults:
        assert any(e["ts_ms"] >= fault["injected_at_ms"] for e in restores), (fault["kind"], len(restores))
