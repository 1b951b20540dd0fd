"""A broker's log directory runs out of space: its disk filled (BrokerHandle.fill_log_dir), then freed.

This needs the cluster option `cluster.log_disk_mb` (each broker's log directory on a size-limited disk of its
own). Kafka 4.3.1's nodes keep one log directory, which also holds the KRaft metadata log; the next write that
meets ENOSPC takes the directory offline, and with no other directory left Kafka halts the whole node (broker and
controller): "Shutdown broker because all log dirs in ... have failed" (docs/faults.md says what the group
sees). The heal frees the disk and, if Kafka stopped the broker, starts it again and waits until it has
rejoined. What Kafka printed about it goes into the fault's row (`kafka_said`), with `broker_down_at_heal`.
"""
from __future__ import annotations

from faults.base import FaultParams
from faults.broker import BrokerFault
from faults.lifecycle import GRACEFUL_STOP_S

# What Kafka prints when a log directory fails (LogDirFailureChannel, LogManager, ReplicaManager, the raft layer).
KAFKA_DISK_LINES = ("No space left on device", "Shutdown broker because", "Stopping serving logs in dir",
                    "Error while writing to checkpoint file", "LogDirFailure", "fatal fault", "Halting")
# A line of Kafka's that says the directory is offline while the process lives on (a node with another directory).
LOG_DIR_OFFLINE = "Stopping serving logs in dir"
KEPT_CHARS = 300


class DiskFullParams(FaultParams):
    def check(self, facts, target: str) -> None:
        if facts.log_disk_mb is None:
            raise ValueError("kind: disk_full fills a broker's log disk, and the brokers have none: set "
                             "cluster.log_disk_mb (each broker's log directory on a disk of its own, e.g. 256)")


class DiskFull(BrokerFault):
    """Every free block of the broker's log disk taken by one file; the heal removes it and brings the broker
    back if Kafka stopped it."""
    kind = "disk_full"
    Params = DiskFullParams

    def _inject(self) -> None:
        self.log_mark = len(self.broker.logs())
        self.note(filled_bytes=self.broker.fill_log_dir())

    def _heal(self) -> None:
        self.broker.free_log_dir()
        said = self.kafka_said()
        down = not self.broker.running()
        self.note(broker_down_at_heal=down, kafka_said=said)
        if not down and any(LOG_DIR_OFFLINE in line for line in said):
            self.broker.stop(GRACEFUL_STOP_S)  # an offline log directory comes back only with a restart
            down = True
        if down:
            self.cluster.start_broker(self.broker)

    def kafka_said(self) -> list[str]:
        """The broker's lines about the failed directory since the inject: the first of each kind, shortened."""
        try:
            text = self.broker.logs()[getattr(self, "log_mark", 0):]
        except Exception as exc:  # only an observation: the heal goes on
            return [f"(no logs: {exc})"]
        first: dict[str, tuple[int, str]] = {}  # each kind of line once: many partitions fail alike
        for number, line in enumerate(text.splitlines()):
            for marker in KAFKA_DISK_LINES:
                if marker in line and marker not in first:
                    first[marker] = (number, line[:KEPT_CHARS])
        return list(dict.fromkeys(line for _, line in sorted(first.values())))  # a line of two kinds, once
