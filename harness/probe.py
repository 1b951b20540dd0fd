"""One Kafka request on a fresh connection, in raw bytes: what a fault does to a path, with no client
library retrying or caching in between."""
from __future__ import annotations

import socket
import struct
import time

TIMEOUT_S = 1.0
API_VERSIONS = 18


def api_versions_request(correlation_id: int, client_id: bytes = b"kafka-chaos-probe") -> bytes:
    body = struct.pack(">hhih", API_VERSIONS, 0, correlation_id, len(client_id)) + client_id  # ApiVersions v0
    return struct.pack(">i", len(body)) + body


def api_versions_roundtrip(address: str, timeout_s: float = TIMEOUT_S) -> float | None:
    """Seconds for one ApiVersions round trip to host:port, or None if refused, reset or unanswered in time."""
    host, port = address.rsplit(":", 1)
    started = time.monotonic()
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s) as conn:
            conn.settimeout(timeout_s)
            conn.sendall(api_versions_request(7))
            size, correlation_id = struct.unpack(">ii", _read_exactly(conn, 8))
            if correlation_id != 7:
                return None
            _read_exactly(conn, size - 4)
    except OSError:
        return None
    return time.monotonic() - started


def _read_exactly(conn: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise ConnectionResetError("closed by the peer")
        data += chunk
    return data
