"""What one broker believes about the cluster: a Metadata request sent to that broker alone.

A client library picks whichever broker it likes for metadata. While a broker is cut off from the
quorum its own metadata goes stale (it still lists itself as leader, in every ISR), so a question
such as "has the cluster fenced kafka-1?" must be put to a chosen broker, not to a client.
Metadata v7 is the newest version without flexible (tagged) fields, and every Kafka release since
2.1 answers it (Kafka 4.0 removed v0-v3 only).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from kafkanet.wire import exchange, frame

METADATA = 3
VERSION = 7


@dataclass(frozen=True)
class PartitionView:
    topic: str
    partition: int
    leader: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]


@dataclass(frozen=True)
class BrokerView:
    """Equal views are the same metadata (the answer's `controller` field is left out: in KRaft a broker
    names a random live broker there, KIP-590)."""
    brokers: frozenset[int]  # registered and unfenced, as this broker last heard from the quorum
    partitions: tuple[PartitionView, ...]  # sorted by topic and partition

    def under_replicated(self) -> list[str]:
        """Every partition (internal topics included) whose ISR lacks one of its replicas."""
        return [f"{p.topic}:{p.partition}" for p in self.partitions if set(p.isr) != set(p.replicas)]


def view_of(address: str, topics: list[str] | None = None, timeout_s: float = 5.0) -> BrokerView:
    """The cluster as the broker at host:port sees it (`topics` None: every topic). Raises OSError
    if it does not answer within timeout_s."""
    return _parse(exchange(address, _request(topics, correlation_id=11), 11, timeout_s))


def _string(value: str) -> bytes:
    data = value.encode()
    return struct.pack(">h", len(data)) + data


def _request(topics: list[str] | None, correlation_id: int) -> bytes:
    if topics is None:
        body = struct.pack(">i", -1)
    else:
        body = struct.pack(">i", len(topics)) + b"".join(_string(t) for t in topics)
    return frame(METADATA, VERSION, correlation_id, b"kafka-chaos-view", body + b"\x00")  # no auto topic creation


class _Reader:
    def __init__(self, data: bytes) -> None:
        self._data, self._at = data, 0

    def take(self, fmt: str):
        values = struct.unpack_from(fmt, self._data, self._at)
        self._at += struct.calcsize(fmt)
        return values[0] if len(values) == 1 else values

    def string(self) -> str | None:
        size = self.take(">h")
        if size < 0:
            return None
        value = self._data[self._at:self._at + size].decode()
        self._at += size
        return value

    def ints(self) -> tuple[int, ...]:
        return tuple(self.take(">i") for _ in range(self.take(">i")))

    def array(self, item):
        return [item() for _ in range(self.take(">i"))]


def _parse(data: bytes) -> BrokerView:
    r = _Reader(data)
    r.take(">i")  # throttle_time_ms

    def broker():
        node_id = r.take(">i")
        r.string(), r.take(">i"), r.string()  # host, port, rack
        return node_id

    brokers = r.array(broker)
    r.string()  # cluster_id
    r.take(">i")  # controller_id
    partitions = []

    def topic():
        r.take(">h")  # error_code
        name = r.string()
        r.take(">b")  # is_internal
        for _ in range(r.take(">i")):
            _error, index, leader, _epoch = r.take(">hiii")
            replicas, isr, _offline = r.ints(), r.ints(), r.ints()
            partitions.append(PartitionView(name, index, leader, isr, replicas))

    r.array(topic)
    return BrokerView(frozenset(brokers), tuple(sorted(partitions, key=lambda p: (p.topic, p.partition))))
