"""The verified readers of a transactional run (commit: transaction; docs/DESIGN.md, "verified/"): while the run goes on,
each reads every partition of the members' output topic with one isolation level, as a consumer that assign()s them
(never a group member), on the control lane. verified/<isolation>.jsonl keeps each record it read: where it is in the
output topic (partition, offset), the input record it names (topic, input_partition, input_offset), the member and
transaction that wrote it, and when it was read. verified/readers.json says, per reader, how far it read against each
partition's end: the exactly-once checks judge a skip or a torn transaction only where the reader read past it, and a
read_committed reader stuck below the end once every member stopped is a transaction left open (a hanging one, or one
of a member that died in it, until its transaction.timeout.ms).

The drain waits for the readers (as it waits for the group's commits): each reader reads on until its position
reaches every partition's end, or the wait's limit.
"""
from __future__ import annotations

import json
import logging
import threading
import time
from pathlib import Path

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

from harness.output_topic import input_row
from harness.partition_ends import PartitionEnds, read_past, short_of
from workloads.history import JsonlLog, now_ms
from workloads.security import security_config

FOLDER = "verified"
SUMMARY_FILE = "readers.json"
ISOLATIONS = ("read_committed", "read_uncommitted")
TXN_HEADER = "txn"  # the transactional member's transaction number (workloads/transactions.py output_headers)
POLL_S = 0.5
EXAMPLES = 5


class VerifiedReader:
    """One reader: a thread that reads `output.topic` with `isolation` into verified/<isolation>.jsonl. Only that
    thread touches its consumers: asked to finish, it reads on until its position reaches every partition's end (its
    high watermark, harness/partition_ends.py, asked whenever a poll brings nothing) or the time given runs out."""

    def __init__(self, run_dir: Path, bootstrap: str, output, isolation: str) -> None:
        self.run_dir, self.output, self.isolation = run_dir, output, isolation
        self.consumer = Consumer({**security_config(), "bootstrap.servers": bootstrap, "enable.auto.commit": False,
                                  "group.id": f"kafka-chaos-verified-{isolation}", "client.id": f"kafka-chaos-verified-{isolation}",
                                  "isolation.level": isolation, "enable.partition.eof": True,
                                  "auto.offset.reset": "earliest"}, logger=logging.getLogger("kafka-chaos.verified"))
        self.watermarks = PartitionEnds(bootstrap, f"kafka-chaos-verified-{isolation}-ends")
        self.log = JsonlLog(run_dir / FOLDER / f"{isolation}.jsonl")
        self.partitions: list[int] = []
        self.positions: dict[int, int] = {}  # partition -> the next offset this reader would read
        self.ends: dict[int, int] = {}       # partition -> its high watermark, as last asked
        self.rows = self.unread = 0
        self.error: str | None = None
        self.passing_errors: list[str] = []  # errors the client retries past, as it reported them
        self.reached_end = False
        self.finished_at_ms: int | None = None
        self._finish_by: float | None = None  # monotonic; set: read to the end by then, then stop
        self._thread = threading.Thread(target=self._read, name=f"kafka-chaos-verified-{isolation}", daemon=True)

    def start(self) -> "VerifiedReader":
        # the partitions the harness created (the topic's metadata may not have reached every broker yet)
        self.partitions = list(range(self.output.partitions))
        self.consumer.assign([TopicPartition(self.output.topic, p, OFFSET_BEGINNING) for p in self.partitions])
        self._thread.start()
        return self

    def finish(self, timeout_s: float) -> None:
        """Read on to the end, at most `timeout_s` more, then stop (see the class)."""
        self._finish_by = time.monotonic() + timeout_s

    def wait(self, timeout_s: float) -> bool:
        self._thread.join(timeout=timeout_s)
        return not self._thread.is_alive()

    def _read(self) -> None:
        try:
            while self._finish_by is None or time.monotonic() < self._finish_by:
                messages = self.consumer.consume(500, timeout=POLL_S)
                for message in messages:
                    self._take(message)
                self.log.flush()
                if self._finish_by is not None and not messages and self._at_end():
                    self.reached_end = True
                    return
        except Exception as exc:  # the reader's end is a finding of readers.json, never the run's crash
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self.finished_at_ms = now_ms()
            self.log.close()
            self.consumer.close()
            self.watermarks.close()

    def _at_end(self) -> bool:
        ends = self.watermarks.ask(self.output.topic, self.partitions)
        if ends is None:  # asked again after the next empty poll
            return False
        self.ends = ends
        return not short_of(self.positions, ends)

    def _take(self, message) -> None:
        error = message.error()
        if error is not None:
            if error.code() == KafkaError._PARTITION_EOF:
                read_past(self.positions, message)
                return
            if error.fatal():
                raise RuntimeError(f"reading {self.output.topic}: {error.str()}")
            self.passing_errors.append(error.str())  # the client retries (a topic just created, a leader moving)
            return
        read_at = now_ms()
        read_past(self.positions, message)
        row, _ = input_row(message, self.output)
        if row is None:
            self.unread += 1
            return
        headers = dict(message.headers() or [])
        txn = headers.get(TXN_HEADER, b"").decode(errors="replace")
        self.log.append({"partition": message.partition(), "offset": message.offset(), "topic": row["topic"],
                         "input_partition": row["partition"], "input_offset": row["offset"], "member": row["member"],
                         **({"txn": int(txn)} if txn.isdigit() else {}), "read_at_ms": read_at,
                         "isolation": self.isolation})
        self.rows += 1

    def summary(self) -> dict:
        """What readers.json says of this reader."""
        return {"isolation": self.isolation, "rows": self.rows, "unread": self.unread, "error": self.error,
                "passing_errors": self.passing_errors[:EXAMPLES], "passing_error_count": len(self.passing_errors),
                "reached_end": self.reached_end, "finished_at_ms": self.finished_at_ms,
                "partitions": {str(p): {"position": self.positions.get(p, 0), "end": self.ends.get(p)}
                               for p in self.partitions}}


class VerifiedReaders:
    """The run's readers, one an isolation level asked for (the scenario's transaction.readers)."""

    def __init__(self, run_dir: Path, bootstrap: str, output, isolations) -> None:
        self.run_dir = run_dir
        self.readers = [VerifiedReader(run_dir, bootstrap, output, i) for i in isolations]

    def start(self) -> "VerifiedReaders":
        for reader in self.readers:
            reader.start()
        return self

    def finish(self, timeout_s: float, on_tick=None) -> dict:
        """Each reader reads to the end, at most `timeout_s` (none, when 0), then stops; readers.json written, and
        returned."""
        for reader in self.readers:
            reader.finish(timeout_s)
        deadline = time.monotonic() + timeout_s + 30  # a poll, the last ends asked and the close
        for reader in self.readers:
            while not reader.wait(5) and time.monotonic() < deadline:
                if on_tick is not None:
                    on_tick()
            if not reader.wait(0):
                reader.error = reader.error or "the reader did not stop"
        summary = {r.isolation: r.summary() for r in self.readers}
        (self.run_dir / FOLDER / SUMMARY_FILE).write_text(json.dumps(summary, indent=1) + "\n")
        return summary

    def progress(self) -> str:
        return ", ".join(f"{r.isolation} {r.rows} read" for r in self.readers)
