"""Kafka request frames as they pass the request-aware proxy: the header every request starts with, and the whole
request read by kio for its own API version."""
from __future__ import annotations

import struct
from dataclasses import dataclass
from functools import cache

from kafkanet.wire import read_uvarint


@dataclass(frozen=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    size: int  # bytes of the header in the frame, tagged fields included


def read_header(frame: bytes, flexible: bool = False) -> RequestHeader:
    """The header at the start of a request frame (without its 4-byte size). Its first four fields are the
    same in every header version; client_id stays a classic nullable string even in the flexible v2."""
    api_key, api_version, correlation_id, n = struct.unpack_from(">hhih", frame, 0)
    client_id = None if n < 0 else frame[10:10 + n].decode()
    size = 10 + max(n, 0)
    if flexible:  # tagged fields: a count, then (tag, size, bytes) each
        count, size = read_uvarint(frame, size)
        for _ in range(count):
            _, size = read_uvarint(frame, size)
            length, size = read_uvarint(frame, size)
            size += length
    return RequestHeader(api_key, api_version, correlation_id, client_id, size)


def read_request(frame: bytes) -> tuple[RequestHeader, object]:
    """The header (its whole size, tagged fields included) and the body of a request frame, read by kio for
    the request's own API version."""
    from kio.index import load_request_schema
    from kio.serial import entity_reader
    api_key, api_version = struct.unpack_from(">hh", frame, 0)
    header = read_header(frame, is_flexible(api_key, api_version))
    request, _ = entity_reader(load_request_schema(api_key, api_version))(memoryview(frame), header.size)
    return header, request


@cache
def is_flexible(api_key: int, api_version: int) -> bool:
    from kio.index import load_request_schema
    try:
        return load_request_schema(api_key, api_version).__flexible__
    except Exception:  # an API kio does not know: its header is read as v1 (client_id, no tags)
        return False
