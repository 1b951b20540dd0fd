"""Which broker a fault hits, looked up from cluster metadata at the moment it fires."""
from __future__ import annotations

import random

OFFSETS_TOPIC = "__consumer_offsets"


class TargetError(RuntimeError):
    pass


def java_string_hash(text: str) -> int:
    """Java's String.hashCode, as Kafka uses it to place a group on a __consumer_offsets partition."""
    data, h = text.encode("utf-16-be"), 0
    for i in range(0, len(data), 2):  # Java strings are UTF-16 code units
        h = (31 * h + int.from_bytes(data[i:i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def offsets_partition(group_id: str, partitions: int) -> int:
    """Kafka's partitionFor(groupId): Utils.abs(hashCode) % partitions, where Utils.abs(MIN_VALUE) is 0."""
    h = java_string_hash(group_id)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


def partition_leader(admin, topic: str, partition: int) -> int:
    metadata = admin.list_topics(topic, timeout=10)
    topic_metadata = metadata.topics.get(topic)
    if topic_metadata is None or topic_metadata.error is not None or partition not in topic_metadata.partitions:
        raise TargetError(f"no metadata for {topic}:{partition}")
    leader = topic_metadata.partitions[partition].leader
    if leader < 0:
        raise TargetError(f"{topic}:{partition} has no leader")
    return leader


def coordinator_id(admin, group_id: str) -> int:
    """The group coordinator is the leader of the group's __consumer_offsets partition.

    Computed from metadata rather than asked with DescribeConsumerGroups: that admin call can abort
    the process when the coordinator is unreachable (librdkafka issue 4605), which is what faults do.
    """
    partitions = len(admin.list_topics(OFFSETS_TOPIC, timeout=10).topics[OFFSETS_TOPIC].partitions)
    if not partitions:
        raise TargetError(f"{OFFSETS_TOPIC} does not exist yet: no group has a coordinator")
    return partition_leader(admin, OFFSETS_TOPIC, offsets_partition(group_id, partitions))


def resolve_broker(cluster, target: str, *, group_id: str, topic: str, rng: random.Random):
    """`kafka-N`, or a role: the group's coordinator, the active controller, the leader of partition 0, random."""
    admin = cluster.admin()
    if target == "coordinator":
        return cluster.broker_by_id(coordinator_id(admin, group_id))
    if target == "controller":
        return cluster.broker_by_id(admin.describe_cluster(request_timeout=10).result(timeout=15).controller.id)
    if target == "leader":
        return cluster.broker_by_id(partition_leader(admin, topic, 0))
    if target == "random":
        return rng.choice(cluster.brokers)
    return cluster.broker(target)
