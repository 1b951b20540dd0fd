"""Kafka Streams under chaos on a real cluster (issue 55): three instances of the project's Streams program
(workloads/streams: a count and a sum of seq per key in a persistent store), judged from their output topic and their
events, and the exact state check against the produced log.

`make test` runs two: exactly_once_v2 on the streams protocol through a crash (no anomaly at all), and at_least_once
on the classic protocol through a cut past the session (each anomaly named). The other ten of
{at_least_once, exactly_once_v2} x {classic, streams} x {freeze, crash, cut} are the nightly's (slow)."""
import json
from pathlib import Path

import pytest

from kafkanet.client_ids import member_of


FAULTS = {  # the acceptance's: a coordinator freeze, a crash and a cut of member-2
    "freeze": {"kind": "broker_freeze", "target": "coordinator", "at_s": 10, "duration_s": 12},
    "crash": {"kind": "member_crash", "target": "member-2", "at_s": 15, "duration_s": 10},
    "cut": {"kind": "member_cut", "target": "member-2", "at_s": 15, "duration_s": 15},
}
STATE = ("state_duplicate", "state_duplicate_within_budget", "state_lost")
# make test runs one (its 30 minutes); the member_cut family runs there in tests/cluster/test_lanes.py
IN_MAKE_TEST = {("exactly_once_v2", "streams", "crash")}


def jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line]


# Under the streams protocol the request-aware proxy observes every StreamsGroupHeartbeat (key 88) of the first 5 s:
# the version the 4.3.1 client negotiated, which kio must be able to answer for an `error` rule on it.
OBSERVE_88 = {"kind": "rpc", "target": "group", "api": "StreamsGroupHeartbeat", "action": "observe", "at_s": 0,
              "duration_s": 5}


def streams_scenario(guarantee: str, protocol: str, fault: str) -> dict:
    return {"name": f"streams-{guarantee}-{protocol}-{fault}".replace("_", "-"),
            "topic": {"partitions": 6, "replication_factor": 3},
            "producer": {"records": 20000, "rate": 500},
            "consumer_group": {"client": "streams", "protocol": protocol, "members": 3,
                               "streams": {"guarantee": guarantee, "threads": 1}},
            "state": {"keys_per_partition": 1000 // 6 + 1},
            "faults": [FAULTS[fault], *([OBSERVE_88] if protocol == "streams" else [])]}


def kio_versions(module: str) -> set[int]:
    import kio.schema
    return {int(p.name[1:]) for p in (Path(kio.schema.__file__).parent / module).glob("v[0-9]*")}


def check_streams_run(run, guarantee: str, protocol: str) -> None:
    """What every Streams run shows: its tasks in group-states.jsonl, its settings in `started`, the state checks
    run; under exactly_once_v2 no anomaly at all; under at_least_once each state anomaly named (key, partition,
    input offset, members) and in the fault's window, each double apply within the budget (a replay of the
    uncommitted tail), a lost update only where a zombie's late changelog write can explain it (KAFKA-12693: the cut
    member's buffered writes land after the new owner's)."""
    rd = run.run_dir
    summary = json.loads((rd / "report" / "summary.json").read_text())
    for name in STATE:
        assert summary["checks"][name]["status"] == "ran", (name, summary["checks"][name])
    started = [e for p in (rd / "events").glob("member-*.jsonl") for e in jsonl(p) if e["kind"] == "started"]
    assert started and all(e["client"] == "streams" and e["guarantee"] == guarantee and e["protocol"] == protocol
                           and e["commit_interval_ms"] == 1000 and e["statestore_cache_max_bytes"] == 0
                           for e in started), started[:1]
    states = [r for r in jsonl(rd / "group-states.jsonl") if r["kind"] == "state"]
    assert any(r.get("assignments") and sum(len(v) for v in r["assignments"].values()) == 6 for r in states)
    clients = set().union(*(r.get("assignments") or {} for r in states))  # the coordinator's: the threads' client.ids
    assert clients and all(member_of(c, ("member-1", "member-2", "member-3")) for c in clients), clients
    if protocol == "streams":  # key 88 crossed the proxy, at a version kio can answer
        [observe] = [f for f in jsonl(rd / "faults.jsonl") if f["kind"] == "rpc"
                     and f["params"]["api"] == "StreamsGroupHeartbeat"]
        versions = {h["version"] for h in observe["hits"]}
        assert versions and versions <= kio_versions("streams_group_heartbeat"), versions
        assert all(h["member"] in ("member-1", "member-2", "member-3") and h["client_id"].startswith(h["member"] + "-")
                   for h in observe["hits"]), observe["hits"][:2]
    anomalies = jsonl(rd / "report" / "anomalies.jsonl")
    if guarantee == "exactly_once_v2":
        run.assert_valid()
        assert not [a for a in anomalies if a["type"] in STATE + ("duplicate",)], anomalies[:3]
        return
    for a in anomalies:
        if a["type"] in STATE:
            assert a["key"] and a["input_offset"] is not None and a["members"] and a["fault_ids"], a
        assert a["type"] != "state_duplicate", a  # a double apply is a replay of the uncommitted tail: in the budget
        if a["type"] == "state_lost":  # a zombie's write: the cut member, among those that applied it or built past it
            assert "member-2" in a["members"], a


@pytest.mark.parametrize("guarantee,protocol,fault", sorted(IN_MAKE_TEST))
def test_a_streams_group_through_a_fault(chaos_run, guarantee, protocol, fault):
    run = chaos_run(streams_scenario(guarantee, protocol, fault))
    check_streams_run(run, guarantee, protocol)


@pytest.mark.slow
@pytest.mark.parametrize("fault", sorted(FAULTS))
@pytest.mark.parametrize("protocol", ["classic", "streams"])
@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once_v2"])
def test_a_streams_group_through_every_fault(chaos_run, guarantee, protocol, fault):
    if (guarantee, protocol, fault) in IN_MAKE_TEST:
        pytest.skip("in make test: test_a_streams_group_through_a_fault")
    run = chaos_run(streams_scenario(guarantee, protocol, fault))
    check_streams_run(run, guarantee, protocol)


@pytest.mark.slow
def test_a_planted_double_apply_is_named_by_the_state_check(chaos_run, monkeypatch):
    """The program applies input record 1:500 twice (workloads/streams_member.py's planted bug), exactly_once_v2 and
    no fault: the only anomaly is a state_duplicate of that record's key, partition 1, offset 500; its key's final
    count is the records of the key plus one, its sum theirs plus that record's seq (derived by hand from the
    produced log)."""
    monkeypatch.setenv("KAFKA_CHAOS_STREAMS_APPLY_TWICE", "1:500")
    scenario = streams_scenario("exactly_once_v2", "streams", "crash")
    scenario["faults"] = []
    run = chaos_run(scenario)
    rd = run.run_dir
    state = [a for a in jsonl(rd / "report" / "anomalies.jsonl") if a["type"] in STATE]
    assert [(a["type"], a["partition"], a["input_offset"]) for a in state] == [("state_duplicate", 1, 500)], state
    produced = [r for r in _rows(rd / "produced") if r.get("partition") == 1]
    key = next(r["key"] for r in produced if r["offset"] == 500)
    mine = [r for r in produced if r["key"] == key]
    seq_500 = next(r["seq"] for r in mine if r["offset"] == 500)
    final = next(r for r in jsonl(rd / "state" / "final.jsonl") if r["partition"] == 1 and r["key"] == key)
    assert state[0]["key"] == key
    assert (final["count"], final["sum"]) == (len(mine) + 1, sum(r["seq"] for r in mine) + seq_500)


@pytest.mark.slow
def test_standbys_under_the_streams_protocol_come_from_the_groups_config(chaos_run):
    """standby_replicas: 1 under `streams` is the group's streams.num.standby.replicas, set before the members start
    (harness/streams.py): the coordinator gives each task a standby on another member, which keeps it up to date
    (standby_start events), and a crash leaves the state exact."""
    scenario = streams_scenario("exactly_once_v2", "streams", "crash")
    scenario["consumer_group"]["streams"]["standby_replicas"] = 1
    run = chaos_run(scenario)
    check_streams_run(run, "exactly_once_v2", "streams")
    standbys = [r["standby_tasks"] for r in jsonl(run.run_dir / "group-states.jsonl") if r.get("standby_tasks")]
    assert standbys and max(sum(len(v) for v in s.values()) for s in standbys) == 6, standbys[-1:]
    assert any(e["kind"] == "standby_start" for p in (run.run_dir / "events").glob("member-*.jsonl") for e in jsonl(p))


@pytest.mark.slow
def test_a_streams_members_transaction_coordinator_frozen_leaves_the_state_exact(chaos_run):
    """exactly_once_v2 under `streams`: member-2's transaction coordinator (txn-coordinator:member-2, found from the
    transactional ids its threads sent in InitProducerId through the request-aware proxy) frozen 12 s; every EndTxn
    observed: each hit names its transactional id, producer id, epoch and whether it commits. The state stays exact."""
    scenario = streams_scenario("exactly_once_v2", "streams", "crash")
    scenario["faults"] = [
        {"kind": "broker_freeze", "target": "txn-coordinator:member-2", "at_s": 10, "duration_s": 12},
        {"kind": "rpc", "target": "member-2", "api": "EndTxn", "action": "observe", "at_s": 0, "duration_s": 30},
        OBSERVE_88]
    run = chaos_run(scenario)
    check_streams_run(run, "exactly_once_v2", "streams")
    faults = jsonl(run.run_dir / "faults.jsonl")
    [frozen] = [f for f in faults if f["kind"] == "broker_freeze"]
    assert frozen["params"]["requested_target"] == "txn-coordinator:member-2" and frozen["target"].startswith("kafka-") \
        and frozen.get("inject_error") is None, frozen
    [observe] = [f for f in faults if f["kind"] == "rpc" and f["params"]["api"] == "EndTxn"]
    assert observe["hits"] and {h["version"] for h in observe["hits"]} == {5}  # transaction version 2's EndTxn
    assert observe["hits"] and all(h["member"] == "member-2" and h["transactional_id"].startswith("chaos-group")
                                   and h["producer_id"] >= 0 and h["epoch"] >= 0 and h["committed"] is True
                                   for h in observe["hits"]), observe["hits"][:2]


def _rows(folder: Path) -> list[dict]:
    import pyarrow.parquet as pq
    out = []
    for path in sorted(folder.iterdir()):
        out += pq.read_table(path).to_pylist() if path.suffix == ".parquet" else jsonl(path)
    return out
