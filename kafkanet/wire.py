"""One Kafka request on a fresh connection, in raw bytes: no client library retries or caches in between.

Used to ask what confluent-kafka cannot (who leads the KRaft quorum) and to probe what a fault does to a path.
"""
from __future__ import annotations

import socket
import struct


def frame(api_key: int, version: int, correlation_id: int, client_id: bytes, body: bytes, flexible: bool = False) -> bytes:
    """A request as sent: its size, header v1 (v2, with an empty tagged-field section, for a flexible
    version), then the body."""
    header = struct.pack(">hhih", api_key, version, correlation_id, len(client_id)) + client_id
    message = header + (b"\x00" if flexible else b"") + body
    return struct.pack(">i", len(message)) + message


def read_uvarint(data: bytes, at: int) -> tuple[int, int]:
    """An unsigned varint (flexible versions' lengths and counts) at `at`: (value, the offset after it)."""
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, at
        shift += 7


def exchange(address: str, request: bytes, correlation_id: int, timeout_s: float) -> bytes:
    """Send one framed request to host:port and return its response after the correlation id. Raises OSError
    (refused, reset, timed out, or an answer to another request)."""
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=timeout_s) as conn:
        conn.settimeout(timeout_s)
        conn.sendall(request)
        size, answered = struct.unpack(">ii", _read_exactly(conn, 8))
        if answered != correlation_id:
            raise ConnectionError(f"an answer to request {answered}, not {correlation_id}")
        return _read_exactly(conn, size - 4)


def _read_exactly(conn: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise ConnectionResetError("closed by the peer")
        data += chunk
    return data
