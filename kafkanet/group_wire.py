"""A consumer group's state as its coordinator says it, asked on the wire (kio builds and reads the messages).

What the clients' admin APIs do not give: confluent-kafka's describe_consumer_groups has no group or member epochs,
and its coordinator-bound calls can abort the process under faults (librdkafka issue 4605). Here each question is
FindCoordinator then DescribeGroups v5 (classic: the state, members, assignor and each member's assignment as the
leader computed it; no generation), ConsumerGroupDescribe v0 (KIP-848: the state, the group epoch, the target
assignment epoch, each member's epoch and the assignment the coordinator holds for it, which the member may not have
applied) or StreamsGroupDescribe v0 (KIP-1071: the same, in tasks), on fresh connections: nothing is cached or
retried between two questions.
"""
from __future__ import annotations

import io
import itertools
import struct

from kafkanet.wire import exchange, frame

FIND_COORDINATOR, DESCRIBE_GROUPS, CONSUMER_GROUP_DESCRIBE, STREAMS_GROUP_DESCRIBE = 10, 15, 69, 89
CLIENT_ID = b"kafka-chaos-group-sampler"
_IDS = itertools.count(1)


class GroupWireError(RuntimeError):
    """The coordinator could not be found or did not describe the group (an error code, or no answer)."""


def ask(address: str, api_key: int, version: int, request, timeout_s: float):
    """One request on a fresh connection to host:port; its response, read by kio."""
    from kio.index import load_response_schema
    from kio.serial import entity_reader
    raw = ask_raw(address, api_key, version, request, timeout_s)
    response, _ = entity_reader(load_response_schema(api_key, version))(memoryview(raw), 1)  # after the tagged fields
    return response


def ask_raw(address: str, api_key: int, version: int, request, timeout_s: float) -> bytes:
    """One request (built by kio) on a fresh connection; the response's bytes after the correlation id (a flexible
    response: its header's tagged fields first)."""
    from kio.serial import entity_writer
    body = io.BytesIO()
    entity_writer(type(request))(body, request)
    correlation_id = next(_IDS)
    return exchange(address, frame(api_key, version, correlation_id, CLIENT_ID, body.getvalue(), flexible=True),
                    correlation_id, timeout_s)


GROUP_KEY, TRANSACTION_KEY = 0, 1  # FindCoordinator's key types


def find_coordinator(bootstrap: str, key: str, timeout_s: float, key_type: int = GROUP_KEY) -> str:
    """host:port of the coordinator of a group (or, key_type TRANSACTION_KEY, of a transactional id), asked of the
    first bootstrap server that answers."""
    from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest
    from kio.static.primitive import i8
    last: Exception | None = None
    for address in bootstrap.split(","):
        try:
            response = ask(address, FIND_COORDINATOR, 4, FindCoordinatorRequest(key_type=i8(key_type), coordinator_keys=(key,)),
                           timeout_s)
        except OSError as exc:
            last = exc
            continue
        (coordinator,) = response.coordinators
        if coordinator.error_code.value != 0:
            raise GroupWireError(f"FindCoordinator: {coordinator.error_code.name}")
        return f"{coordinator.host}:{coordinator.port}"
    raise GroupWireError(f"FindCoordinator: no bootstrap server answered ({last})")


def assigned_partitions(assignment: bytes) -> list[str]:
    """A classic member's assignment ("topic:partition" each; ConsumerProtocolAssignment: a version, then topics, each
    a name and its partitions); empty for an empty or unreadable one."""
    out: list[str] = []
    try:
        at = 2
        (topics,) = struct.unpack_from(">i", assignment, at)
        at += 4
        for _ in range(max(topics, 0)):
            (length,) = struct.unpack_from(">h", assignment, at)
            name = assignment[at + 2:at + 2 + max(length, 0)].decode()
            at += 2 + max(length, 0)
            (count,) = struct.unpack_from(">i", assignment, at)
            out += [f"{name}:{p}" for p in struct.unpack_from(f">{max(count, 0)}i", assignment, at + 4)]
            at += 4 + 4 * max(count, 0)
    except (struct.error, UnicodeDecodeError):
        return []
    return out


def describe_classic(address: str, group_id: str, timeout_s: float) -> dict:
    from kio.schema.describe_groups.v5.request import DescribeGroupsRequest
    from kio.schema.types import GroupId
    response = ask(address, DESCRIBE_GROUPS, 5,
                   DescribeGroupsRequest(groups=(GroupId(group_id),), include_authorized_operations=False), timeout_s)
    (group,) = response.groups
    if group.error_code.value != 0:
        raise GroupWireError(f"DescribeGroups: {group.error_code.name}")
    assignments = {m.client_id: sorted(assigned_partitions(m.member_assignment)) for m in group.members}
    return {"state": group.group_state, "members": len(group.members), "assignor": group.protocol_data or None,
            "assigned": sum(len(a) for a in assignments.values()), "assignments": assignments,
            "member_ids": {m.member_id: m.client_id for m in group.members}}


def describe_consumer(address: str, group_id: str, timeout_s: float) -> dict:
    from kio.schema.consumer_group_describe.v0.request import ConsumerGroupDescribeRequest
    from kio.schema.types import GroupId
    response = ask(address, CONSUMER_GROUP_DESCRIBE, 0,
                   ConsumerGroupDescribeRequest(group_ids=(GroupId(group_id),), include_authorized_operations=False),
                   timeout_s)
    (group,) = response.groups
    if group.error_code.name == "group_id_not_found":  # not created yet, or gone: as DescribeGroups says of a classic one
        return {"state": "Dead", "members": 0, "assigned": 0, "assignor": None, "assignments": {}}
    if group.error_code.value != 0:
        raise GroupWireError(f"ConsumerGroupDescribe: {group.error_code.name}")
    assignments = {m.client_id: sorted(f"{t.topic_name}:{p}" for t in m.assignment.topic_partitions for p in t.partitions)
                   for m in group.members}
    return {"state": group.group_state, "members": len(group.members), "assignor": group.assignor_name or None,
            "group_epoch": int(group.group_epoch), "assignment_epoch": int(group.assignment_epoch),
            "assigned": sum(len(a) for a in assignments.values()), "assignments": assignments,
            "member_epochs": {m.client_id: int(m.member_epoch) for m in group.members},
            "member_ids": {m.member_id: m.client_id for m in group.members}}


def describe_streams(address: str, group_id: str, timeout_s: float) -> dict:
    """A streams group (KIP-1071): each member's active tasks as `topic:partition` of the task's source topics (what
    it processes), its standby and warm-up tasks apart, by client.id (Streams appends `-StreamThread-N-consumer` and
    the like to the instance's: kafkanet.client_ids.same_client maps them to a member)."""
    from kio.schema.streams_group_describe.v0.request import StreamsGroupDescribeRequest
    from kio.schema.types import GroupId
    response = ask(address, STREAMS_GROUP_DESCRIBE, 0,
                   StreamsGroupDescribeRequest(group_ids=(GroupId(group_id),), include_authorized_operations=False),
                   timeout_s)
    (group,) = response.groups
    if group.error_code.name == "group_id_not_found":
        return {"state": "Dead", "members": 0, "assigned": 0, "assignor": None, "assignments": {}}
    if group.error_code.value != 0:
        raise GroupWireError(f"StreamsGroupDescribe: {group.error_code.name}")
    sources = {s.subtopology_id: list(s.source_topics) for s in (group.topology.subtopologies or ())} \
        if group.topology else {}

    def tasks(ids) -> list[str]:
        return sorted(f"{topic}:{p}" for t in ids for topic in sources.get(t.subtopology_id, ()) for p in t.partitions)
    assignments = {m.client_id: tasks(m.assignment.active_tasks) for m in group.members}
    return {"state": group.group_state, "members": len(group.members), "assignor": "streams",
            "group_epoch": int(group.group_epoch), "assignment_epoch": int(group.assignment_epoch),
            "assigned": sum(len(a) for a in assignments.values()), "assignments": assignments,
            "standby_tasks": {m.client_id: tasks(m.assignment.standby_tasks) for m in group.members},
            "warmup_tasks": {m.client_id: tasks(m.assignment.warmup_tasks) for m in group.members},
            "member_epochs": {m.client_id: int(m.member_epoch) for m in group.members},
            "member_ids": {m.member_id: m.client_id for m in group.members}}


DESCRIBE = {"classic": describe_classic, "consumer": describe_consumer, "streams": describe_streams}


def describe_group(bootstrap: str, group_id: str, protocol: str, timeout_s: float = 5.0) -> dict:
    """The group now, by its coordinator (raises GroupWireError or OSError when it cannot say)."""
    coordinator = find_coordinator(bootstrap, group_id, timeout_s)
    describe = DESCRIBE[protocol]
    return {**describe(coordinator, group_id, timeout_s), "coordinator": coordinator}
