"""AlterPartitionReassignments in the wire format (kafkanet/reassign.py), read back with kio, and the
reassignment a reassign_partitions fault asks for (faults/reassignment.py)."""
from __future__ import annotations

import datetime
import io
import struct

import pytest
from kio.schema.alter_partition_reassignments.v0.request import AlterPartitionReassignmentsRequest
from kio.schema.alter_partition_reassignments.v0.response import (AlterPartitionReassignmentsResponse,
                                                                  ReassignablePartitionResponse,
                                                                  ReassignableTopicResponse)
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i32, i32Timedelta

from faults.reassignment import moved
from kafkanet.reassign import ReassignmentError, errors_of, request
from kafkanet.rpc_proxy import read_header


def test_the_request_carries_each_partition_and_its_replicas_in_order():
    frame = request({("t", 1): [3, 1], ("t", 0): [2, 3], ("u", 0): [1, 2]}, correlation_id=9)
    (size,) = struct.unpack_from(">i", frame)
    assert size == len(frame) - 4
    header = read_header(frame[4:], flexible=True)
    assert (header.api_key, header.api_version, header.correlation_id) == (45, 0, 9)
    body, _ = entity_reader(AlterPartitionReassignmentsRequest)(memoryview(frame[4:]), header.size)
    assert {(t.name, p.partition_index): list(p.replicas) for t in body.topics for p in t.partitions} == \
        {("t", 0): [2, 3], ("t", 1): [3, 1], ("u", 0): [1, 2]}


def answer(top: ErrorCode, partitions: dict[int, ErrorCode]) -> bytes:
    """A response body as exchange() returns it: the header's empty tagged fields, then the body."""
    out = io.BytesIO()
    entity_writer(AlterPartitionReassignmentsResponse)(out, AlterPartitionReassignmentsResponse(
        throttle_time=i32Timedelta.parse(datetime.timedelta(0)), error_code=top, error_message=None,
        responses=(ReassignableTopicResponse(name="t", partitions=tuple(
            ReassignablePartitionResponse(partition_index=i32(p), error_code=code, error_message=None)
            for p, code in partitions.items())),)))
    return b"\x00" + out.getvalue()


def test_an_answer_names_each_partition_it_refused():
    refused = errors_of(answer(ErrorCode.none, {0: ErrorCode.none, 1: ErrorCode.invalid_replica_assignment}))
    assert refused == {("t", 1): "INVALID_REPLICA_ASSIGNMENT: None"}


def test_a_refusal_of_the_whole_request_is_an_error():
    with pytest.raises(ReassignmentError, match="NOT_CONTROLLER"):
        errors_of(answer(ErrorCode.not_controller, {}))


def test_a_reassignment_moves_the_preferred_leader_and_a_replica_where_a_broker_is_free():
    assert moved({("t", 0): [1, 2, 3], ("t", 1): [2, 3, 1]}, [1, 2, 3]) == {("t", 0): [2, 3, 1], ("t", 1): [3, 1, 2]}
    assert moved({("t", 0): [1, 2], ("t", 1): [2, 3], ("t", 2): [3, 1]}, [1, 2, 3]) == \
        {("t", 0): [2, 3], ("t", 1): [3, 1], ("t", 2): [1, 2]}
    assert moved({("t", 0): [1], ("t", 1): [1]}, [1, 2, 3]) == {("t", 0): [2], ("t", 1): [3]}
