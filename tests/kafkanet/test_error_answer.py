"""kafkanet/error_answer.py: the proxy's error answer to every request of every API version kio knows is a
well-formed response (read back whole by kio), every error code in it is the error, and where the API answers per
partition (or per group, key, transactional id), the answer names exactly what the request named. The requests are
built here independently: two items in every collection, each with its own names and numbers."""
from __future__ import annotations

import dataclasses
import io
import struct
import typing
import uuid

import pytest
from kio.index import api_key_map, load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer

from kafkanet.error_answer import _zero_scalar as zero_scalar, error_response

NAMES = ("name", "topic", "topic_name", "group_id", "key", "transactional_id")
PARTITIONS = ("partition_index", "partition", "index")
TOPICS = ("name", "topic", "topic_name", "topic_id")
# the APIs whose answer is per partition: the (topic, partition) pairs of the answer are the request's
PER_PARTITION = {0: "Produce", 1: "Fetch", 2: "ListOffsets", 8: "OffsetCommit", 9: "OffsetFetch", 21: "DeleteRecords",
                 23: "OffsetForLeaderEpoch", 24: "AddPartitionsToTxn", 27: "WriteTxnMarkers", 28: "TxnOffsetCommit",
                 47: "OffsetDelete", 61: "DescribeProducers", 78: "ShareFetch", 79: "ShareAcknowledge"}
# the APIs whose answer is per name the request lists: the names answered are the request's
PER_NAME = {10: ("coordinator_keys", "coordinators", "key"), 15: ("groups", "groups", "group_id"),
            42: ("groups_names", "results", "group_id"), 65: ("transactional_ids", "transaction_states",
                                                             "transactional_id"),
            69: ("group_ids", "groups", "group_id")}


def every_api_version():
    out = []
    for key in sorted(api_key_map):
        for version in range(0, 20):
            try:
                load_request_schema(key, version), load_response_schema(key, version)
            except Exception:
                continue
            out.append((key, version))
    return out


def sample(cls, i: int = 0):
    """A request entity: two items in every collection, every name and number its own."""
    hints = typing.get_type_hints(cls)
    values = {}
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        inner = _unoptional(hint)
        if typing.get_origin(inner) is tuple:
            item = typing.get_args(inner)[0]
            values[f.name] = tuple(sample(item, j) if dataclasses.is_dataclass(item) else _scalar(item, f.name, j)
                                   for j in (i * 10 + 1, i * 10 + 4))
        elif dataclasses.is_dataclass(inner):
            values[f.name] = sample(inner, i)
        else:
            values[f.name] = _scalar(inner, f.name, i, f.metadata.get("kafka_type"))
    return cls(**values)


def _scalar(hint, name: str, i: int, kind: str | None = None):
    from datetime import timedelta

    from kio.static.primitive import i32Timedelta, i64Timedelta
    if kind in ("timedelta_i32", "timedelta_i64"):
        return (i32Timedelta if kind == "timedelta_i32" else i64Timedelta).parse(timedelta(0))
    if hint is uuid.UUID or name == "topic_id":
        return uuid.UUID(int=i + 1)
    if hint is bool:
        return False
    if isinstance(hint, type) and issubclass(hint, str):
        return hint(f"{name}-{i}")
    if isinstance(hint, type) and issubclass(hint, int) and (name in PARTITIONS or name.startswith("partition")):
        return hint(i)
    return zero_scalar(kind, hint)


def _unoptional(hint):
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    return args[0] if type(None) in typing.get_args(hint) and len(args) == 1 else hint


def frame(key: int, version: int, body: bytes, flexible: bool) -> bytes:
    client = b"member-1"
    head = struct.pack(">hhih", key, version, 7, len(client)) + client + (b"\x00" if flexible else b"")
    return head + body


def answer(key: int, version: int, error: str = "NOT_LEADER_OR_FOLLOWER"):
    request_cls, response_cls = load_request_schema(key, version), load_response_schema(key, version)
    request = sample(request_cls)
    body = io.BytesIO()
    entity_writer(request_cls)(body, request)
    answered = error_response(frame(key, version, body.getvalue(), request_cls.__flexible__), error)
    start = 8 + (1 if response_cls.__flexible__ else 0)
    response, size = entity_reader(response_cls)(memoryview(answered), start)
    assert struct.unpack_from(">ii", answered) == (len(answered) - 4, 7) and start + size == len(answered)
    return request, response


def pairs(entity, topic=None) -> set:
    """(topic, partition) of every partition an entity names: an item with a partition field, or a number in a list
    of partitions, under the nearest enclosing item with a topic name or id."""
    out = set()
    if not dataclasses.is_dataclass(entity):
        return out
    own = next((getattr(entity, t) for t in TOPICS if getattr(entity, t, None) not in (None, "")), None)
    topic = topic if own is None else own
    for f in dataclasses.fields(entity):
        value = getattr(entity, f.name)
        if f.name in PARTITIONS and topic is not None:
            out.add((str(topic), int(value)))
        elif isinstance(value, tuple):
            for item in value:
                if dataclasses.is_dataclass(item):
                    out |= pairs(item, topic)
                elif f.name in ("partitions", "partition_indexes") and topic is not None:
                    out.add((str(topic), int(item)))
    return out


def codes(entity):
    for f in dataclasses.fields(entity):
        value = getattr(entity, f.name)
        if isinstance(value, ErrorCode):
            yield value
        elif dataclasses.is_dataclass(value):
            yield from codes(value)
        elif isinstance(value, tuple):
            for item in value:
                if dataclasses.is_dataclass(item):
                    yield from codes(item)


@pytest.mark.parametrize("key, version", every_api_version(), ids=lambda v: str(v))
def test_every_api_versions_error_answer_reads_back_whole_with_the_error_wherever_it_has_one(key, version):
    request, response = answer(key, version)
    assert set(codes(response)) <= {ErrorCode.not_leader_or_follower}
    if key in PER_PARTITION and pairs(request):
        assert pairs(response) == pairs(request), (PER_PARTITION[key], version)
        assert set(codes(response)) == {ErrorCode.not_leader_or_follower}


@pytest.mark.parametrize("key", sorted(PER_PARTITION), ids=lambda k: PER_PARTITION[k])
def test_each_partition_the_request_named_gets_the_error_in_the_newest_version(key):
    newest = max(v for k, v in every_api_version() if k == key)
    request, response = answer(key, newest, "UNKNOWN_TOPIC_OR_PARTITION")
    assert len(pairs(request)) >= 2 and pairs(response) == pairs(request)
    assert set(codes(response)) == {ErrorCode.unknown_topic_or_partition}


@pytest.mark.parametrize("key", sorted(PER_NAME))
def test_each_name_the_request_listed_gets_its_own_answer(key):
    asked, answered, field = PER_NAME[key]
    newest = max(v for k, v in every_api_version() if k == key)
    request, response = answer(key, newest, "COORDINATOR_NOT_AVAILABLE")
    assert [getattr(item, field) for item in getattr(response, answered)] == list(getattr(request, asked))
    assert set(codes(response)) == {ErrorCode.coordinator_not_available}


def test_an_error_answer_says_unknown_where_the_broker_says_unknown():
    """Produce's base offset and log start offset, Fetch's high watermark: -1, as the broker's own error answers."""
    _, produced = answer(0, 9)
    partition = produced.responses[0].partition_responses[0]
    assert (partition.base_offset, partition.log_start_offset) == (-1, -1)
    _, fetched = answer(1, 12)
    assert fetched.responses[0].partitions[0].high_watermark == -1
