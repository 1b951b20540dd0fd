"""The one clock of a run: wall-clock milliseconds since the epoch, as every log row and event carries them.

Durations and deadlines use time.monotonic() (kafkanet.waiting); this clock is for timestamps that other
processes (members, brokers, the analysis) compare with their own.
"""
from __future__ import annotations

import time


def now_ms() -> int:
    return time.time_ns() // 1_000_000
