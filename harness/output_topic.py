"""Output-topic mode (consumer_group.output): what a consume-transform-produce program consumed, read back from the
topic it wrote to once the members stopped. Each output record names the input record it came from (headers, or
keys of its JSON value); the harness writes consumed/<member>.jsonl from them (the member from the record, else
`output`; consumed_at_ms: when it names it, the time it was processed (then a member's rows are in that order), else
the output record's timestamp; producer_id and seq when the record names them; no `n`) and
output.json: the topic, how it was read, the rows, what could not be read, and the group's final commits, which count
in the read frontier (docs/DESIGN.md).

A stateful program (the scenario's `state` block: the Streams member) writes in each output record's JSON value the
change it applied to the key: count, sum, last_offset (the input record's), prev_offset (the value it built on),
member and ts_ms, as workloads/state.py writes a state row. The harness writes those rows to state/<member>.jsonl, so
the exact state check reads a Streams run as it reads a stateful member's; a change it cannot read is `unread`.
"""
from __future__ import annotations

import json
import logging
import secrets
import time
from collections import defaultdict
from pathlib import Path

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

from analysis.api import OUTPUT_FILE
from harness.partition_ends import PartitionEnds, read_past, short_of
from workloads.history import JsonlLog
from workloads.security import security_config

NO_MEMBER = "output"  # the member of a record that names none
EXAMPLES = 5


def read_back(run_dir: Path, bootstrap: str, output, group_id: str, topics: dict[str, int],
              timeout_s: float = 120, stateful: bool = False) -> dict:
    """Read `output.topic` to its end (with its isolation level), write the consumed logs and output.json (and, when
    `stateful`, the state rows); returns what output.json says. `topics`: the run's input topics and their partitions
    (for the group's final commits)."""
    rows, unread, held = _read_topic(bootstrap, output, timeout_s, stateful)
    by_member: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        by_member[row["member"]].append(row)
    for member, member_rows in by_member.items():
        if stateful or any(r["processed"] for r in member_rows):
            # read an output partition at a time; processed in time, each input partition in offset order
            member_rows.sort(key=lambda r: (r["consumed_at_ms"], r["topic"], r["partition"], r["offset"]))
        _write(run_dir / "consumed" / f"{member}.jsonl", [{k: v for k, v in r.items() if k not in ("change", "processed")}
                                                          for r in member_rows])
        if stateful:
            _write(run_dir / "state" / f"{member}.jsonl", [r["change"] for r in member_rows])
    summary = {"topic": output.topic, "source": output.source, "isolation": output.isolation, "rows": len(rows),
               "members": {m: len(r) for m, r in sorted(by_member.items())}, "unread": len(unread),
               "unread_examples": unread[:EXAMPLES], "held_open": {str(p): v for p, v in held.items()},
               "commits": final_commits(bootstrap, group_id, topics)}
    (run_dir / OUTPUT_FILE).write_text(json.dumps(summary, indent=1) + "\n")
    return summary


def _write(path: Path, rows: list[dict]) -> None:
    log = JsonlLog(path)
    log.extend(rows)
    log.close()


def _read_topic(bootstrap: str, output, timeout_s: float, stateful: bool) -> tuple[list[dict], list[dict], dict]:
    """The rows and unread records of the output topic, read from its start to each partition's end (its high
    watermark, harness/partition_ends.py); and the partitions a transaction left open kept short of it: with
    read_committed, a reader stops at the last stable offset, which an open transaction holds back until it ends, at
    its transaction.timeout.ms at the latest. Waited for at most `timeout_s`: what is still held then is returned
    ({partition: {position, end}}), anything else not read by then is an error."""
    consumer = Consumer({**security_config(), "bootstrap.servers": bootstrap, "enable.auto.commit": False,
                         "group.id": f"kafka-chaos-output-reader-{secrets.token_hex(3)}",
                         "isolation.level": output.isolation, "enable.partition.eof": True},
                        logger=logging.getLogger("kafka-chaos.output"))
    ends_asked = PartitionEnds(bootstrap, f"kafka-chaos-output-ends-{secrets.token_hex(3)}")
    try:
        partitions = consumer.list_topics(output.topic, timeout=30).topics[output.topic].partitions
        consumer.assign([TopicPartition(output.topic, p, OFFSET_BEGINNING) for p in partitions])
        rows, unread, deadline = [], [], time.monotonic() + timeout_s
        positions: dict[int, int] = {}
        stopped: set[int] = set()  # partitions whose last event was their end-of-partition (for this isolation)
        while True:
            messages = consumer.consume(1000, timeout=1.0)
            for message in messages:
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        read_past(positions, message)
                        stopped.add(message.partition())
                        continue
                    raise RuntimeError(f"reading the output topic {output.topic}: {error.str()}")
                read_past(positions, message)
                stopped.discard(message.partition())
                row, why = _output_row(message, output, stateful)
                if row is None:
                    unread.append({"partition": message.partition(), "offset": message.offset(), "why": why})
                else:
                    rows.append(row)
            if messages and not stopped.issuperset(partitions) and time.monotonic() <= deadline:
                continue
            ends = ends_asked.ask(output.topic, partitions)
            held = None if ends is None else short_of(positions, ends)
            if held == {}:
                return rows, unread, {}
            if time.monotonic() > deadline:
                if held is not None and stopped.issuperset(held):
                    return rows, unread, held
                raise TimeoutError(f"the output topic {output.topic} was not read to its end within {timeout_s:g} s")
    finally:
        consumer.close()
        ends_asked.close()


def _output_row(message, output, stateful: bool) -> tuple[dict | None, str | None]:
    """The consumed row (with the state change, when `stateful`) an output record stands for, or (None, why not)."""
    row, why = input_row(message, output)
    if row is not None and stateful:
        row["change"], why = state_row(message, row)
        if row["change"] is None:
            return None, why
        row["consumed_at_ms"] = row["change"]["ts_ms"]  # processed when the change was applied (not its input's time)
    return row, why


def input_row(message, output) -> tuple[dict | None, str | None]:
    """The consumed row an output record stands for, or (None, why not)."""
    fields = output.fields
    if output.source == "headers":
        named = {k: (v.decode(errors="replace") if isinstance(v, bytes) else v) for k, v in (message.headers() or [])}
    else:
        try:
            named = json.loads(message.value() or b"")
        except ValueError:
            return None, "the value is not JSON"
        if not isinstance(named, dict):
            return None, "the value is not a JSON object"
    try:
        topic, partition, offset = str(named[fields.topic]), int(named[fields.partition]), int(named[fields.offset])
    except KeyError as exc:
        return None, f"no {exc.args[0]}"
    except (TypeError, ValueError):
        return None, f"{fields.partition} or {fields.offset} is not an integer"
    _, timestamp = message.timestamp()
    key = message.key()
    row = {"topic": topic, "partition": partition, "offset": offset,
           "member": str(named.get(fields.member) or NO_MEMBER), "consumed_at_ms": timestamp,
           "key": key.decode(errors="replace") if isinstance(key, bytes) else key, "client": "app"}
    if named.get(fields.producer_id) is not None and str(named.get(fields.seq, "")).isdigit():
        row.update(producer_id=str(named[fields.producer_id]), seq=int(named[fields.seq]))
    processed_at = str(named.get(fields.processed_at, ""))
    row["processed"] = processed_at.isdigit()
    if row["processed"]:  # consumed when it was processed, not when its output record was stamped
        row["consumed_at_ms"] = int(processed_at)
    return row, None


def state_row(message, row: dict) -> tuple[dict | None, str | None]:
    """The state row of the change a stateful program's output record names (its JSON value), or (None, why not)."""
    try:
        value = json.loads(message.value() or b"")
        change = {name: int(value[name]) for name in ("count", "sum", "prev_offset", "ts_ms")}
    except (ValueError, TypeError):
        return None, "the value is not JSON, or a change's number is not an integer"
    except KeyError as exc:
        return None, f"the value names no {exc.args[0]}"
    if int(value.get("last_offset", row["offset"])) != row["offset"]:
        return None, "the value's last_offset is not the input record's offset"
    return {"ts_ms": change["ts_ms"], "member": row["member"], "topic": row["topic"], "partition": row["partition"],
            "key": row["key"], "offset": row["offset"], "prev_offset": change["prev_offset"], "count": change["count"],
            "sum": change["sum"], "generation": None}, None


def final_commits(bootstrap: str, group_id: str, topics: dict[str, int]) -> dict[str, int]:
    """The group's committed offsets at the end ("topic:partition" -> offset), read without joining it."""
    consumer = Consumer({**security_config(), "bootstrap.servers": bootstrap, "group.id": group_id,
                         "enable.auto.commit": False}, logger=logging.getLogger("kafka-chaos.output"))
    try:
        asked = [TopicPartition(t, p) for t, n in topics.items() for p in range(n)]
        return {f"{tp.topic}:{tp.partition}": tp.offset for tp in consumer.committed(asked, timeout=30)
                if tp.offset >= 0}
    finally:
        consumer.close()
