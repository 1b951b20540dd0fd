"""An operator's routine moves on the real cluster (faults/reassignment.py): a reassignment moves a topic's
replicas and leaders and its heal moves them back; a preferred election puts leaders on first replicas; and a
group consuming through both loses nothing and does not rebalance (leaders move, membership does not)."""
import random

import pytest
from confluent_kafka.admin import NewTopic

from faults.context import FaultContext
from faults.reassignment import PreferredLeaderElection, ReassignPartitions, moved
from faults.timeline import FaultTimeline
from run_logs import rows
from scenario_files import catalog

pytestmark = pytest.mark.cluster


def placement(cluster, topic: str) -> dict[int, tuple[list[int], int]]:
    """partition -> (replicas, leader)."""
    return {p.partition: (list(p.replicas), p.leader) for p in cluster.view().partitions if p.topic == topic}


def new_topic(cluster, partitions: int, replication_factor: int) -> str:
    topic = f"reassign-{random.randrange(16**6):06x}"
    cluster.create_topic(topic, partitions, replication_factor)
    cluster.wait_until(lambda: len(placement(cluster, topic)) == partitions
                       and all(leader >= 0 for _, leader in placement(cluster, topic).values()), 60, "no leaders")
    return topic


def test_a_reassignment_moves_replicas_and_leaders_and_its_heal_moves_them_back(kafka_cluster):
    topic = new_topic(kafka_cluster, 3, 2)  # RF 2 of 3 brokers: every partition has a broker to move to
    before = placement(kafka_cluster, topic)
    want = moved({(topic, p): replicas for p, (replicas, _) in before.items()}, [b.node_id for b in kafka_cluster.brokers])
    ctx = FaultContext(kafka_cluster, {}, FaultTimeline(None), random.Random(0), "g", topic)
    fault = ReassignPartitions.build(ctx, "topic", ReassignPartitions.Params())
    with fault:
        during = placement(kafka_cluster, topic)
        for p, (replicas, leader) in during.items():
            assert replicas == want[(topic, p)] != before[p][0], (p, before[p], during[p])
            assert leader == replicas[0] != before[p][1], (p, before[p], during[p])
        assert fault.record["replicas_after"] == {f"{topic}:{p}": r for (_, p), r in sorted(want.items())}
    after = placement(kafka_cluster, topic)
    assert after == {p: (replicas, replicas[0]) for p, (replicas, _) in before.items()}, (before, after)


def test_a_preferred_election_puts_every_leader_on_its_first_replica(kafka_cluster):
    topic = new_topic(kafka_cluster, 3, 3)  # RF 3 of 3: a reassignment can only reorder, and leaves the leaders
    ctx = FaultContext(kafka_cluster, {}, FaultTimeline(None), random.Random(0), "g", topic)
    reorder = ReassignPartitions.build(ctx, topic, ReassignPartitions.Params(elect=False))
    with reorder:
        off = placement(kafka_cluster, topic)
        assert all(leader != replicas[0] for replicas, leader in off.values()), off
        election = PreferredLeaderElection.build(ctx, topic, PreferredLeaderElection.Params())
        with election:
            on = placement(kafka_cluster, topic)
            assert all(leader == replicas[0] for replicas, leader in on.values()), on
        assert set(election.record["leaders_after"].values()) != set() and election.record["leaders_before"] != \
            election.record["leaders_after"]


def test_a_group_consuming_through_a_reassignment_loses_nothing_and_does_not_rebalance(chaos_run):
    scenario = catalog("default")
    scenario["producer"] = {"records": 60000, "rate": 2000}
    # the default grace (30 s) covers the workload's stop: the members' leaving then is the stop's, no fault's
    scenario["faults"] = [{"kind": "reassign_partitions", "target": "topic", "at_s": 12, "duration_s": 5},
                          {"kind": "preferred_leader_election", "target": "topic", "at_s": 19, "duration_s": 1}]
    run = chaos_run(scenario)
    assert run.errors == [], run.errors
    faults = {f["kind"]: f for f in rows(run.run_dir, "faults")}
    assert set(faults) == {"reassign_partitions", "preferred_leader_election"}, faults
    assert all(f["healed_at_ms"] is not None for f in faults.values()), faults
    run.assert_no_loss()
    run.assert_duplicates_within_budget()
    for fault in faults.values():
        run.assert_rebalances(at_most=0, fault=fault["id"])  # the group's own joins at the start are not theirs


@pytest.mark.slow  # 2 min+; the test above meets the same rule in make test whenever the stop forms a round
def test_the_members_leaving_at_the_stop_is_no_faults_doing(chaos_run):
    """Under the consumer protocol (KIP-848) the members' revocations when the workload stops always form a rebalance
    round; the faults heal a few seconds before that, well within the default grace (30 s): the round is the stop's,
    and no fault is blamed for it."""
    scenario = catalog("default")
    scenario["producer"] = {"records": 30000, "rate": 2000}
    scenario["consumer_group"] = {"members": 3, "protocol": "consumer"}
    scenario["faults"] = [{"kind": "reassign_partitions", "target": "topic", "at_s": 5, "duration_s": 4},
                          {"kind": "preferred_leader_election", "target": "topic", "at_s": 10, "duration_s": 1}]
    run = chaos_run(scenario)
    assert run.errors == [], run.errors
    s = run.summary
    stop = s["checks"]["attribution"]["workload_stop_ms"]
    rounds = s["rebalance_figures"]["rounds"]
    assert stop is not None and any(r["start_ms"] >= stop for r in rounds), (stop, rounds)  # the stop's own round
    assert all(f["healed_at_ms"] is not None and stop - f["healed_at_ms"] < s["grace_ms"] for f in s["faults"]), s["faults"]
    for fault in s["faults"]:
        run.assert_rebalances(at_most=0, fault=fault["id"])
