"""What the brokers' own logs (logs/kafka-N.log: the run's stretch of each broker's log4j output) say about the
machine under a run: every KRaft controller event that took longer than the controller's threshold
(`controller.performance.always.log.threshold.ms`, 2,000 ms by default), which Kafka logs at ERROR as
``Exceptionally slow controller event E took N ms``. On a healthy machine there are none; a burst of them says the
brokers were starved (CPU, disk), so that whatever a run measured then is partly the machine's."""
from __future__ import annotations

import re
from datetime import datetime, timezone
from pathlib import Path

STAMP = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\] ")
SLOW = re.compile(r"Exceptionally slow controller event (\S+) took (\d+) ms")


def log4j_ms(stamp: str) -> int:
    """A log4j time as the project's images write it (UTC, to the millisecond) in ms since the epoch."""
    return round(datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f").replace(tzinfo=timezone.utc).timestamp() * 1000)


def slow_controller_events(run_dir: Path) -> list[dict]:
    """Every slow controller event in the run's broker logs, in time order: at_ms, broker (the log's name), event,
    took_ms."""
    out = []
    for path in sorted((run_dir / "logs").glob("kafka-*.log")):
        for line in path.read_text(errors="replace").splitlines():
            if (m := SLOW.search(line)) and (at := STAMP.match(line)):
                out.append({"at_ms": log4j_ms(at.group(1)), "broker": path.stem, "event": m.group(1),
                            "took_ms": int(m.group(2))})
    return sorted(out, key=lambda e: e["at_ms"])


def stalls_in(events: list[dict], t0: int, t1: int) -> dict:
    """The slow controller events in [t0, t1): how many, and the longest (None when there were none)."""
    inside = [e["took_ms"] for e in events if t0 <= e["at_ms"] < t1]
    return {"broker_stalls": len(inside), "broker_stall_max_ms": max(inside, default=None)}
