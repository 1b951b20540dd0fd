"""A small synthetic run directory (contract v1) that goes through the code of a real run: 20,000 records on 6
partitions, two members, one eager rebalance that hands three partitions over with a re-delivered tail, one
step back inside an ownership (so that records are read back), producer ids and sequences, and a broker frozen
during the hand-over: the scan, the per-partition checks, the read-back, every check and the report. The analysis
service warms up on it (Parquet), and `make setup` records Spark's class-data archive from it (analysis/jvm_archive.py,
one member's log as JSONL, so that both readers are in the archive)."""
from __future__ import annotations

import json
from pathlib import Path

T0 = 1_700_000_000_000
PARTITIONS, PER_PARTITION, HANDOVER, TAIL = 6, 3_334, 2_000, 100


def write_run(root: Path, jsonl_members: tuple[str, ...] = ()) -> Path:
    """The run in ``root``; the consumed logs of ``jsonl_members`` as JSONL, the rest as Parquet."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    for sub in ("produced", "consumed", "events"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    produced = [("t", p, o, T0 + o) for p in range(PARTITIONS) for o in range(PER_PARTITION)]
    pq.write_table(pa.table({"topic": [r[0] for r in produced], "partition": pa.array([r[1] for r in produced], pa.int32()),
                             "offset": [r[2] for r in produced], "acked_at_ms": [r[3] for r in produced],
                             "producer_id": ["p"] * len(produced), "seq": [r[2] for r in produced],
                             "status": ["ok"] * len(produced)}), root / "produced" / "producer-1.parquet")
    logs = {"a": [], "b": []}
    for p in range(PARTITIONS):
        moved = p >= PARTITIONS // 2  # a owns every partition until the hand-over, then b takes half of them
        logs["a"] += [(p, o) for o in range(HANDOVER if moved else PER_PARTITION)]
        if moved:
            logs["b"] += [(p, o) for o in range(HANDOVER - TAIL, PER_PARTITION)]  # a's uncommitted tail again
    for rows in logs.values():
        rows.sort(key=lambda r: (r[1], r[0]))  # partitions interleaved, each in offset order
    logs["a"][200:200] = [(0, o) for o in range(10, 20)]  # a step back: 10-19 of partition 0 once more
    for member, rows in logs.items():
        table = pa.table({"topic": ["t"] * len(rows), "partition": pa.array([r[0] for r in rows], pa.int32()),
                          "offset": [r[1] for r in rows], "member": [member] * len(rows),
                          "consumed_at_ms": [T0 + 10 + r[1] + (5_000 if member == "b" else 0) for r in rows],
                          "generation": pa.array([1 if member == "a" else 2] * len(rows), pa.int32()),
                          "producer_id": ["p"] * len(rows), "seq": [r[1] for r in rows],
                          "n": list(range(len(rows)))})  # the member's consumption sequence: its log's order
        if member in jsonl_members:
            (root / "consumed" / f"{member}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in table.to_pylist()))
        else:
            pq.write_table(table, root / "consumed" / f"{member}.parquet")
    tps = [f"t:{p}" for p in range(PARTITIONS)]
    events = {"a": [("started", 0, None, 1), ("assigned", 1, tps, 1),
                    ("committed", HANDOVER - TAIL, None, 1), ("assigned", HANDOVER + 2_500, tps[:3], 2)],
              "b": [("started", HANDOVER, None, 1), ("assigned", HANDOVER + 2_500, tps[3:], 2)]}
    for member, evs in events.items():
        lines = []
        for kind, at, parts, generation in evs:
            e = {"ts_ms": T0 + at, "member": member, "kind": kind, "generation": generation}
            if kind == "started":
                e.update(client="librdkafka", protocol="classic", assignor="range", commit="sync")
            if parts is not None:
                e["partitions"] = parts
            if kind == "committed":
                e["offsets"] = {tp: HANDOVER - TAIL for tp in tps}
            lines.append(json.dumps(e))
        (root / "events" / f"{member}.jsonl").write_text("\n".join(lines) + "\n")
    (root / "faults.jsonl").write_text(json.dumps({"id": "f1", "kind": "broker_freeze", "target": "kafka-1",
                                                   "injected_at_ms": T0 + HANDOVER + 2_000,
                                                   "healed_at_ms": T0 + HANDOVER + 2_400, "params": {}}) + "\n")
    return root
