"""Broker process faults on the real cluster: a crashed coordinator, a graceful restart, a rolling restart."""
import random

import pytest
from confluent_kafka.admin import NewTopic

from faults.context import FaultContext
from faults.lifecycle import BrokerCrash, BrokerRestart
from faults.timeline import FaultTimeline
from kafkanet.probe import api_versions_roundtrip
from kafkanet.waiting import wait_until
from run_logs import rows
from scenario_files import catalog

pytestmark = pytest.mark.cluster


def leaders_of(cluster, topic: str) -> set[int]:
    return {p.leader for p in cluster.view().partitions if p.topic == topic}


def test_a_crashed_coordinator_fails_over_comes_back_and_nothing_is_lost(chaos_run, kafka_cluster):
    outcome = chaos_run(catalog("coordinator-crash"))
    assert outcome.errors == [] and outcome.drained, outcome.errors
    [fault] = rows(outcome.run_dir, "faults")
    assert fault["kind"] == "broker_crash" and fault["healed_at_ms"] is not None
    assert fault["coordinator_after"] != fault["coordinator_before"], fault
    assert fault["commits_resumed_after_ms"] is not None and fault["commits_resumed_after_ms"] > 0, fault
    assert outcome.summary["lost_records"] == 0, outcome.summary
    assert outcome.summary["valid"] is True, outcome.summary["anomalies"][:5]
    crashed = kafka_cluster.broker(fault["target"])
    assert crashed.node_id in kafka_cluster.registered_brokers()
    assert wait_until(lambda: not kafka_cluster.under_replicated(), 120), "the crashed broker never caught up"
    assert_voters_caught_up_since(kafka_cluster, fault["healed_at_ms"])


def assert_voters_caught_up_since(cluster, since_ms: int) -> None:
    """Kafka's own view of the KRaft quorum: every voter reached the leader's log end after since_ms."""
    voters = cluster.quorum_replication()
    assert sorted(voters) == [b.node_id for b in cluster.brokers], voters
    for node_id, voter in voters.items():
        assert voter["Status"] == "Leader" or int(voter["LastCaughtUpTimestamp"]) >= since_ms, (node_id, voter)


@pytest.mark.slow  # make test's 30 minutes: a crash's failover runs there (above)
def test_a_graceful_restart_moves_leadership_away_before_the_broker_stops_and_a_crash_does_not(kafka_cluster):
    topic = f"lifecycle-{random.randrange(16**6):06x}"
    kafka_cluster.admin().create_topics([NewTopic(topic, 6, 3)])[topic].result(30)
    assert wait_until(lambda: len(leaders_of(kafka_cluster, topic)) == 3, 60), "leaders not spread over 3 brokers"
    broker = kafka_cluster.brokers[1]
    ctx = FaultContext(kafka_cluster, {}, FaultTimeline(None), random.Random(0), "g", topic)

    restart = BrokerRestart.build(ctx, broker.name, BrokerRestart.Params())
    with restart:  # inject returns once the container has stopped
        assert broker.node_id not in leaders_of(kafka_cluster, topic), "a controlled shutdown moves leaders first"
    assert broker.node_id in kafka_cluster.registered_brokers()
    assert api_versions_roundtrip(broker.client_address, timeout_s=5) is not None, "its client proxy no longer reaches it"
    assert wait_until(lambda: not kafka_cluster.under_replicated(), 120)

    broker = kafka_cluster.brokers[2]  # the restarted one leads nothing until a preferred election
    assert broker.node_id in leaders_of(kafka_cluster, topic)
    crash = BrokerCrash.build(ctx, broker.name, BrokerCrash.Params())
    with crash:
        # the controller learns of a crash only when the broker's session (9 s) expires
        assert broker.node_id in leaders_of(kafka_cluster, topic)
        assert wait_until(lambda: broker.node_id not in leaders_of(kafka_cluster, topic), 60)
    assert broker.node_id in kafka_cluster.registered_brokers()


@pytest.mark.slow
def test_a_rolling_restart_under_load_loses_nothing_and_leaves_every_isr_full(chaos_run, kafka_cluster):
    outcome = chaos_run(catalog("rolling-restart"))  # 120 s of records: longer than the roll (60-90 s here)
    assert outcome.errors == [] and outcome.drained, outcome.errors
    [fault] = rows(outcome.run_dir, "faults")
    steps = fault["steps"]
    assert [s["broker"] for s in steps] == ["kafka-1", "kafka-2", "kafka-3"], fault
    assert "roll_error" not in fault, fault
    for step in steps:
        assert step["down_ms"] <= step["stopped_ms"] <= step["up_ms"] <= step["replicated_ms"], step
    for before, after in zip(steps, steps[1:]):
        assert after["down_ms"] >= before["replicated_ms"], "the next broker went down before the ISR was full"
    last_ack_ms = max(r["acked_at_ms"] for r in rows(outcome.run_dir / "produced") if r["status"] == "ok")
    assert steps[-1]["stopped_ms"] < last_ack_ms, "the last broker went down after the producer had finished"
    assert outcome.summary["lost_records"] == 0, outcome.summary
    assert outcome.summary["valid"] is True, outcome.summary["anomalies"][:5]
    assert kafka_cluster.under_replicated() == []
    assert_voters_caught_up_since(kafka_cluster, fault["steps"][-1]["up_ms"])


def test_reset_faults_starts_a_broker_a_previous_test_left_crashed_and_gives_it_its_leadership_back(kafka_cluster):
    broker = kafka_cluster.brokers[0]
    ctx = FaultContext(kafka_cluster, {}, FaultTimeline(None), random.Random(0), "g", "t")
    BrokerCrash.build(ctx, broker.name, BrokerCrash.Params()).inject()  # never healed: a test that died mid-fault
    assert wait_until(lambda: broker.node_id not in kafka_cluster.registered_brokers(), 60), "still registered (unfenced)"
    assert wait_until(lambda: broker.node_id not in {p.leader for p in kafka_cluster.view().partitions}, 60)
    kafka_cluster.reset_faults()
    assert broker.node_id in kafka_cluster.registered_brokers()
    assert api_versions_roundtrip(broker.client_address, timeout_s=5) is not None
    off = [p for p in kafka_cluster.view().partitions if p.leader != p.replicas[0]]
    assert not off, f"not led by their preferred replica after the reset: {off[:3]}"
    assert any(p.leader == broker.node_id for p in kafka_cluster.view().partitions if p.topic == "__consumer_offsets")
