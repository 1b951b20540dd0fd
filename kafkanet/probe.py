"""One Kafka request on a fresh connection, in raw bytes: what a fault does to a path, with no client
library retrying or caching in between."""
from __future__ import annotations

import time

from kafkanet.wire import exchange, frame

TIMEOUT_S = 1.0
API_VERSIONS = 18


def api_versions_request(correlation_id: int, client_id: bytes = b"kafka-chaos-probe") -> bytes:
    return frame(API_VERSIONS, 0, correlation_id, client_id, b"")  # ApiVersions v0


def api_versions_roundtrip(address: str, timeout_s: float = TIMEOUT_S) -> float | None:
    """Seconds for one ApiVersions round trip to host:port, or None if refused, reset or unanswered in time."""
    started = time.monotonic()
    try:
        exchange(address, api_versions_request(7), 7, timeout_s)
    except OSError:
        return None
    return time.monotonic() - started
