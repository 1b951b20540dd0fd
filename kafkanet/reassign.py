"""A partition reassignment (AlterPartitionReassignments, api key 45, v0, a flexible version), in the wire
format: librdkafka, and so confluent-kafka's admin client, has no call for it. Any broker takes it; in KRaft
it forwards it to the active controller, which moves the replicas (a reorder is at once; a new replica first
copies the partition, then joins the ISR)."""
from __future__ import annotations

import io

from kio.schema.alter_partition_reassignments.v0.request import (AlterPartitionReassignmentsRequest,
                                                                 ReassignablePartition, ReassignableTopic)
from kio.schema.alter_partition_reassignments.v0.response import AlterPartitionReassignmentsResponse
from kio.schema.types import BrokerId, TopicName
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i32

from kafkanet.wire import exchange, frame, read_uvarint

API_KEY, VERSION = 45, 0
TIMEOUT_S = 30.0


class ReassignmentError(RuntimeError):
    pass


def request(assignments: dict[tuple[str, int], list[int]], correlation_id: int) -> bytes:
    topics = sorted({topic for topic, _ in assignments})
    body = AlterPartitionReassignmentsRequest(topics=tuple(
        ReassignableTopic(name=TopicName(topic), partitions=tuple(
            ReassignablePartition(partition_index=i32(partition), replicas=tuple(BrokerId(b) for b in replicas))
            for (t, partition), replicas in sorted(assignments.items()) if t == topic))
        for topic in topics))
    out = io.BytesIO()
    entity_writer(AlterPartitionReassignmentsRequest)(out, body)
    return frame(API_KEY, VERSION, correlation_id, b"kafka-chaos", out.getvalue(), flexible=True)


def errors_of(response: bytes) -> dict[tuple[str, int], str]:
    """Each partition the answer refused, with Kafka's error name and message; ReassignmentError for a refusal
    of the whole request."""
    count, at = read_uvarint(response, 0)  # the response header's tagged fields
    for _ in range(count):
        _, at = read_uvarint(response, at)
        size, at = read_uvarint(response, at)
        at += size
    answer, _ = entity_reader(AlterPartitionReassignmentsResponse)(memoryview(response), at)
    if answer.error_code.value:
        raise ReassignmentError(f"AlterPartitionReassignments: {answer.error_code.name.upper()}: {answer.error_message}")
    return {(t.name, p.partition_index): f"{p.error_code.name.upper()}: {p.error_message}"
            for t in answer.responses for p in t.partitions if p.error_code.value}


def reassign(address: str, assignments: dict[tuple[str, int], list[int]], timeout_s: float = TIMEOUT_S) -> None:
    """Ask the broker at host:port to place each (topic, partition)'s replicas on these brokers, the first the
    preferred leader. ReassignmentError naming each partition it refused; OSError if it does not answer."""
    refused = errors_of(exchange(address, request(assignments, correlation_id=45), 45, timeout_s))
    if refused:
        raise ReassignmentError("; ".join(f"{t}:{p}: {why}" for (t, p), why in sorted(refused.items())))
