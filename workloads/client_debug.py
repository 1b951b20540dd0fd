"""A librdkafka member's join watch: why a member that never joins did not, in its client's own words.

The member runs with librdkafka's group debug lines on (`debug=cgrp`) and keeps only the last RING_LINES of them in
memory. If it has no assignment `join_watch_s` after it subscribed (the harness passes the group's stable limit), it
writes them to logs/<member>.cgrp.log, with every line after, until it is assigned or stops; its events get a
`join_overdue` row naming the file. A member that joins in time writes nothing and stops keeping lines.

librdkafka's lines reach Python through confluent-kafka's `logger` (served by consume()); the ones above debug
level go on to stderr as librdkafka would have written them itself, so the member's process log stays as it was.
"""
from __future__ import annotations

import logging
import sys
from collections import deque
from pathlib import Path

DEBUG_CONTEXTS = "cgrp"
RING_LINES = 400  # a hosted member's share of memory: about 60 KB, 30 MB for 500 members
# confluent-kafka maps librdkafka's syslog levels onto logging's; back again for the stderr line (notice reads as 6)
SYSLOG_LEVEL = {logging.CRITICAL: 2, logging.ERROR: 3, logging.WARNING: 4, logging.INFO: 6, logging.DEBUG: 7}


def stderr_line(record: logging.LogRecord) -> str:
    """librdkafka's own stderr format: %level|seconds|FACILITY|client| message (confluent-kafka hands over the
    three parts; anything else is kept as its message says)."""
    parts = record.args if isinstance(record.args, tuple) and len(record.args) == 3 else ("LOG", "?", record.getMessage())
    facility, client, text = parts
    return f"%{SYSLOG_LEVEL.get(record.levelno, 6)}|{record.created:.3f}|{facility}|{client}| {text}"


class JoinWatch(logging.Handler):
    """The member's librdkafka log: debug lines into a ring until the watch expires, then to the file."""

    def __init__(self, member: str, run_dir: Path, watch_s: float) -> None:
        super().__init__(logging.DEBUG)
        self.member, self.watch_s = member, watch_s
        self.path = run_dir / "logs" / f"{member}.cgrp.log"
        self.ring: deque[str] | None = deque(maxlen=RING_LINES)
        self.file = None
        self.logger = logging.Logger(f"librdkafka.{member}", logging.DEBUG)  # not in logging's registry
        self.logger.addHandler(self)

    def settings(self) -> dict:
        return {"debug": DEBUG_CONTEXTS, "logger": self.logger}

    def emit(self, record: logging.LogRecord) -> None:
        line = stderr_line(record)
        if record.levelno > logging.DEBUG:
            print(line, file=sys.stderr, flush=True)
        if self.file is not None:
            self.file.write(line + "\n")
        elif self.ring is not None:
            self.ring.append(line)

    def overdue(self, subscribed_s: float, now_s: float) -> bool:
        """True once, when the watch expires without an assignment: the ring is written and the file stays open."""
        if self.ring is None or self.file is not None or now_s - subscribed_s < self.watch_s:
            return False
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.file = open(self.path, "a", encoding="utf-8", buffering=1)
        self.file.write(f"# {self.member}: no assignment {self.watch_s:g} s after it subscribed; its last "
                        f"{len(self.ring)} librdkafka group lines, then every line after\n")
        self.file.writelines(line + "\n" for line in self.ring)
        self.ring = None
        return True

    def joined(self) -> None:
        """Assigned: keep no more debug lines (a file already written gets its last line). librdkafka still writes
        them (its `debug` is fixed at the client's creation), but the logger drops them before any record is made."""
        self.ring = None
        self.logger.setLevel(logging.INFO)
        if self.file is not None:
            self.file.write(f"# {self.member}: assigned\n")
            self.file.close()
            self.file = None

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None
        super().close()
