"""Issue 56, one real run in `make test`: `commit: transaction` on the librdkafka member (workloads/transactions.py),
3 members of either client, 6,000 records, every third transaction aborted on purpose, member-2's transaction coordinator
(txn-coordinator:member-2, found from the transactional id member-2's producer sent in InitProducerId) frozen 4 s. What
the transactions committed, read back read_committed, is every record once; the aborts rewind; EndTxn is observed."""
import json

import pytest

from scenario_files import catalog

pytestmark = pytest.mark.cluster
TXN_STATES = {"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort",
              "PrepareEpochFence", "unknown"}


def jsonl(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# make test runs the librdkafka member (issue 56: one real run there); the Java member's in the nightly
ONE_REAL_RUN = ["librdkafka", pytest.param("java-member", marks=pytest.mark.slow)]


def test_a_member_that_leaves_mid_transaction_commits_it_and_stops(chaos_run):
    """A graceful close with a transaction open (transactions 3 s long, member-2 leaves 2 s into its first): the
    member commits the transaction with its offsets, then leaves (the first version closed its consumed log first and
    died in the commit's window, ValueError: I/O operation on closed file); every record once."""
    run = chaos_run({
        "producer": {"records": 4000, "rate": 1000},
        "consumer_group": {"members": 2, "commit": "transaction", "transaction": {"interval_ms": 3000}},
        "faults": [{"kind": "member_leave", "target": "member-2", "at_s": 2.5, "duration_s": 1}]})
    assert run.errors == [] and run.drained, run.errors
    assert run.summary["valid"] is True and run.summary["lost_records"] == 0, run.summary["anomaly_counts"]
    [left] = [f for f in jsonl(run.run_dir / "faults.jsonl") if f["kind"] == "member_leave"]
    events = jsonl(run.run_dir / "events" / "member-2.jsonl")
    assert events[-1]["kind"] == "stopped", events[-3:]
    committed = [e for e in events if e["kind"] == "committed" and e["ts_ms"] >= left["injected_at_ms"]]
    assert committed, "member-2 did not commit its open transaction when it left"
    rows = jsonl(run.run_dir / "transactions" / "member-2.jsonl")
    assert any(r["op"] == "commit" and r.get("error") is None and r["ts_ms"] >= left["injected_at_ms"] for r in rows)


@pytest.mark.slow
@pytest.mark.parametrize("client", ["librdkafka", "java-member"])
def test_a_transactional_id_per_input_partition_fences_the_crashed_owner_by_the_id(chaos_run, client):
    """transaction.transactional_id: partition (the pattern before KIP-447): a producer an input partition, named
    <group>-<topic>-<partition> whoever owns it. member-2 crashed mid-run (every third transaction aborted on purpose
    besides): its partitions' next owners init their ids, which aborts what member-2 left open; every exactly-once
    promise holds, and every row names its partition's id."""
    run = chaos_run({
        "producer": {"records": 6000, "rate": 1000},
        "consumer_group": {"client": client, "members": 3, "commit": "transaction",
                           "transaction": {"transactional_id": "partition", "abort_every": 3}},
        "faults": [{"kind": "member_crash", "target": "member-2", "at_s": 3, "duration_s": 3}]})
    assert run.errors == [] and run.drained, run.errors
    counts = run.summary["anomaly_counts"]
    assert {c: counts[c] for c in EOS_PROMISES} == dict.fromkeys(EOS_PROMISES, 0), counts
    assert run.summary["valid"] is True and run.summary["consumed_rows"] == 6000, counts
    topic = json.loads((run.run_dir / "plan.json").read_text())["topics"][0]["name"]
    ids = {r["transactional_id"] for p in (run.run_dir / "transactions").glob("*.jsonl") for r in jsonl(p)}
    assert ids <= {f"{group_id(run)}-{topic}-{p}" for p in range(6)} and len(ids) == 6, ids
    states = jsonl(run.run_dir / "transaction-states.jsonl")
    assert {r["transactional_id"] for r in states if r.get("kind") == "transaction"} == ids


@pytest.mark.parametrize("client", ONE_REAL_RUN)
def test_transactions_through_an_abort_every_third_and_a_frozen_transaction_coordinator(chaos_run, client):
    # 12 s of input: the freeze (3-7 s) holds every member's first transaction (the output partitions kafka-2 leads);
    # at 1,000/s a member had 2 transactions in all, never a third to abort (a fresh clone, 2026-12-01)
    run = chaos_run({
        "producer": {"records": 6000, "rate": 500},
        "consumer_group": {"client": client, "members": 3, "commit": "transaction",
                           "transaction": {"abort_every": 3, "readers": ["read_committed", "read_uncommitted"]}},
        "faults": [{"kind": "broker_freeze", "target": "txn-coordinator:member-2", "at_s": 3, "duration_s": 4},
                   {"kind": "rpc", "target": "member-2", "api": "EndTxn", "action": "observe", "at_s": 0,
                    "duration_s": 30}]})
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
    ended = [e["kind"] == "committed" for e in events["member-2"] if e["ts_ms"] < observe["healed_at_ms"]
             and (e["kind"] == "committed" or (e["kind"] == "commit_failed" and e.get("aborted")))]
    assert {h["committed"] for h in hits} == set(ended), (hits, ended)  # its commits, and its aborts on purpose
    # librdkafka speaks transaction version 1 (librdkafka#5423): EndTxn v1, the producer's epoch the same throughout;
    # the Java client version 2 on these 4.3.1 brokers (KIP-890): EndTxn v5, a new epoch every transaction
    versions = {h["version"] for h in hits}
    if client == "librdkafka":
        assert versions == {1} and len({h["epoch"] for h in hits}) == 1, hits
    else:
        assert versions == {5} and len({h["epoch"] for h in hits}) == len(hits), hits
    check_transaction_log(jsonl(run.run_dir / "transactions" / "member-2.jsonl"), events["member-2"])
    states = [r for r in jsonl(run.run_dir / "transaction-states.jsonl") if r["kind"] == "transaction"]
    mine = [r for r in states if r["transactional_id"] == f"{group_id(run)}-member-2"]
    assert mine and {r["state"] for r in mine} <= TXN_STATES and "Ongoing" in {r["state"] for r in mine}, mine[:3]
    known = [r for r in mine if r["state"] != "unknown"]  # unknown: no coordinator answered (the freeze, a load)
    assert all(r["producer_id"] >= 0 and r["timeout_ms"] == 60_000 and r["coordinator"] for r in known), known[:2]
    assert all(r["error"] for r in mine if r["state"] == "unknown")
    assert {r["transactional_id"] for r in states} == {f"{group_id(run)}-member-{i}" for i in (1, 2, 3)}
    check_open_transactions(jsonl(run.run_dir / "transaction-states.jsonl"), [r for r in states if r["state"] != "unknown"])
    check_verified_readers(run)


def check_open_transactions(rows: list[dict], described: list[dict]) -> None:
    """DescribeProducers on the output partitions' leaders: each partition seen with a transaction open by one of
    the members' producers (the producer ids their coordinators gave any of them), each open transaction's first
    offset an offset."""
    held = [r for r in rows if r["kind"] == "producers"]
    assert {r["partition"].rsplit(":", 1)[1] for r in held} == {str(p) for p in range(6)}, held[:3]
    producers = {r["producer_id"] for r in described}
    opened = [t for r in held for t in r["open"]]
    assert opened and {t["producer_id"] for t in opened} <= producers, (opened[:3], producers)
    assert all(t["txn_start_offset"] >= 0 and t["producer_epoch"] >= 0 for t in opened) and all(r["leader"] for r in held)


EOS_READ_CHECKS = ("eos_duplicate", "eos_lost", "aborted_read", "precommitted_read", "torn_transaction",
                   "nonmonotonic_poll", "poll_skip", "inconsistent_offsets", "offset_output_mismatch")


def check_verified_readers(run) -> None:
    """verified/: the read_committed reader read every record once, to the end; the read_uncommitted one read the
    aborted transactions' records too; every exactly-once check ran and found nothing."""
    readers = json.loads((run.run_dir / "verified" / "readers.json").read_text())
    assert all(r["reached_end"] and r["error"] is None for r in readers.values()), readers
    committed = jsonl(run.run_dir / "verified" / "read_committed.jsonl")
    uncommitted = jsonl(run.run_dir / "verified" / "read_uncommitted.jsonl")
    inputs = {(r["topic"], r["input_partition"], r["input_offset"]) for r in committed}
    assert len(committed) == len(inputs) == 6000 and len(uncommitted) > len(committed), (len(committed), len(uncommitted))
    assert all(r["read_at_ms"] > 0 and r["txn"] >= 1 for r in committed)
    s = run.summary
    assert {name: s["anomaly_counts"][name] for name in EOS_READ_CHECKS} == dict.fromkeys(EOS_READ_CHECKS, 0)


def check_transaction_log(rows: list[dict], events: list[dict]) -> None:
    """transactions/<member>.jsonl agrees with the member's events: one init, as many commits as `committed` events
    and aborts as aborted `commit_failed`, every ack of a committed transaction placed in the output topic, and the
    abort's row after the aborted transaction's sends."""
    ops = [r["op"] for r in rows]
    assert ops[0] == "init" and {"begin", "send", "ack", "send_offsets", "commit", "abort"} <= set(ops), set(ops)
    ended = lambda op: sum(r["op"] == op and "error" not in r and r.get("why") != "partitions lost" for r in rows)  # noqa: E731
    assert ended("commit") == sum(e["kind"] == "committed" for e in events)
    assert ended("abort") == sum(e["kind"] == "commit_failed" and e.get("aborted") is True for e in events)
    committed = {r["txn"] for r in rows if r["op"] == "commit" and "error" not in r}
    acks = [r for r in rows if r["op"] == "ack" and r["txn"] in committed]
    assert acks and all(r["offset"] >= 0 and r["partition"] >= 0 and r["input"].count(":") == 2 for r in acks), acks[:2]
    assert all(r["timeout_ms"] == 60_000 and r["transactional_id"].endswith("-member-2") for r in rows)


def group_id(run) -> str:
    return json.loads((run.run_dir / "plan.json").read_text())["group_id"]


@pytest.mark.slow
@pytest.mark.parametrize("client", ["librdkafka", "java-member"])
def test_the_catalog_run_through_a_frozen_transaction_coordinator(chaos_run, client):
    """scenarios/eos-txn-coordinator-freeze.yaml as users run it: every record once in the committed output, and
    member-2's transaction ended (committed, or aborted on purpose) only after its coordinator thawed: a commit window
    that spans the freeze."""
    run = chaos_run(catalog("eos-txn-coordinator-freeze", client=client))
    assert run.errors == [] and run.drained, run.errors
    s = run.summary
    assert s["valid"] is True and s["lost_records"] == 0 and s["duplicated_offsets"] == 0, s["anomaly_counts"]
    assert s["anomaly_counts"]["backwards"] == 0
    assert {c: s["anomaly_counts"][c] for c in EOS_PROMISES} == dict.fromkeys(EOS_PROMISES, 0), s["anomaly_counts"]
    [frozen] = [f for f in jsonl(run.run_dir / "faults.jsonl") if f["kind"] == "broker_freeze"]
    windows = [(e["requested_at_ms"], e["ts_ms"]) for e in jsonl(run.run_dir / "events" / "member-2.jsonl")
               if e["kind"] in ("committed", "commit_failed")]
    assert any(sent < frozen["inject_done_ms"] and frozen["healed_at_ms"] <= answered for sent, answered in windows), \
        (frozen, windows)


@pytest.mark.parametrize("client", ONE_REAL_RUN)
def test_transaction_version_1_set_for_the_run_and_read_back(chaos_run, kafka_cluster, client):
    """cluster.transaction_version: 1, set on the wire after start-up (the shared cluster formatted at 4.3.1 holds 2),
    read back into cluster.json; the Java client then sends EndTxn below v5 with one epoch throughout (version 1, as
    librdkafka always does). The cluster is set back to 2 after."""
    from harness.cluster.features import apply_features
    try:
        run = chaos_run({
            "cluster": {"transaction_version": 1},
            "producer": {"records": 1000, "rate": 500},
            "consumer_group": {"client": client, "members": 2, "commit": "transaction"},
            "faults": [{"kind": "rpc", "target": "member-1", "api": "EndTxn", "action": "observe", "at_s": 0,
                        "duration_s": 10}]})
        assert run.errors == [] and run.summary["valid"] is True, (run.errors, run.summary["anomaly_counts"])
        cluster = json.loads((run.run_dir / "cluster.json").read_text())
        assert cluster["transaction_version"] == 1 and cluster["features"]["transaction.version"] == 1, cluster["features"]
        [observe] = [f for f in jsonl(run.run_dir / "faults.jsonl") if f["kind"] == "rpc"]
        hits = observe["hits"]
        assert hits and max(h["version"] for h in hits) < 5 and len({h["epoch"] for h in hits}) == 1, hits
    finally:
        assert apply_features(kafka_cluster, 2)["transaction.version"] == 2


EOS_PROMISES = ("eos_duplicate", "eos_lost", "aborted_read", "precommitted_read", "torn_transaction")
CATALOG = ("eos-txn-coordinator-crash", "eos-group-coordinator-crash", "eos-group-coordinator-freeze",
           "eos-member-crash", "eos-member-cut", "eos-member-freeze-past-txn-timeout", "eos-zombie-fenced",
           "eos-zombie-fenced-kip848")


@pytest.mark.slow
@pytest.mark.parametrize("client", ["librdkafka", "java-member"])
@pytest.mark.parametrize("name", CATALOG)
def test_the_exactly_once_catalog_on_both_clients(chaos_run, name, client):
    """Issue 56's catalog (scenarios/eos-*.yaml; the frozen coordinator's above), each on both clients: the exactly-once promises hold (no record twice
    or lost in the committed output, no aborted or precommitted read, no torn transaction), every check of them run."""
    run = chaos_run(catalog(name, client=client))
    assert run.errors == [] and run.drained, run.errors
    counts = run.summary["anomaly_counts"]
    assert {c: counts[c] for c in EOS_PROMISES} == dict.fromkeys(EOS_PROMISES, 0), counts
    member = {"eos-member-freeze-past-txn-timeout": "member-2", "eos-zombie-fenced": "member-3",
              "eos-zombie-fenced-kip848": "member-3"}.get(name)
    if member is not None:  # its transaction open through the freeze could not commit: aborted, fenced or failed
        [frozen] = [f for f in jsonl(run.run_dir / "faults.jsonl") if f["kind"] == "member_freeze"]
        rows = jsonl(run.run_dir / "transactions" / f"{member}.jsonl")
        after = [r for r in rows if r["ts_ms"] >= frozen["healed_at_ms"] and (r.get("error") or r["op"] == "abort")]
        assert after, f"{member}: no failed or aborted transaction after the thaw"
