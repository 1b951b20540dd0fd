"""Role targets resolve to the broker that really holds the role."""
import random

import pytest
from confluent_kafka import Consumer

from faults.targets import coordinator_id, resolve_broker
from harness.group import describe_group_isolated

pytestmark = pytest.mark.cluster


@pytest.mark.parametrize("group_id", ["chaos-group", "payments-v2", "g"])
def test_computed_coordinator_is_the_one_kafka_reports(kafka_cluster, group_id):
    consumer = Consumer({"bootstrap.servers": kafka_cluster.bootstrap_servers, "group.id": group_id})
    consumer.subscribe(["kafka-chaos-ready"])
    try:
        reported = None
        for _ in range(30):
            consumer.poll(0.5)
            state = describe_group_isolated(kafka_cluster.control_bootstrap_servers, group_id)
            if state and state["coordinator"] is not None and state["members"] == 1:
                reported = state["coordinator"]
                break
        assert reported is not None, "the group never showed up"
        assert coordinator_id(kafka_cluster.view(), group_id) == reported
    finally:
        consumer.close()


def test_controller_and_leader_resolve_to_brokers(kafka_cluster):
    rng = random.Random(0)
    names = {b.name for b in kafka_cluster.brokers}
    for role in ("controller", "leader", "random"):
        assert resolve_broker(kafka_cluster, role, group_id="x", topic="kafka-chaos-ready", rng=rng).name in names


def test_the_controller_target_is_the_quorum_leader_kafka_reports(kafka_cluster):
    """Not describe_cluster's `controller` (in KRaft a random broker, KIP-590): the leader of the quorum."""
    import re
    import subprocess

    container = kafka_cluster.brokers[0].container.get_wrapped_container().name
    status = subprocess.run(["docker", "exec", container, "/opt/kafka/bin/kafka-metadata-quorum.sh",
                             "--bootstrap-controller", "localhost:9093", "describe", "--status"],
                            capture_output=True, text=True, timeout=120).stdout
    reported = int(re.search(r"LeaderId:\s+(\d+)", status).group(1))
    assert [kafka_cluster.active_controller() for _ in range(5)] == [reported] * 5


def test_the_leader_targets_are_the_partition_leaders_kafka_reports(kafka_cluster):
    """`leader` (partition 0 of the scenario topic) and `leader:TOPIC:P`, held against kafka-topics.sh's own answer
    (not against the harness's metadata view, which they read)."""
    import re
    import subprocess

    rng = random.Random(0)
    container = kafka_cluster.brokers[0].container.get_wrapped_container().name
    described = subprocess.run(["docker", "exec", container, "/opt/kafka/bin/kafka-topics.sh", "--bootstrap-server",
                                "localhost:9094", "--describe", "--topic", "kafka-chaos-ready"],  # INTERNAL: reachable inside
                               capture_output=True, text=True, timeout=120).stdout
    leaders = {int(p): int(b) for p, b in re.findall(r"Partition:\s+(\d+)\s+Leader:\s+(\d+)", described)}
    assert leaders, described
    ids = {b.name: b.node_id for b in kafka_cluster.brokers}
    assert ids[resolve_broker(kafka_cluster, "leader", group_id="x", topic="kafka-chaos-ready", rng=rng).name] == leaders[0]
    for partition, leader in leaders.items():
        target = f"leader:kafka-chaos-ready:{partition}"
        assert ids[resolve_broker(kafka_cluster, target, group_id="x", topic="t", rng=rng).name] == leader, target
