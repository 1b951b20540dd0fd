"""Issue 38, item 5: a short real run of each fault family that no other `make test` item runs, on the session's
cluster: a few thousand records, the fault a second or two in. Each run must end clean (no harness error, drained,
nothing lost, valid) with its fault's row in faults.jsonl injected and healed, and what the family does seen on the
real cluster. The session's ledger (harness/nightly/families.py, tests/conftest.py) fails `make test` when a family ran
nowhere; the long versions of these families stay in the nightly."""
import json

import pytest

pytestmark = pytest.mark.cluster


def short(*faults, records=3000, **group) -> dict:
    return {"producer": {"records": records, "rate": 1000},
            "consumer_group": {"members": 2, "session_timeout_ms": 10_000, **group}, "faults": list(faults)}


def fault_rows(run) -> list[dict]:
    return [json.loads(line) for line in (run.run_dir / "faults.jsonl").read_text().splitlines()]


def clean_run(chaos_run, scenario) -> tuple:
    run = chaos_run(scenario)
    assert run.errors == [] and run.drained and run.unsettled == [], (run.errors, run.unsettled)
    s = run.summary
    assert s["lost_records"] == 0 and s["valid"] is True, s["anomaly_counts"]
    rows = fault_rows(run)
    assert rows and all(r.get("inject_done_ms") and r.get("healed_at_ms") for r in rows), rows
    return run, rows


BROKER_FAULTS = [{"kind": "broker_restart", "target": "kafka-2", "at_s": 1, "duration_s": 2},
                 {"kind": "isolate_broker", "target": "kafka-3", "at_s": 6, "duration_s": 2},
                 {"kind": "split", "target": "kafka-1", "at_s": 11, "duration_s": 2},
                 {"kind": "partition_pair", "target": "cluster", "a": "kafka-2", "b": "kafka-3", "at_s": 16, "duration_s": 2}]


def test_broker_restart_isolation_split_and_pair_one_after_the_other(chaos_run, kafka_cluster):
    """One run, four broker families in turn, 5 s apart (a heal waits for the broker to be registered and unfenced
    again, so one may still be healing as the next begins): the group consumes through all of them, loses nothing."""
    run, rows = clean_run(chaos_run, short(*BROKER_FAULTS, records=20000))
    assert [r["kind"] for r in rows] == [f["kind"] for f in BROKER_FAULTS]
    assert all(b.running() for b in kafka_cluster.brokers)


def test_rolling_restart_rolls_every_broker_in_turn(chaos_run):
    run, [row] = clean_run(chaos_run, short({"kind": "rolling_restart", "target": "cluster", "at_s": 1, "duration_s": 1},
                                            records=6000))
    assert [s["broker"] for s in row["steps"]] == ["kafka-1", "kafka-2", "kafka-3"] and "roll_error" not in row, row


RPC = [("hold", {}), ("delay", {"delay_ms": 800}), ("drop_connection", {"count": 1})]
TOXICS = [("latency", {"latency_ms": 300}), ("bandwidth", {"rate_kb_s": 64}), ("slicer", {"average_size": 64}),
          ("reset_peer", {"timeout_ms": 200}), ("timeout", {"timeout_ms": 0}), ("limit_data", {"bytes": 20000}),
          ("slow_close", {"delay_ms": 500})]


def test_every_toxic_and_rpc_action_on_one_member_in_turn(chaos_run):
    """member-1's lane through each Toxiproxy toxic in turn, 1 s each, and its Heartbeats through each rpc action the
    other tests do not take: every rule has hits on real requests, and the run is clean."""
    toxics = [{"kind": kind, "target": "member-1", **params, "at_s": 1 + 1.5 * i, "duration_s": 1}
              for i, (kind, params) in enumerate(TOXICS)]
    rpc = [{"kind": "rpc", "target": "member-2", "api": "Heartbeat", "action": action, **params,
            "at_s": 1 + 3 * i, "duration_s": 2} for i, (action, params) in enumerate(RPC)]
    run, rows = clean_run(chaos_run, short(*toxics, *rpc, records=12000, heartbeat_interval_ms=300))
    assert {r["kind"] for r in rows} == {k for k, _ in TOXICS} | {"rpc"}
    hits = {r["params"]["action"]: len(r.get("hits", [])) for r in rows if r["kind"] == "rpc"}
    assert all(hits[action] > 0 for action, _ in RPC), hits


def test_disk_full_halts_the_node_and_the_heal_brings_it_back(tmp_path):
    """The short form of test_disk_full.py's nightly run, on a cluster of its own with 32 MB log disks."""
    import secrets

    from analysis.api import analyze
    from harness.cluster import log_disk
    from harness.run import run_scenario
    from harness.scenario import parse_with_unique_names
    scenario = {**short({"kind": "disk_full", "target": "coordinator", "at_s": 2, "duration_s": 4}, records=6000),
                "cluster": {"log_disk_mb": 32}, "analysis": {"grace_ms": 3000}}
    parsed = parse_with_unique_names(scenario, secrets.token_hex(3), "disk_full_short")
    outcome = run_scenario(parsed, tmp_path / "runs", source="test_families")
    assert outcome.errors == [] and outcome.drained, outcome.errors
    s = analyze(outcome.run_dir, **parsed.analysis.options())
    assert s["lost_records"] == 0 and s["produced_records"] == 6000, s["anomaly_counts"]
    [row] = [json.loads(line) for line in (outcome.run_dir / "faults.jsonl").read_text().splitlines()]
    assert row["healed_at_ms"] and row["broker_down_at_heal"] is True, row
    assert "No space left on device" in "\n".join(row["kafka_said"]), row["kafka_said"]
    assert not list(log_disk.DISKS_ROOT.glob(f"{outcome.run_dir.name}-*")), "the run's disks outlived its cluster"
