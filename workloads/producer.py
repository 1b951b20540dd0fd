"""A sequenced producer process: sends records seq = 0..N-1 and logs the outcome of every one.

Record seq goes to the run's topics in turn (seq modulo their number); a topic_create trigger adds a
topic through the producer's control file (control/<producer>.json: {"topics": [...]}), written to
from then on.

Row per record in produced/<producer_id>.jsonl (run-directory contract v1). An error the client
cannot prove fatal is `info` (outcome unknown), never `fail`: as in Jepsen, a time-out may have
written the record.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

from confluent_kafka import KafkaError, Producer

from workloads import config as workload_config
from workloads.config import ProducerConfig
from workloads.control import ControlFile, control_path
from workloads.history import JsonlLog, now_ms
from workloads.security import security_config

CONTROL_EVERY_S = 0.5  # how often the control file is looked at (a stat; read only when it changed)
# Errors that prove the record was never written (librdkafka refused it before sending).
CERTAIN_FAILURES = {KafkaError.MSG_SIZE_TOO_LARGE, KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError._UNKNOWN_TOPIC}


def record_value(producer_id: str, seq: int) -> bytes:
    return f"{producer_id}:{seq}".encode()


def value_parts(value: bytes | None) -> tuple[str, str]:
    """(producer_id, seq) as record_value wrote them, as text; ("", "") parts where a value is not one of ours (the
    seq is what follows the last ':')."""
    producer_id, _, seq = (value or b"").decode(errors="replace").rpartition(":")
    return producer_id, seq


def produce(producer: Producer, topic: str, **record) -> None:
    """Producer.produce, waiting while the client's local queue is full (BufferError: nothing was sent; serving
    delivery reports frees room)."""
    while True:
        try:
            producer.produce(topic, **record)
            return
        except BufferError:
            producer.poll(0.1)


def seq_of(value: bytes) -> int:
    """The seq a record's value carries (record_value)."""
    return int(value.rsplit(b":", 1)[1])


# librdkafka 2.16.0 acknowledged two records without an error and without an offset (offset -1001), both the first to
# new partitions just added to the topic under a KIP-848 group; neither was ever consumed, though the group drained
# (docs/rebalance-cost.md, the 10-member experiment). An ack without an offset cannot be placed in its partition: it
# is `unplaced` (its partition, no offset), which the analysis judges by the producer's next ok record there
# (the `lost_unplaced` check).
UNPLACED_ACK = "acknowledged without an offset (delivery report with no error, offset unknown)"


class SequencedProducer:
    def __init__(self, cfg: ProducerConfig) -> None:
        self.cfg = cfg
        self.producer_id = cfg.producer_id
        self.topics = list(cfg.topics)
        self.control = ControlFile(control_path(cfg.run_dir, self.producer_id))
        self.log = JsonlLog(Path(cfg.run_dir) / "produced" / f"{self.producer_id}.jsonl")
        self.pending: dict[int, str] = {}  # seq -> topic
        self.counts = {"ok": 0, "fail": 0, "info": 0, "unplaced": 0}
        self.stopping = False
        self.producer = Producer({
            **security_config(),
            "bootstrap.servers": cfg.bootstrap_servers,
            "client.id": self.producer_id,
            "acks": cfg.acks,
            "enable.idempotence": cfg.idempotence,
            "linger.ms": 5,
            "delivery.timeout.ms": 120_000,
            "topic.metadata.refresh.interval.ms": 2000,  # partitions added mid-run are written to within seconds
            **cfg.extra,
        })

    def _on_delivery(self, err, msg) -> None:
        seq = seq_of(msg.value())
        self.pending.pop(seq, None)
        row = {"topic": msg.topic(), "key": msg.key().decode(), "producer_id": self.producer_id, "seq": seq, "acked_at_ms": now_ms()}
        if err is None and msg.offset() is None:  # acknowledged, but where it was written is not said
            row.update(partition=msg.partition(), offset=None, status="unplaced", error=UNPLACED_ACK)
        elif err is None:
            row.update(partition=msg.partition(), offset=msg.offset(), status="ok")
        else:
            status = "fail" if err.code() in CERTAIN_FAILURES else "info"
            row.update(partition=msg.partition() if msg.partition() >= 0 else None, offset=None, status=status, error=err.str())
        self.counts[row["status"]] += 1
        self.log.append(row)

    def run(self) -> int:
        records, rate = self.cfg.records, self.cfg.rate
        started = next_control_check = time.monotonic()
        for seq in range(records):
            if self.stopping:
                break
            if rate:
                ahead = seq / rate - (time.monotonic() - started)
                if ahead > 0:
                    self.producer.poll(ahead)
            if time.monotonic() >= next_control_check:  # a topic_create is written to within CONTROL_EVERY_S
                self.topics = (self.control.read() or {}).get("topics") or self.topics
                next_control_check = time.monotonic() + CONTROL_EVERY_S
            self._send(seq, self.topics[seq % len(self.topics)])
            self.producer.poll(0)
        remaining = self.producer.flush(self.cfg.flush_timeout_s)
        self._record_unknown_outcomes()
        self.log.close()
        print(f"producer {self.producer_id}: ok={self.counts['ok']} info={self.counts['info']} "
              f"fail={self.counts['fail']} unplaced={self.counts['unplaced']} unflushed={remaining}", flush=True)
        return 0

    def _send(self, seq: int, topic: str) -> None:
        key, where = str(seq), {}
        if self.cfg.keys is not None:  # a stateful run: the key's own partition (workloads/config.py KeySpace)
            key, partition = self.cfg.keys.key_of(seq)
            where = {"partition": partition}
        produce(self.producer, topic, key=key.encode(), value=record_value(self.producer_id, seq),
                on_delivery=self._on_delivery, **where)
        self.pending[seq] = topic

    def _record_unknown_outcomes(self) -> None:
        for seq, topic in sorted(self.pending.items()):
            self.counts["info"] += 1
            key = str(seq) if self.cfg.keys is None else self.cfg.keys.key_of(seq)[0]
            self.log.append({"topic": topic, "partition": None, "offset": None, "key": key,
                             "producer_id": self.producer_id, "seq": seq, "acked_at_ms": now_ms(),
                             "status": "info", "error": "no delivery report before the producer stopped"})


if __name__ == "__main__":
    sys.exit(workload_config.run_workload(SequencedProducer, ProducerConfig))
