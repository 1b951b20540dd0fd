"""Stateful members on a real cluster (issue 54): hosted librdkafka members keep a per-key state, write it through to
the changelog and restore a moved partition from it; the exact state check finds every consumed record applied once."""
import json



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
