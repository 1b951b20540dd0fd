"""Issue 56, one real run in `make test`: `commit: transaction` on the librdkafka member (workloads/transactions.py),
3 members, 6,000 records, every third transaction aborted on purpose, member-2's transaction coordinator
(txn-coordinator:member-2, found from the transactional id member-2's producer sent in InitProducerId) frozen 4 s. What
the transactions committed, read back read_committed, is every record once; the aborts rewind; EndTxn is observed."""
import json

import pytest

from scenario_files import catalog

pytestmark = pytest.mark.cluster


def jsonl(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_transactions_through_an_abort_every_third_and_a_frozen_transaction_coordinator(chaos_run):
    run = chaos_run({
        "producer": {"records": 6000, "rate": 1000},
        "consumer_group": {"members": 3, "commit": "transaction", "transaction": {"abort_every": 3}},
        "faults": [{"kind": "broker_freeze", "target": "txn-coordinator:member-2", "at_s": 3, "duration_s": 4},
                   {"kind": "rpc", "target": "member-2", "api": "EndTxn", "action": "observe", "at_s": 0,
                    "duration_s": 20}]})
    assert run.errors == [] and run.drained and run.unsettled == [], (run.errors, run.unsettled)
    s = run.summary
    assert s["valid"] is True and s["lost_records"] == 0 and s["duplicated_offsets"] == 0, s["anomaly_counts"]
    assert s["consumed_rows"] == s["produced_records"] == 6000  # read back from the output topic, read_committed
    events = {p.stem: jsonl(p) for p in (run.run_dir / "events").glob("member-*.jsonl")}
    kinds = [e["kind"] for evs in events.values() for e in evs]
    assert kinds.count("committed") >= 3 and kinds.count("rewound") >= 1, kinds
    aborted = [e for evs in events.values() for e in evs if e["kind"] == "commit_failed"]
    assert aborted and all(e.get("aborted") is True for e in aborted), aborted
    assert all(e["commit"] == "transaction" for evs in events.values() for e in evs if e["kind"] == "started")
    faults = jsonl(run.run_dir / "faults.jsonl")
    [frozen] = [f for f in faults if f["kind"] == "broker_freeze"]
    assert frozen["target"].startswith("kafka-") and frozen.get("inject_error") is None, frozen
    [observe] = [f for f in faults if f["kind"] == "rpc"]
    hits = observe["hits"]
    assert hits and all(h["member"] == "member-2" and h["transactional_id"] == f"{group_id(run)}-member-2"
                        and h["producer_id"] >= 0 for h in hits), hits[:2]
    assert {h["committed"] for h in hits} == {True, False}, hits  # commits, and the aborts on purpose
    # librdkafka speaks transaction version 1 (librdkafka#5423): EndTxn v1, the producer's epoch the same throughout
    assert {h["version"] for h in hits} == {1} and len({h["epoch"] for h in hits}) == 1, hits


def group_id(run) -> str:
    return json.loads((run.run_dir / "plan.json").read_text())["group_id"]


@pytest.mark.slow
def test_the_catalog_run_through_a_frozen_transaction_coordinator(chaos_run):
    """scenarios/eos-txn-coordinator-freeze.yaml as users run it: every record once in the committed output, and
    member-2's transaction ended (committed, or aborted on purpose) only after its coordinator thawed: a commit window
    that spans the freeze."""
    run = chaos_run(catalog("eos-txn-coordinator-freeze"))
    assert run.errors == [] and run.drained, run.errors
    s = run.summary
    assert s["valid"] is True and s["lost_records"] == 0 and s["duplicated_offsets"] == 0, s["anomaly_counts"]
    assert s["anomaly_counts"]["backwards"] == 0
    [frozen] = [f for f in jsonl(run.run_dir / "faults.jsonl") if f["kind"] == "broker_freeze"]
    windows = [(e["requested_at_ms"], e["ts_ms"]) for e in jsonl(run.run_dir / "events" / "member-2.jsonl")
               if e["kind"] in ("committed", "commit_failed")]
    assert any(sent < frozen["inject_done_ms"] and frozen["healed_at_ms"] <= answered for sent, answered in windows), \
        (frozen, windows)
