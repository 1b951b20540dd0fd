"""A stateful run's changelog, from the harness's side (the scenario's `state` block; the members' side is
workloads/state.py): its keys and settings for the processes, the prefill before the members start, and the final
state read back after the drain into state/final.jsonl.
"""
from __future__ import annotations

import json
import logging
import time
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from analysis.api import FINAL_STATE_FILE
from harness.progress import say
from workloads.config import KeySpace, StateConfig
from workloads.producer import produce
from workloads.security import security_config
from workloads.state import ZERO, decode_change, encode_value

READ_BATCH = 10_000
TIMEOUT_S = 120
LOGGER = "kafka-chaos.state"  # under rundir.CLIENTS_LOGGER: logs/harness-clients.log during a run, never the terminal


def key_space(scenario) -> KeySpace | None:
    if scenario.state is None:
        return None
    return KeySpace(scenario.state.keys_per_partition, scenario.topic.partitions)


def state_config(scenario) -> StateConfig | None:
    if scenario.state is None:
        return None
    return StateConfig(changelog=scenario.changelog.name, keys=key_space(scenario),
                       keep_on_revoke=scenario.state.keep_on_revoke)


def prefill(bootstrap: str, spec: StateConfig) -> int:
    """Every key's zero value, to its key's changelog partition, before the members start: a restore then reads
    every key of its partition."""
    producer = Producer({**security_config(), "bootstrap.servers": bootstrap, "client.id": "kafka-chaos-prefill",
                         "acks": "all", "enable.idempotence": True, "linger.ms": 20},
                        logger=logging.getLogger(LOGGER))
    failed: list[str] = []

    def delivered(err, msg):
        if err is not None:
            failed.append(err.str())

    zero = encode_value(*ZERO)
    for partition in range(spec.keys.partitions):
        for key in spec.keys.keys_of(partition):
            produce(producer, spec.changelog, key=key.encode(), value=zero, partition=partition, on_delivery=delivered)
            producer.poll(0)
    left = producer.flush(TIMEOUT_S)
    if left or failed:
        raise RuntimeError(f"the state's prefill did not reach {spec.changelog}: {left} records unsent, "
                           f"{len(failed)} failed{f' ({failed[0]})' if failed else ''}")
    return spec.keys.keys


def read_final(bootstrap: str, spec: StateConfig, run_dir: Path) -> int:
    """Each changelog partition read to its end (read_committed: a Streams changelog under exactly_once_v2 holds
    aborted writes): every key's last value into state/final.jsonl (partition, key,
    count, sum, last_offset, and the member that wrote it with its state row's ts_ms), the keys still at zero left
    out; how many rows were written."""
    consumer = Consumer({**security_config(), "bootstrap.servers": bootstrap, "group.id": "kafka-chaos-final-state",
                         "client.id": "kafka-chaos-final-state", "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "isolation.level": "read_committed",
                         "enable.partition.eof": True}, logger=logging.getLogger(LOGGER))
    try:
        ends = {}
        for p in range(spec.keys.partitions):
            _, ends[p] = consumer.get_watermark_offsets(TopicPartition(spec.changelog, p), timeout=30, cached=False)
        changes: dict[tuple[int, str], tuple] = {}  # (partition, key) -> its last value, with its writer
        left = {p for p, end in ends.items() if end > 0}
        consumer.assign([TopicPartition(spec.changelog, p, 0) for p in left])
        deadline = time.monotonic() + TIMEOUT_S
        while left:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the changelog {spec.changelog} could not be read to its end in {TIMEOUT_S} s "
                                   f"(partitions left: {sorted(left)})")
            for m in consumer.consume(READ_BATCH, timeout=1):  # returns at READ_BATCH records or after 1 s
                if m.error() is not None:
                    if m.error().code() == KafkaError._PARTITION_EOF:  # a transactional changelog ends in a marker
                        left.discard(m.partition())
                    continue
                changes[(m.partition(), m.key().decode())] = decode_change(m.value())
                if m.offset() + 1 >= ends[m.partition()]:
                    left.discard(m.partition())
    finally:
        consumer.close()
    path = run_dir / "state" / FINAL_STATE_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [{"partition": p, "key": k, "count": c, "sum": s, "last_offset": o, "member": member, "ts_ms": at}
            for (p, k), (c, s, o, member, at) in sorted(changes.items()) if (c, s, o) != ZERO]
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(json.dumps(r, separators=(",", ":")) + "\n" for r in rows)
    say(f"final state: {len(rows)} keys changed, of {len(changes)} in {spec.changelog}")
    return len(rows)
