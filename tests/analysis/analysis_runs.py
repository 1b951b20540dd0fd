"""Hand-made run directories for the analysis tests, in JSONL or Parquet (contract v1)."""
from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

T0 = 1_700_000_000_000

PRODUCED_TYPES = {"topic": "string", "partition": "int32", "offset": "int64", "acked_at_ms": "int64", "key": "string",
                  "producer_id": "string", "seq": "int64", "status": "string"}
CONSUMED_TYPES = {"topic": "string", "partition": "int32", "offset": "int64", "member": "string",
                  "consumed_at_ms": "int64", "key": "string", "producer_id": "string", "seq": "int64",
                  "instance_id": "string", "generation": "int32", "client": "string"}


def seq_of(partition: int, offset: int) -> int:
    return partition * 1_000_000 + offset


class Run:
    """Builds a run directory. Times are ms after T0."""

    def __init__(self, root: Path, fmt: str = "jsonl"):
        self.root = Path(root)
        self.fmt = fmt
        self.produced: list[dict] = []
        self.consumed: dict[str, list[dict]] = {}
        self.events: dict[str, list[dict]] = {}
        self.faults: list[dict] = []
        self.group_states: list[dict] = []
        self.coordinator: list[str] = []
        self.state: dict[str, list[dict]] | None = None  # member -> its state rows (a stateful run)
        self.final: list[dict] = []                      # state/final.jsonl

    # ---- history
    def produce(self, topic, partition, offsets, at=0, status="ok", step=1, key=lambda off: f"k{off}"):
        for i, off in enumerate(offsets):
            self.produced.append({"topic": topic, "partition": partition, "offset": off, "acked_at_ms": T0 + at + i * step,
                                  "key": key(off), "producer_id": "p0", "seq": seq_of(partition, off), "status": status})
        return self

    def produce_unknown(self, topic, n, at=0, status="info"):
        for i in range(n):
            self.produced.append({"topic": topic, "partition": None, "offset": None, "acked_at_ms": T0 + at + i,
                                  "key": None, "producer_id": "p0", "seq": 10**9 + i, "status": status})
        return self

    def produce_unplaced(self, topic, partition, seq, at=0, producer_id="p0"):
        """An ack without an offset (status `unplaced`, workloads/producer.py): its partition, no offset."""
        self.produced.append({"topic": topic, "partition": partition, "offset": None, "acked_at_ms": T0 + at,
                              "key": f"s{seq}", "producer_id": producer_id, "seq": seq, "status": "unplaced"})
        return self

    def consume(self, member, topic, partition, offsets, at, generation=-1, step=1, batch=1):
        """Consume offsets in the given order, one record every `step` ms (`batch` records share a time)."""
        rows = self.consumed.setdefault(member, [])
        for i, off in enumerate(offsets):
            rows.append({"topic": topic, "partition": partition, "offset": off, "member": member,
                         "consumed_at_ms": T0 + at + (i // batch) * step, "key": f"k{off}", "producer_id": "p0",
                         "seq": seq_of(partition, off), "instance_id": None, "generation": generation, "client": "librdkafka"})
        return self

    def event(self, member, kind, at, partitions=None, offsets=None, generation=None, detail=None, **facts):
        ev = {"ts_ms": T0 + at, "member": member, "kind": kind, "generation": generation, **facts}
        if partitions is not None:
            ev["partitions"] = partitions
        if offsets is not None:
            ev["offsets"] = offsets
        if detail is not None:
            ev["detail"] = detail
        self.events.setdefault(member, []).append(ev)
        return self

    def fault(self, fid, injected, healed, kind="pause", target="kafka-1", params=None, **fields):
        """`fields`: the row's optional fields (ends_process, effect_from, label, hits, ...)."""
        self.faults.append({"id": fid, "kind": kind, "target": target, "injected_at_ms": T0 + injected,
                            "healed_at_ms": None if healed is None else T0 + healed,
                            "params": {"seconds": 1} if params is None else params, **fields})
        return self

    def group_state(self, at, kind="state", since=None, **fields):
        """A group-states.jsonl row (harness/group_sampler.py), at ms after T0; ``since``: the sample before."""
        row = {"ts_ms": T0 + at, "kind": kind, **fields}
        if since is not None:
            row["since_ms"] = T0 + since
        self.group_states.append(row)
        return self

    def coordinator_line(self, at, text):
        """A coordinator.log line (harness/coordinator_log.py) at ms after T0: a broker's group coordinator logging
        ``text``, in the log4j form of the project's images (UTC, to the millisecond)."""
        stamp = datetime.fromtimestamp((T0 + at) / 1000, timezone.utc)
        self.coordinator.append(f"[{stamp:%Y-%m-%d %H:%M:%S},{stamp.microsecond // 1000:03d}] INFO [GroupCoordinator "
                                f"id=1 topic=__consumer_offsets partition=7] {text} "
                                "(org.apache.kafka.coordinator.group.GroupMetadataManager)")
        return self

    def apply(self, member, topic, partition, offsets, at, table, generation=1, key=lambda off: f"k{off % 3}"):
        """A stateful member applies offsets to `table` (key -> (count, sum, last_offset)), one state row each, as
        workloads/state.py does."""
        if self.state is None:
            self.state = {}
        rows = self.state.setdefault(member, [])
        for off in offsets:
            k = key(off)
            count, total, last = table.get(k, (0, 0, -1))
            table[k] = (count + 1, total + seq_of(partition, off), off)
            rows.append({"ts_ms": T0 + at, "member": member, "topic": topic, "partition": partition, "key": k,
                         "offset": off, "prev_offset": last, "count": count + 1, "sum": table[k][1],
                         "generation": generation})
        return self

    def final_state(self, partition, table):
        """state/final.jsonl from a table (the changelog's last values), keys at zero left out."""
        self.final += [{"partition": partition, "key": k, "count": c, "sum": s, "last_offset": o}
                       for k, (c, s, o) in sorted(table.items()) if c]
        return self

    # ---- files
    def write(self, events=True, faults=True) -> Path:
        self.root.mkdir(parents=True, exist_ok=True)
        write_table(self.root / "produced" / f"producer-0.{self.fmt}", self.produced, PRODUCED_TYPES, self.fmt)
        for member, rows in self.consumed.items():
            write_table(self.root / "consumed" / f"{member}.{self.fmt}", rows, CONSUMED_TYPES, self.fmt)
        (self.root / "consumed").mkdir(parents=True, exist_ok=True)
        if events and self.events:
            for member, evs in self.events.items():
                write_jsonl(self.root / "events" / f"{member}.jsonl", sorted(evs, key=lambda e: e["ts_ms"]))
        if faults and self.faults:
            write_jsonl(self.root / "faults.jsonl", self.faults)
        if self.group_states:
            write_jsonl(self.root / "group-states.jsonl", self.group_states)
        if self.coordinator:
            (self.root / "coordinator.log").write_text("".join(f"{line}\n" for line in self.coordinator))
        if self.state is not None:
            for member, rows in self.state.items():
                write_jsonl(self.root / "state" / f"{member}.jsonl", rows)
            write_jsonl(self.root / "state" / "final.jsonl", self.final)
        return self.root


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        for r in rows:
            fh.write(json.dumps(r) + "\n")


def write_table(path: Path, rows: list[dict], types: dict, fmt: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "jsonl":
        write_jsonl(path, rows)
        return
    import pyarrow as pa
    import pyarrow.parquet as pq
    schema = pa.schema([(name, getattr(pa, typ)()) for name, typ in types.items()])
    table = pa.table({name: pa.array([r.get(name) for r in rows], type=schema.field(name).type) for name in types},
                     schema=schema)
    pq.write_table(table, path)


def oracle(run: Run) -> dict:
    """The counts, computed the obvious way in Python (independent of the analysis)."""
    from collections import Counter
    ok = [(r["topic"], r["partition"], r["offset"]) for r in run.produced if r["status"] in (None, "ok")]
    deliveries = Counter((r["topic"], r["partition"], r["offset"]) for rows in run.consumed.values() for r in rows)
    return {"produced_records": len(ok), "consumed_rows": sum(deliveries.values()),
            "duplicated_offsets": sum(1 for n in deliveries.values() if n > 1),
            "duplicate_extra_deliveries": sum(n - 1 for n in deliveries.values() if n > 1),
            "lost_records": len(set(ok) - set(deliveries))}


def known_run(root, fmt) -> Run:
    """Duplicates (one offset delivered 3 times) and losses (one across a 64-offset block boundary), a record
    consumed but never acked ok, and produced rows that are not ok (info, fail)."""
    r = Run(root, fmt)
    r.produce("orders", 0, range(0, 20))
    r.produce("orders", 1, range(0, 10))
    r.produce("orders", 1, range(60, 71), at=100)
    r.produce_unknown("orders", 2, status="info").produce_unknown("orders", 1, status="fail")
    r.consume("m1", "orders", 0, [o for o in range(20) if o not in (7, 8)], at=1000)   # 7, 8 lost
    r.consume("m1", "orders", 0, range(15, 20), at=2000)                              # 15-19 twice
    r.consume("m2", "orders", 0, [19], at=3000)                                       # 19 three times
    r.consume("m2", "orders", 1, range(0, 11), at=1000)                               # 10 was never acked ok
    r.consume("m2", "orders", 1, [3, 3], at=1500)                                     # 1:3 three times
    r.consume("m2", "orders", 1, [o for o in range(60, 71) if o != 64], at=1600)      # 64 lost
    r.consume("m1", "orders", 1, [63, 65], at=1700)                                   # across the block edge
    return r


def clean_run(root, fmt) -> Run:
    r = Run(root, fmt)
    r.produce("t", 0, range(100)).produce("t", 1, range(100))
    for m in ("a", "b"):
        r.event(m, "started", 0, detail="protocol=classic assignor=range")
    r.event("a", "assigned", 10, ["t:0"], generation=1).event("b", "assigned", 10, ["t:1"], generation=1)
    r.consume("a", "t", 0, range(100), at=100, generation=1)
    r.consume("b", "t", 1, range(100), at=100, generation=1)
    r.event("a", "committed", 300, offsets={"t:0": 100}, generation=1)
    r.event("b", "committed", 300, offsets={"t:1": 100}, generation=1)
    r.event("a", "stopped", 400).event("b", "stopped", 400)
    r.fault("pause-1", 150, 250)
    return r
