"""Who leads the KRaft quorum (the active controller), asked with one DescribeQuorum request.

The admin API's describe_cluster() cannot say: in KRaft a broker answers its `controller` field
with a random live broker (KIP-590), so it changes from call to call. DescribeQuorum (api key 55,
v0, a flexible version) names the leader of __cluster_metadata; brokers forward it to the quorum.
confluent-kafka has no call for it, so the request is written here, in the wire format.
"""
from __future__ import annotations

import struct

from kafkanet.wire import exchange, frame, read_uvarint

DESCRIBE_QUORUM, VERSION = 55, 0
METADATA_TOPIC = b"__cluster_metadata"
TIMEOUT_S = 5.0


class QuorumError(RuntimeError):
    pass


def _uvarint(value: int) -> bytes:
    out = b""
    while True:
        byte, value = value & 0x7F, value >> 7
        out += bytes([byte | (0x80 if value else 0)])
        if not value:
            return out


def describe_quorum_request(correlation_id: int, client_id: bytes = b"kafka-chaos") -> bytes:
    partition = struct.pack(">i", 0) + b"\x00"
    topic = _uvarint(len(METADATA_TOPIC) + 1) + METADATA_TOPIC + _uvarint(2) + partition + b"\x00"
    return frame(DESCRIBE_QUORUM, VERSION, correlation_id, client_id, _uvarint(2) + topic + b"\x00", flexible=True)


def parse_leader(response: bytes) -> int:
    """The leader id from a DescribeQuorum v0 response body (after the size and correlation id)."""
    _, at = read_uvarint(response, 0)                      # response header tagged fields
    (error,) = struct.unpack_from(">h", response, at)
    if error:
        raise QuorumError(f"DescribeQuorum failed with error code {error}")
    _, at = read_uvarint(response, at + 2)                 # topics
    name_length, at = read_uvarint(response, at)
    _, at = read_uvarint(response, at + name_length - 1)   # partitions
    _, partition_error, leader = struct.unpack_from(">ihi", response, at)
    if partition_error or leader < 0:
        raise QuorumError(f"the metadata quorum has no leader (error code {partition_error})")
    return leader


def quorum_leader(addresses: list[str]) -> int:
    """The active controller's node id, asked of the first of these brokers that answers."""
    last = None
    for address in addresses:
        try:
            return parse_leader(exchange(address, describe_quorum_request(55), 55, TIMEOUT_S))
        except (OSError, QuorumError, struct.error, IndexError) as exc:
            last = exc
    raise QuorumError(f"no broker told who leads the quorum ({last})")
