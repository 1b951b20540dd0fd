"""Where a reader of an output topic has read to the end: each partition's high watermark, asked read_uncommitted.
A read_committed consumer's own ListOffsets (and its end-of-partition event) answers the last stable offset instead,
which a transaction left open holds back: a reader that took that for the end would stop before the records behind
the transaction and report them missing. Both readers of an output topic wait on these ends: the verified readers
(harness/verified.py) and the read-back (harness/output_topic.py)."""
from __future__ import annotations

import logging

from confluent_kafka import Consumer, TopicPartition

from workloads.security import security_config

ASK_TIMEOUT_S = 5


class PartitionEnds:
    """A consumer that only asks high watermarks (read_uncommitted, never fetching); one thread uses it."""

    def __init__(self, bootstrap: str, name: str) -> None:
        self.consumer = Consumer({**security_config(), "bootstrap.servers": bootstrap, "group.id": name,
                                  "client.id": name, "isolation.level": "read_uncommitted",
                                  "enable.auto.commit": False}, logger=logging.getLogger("kafka-chaos.ends"))

    def ask(self, topic: str, partitions) -> dict[int, int] | None:
        """Each partition's high watermark now; None when one could not be asked this time."""
        try:
            return {p: self.consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=ASK_TIMEOUT_S,
                                                           cached=False)[1] for p in partitions}
        except Exception:  # not known this time (a leader moving): asked again later
            return None

    def close(self) -> None:
        self.consumer.close()


def read_past(positions: dict[int, int], message) -> None:
    """The next offset to read in `message`'s partition, once it was taken: one past a record; where its
    end-of-partition event stands (never back)."""
    p = message.partition()
    positions[p] = message.offset() + 1 if message.error() is None else max(positions.get(p, 0), message.offset())


def short_of(positions: dict[int, int], ends: dict[int, int]) -> dict[int, dict]:
    """The partitions whose next offset to read is below their end: {partition: {position, end}}."""
    return {p: {"position": positions.get(p, 0), "end": end} for p, end in sorted(ends.items())
            if positions.get(p, 0) < end}
