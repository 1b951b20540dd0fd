"""A seeded synthetic run directory (contract v1) with planted anomalies and its ground truth.

The history looks like a real eager consumer group under faults: P partitions produced at a steady rate,
M members, G generations separated by stop-the-world rebalances (revoke everything, nobody owns anything
for a while, assign), each owner committing every C records and the next owner restarting from the last
commit, so every rebalance re-delivers the revoked owner's uncommitted tail (duplicates inside the budget).
On top of that, planted: records lost at a hand-over, a skip and a step back inside one ownership, a
hand-over that restarts below the last commit (duplicates over the budget), a commit regression and an
unhealed fault. The ground truth is computed from the generated arrays with numpy, independently of the
analysis.

    python -m benchmarks.synth OUT_DIR --records 10000000 --format parquet
"""
from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

T0 = 1_700_000_000_000
TOPIC = "chaos"


@dataclass
class Plan:
    records: int = 100_000          # consumed rows, approximately
    partitions: int = 12
    members: int = 3
    generations: int = 8
    rate: int = 20_000              # produced records per second (whole topic)
    commit_every: int = 500
    stw_ms: int = 800               # stop-the-world time of a rebalance
    seed: int = 7
    fmt: str = "parquet"            # parquet | jsonl
    plant: bool = True


@dataclass
class Truth:
    produced_records: int = 0
    consumed_rows: int = 0
    duplicated_offsets: int = 0
    duplicate_extra_deliveries: int = 0
    lost_records: int = 0
    skip: int = 0
    backwards: int = 0
    duplicate_over_budget: int = 0
    commit_regression: int = 0
    unhealed_fault: int = 0
    rebalances: int = 0
    planted: list = field(default_factory=list)


def generate(out: Path, plan: Plan) -> Truth:
    rng = np.random.default_rng(plan.seed)
    out = Path(out)
    P, M, G = plan.partitions, plan.members, plan.generations
    members = [f"member-{i}" for i in range(M)]
    n_per = -(-plan.records // P)                   # produced per partition; re-deliveries add a little
    duration = max(60_000, n_per * P * 1000 // plan.rate)   # small runs: slower, so generations stay long
    commit_every = max(5, min(plan.commit_every, n_per // (G * 4)))
    acked = T0 + 1000 + (np.arange(n_per, dtype=np.int64) * duration) // n_per   # same clock for every partition
    bounds = [T0 + 1000 + duration * g // G for g in range(G)] + [T0 + 2000 + duration + 5000]
    truth = Truth(produced_records=n_per * P, rebalances=G)
    # planted anomalies: (kind, generation, partition)
    plants = {}
    if plan.plant and G >= 4:
        plants = {("lost_handover", 1, 0): 7, ("skip", 2, 1): 5, ("backwards", 2, 2): 40,
                  ("below_commit", 3, 3 % P): 25, ("commit_regression", 3, 4 % P): 1}
    cons = {m: [] for m in members}                   # member -> list of (partition, offsets, times, generation)
    events = {m: [] for m in members}
    owner_prev_commit = np.zeros(P, dtype=np.int64)    # committed offset (next to consume) per partition
    pos = np.zeros(P, dtype=np.int64)                  # where the next owner starts
    last = np.full(P, -1, dtype=np.int64)              # last offset consumed per partition
    for g in range(G):
        start_t = bounds[g] + plan.stw_ms
        end_t = bounds[g + 1]                          # revocation time
        gen = g + 1
        assign = {m: [] for m in members}
        for p in range(P):
            assign[members[(p + g) % M] if g % 2 else members[p % M]].append(p)
        for m in members:
            events[m].append({"ts_ms": start_t, "member": m, "kind": "assigned", "generation": gen,
                              "partitions": [f"{TOPIC}:{p}" for p in assign[m]]})
        for m in members:
            for p in assign[m]:
                s = int(pos[p])
                if ("below_commit", g, p) in plants:
                    s -= plants[("below_commit", g, p)]
                    truth.planted.append({"kind": "duplicate_over_budget", "partition": p, "offsets": [s, s + plants[("below_commit", g, p)] - 1]})
                if ("lost_handover", g, p) in plants:
                    k = plants[("lost_handover", g, p)]
                    s = max(s, int(last[p]) + 1)
                    truth.planted.append({"kind": "lost", "partition": p, "offsets": [s, s + k - 1]})
                    s += k
                # records acked before the revocation (minus a little lag) are consumed in this generation
                e = int(np.searchsorted(acked, end_t - 50, side="right")) - 1 if g < G - 1 else n_per - 1
                if e < s:
                    pos[p] = s
                    continue
                offs = np.arange(s, e + 1, dtype=np.int64)
                if ("skip", g, p) in plants:
                    k = plants[("skip", g, p)]
                    mid = s + (e - s) // 2
                    offs = np.concatenate([np.arange(s, mid), np.arange(mid + k, e + 1)])
                    truth.planted.append({"kind": "skip+lost", "partition": p, "offsets": [mid, mid + k - 1]})
                if ("backwards", g, p) in plants:
                    k = plants[("backwards", g, p)]
                    mid = s + (e - s) // 3
                    offs = np.concatenate([np.arange(s, mid), np.arange(mid - k, e + 1)])
                    truth.planted.append({"kind": "backwards", "partition": p, "offsets": [mid - k, mid - 1]})
                # consumption time: not before its ack (+ lag), not before the assignment, 10 records per ms
                # while catching up, monotone
                lag = 20
                t = np.maximum(acked[np.clip(offs, 0, n_per - 1)] + lag, start_t + np.arange(len(offs)) // 10)
                t = np.maximum.accumulate(t)
                cons[m].append((p, offs, t, gen))
                last[p] = max(int(last[p]), int(offs.max()))
                # commits every commit_every records: value = next offset to consume
                idx = np.arange(commit_every - 1, len(offs), commit_every)
                last_commit = None
                for i in idx:
                    value = int(offs[i]) + 1
                    events[m].append({"ts_ms": int(t[i]) + 1, "member": m, "kind": "committed", "generation": gen,
                                      "offsets": {f"{TOPIC}:{p}": value}})
                    last_commit = value
                if ("commit_regression", g, p) in plants and last_commit is not None:
                    events[m].append({"ts_ms": int(t[-1]) + 2, "member": m, "kind": "committed", "generation": gen,
                                      "offsets": {f"{TOPIC}:{p}": last_commit - 100}})
                    truth.planted.append({"kind": "commit_regression", "partition": p})
                    events[m].append({"ts_ms": int(t[-1]) + 3, "member": m, "kind": "committed", "generation": gen,
                                      "offsets": {f"{TOPIC}:{p}": last_commit}})
                committed = last_commit if last_commit is not None else int(owner_prev_commit[p])
                owner_prev_commit[p] = committed
                pos[p] = committed if g < G - 1 else e + 1
        if g < G - 1:
            for m in members:
                events[m].append({"ts_ms": end_t, "member": m, "kind": "revoked", "generation": gen,
                                  "partitions": [f"{TOPIC}:{p}" for p in assign[m]]})
    for m in members:
        events[m].insert(0, {"ts_ms": T0 + 500, "member": m, "kind": "started", "generation": -1,
                             "detail": "protocol=classic assignor=range synthetic"})
        events[m].append({"ts_ms": bounds[-1], "member": m, "kind": "stopped", "generation": G})
    faults = []
    for g in range(1, G):
        faults.append({"id": f"f{g}", "kind": "broker_pause", "target": f"kafka-{g % 3 + 1}",
                       "injected_at_ms": bounds[g] - 3000, "healed_at_ms": bounds[g] + 1000, "params": {"seconds": 4}})
    if plan.plant:
        faults.append({"id": "f-unhealed", "kind": "proxy_down", "target": "kafka-1", "injected_at_ms": bounds[-1] - 2000,
                       "healed_at_ms": None, "params": {}})

    _write(out, plan, rng, n_per, acked, cons, events, faults)
    _truth(truth, plan, n_per, cons, plants, faults)
    (out / "truth.json").write_text(json.dumps(truth.__dict__, indent=2) + "\n")
    return truth


def _truth(truth: Truth, plan: Plan, n_per: int, cons, plants, faults) -> None:
    keys = np.concatenate([p * (1 << 40) + offs for parts in cons.values() for (p, offs, t, gen) in parts])
    truth.consumed_rows = int(len(keys))
    uniq, counts = np.unique(keys, return_counts=True)
    truth.duplicated_offsets = int((counts > 1).sum())
    truth.duplicate_extra_deliveries = int((counts - 1).sum())
    produced = np.concatenate([p * (1 << 40) + np.arange(n_per, dtype=np.int64) for p in range(plan.partitions)])
    truth.lost_records = int(len(produced) - np.isin(produced, uniq, assume_unique=True).sum())
    truth.skip = sum(v for (k, g, p), v in plants.items() if k == "skip")
    truth.backwards = sum(1 for (k, g, p) in plants if k == "backwards")
    truth.duplicate_over_budget = (sum(v for (k, g, p), v in plants.items() if k in ("backwards", "below_commit")))
    truth.commit_regression = sum(1 for (k, g, p) in plants if k == "commit_regression")
    truth.unhealed_fault = sum(1 for f in faults if f["healed_at_ms"] is None)


def _write(out: Path, plan: Plan, rng, n_per, acked, cons, events, faults) -> None:
    import pyarrow as pa
    out.mkdir(parents=True, exist_ok=True)
    for sub in ("produced", "consumed", "events"):
        (out / sub).mkdir(exist_ok=True)
    P = plan.partitions
    part = np.repeat(np.arange(P, dtype=np.int32), n_per)
    offs = np.tile(np.arange(n_per, dtype=np.int64), P)
    seq = offs * P + part
    at = np.tile(acked, P)
    order = np.argsort(at, kind="stable")
    n_bad = 20 if plan.plant else 0
    produced = pa.table({
        "topic": pa.array(np.full(len(order) + n_bad, TOPIC)),
        "partition": pa.array(np.concatenate([part[order], np.zeros(n_bad, np.int32)]),
                              mask=np.concatenate([np.zeros(len(order), bool), np.ones(n_bad, bool)])),
        "offset": pa.array(np.concatenate([offs[order], np.zeros(n_bad, np.int64)]),
                           mask=np.concatenate([np.zeros(len(order), bool), np.ones(n_bad, bool)])),
        "acked_at_ms": pa.array(np.concatenate([at[order], np.full(n_bad, at[-1])])),
        "key": pa.array(np.char.add("k", np.concatenate([seq[order], np.arange(n_bad) + 10**9]).astype(str))),
        "producer_id": pa.array(np.full(len(order) + n_bad, "producer-0")),
        "seq": pa.array(np.concatenate([seq[order], np.arange(n_bad) + 10**9])),
        "status": pa.array(["ok"] * len(order) + ["info", "fail"] * (n_bad // 2)),
    })
    _table_out(produced, out / "produced" / f"producer-0.{plan.fmt}", plan.fmt)
    for m, parts in cons.items():
        if parts:
            p = np.concatenate([np.full(len(o), pp, np.int32) for pp, o, t, g in parts])
            o = np.concatenate([o for pp, o, t, g in parts])
            t = np.concatenate([t for pp, o, t, g in parts])
            g = np.concatenate([np.full(len(o), gg, np.int32) for pp, o, t, gg in parts])
        else:
            p, o, t, g = (np.zeros(0, np.int32), np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int32))
        order = np.argsort(t, kind="stable")            # the member's log is in consumption order
        p, o, t, g = p[order], o[order], t[order], g[order]
        s = o * P + p
        table = pa.table({
            "topic": pa.array(np.full(len(o), TOPIC)), "partition": pa.array(p), "offset": pa.array(o),
            "member": pa.array(np.full(len(o), m)), "consumed_at_ms": pa.array(t),
            "key": pa.array(np.char.add("k", s.astype(str))), "producer_id": pa.array(np.full(len(o), "producer-0")),
            "seq": pa.array(s), "instance_id": pa.nulls(len(o), pa.string()), "generation": pa.array(g),
            "client": pa.array(np.full(len(o), "librdkafka")),
        })
        _table_out(table, out / "consumed" / f"{m}.{plan.fmt}", plan.fmt)
    for m, evs in events.items():
        evs.sort(key=lambda e: e["ts_ms"])
        with open(out / "events" / f"{m}.jsonl", "w") as fh:
            fh.writelines(json.dumps(e, separators=(",", ":")) + "\n" for e in evs)
    with open(out / "faults.jsonl", "w") as fh:
        fh.writelines(json.dumps(f) + "\n" for f in faults)
    (out / "scenario.yaml").write_text(f"# synthetic run (benchmarks/synth.py)\nseed: {plan.seed}\nrecords: {plan.records}\n"
                                      f"partitions: {plan.partitions}\nmembers: {plan.members}\nassignor: range\nprotocol: classic\n")


def _table_out(table, path: Path, fmt: str) -> None:
    if fmt == "parquet":
        import pyarrow.parquet as pq
        pq.write_table(table, path, row_group_size=256 * 1024)
        return
    if table.num_rows > 200_000:
        import duckdb
        con = duckdb.connect()
        con.register("t", table)
        con.execute(f"COPY t TO '{path}' (FORMAT JSON)")
        con.close()
        return
    with open(path, "w") as fh:
        cols = table.column_names
        data = [table.column(c).to_pylist() for c in cols]
        for row in zip(*data):
            fh.write(json.dumps(dict(zip(cols, row)), separators=(",", ":")) + "\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--format", choices=("parquet", "jsonl"), default="parquet")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--partitions", type=int, default=12)
    ap.add_argument("--clean", action="store_true", help="no planted anomalies (duplicates inside the budget only)")
    a = ap.parse_args(argv)
    t = time.monotonic()
    truth = generate(a.out, Plan(records=a.records, fmt=a.format, seed=a.seed, partitions=a.partitions, plant=not a.clean))
    print(json.dumps({k: v for k, v in truth.__dict__.items() if k != "planted"}))
    print(f"written {a.out} in {time.monotonic() - t:.1f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
