"""The request-aware proxy's own answer to a request: a response of the request's exact API version that carries an
error everywhere the client looks for one, built by kio.

Every error code of the response is the error. Each collection of the response that answers a collection of the
request holds one item per item the request named, with its identity copied (topic name or id, partition, group,
coordinator key, transactional id, member): the per-partition answer of a Produce, Fetch, ListOffsets,
OffsetCommit, TxnOffsetCommit, AddPartitionsToTxn, WriteTxnMarkers or DescribeProducers, the per-group answer of an
OffsetFetch or DescribeGroups, the per-key answer of a FindCoordinator. A collection answers the same-named one of
the request, or, where the names differ (Produce's responses answer its topic_data), the one request collection
that names the same things (ANSWERS, REQUEST_ITEMS and a shared identity field). Offsets, leader ids, epochs,
timestamps and producer ids read -1 ("unknown"), as the broker's own error answers give them; everything else is
at its zero value."""
from __future__ import annotations

import dataclasses
import io
import struct
import types
import typing
from datetime import timedelta

from kafkanet.frames import read_request

# the response collections that answer a request's items when their names differ, and the request collections
# they may answer, in order of preference
ANSWERS = ("responses", "results", "partition_responses", "results_by_partition", "topic_results",
           "results_by_transaction", "results_by_topic_v3_and_below", "partitions", "groups", "coordinators", "transaction_states", "filter_results",
           "topics")
REQUEST_ITEMS = ("topic_data", "topics", "v3_and_below_topics", "partition_data", "partitions", "partition_indexes", "transactions",
                 "markers", "groups", "group_ids", "groups_names", "coordinator_keys", "transactional_ids",
                 "resources", "creations", "filters")
# a response item's identity field -> the request item's fields it is copied from (first found)
IDENTITY = {"name": ("name", "topic"), "topic": ("topic", "name"), "topic_name": ("topic_name", "name", "topic"),
            "topic_id": ("topic_id",), "partition_index": ("partition_index", "partition", "index"),
            "partition": ("partition", "partition_index"), "index": ("index", "partition_index"),
            "group_id": ("group_id",), "key": ("key",), "member_id": ("member_id",),
            "group_instance_id": ("group_instance_id",), "transactional_id": ("transactional_id",),
            "resource_type": ("resource_type",), "resource_name": ("resource_name",)}
SCALAR_IDENTITY = ("key", "group_id", "transactional_id", "partition_index", "name")  # a request list of names/ints
UNKNOWN = {"high_watermark", "leader_id", "leader_epoch", "preferred_read_replica", "timestamp", "generation_id",
           "producer_id", "producer_epoch"}  # and every *offset: -1 in an error answer


def error_response(frame: bytes, error_name: str) -> bytes:
    """The whole response frame (size included) answering this request with the named error (see the module)."""
    from kio.index import load_response_schema
    from kio.schema.errors import ErrorCode
    from kio.serial import entity_writer
    code = ErrorCode[error_name.lower()]
    header, request = read_request(frame)
    response_cls = load_response_schema(header.api_key, header.api_version)
    response = zero(response_cls, code, request)
    body = io.BytesIO()
    entity_writer(response_cls)(body, response)
    head = struct.pack(">i", header.correlation_id) + (b"\x00" if response_cls.__flexible__ else b"")
    payload = head + body.getvalue()
    return struct.pack(">i", len(payload)) + payload


def zero(cls, code, request=None):
    """An instance of a kio entity answering ``request`` (an entity, or None): every error code set to ``code``,
    each answering collection holding one item per request item (see the module), unknowns -1, the rest zero."""
    hints = typing.get_type_hints(cls)
    answered = _answered(cls, hints, request)
    values = {}
    for f in dataclasses.fields(cls):
        kind, hint = f.metadata.get("kafka_type"), hints[f.name]
        item = _collection_item(hint)
        if kind == "error_code":
            values[f.name] = code
        elif kind in ("timedelta_i32", "timedelta_i64"):
            from kio.static.primitive import i32Timedelta, i64Timedelta
            values[f.name] = (i32Timedelta if kind == "timedelta_i32" else i64Timedelta).parse(timedelta(0))
        elif item is not None:
            values[f.name] = tuple(zero(item, code, r) for r in answered.get(f.name, ())) \
                if dataclasses.is_dataclass(item) else ()
        elif _optional(hint) is not None and dataclasses.is_dataclass(_optional(hint)):
            values[f.name] = None
        elif dataclasses.is_dataclass(hint):
            values[f.name] = zero(hint, code, getattr(request, f.name, None))
        elif f.name in IDENTITY and (found := _identity(request, f.name)) is not _MISSING:
            values[f.name] = found
        else:
            values[f.name] = _zero_scalar(kind, hint, unknown=f.name in UNKNOWN
                                          or f.name.endswith(("offset", "leader_epoch")))
    return cls(**values)


_MISSING = object()


def _identity(request, name: str):
    for source in IDENTITY[name]:
        if request is not None and hasattr(request, source):
            return getattr(request, source)
    return _MISSING


def _answered(cls, hints: dict, request) -> dict[str, tuple]:
    """For each collection of the response class, the request's items it answers (see the module)."""
    if request is None or not dataclasses.is_dataclass(request):
        return {}
    asked = {f.name: tuple(getattr(request, f.name) or ()) for f in dataclasses.fields(request)
             if isinstance(getattr(request, f.name), (tuple, type(None)))
             and _collection_item(typing.get_type_hints(type(request))[f.name]) is not None}
    collections = {f.name: _collection_item(hints[f.name]) for f in dataclasses.fields(cls)
                   if _collection_item(hints[f.name]) is not None}
    out = {name: _items(asked[name], item) for name, item in collections.items() if name in asked}
    spare = [name for name in ANSWERS if name in collections and name not in out]
    if len(spare) == 1 and dataclasses.is_dataclass(collections[spare[0]]):
        item = collections[spare[0]]
        for name in REQUEST_ITEMS:
            if name in asked and name not in collections and _names_alike(asked[name], item):
                out[spare[0]] = _items(asked[name], item)
                break
    return out


def _names_alike(items: tuple, item_cls) -> bool:
    """Whether the response item class names what the request items name (a shared identity field, or a request
    list of plain names or numbers and a response item with a field for one)."""
    fields = {f.name for f in dataclasses.fields(item_cls)}
    if not items or not dataclasses.is_dataclass(items[0]):
        return any(name in fields for name in SCALAR_IDENTITY)
    return any(name in fields and any(hasattr(items[0], s) for s in IDENTITY[name]) for name in IDENTITY
               if name not in ("member_id", "group_instance_id"))


def _items(items: tuple, item_cls) -> tuple:
    """The request's items as the response item class reads them: a plain name or number becomes an item of the
    class's first identity field (a FindCoordinator key, a DescribeGroups group, a WriteTxnMarkers partition)."""
    if not items or dataclasses.is_dataclass(items[0]) or not dataclasses.is_dataclass(item_cls):
        return items
    fields = {f.name for f in dataclasses.fields(item_cls)}
    name = next((n for n in SCALAR_IDENTITY if n in fields), None)
    return tuple(types.SimpleNamespace(**{name: value}) for value in items) if name else ()


def _collection_item(hint):
    """X for a hint `tuple[X, ...]` (or `tuple[X, ...] | None`), else None."""
    hint = _optional(hint) or hint
    return typing.get_args(hint)[0] if typing.get_origin(hint) is tuple else None


def _optional(hint):
    """X for a hint `X | None`, else None."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    return args[0] if typing.get_origin(hint) in (typing.Union, types.UnionType) and len(args) == 1 else None


def _zero_scalar(kind, hint, unknown: bool = False):
    """A scalar field's zero value (-1 for an ``unknown`` integer), or None where the field is nullable."""
    if kind == "bool":
        return False
    if kind == "string":  # str, or one of kio's named strings (GroupId, TopicName, ...); None when nullable
        return hint("") if isinstance(hint, type) and issubclass(hint, str) else None
    if kind in ("bytes", "records"):  # bytes, or kio's Records; None when nullable
        return hint(b"") if isinstance(hint, type) and issubclass(hint, bytes) else None
    if kind == "datetime_i64" and isinstance(hint, type):  # a non-nullable timestamp: the epoch
        from datetime import datetime, timezone

        from kio.static.primitive import TZAware
        return TZAware.truncate(datetime.fromtimestamp(0, timezone.utc))
    if isinstance(hint, type) and issubclass(hint, float):
        return hint(0.0)
    if isinstance(hint, type) and issubclass(hint, int) and not issubclass(hint, bool):  # kio's i8 ... i64, u16
        return hint(-1 if unknown and kind in ("int16", "int32", "int64") else 0)
    return None
