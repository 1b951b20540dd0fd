"""A stateful member's state (the scenario's `state` block): per (partition, key) a count, a sum of seq and the last
input offset, in memory, written through to the changelog topic and restored from it.

The order, per batch (docs/DESIGN.md, "State"): apply the records; log the consumed rows and one state row a change
(state/<member>.jsonl: the offset applied and prev_offset, the last_offset of the value it built on), flushed; send one
changelog record a change to the input's partition. The changelog producer is flushed before every commit and in the
revoke callback; on `lost` a partition's state is dropped unwritten.

A newly assigned partition is paused in the assignment callback (`restore_start`: from, to = the changelog's end
then). A second consumer (no group, assign()) reads the changelog to `to` in the member's poll loop, never inside the
callback, while the member goes on consuming the partitions it has; then `restore_end` (records, ms, aborted when the
partition was revoked mid-restore) and the partition is resumed. With keep_on_revoke a revoked partition's state and
changelog position stay in memory; if it comes back, only the changelog after that position is read.

The changelog producer and the restore consumer use the member's bootstrap servers (its lane) and its client.id, so a
cut or a toxic on the member covers them too.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from workloads.config import MemberConfig, StateConfig
from workloads.history import JsonlLog, now_ms
from workloads.producer import produce, seq_of
from workloads.security import security_config

ZERO = (0, 0, -1)  # count, sum of seq, last input offset: a key nothing was applied to
RESTORE_BATCH = 5000
FLUSH_TIMEOUT_S = 30
END_OFFSET_TIMEOUT_S = 5  # in the assignment callback; a restore whose end is not known yet asks again in the loop
OFFSET_END = -1  # ListOffsets' "latest" timestamp: offsets_for_times answers the partition's end offset


def encode_value(count: int, total: int, last_offset: int, member: str | None = None, at_ms: int | None = None) -> bytes:
    """A changelog value: the key's count, sum and last offset, and who wrote it when (the member's state row's
    ts_ms), so that the analysis knows which state row the key's final value is, even where two members applied the
    same change (a zombie's write after the new owner's)."""
    return json.dumps({"count": count, "sum": total, "last_offset": last_offset, "member": member, "ts_ms": at_ms},
                      separators=(",", ":")).encode()


def decode_value(value: bytes) -> tuple[int, int, int]:
    """A changelog value's count, sum and last offset."""
    return decode_change(value)[:3]


def decode_change(value: bytes) -> tuple[int, int, int, str | None, int | None]:
    """A changelog value whole: count, sum, last offset, and who wrote it when (None for the harness's prefill)."""
    v = json.loads(value)
    return v["count"], v["sum"], v["last_offset"], v.get("member"), v.get("ts_ms")


def incremental(cfg: MemberConfig) -> bool:
    """Whether the member's rebalances hand over partitions incrementally (cooperative, or KIP-848)."""
    return cfg.protocol == "consumer" or cfg.assignor == "cooperative-sticky"


@dataclass
class Restore:
    """One partition's restore: the changelog from `start` up to `end` (exclusive; None: not known yet)."""
    partition: int
    start: int
    end: int | None
    began_s: float
    records: int = 0
    position: int = 0

    @property
    def done(self) -> bool:
        return self.end is not None and self.position >= self.end


class MemberState:
    """The state of one member, its changelog producer, its restore consumer and state/<member>.jsonl."""

    def __init__(self, cfg: MemberConfig, spec: StateConfig, consumer_settings: dict) -> None:
        self.cfg, self.spec, self.name = cfg, spec, cfg.member
        self.topic = cfg.topics[0]
        self.tables: dict[int, dict[str, tuple[int, int, int]]] = {}  # partition -> key -> value
        self.kept: dict[int, int] = {}  # keep_on_revoke: partition -> changelog position of its kept table
        self.positions: dict[int, int] = {}  # partition -> the changelog position its table reflects (restored, written)
        self.restores: dict[int, Restore] = {}
        self.log = JsonlLog(Path(cfg.run_dir) / "state" / f"{self.name}.jsonl")
        common = {**security_config(), "bootstrap.servers": cfg.bootstrap_servers, "client.id": self.name}
        self.producer = Producer({**common, "acks": "all", "enable.idempotence": True, "linger.ms": 5})
        hosted = {k: v for k, v in consumer_settings.items() if k.startswith("queued.")}
        self.restorer = Consumer({**common, **hosted, "group.id": f"{self.name}-restore", "enable.auto.commit": False,
                                  "enable.auto.offset.store": False, "auto.offset.reset": "earliest"})

    # the assignment callbacks (inside consume())
    def assigned(self, consumer, partitions: list[TopicPartition], event) -> None:
        """Take the assignment, pause every new partition and begin its restore."""
        (consumer.incremental_assign if incremental(self.cfg) else consumer.assign)(partitions)
        if not partitions:
            return
        consumer.pause(partitions)
        self._find_ends([self._begin_restore(tp.partition) for tp in partitions], event, END_OFFSET_TIMEOUT_S)

    def revoked(self, partitions: list[TopicPartition], event) -> None:
        """Flush the changelog; keep (keep_on_revoke) or drop each revoked partition's state."""
        self.flush()
        for tp in partitions:
            restored = self._abort_restore(tp.partition, event)
            if self.spec.keep_on_revoke and restored and tp.partition in self.tables:
                self.kept[tp.partition] = self.positions.get(tp.partition, 0)
            else:
                self._drop(tp.partition)

    def lost(self, partitions: list[TopicPartition], event) -> None:
        """Drop the lost partitions' state, unwritten."""
        for tp in partitions:
            self._abort_restore(tp.partition, event)
            self._drop(tp.partition)

    def _drop(self, partition: int) -> None:
        self.tables.pop(partition, None)
        self.kept.pop(partition, None)
        self.positions.pop(partition, None)

    def _begin_restore(self, partition: int) -> Restore:
        """From the kept position (keep_on_revoke) or from the start; `restore_start` once its end is known."""
        start = self.kept.pop(partition, None)
        if start is None:
            start = 0
            self.tables[partition] = {}
        restore = Restore(partition, start, None, time.monotonic(), position=start)
        self.restores[partition] = restore
        return restore

    def _find_ends(self, restores: list[Restore], event, timeout_s: float) -> None:
        """The changelog partitions' end offsets, asked together (one ListOffsets a leader: timestamp -1 is the
        latest offset); each restore then logs `restore_start` and its partition joins the restore consumer."""
        if not restores:
            return
        asked = [TopicPartition(self.spec.changelog, r.partition, OFFSET_END) for r in restores]
        try:
            ends = {tp.partition: tp.offset for tp in self.restorer.offsets_for_times(asked, timeout=timeout_s)
                    if tp.error is None and tp.offset >= 0}
        except KafkaException:
            return  # asked again in the loop
        found = [r for r in restores if r.partition in ends]
        for restore in found:
            restore.end = ends[restore.partition]
            event("restore_start", partitions=[f"{self.topic}:{restore.partition}"], from_offset=restore.start,
                  to_offset=restore.end)
        if found:
            self.restorer.incremental_assign([TopicPartition(self.spec.changelog, r.partition, r.start) for r in found])

    def _abort_restore(self, partition: int, event) -> bool:
        """Ends a restore under way as aborted; False when there was one (the partition's table is partial)."""
        restore = self.restores.pop(partition, None)
        if restore is None:
            return True
        if restore.end is not None:
            self.restorer.incremental_unassign([TopicPartition(self.spec.changelog, partition)])
        self._end_restore(restore, event, aborted=True)
        return False

    def _end_restore(self, restore: Restore, event, aborted: bool) -> None:
        event("restore_end", partitions=[f"{self.topic}:{restore.partition}"], records=restore.records,
              elapsed_ms=round((time.monotonic() - restore.began_s) * 1000), aborted=aborted)

    # the poll loop
    @property
    def restoring(self) -> bool:
        return bool(self.restores)

    def step(self, consumer, event) -> None:
        """Read what the restore consumer has, and resume each partition whose restore is done."""
        self.producer.poll(0)
        self._find_ends([r for r in self.restores.values() if r.end is None], event, 1)
        if self.restores and not all(r.done for r in self.restores.values()):
            for m in self.restorer.consume(RESTORE_BATCH, timeout=0.05):
                if m.error() is not None:
                    if m.error().code() != KafkaError._PARTITION_EOF:
                        event("error", detail=f"restore: {m.error().str()}")
                    continue
                restore = self.restores.get(m.partition())
                if restore is None or m.offset() < restore.position:
                    continue
                self.tables[m.partition()][m.key().decode()] = decode_value(m.value())
                restore.records += 1
                restore.position = m.offset() + 1
        for partition, restore in list(self.restores.items()):
            if restore.done:
                del self.restores[partition]
                self.restorer.incremental_unassign([TopicPartition(self.spec.changelog, partition)])
                self.positions[partition] = max(self.positions.get(partition, 0), restore.position)
                self._end_restore(restore, event, aborted=False)
                consumer.resume([TopicPartition(self.topic, partition)])

    def held_back(self, records: list, consumer) -> list:
        """The records of partitions still restoring are not processed: each such partition goes back to its first
        one and stays paused (a fetch may have returned records before the pause took effect)."""
        if not self.restores:
            return records
        first: dict[int, int] = {}
        kept = []
        for m in records:
            if m.partition() in self.restores:
                first.setdefault(m.partition(), m.offset())
            else:
                kept.append(m)
        for partition, offset in first.items():
            tp = TopicPartition(self.topic, partition, offset)
            consumer.pause([tp])
            consumer.seek(tp)
        return kept

    def apply(self, records: list, generation: int) -> None:
        """Apply a batch: the state rows flushed, then one changelog record a change."""
        rows, sends, at = [], [], now_ms()
        for m in records:
            partition, key = m.partition(), m.key().decode()
            table = self.tables.setdefault(partition, {})
            count, total, last = table.get(key, ZERO)
            value = (count + 1, total + seq_of(m.value()), m.offset())
            table[key] = value
            rows.append({"ts_ms": at, "member": self.name, "topic": m.topic(), "partition": partition, "key": key,
                         "offset": m.offset(), "prev_offset": last, "count": value[0], "sum": value[1],
                         "generation": generation})
            sends.append((partition, key, value))
        self.log.extend(rows)
        self.log.flush()
        for partition, key, value in sends:
            self._send(partition, key, value, at)

    def _send(self, partition: int, key: str, value: tuple[int, int, int], at_ms: int) -> None:
        def delivered(err, msg, partition=partition):
            if err is None and msg.offset() is not None and msg.offset() >= 0:
                self.positions[partition] = max(self.positions.get(partition, 0), msg.offset() + 1)
        produce(self.producer, self.spec.changelog, key=key.encode(), value=encode_value(*value, self.name, at_ms),
                partition=partition, on_delivery=delivered)

    def flush(self) -> int:
        """The changelog written through (before a commit, and in the revoke callback); what is left unsent."""
        return self.producer.flush(FLUSH_TIMEOUT_S)

    def close(self) -> None:
        self.flush()
        self.restorer.close()
        self.log.close()

    def abandon(self) -> None:
        """A crashed member's: what the changelog producer has not sent dies with it."""
        self.producer.purge()
        self.log.close()
        self.producer, self.restorer = None, None

