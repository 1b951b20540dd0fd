"""A seeded synthetic run directory (contract v1) with planted anomalies and its ground truth.

The history looks like a real eager consumer group under faults: P partitions produced at a steady rate,
M members, G generations separated by stop-the-world rebalances (revoke everything, nobody owns anything
for a while, assign), each owner committing every C records and the next owner restarting from the last
commit, so every rebalance re-delivers the revoked owner's uncommitted tail (duplicates inside the budget).
On top of that, planted: records lost at a hand-over, a skip and a step back inside one ownership, a
hand-over that restarts below the last commit (duplicates over the budget), a commit regression and an
unhealed fault. The ground truth is computed from the generated arrays with numpy, independently of the
analysis.

The same run can be written in other layouts (the answer must not change, issue 23): ``--order interleaved``
(rows of different partitions interleaved at random, each partition's rows in consumption order: several threads
of one application writing to one log), ``--order shuffled`` (every row of a file at a random place: a log with
no order at all), ``--files N`` (every member's rows merged
in consumption time, as logs merged from many hosts, and cut into N files of consecutive rows; 0, the default:
one file a member) and ``--format mixed`` (the files alternately Parquet and JSONL). Every consumed row carries
``n``, its member's consumption sequence, so ``backwards`` has one answer in every layout; ``--no-sequence`` leaves
it out (a run written before the column, or a user's own log): ``backwards`` then counts the steps back of the log
as written.

Large runs (issue 23: 100M records): the rows are held as numbers only (member codes, no strings, each file's rows
reordered in place), the Parquet files are written one row group at a time (the strings of one row group in
memory), and the truth is counted a partition (duplicates, losses) or a member (``backwards``) at a time. The
same seed gives the same rows in the same row groups as before this change. ``shuffled`` is a full shuffle of
each file (one file a member by default: a third of the run each). JSONL is still built whole (100M records of it
would not fit the disk anyway).

    python -m benchmarks.synth OUT_DIR --records 10000000 --format parquet
    python -m benchmarks.synth OUT_DIR --records 1000000 --order shuffled --files 2 --partitions 64
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
ORDERS = ("consumption", "interleaved", "shuffled")
STALL_MS = 4_000                    # a planted stall: a partition's owner delivers nothing for this long


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
    fmt: str = "parquet"            # parquet | jsonl | mixed (files alternately Parquet and JSONL)
    plant: bool = True
    stall: bool = False             # plant a stall too (needs generations longer than 3 * STALL_MS)
    order: str = "consumption"      # consumption | interleaved | shuffled: the order of rows inside a file
    files: int = 0                  # consumed files: 0 = one a member, N = all members' rows cut into N files
    row_group_rows: int = 256 * 1024
    sequence: bool = True           # each consumed row carries n, its member's consumption sequence (False: a log
                                    # without it, such as a run written before the column; backwards by log order)
    state_keys: int = 0             # a stateful run (issue 54): record seq's key is k<seq mod state_keys> and every
                                    # member writes state/ as workloads/state.py does; 0: no state, each key unique


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
    stall: int = 0                  # planted stalls of STALL_MS (found by any stall_ms below it)
    rebalances: int = 0
    state_doubled: int = 0          # input offsets applied twice or more to a key's final state (a stateful run)
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
    if plan.plant and G >= 4 and n_per >= 50 * G:  # fewer records a partition leave no room to plant them
        plants = {("lost_handover", 1, 0): 7, ("skip", 2, 1): 5, ("backwards", 2, 2): 40,
                  ("below_commit", 3, 3 % P): 25, ("commit_regression", 3, 4 % P): 1}
        if plan.stall and duration // G > 3 * STALL_MS:
            plants[("stall", 1, 5 % P)] = STALL_MS
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
                if ("stall", g, p) in plants:  # the owner stops for a while in mid-generation, then catches up
                    mid = len(offs) // 3
                    t[mid:] = np.maximum(t[mid:], t[mid] + plants[("stall", g, p)] + np.arange(len(offs) - mid) // 10)
                    t = np.maximum.accumulate(t)
                    truth.planted.append({"kind": "stall", "partition": p, "after_offset": int(offs[mid - 1])})
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

    logs = _write(out, plan, rng, n_per, acked, cons, events, faults)
    if plan.state_keys:
        truth.state_doubled = write_state(out, plan, cons)
    _truth(truth, plan, n_per, cons, plants, faults)
    truth.commit_regression = commit_regressions(events)
    truth.backwards = steps_back(logs, plan.sequence)
    (out / "truth.json").write_text(json.dumps(truth.__dict__, indent=2) + "\n")
    return truth


def _truth(truth: Truth, plan: Plan, n_per: int, cons, plants, faults) -> None:
    """Counted one partition at a time (an offset's deliveries are all in its partition), so that the memory it
    takes is a partition's, not the run's."""
    for p in range(plan.partitions):
        pieces = [offs for parts in cons.values() for (q, offs, t, gen) in parts if q == p]
        keys = np.concatenate(pieces) if pieces else np.zeros(0, np.int64)
        truth.consumed_rows += int(len(keys))
        uniq, counts = np.unique(keys, return_counts=True)
        truth.duplicated_offsets += int((counts > 1).sum())
        truth.duplicate_extra_deliveries += int((counts - 1).sum())
        truth.lost_records += int(n_per - np.isin(np.arange(n_per, dtype=np.int64), uniq, assume_unique=True).sum())
    truth.skip = sum(v for (k, g, p), v in plants.items() if k == "skip")
    truth.stall = sum(1 for (k, g, p) in plants if k == "stall")
    truth.duplicate_over_budget = (sum(v for (k, g, p), v in plants.items() if k in ("backwards", "below_commit")))
    truth.unhealed_fault = sum(1 for f in faults if f["healed_at_ms"] is None)


def commit_regressions(events: dict) -> int:
    """Times a partition's committed offset went down, counted over every member's commits in time order: the planted
    one, and those of a new owner that restarted below the last commit (below_commit) while its commits stay under
    it (when commits come more often than its restart is deep: many partitions, few records each)."""
    by_partition: dict[str, list[tuple[int, int]]] = {}
    for member_events in events.values():
        for e in member_events:
            if e["kind"] == "committed":
                for tp, value in e["offsets"].items():
                    by_partition.setdefault(tp, []).append((e["ts_ms"], value))
    return sum(int((np.diff([v for _, v in sorted(cs)]) < 0).sum()) for cs in by_partition.values())


def _write(out: Path, plan: Plan, rng, n_per, acked, cons, events, faults) -> list[tuple[str, dict]]:
    """Every file of the run. The rows are held as numbers (member codes, no strings); each file's table, strings
    and all, is built and written one row group at a time (memory: about 40 bytes a consumed row)."""
    out.mkdir(parents=True, exist_ok=True)
    for sub in ("produced", "consumed", "events"):
        (out / sub).mkdir(exist_ok=True)
    fmt = "parquet" if plan.fmt == "mixed" else plan.fmt
    rows = _produced_rows(plan, rng, n_per, acked)
    _table_out(lambda at: _produced_table(rows[at], plan.partitions, n_per, acked, plan.state_keys), len(rows),
               out / "produced" / f"producer-0.{fmt}", fmt, plan.row_group_rows)
    del rows
    members = np.array(sorted(cons))
    logs = _logs(plan, rng, cons)
    for i, (name, log) in enumerate(logs):
        fmt = plan.fmt if plan.fmt != "mixed" else ("parquet", "jsonl")[i % 2]
        _table_out(lambda at: _consumed_table(log, at, members, plan), len(log["offset"]),
                   out / "consumed" / f"{name}.{fmt}", fmt, plan.row_group_rows)
    for m, evs in events.items():
        evs.sort(key=lambda e: e["ts_ms"])
        with open(out / "events" / f"{m}.jsonl", "w") as fh:
            fh.writelines(json.dumps(e, separators=(",", ":")) + "\n" for e in evs)
    with open(out / "faults.jsonl", "w") as fh:
        fh.writelines(json.dumps(f) + "\n" for f in faults)
    (out / "scenario.yaml").write_text(f"# synthetic run (benchmarks/synth.py)\nseed: {plan.seed}\nrecords: {plan.records}\n"
                                      f"partitions: {plan.partitions}\nmembers: {plan.members}\nassignor: range\nprotocol: classic\n")
    return logs


BAD_ROWS = 20  # produced rows that are not acked records (status info/fail, no partition or offset)


def _produced_rows(plan: Plan, rng, n_per: int, acked) -> np.ndarray:
    """The produced file's rows, in file order, as numbers: j < P * n_per is partition j // n_per, offset
    j % n_per; above, the bad rows. In ack order (partitions in turn at equal times), or any order at all."""
    rows = np.argsort(np.tile(acked, plan.partitions), kind="stable")
    rows = np.concatenate([rows, len(rows) + np.arange(BAD_ROWS if plan.plant else 0)])
    if plan.order != "consumption":  # the order of produced rows means nothing to the analysis: any will do
        rows = rows[rng.permutation(len(rows))]
    return rows


def _produced_table(rows: np.ndarray, P: int, n_per: int, acked, key_space: int = 0):
    import pyarrow as pa
    bad = rows >= P * n_per
    part = np.where(bad, 0, rows // n_per).astype(np.int32)
    offs = np.where(bad, 0, rows % n_per)
    seq = np.where(bad, rows - P * n_per + 10**9, offs * P + part)
    status = np.where(bad, np.where((rows - P * n_per) % 2, "fail", "info"), "ok")
    return pa.table({
        "topic": pa.array(np.full(len(rows), TOPIC)), "partition": pa.array(part, mask=bad),
        "offset": pa.array(offs, mask=bad), "acked_at_ms": pa.array(np.where(bad, acked[-1], acked[offs])),
        "key": _keys(seq, key_space), "producer_id": pa.array(np.full(len(rows), "producer-0")), "seq": pa.array(seq),
        "status": pa.array(status),
    })


def _consumed_table(log: dict, at: slice, members: np.ndarray, plan: Plan):
    import pyarrow as pa
    o, p = log["offset"][at], log["partition"][at]
    s = o * plan.partitions + p
    table = pa.table({
        "topic": pa.array(np.full(len(o), TOPIC)), "partition": pa.array(p), "offset": pa.array(o),
        "member": pa.array(members[log["member"][at]]), "consumed_at_ms": pa.array(log["t"][at]),
        "key": _keys(s, plan.state_keys), "producer_id": pa.array(np.full(len(o), "producer-0")),
        "seq": pa.array(s), "instance_id": pa.nulls(len(o), pa.string()), "generation": pa.array(log["generation"][at]),
        "client": pa.array(np.full(len(o), "librdkafka")),
    })
    return table.append_column("n", pa.array(log["n"][at])) if plan.sequence else table


def _keys(seq: np.ndarray, key_space: int = 0):
    """"k" and the sequence number (a stateful run: the sequence number modulo the key space), as text."""
    import pyarrow as pa
    import pyarrow.compute as pc
    seq = seq % key_space if key_space else seq
    return pc.binary_join_element_wise("k", pc.cast(pa.array(seq, pa.int64()), pa.string()), "")


def write_state(out: Path, plan: Plan, cons) -> int:
    """state/<member>.jsonl and state/final.jsonl as stateful members write them (docs/DESIGN.md, "State"): every
    consumed row applied, in each partition's consumption order, to its key's value as the changelog held it (a
    re-delivered record is applied again, as an at-least-once member does). Key index seq mod K lies in partition
    (seq mod K) mod P, as the producer places it. Returns the input offsets applied more than once."""
    P, K = plan.partitions, plan.state_keys
    if K % P:
        raise ValueError(f"state_keys {K}: a multiple of the partitions ({P}), as keys_per_partition x partitions is")
    folder = out / "state"
    folder.mkdir(exist_ok=True)
    members = sorted(cons)
    rows = {m: [] for m in members}
    final, doubled = [], 0
    for p in range(P):
        pieces = sorted(((gen, m, offs, t) for m in members for (q, offs, t, gen) in cons[m] if q == p),
                        key=lambda e: e[0])
        if not pieces:
            continue
        offs = np.concatenate([e[2] for e in pieces])
        t = np.concatenate([e[3] for e in pieces])
        gen = np.concatenate([np.full(len(e[2]), e[0]) for e in pieces])
        who = np.concatenate([np.full(len(e[2]), members.index(e[1])) for e in pieces])
        seq = offs * P + p
        key = seq % K
        order = np.argsort(key, kind="stable")            # each key's applications, in consumption order
        k, o, s = key[order], offs[order], seq[order]
        first = np.r_[True, k[1:] != k[:-1]]
        group_start = np.maximum.accumulate(np.where(first, np.arange(len(k)), 0))
        count = np.arange(len(k)) - group_start + 1
        total = np.cumsum(s)
        total = total - np.where(group_start > 0, total[group_start - 1], 0)
        prev = np.where(first, -1, np.r_[-1, o[:-1]])
        doubled += int((np.unique(np.stack([k, o]), axis=1, return_counts=True)[1] > 1).sum())
        for i, j in enumerate(order):
            m = members[who[j]]
            rows[m].append((int(t[j]), {"ts_ms": int(t[j]), "member": m, "topic": TOPIC, "partition": p,
                                        "key": f"k{k[i]}", "offset": int(o[i]), "prev_offset": int(prev[i]),
                                        "count": int(count[i]), "sum": int(total[i]), "generation": int(gen[j])}))
        last = np.r_[k[1:] != k[:-1], True]
        for i in np.flatnonzero(last):
            j = order[i]
            final.append({"partition": p, "key": f"k{k[i]}", "count": int(count[i]), "sum": int(total[i]),
                          "last_offset": int(o[i]), "member": members[who[j]], "ts_ms": int(t[j])})
    for m, mine in rows.items():
        mine.sort(key=lambda r: r[0])
        with open(folder / f"{m}.jsonl", "w") as fh:
            fh.writelines(json.dumps(r, separators=(",", ":")) + "\n" for _, r in mine)
    with open(folder / "final.jsonl", "w") as fh:
        fh.writelines(json.dumps(r, separators=(",", ":")) + "\n" for r in final)
    return doubled


def _logs(plan: Plan, rng, cons) -> list[tuple[str, dict]]:
    """The consumed files (name, columns), in the order of the layout: one a member (``files`` 0) or every
    member's rows merged by consumption time and cut into ``files`` pieces; rows inside a file in ``order``.
    ``member`` is the index of the member's name in sorted order. Each piece is a view of one set of arrays,
    reordered in place: the rows are in memory once."""
    members = sorted(cons)
    parts = [(code, p, o, t, g) for code, m in enumerate(members) for p, o, t, g in cons[m]]
    sizes = [len(o) for _, _, o, _, _ in parts]
    each = lambda i, dtype: np.repeat(np.array([e[i] for e in parts], dtype), sizes)  # noqa: E731
    log = {"member": each(0, np.int16), "partition": each(1, np.int32),
           "offset": np.concatenate([e[2] for e in parts]) if parts else np.zeros(0, np.int64),
           "t": np.concatenate([e[3] for e in parts]) if parts else np.zeros(0, np.int64), "generation": each(4, np.int32)}
    del parts
    mcode = log["member"]
    consumption = np.lexsort((log["t"], mcode))  # a member's consumption order (equal times: the order it got them)
    log["n"] = np.empty(len(mcode), np.int64)
    log["n"][consumption] = np.arange(len(mcode)) - np.searchsorted(mcode[consumption], mcode[consumption])
    by_time = np.lexsort((mcode, log["t"])) if plan.files else consumption  # stable: log order kept
    del consumption
    for k in log:  # one column at a time: one copy more at most
        log[k] = log[k][by_time]
    del by_time
    mcode = log["member"]
    if plan.files:
        cuts = np.linspace(0, len(mcode), plan.files + 1).astype(np.int64)
        pieces = [(f"log-{i:05d}", slice(a, z)) for i, (a, z) in enumerate(zip(cuts[:-1], cuts[1:]))]
    else:
        starts = np.searchsorted(mcode, np.arange(len(members) + 1))
        pieces = [(m, slice(starts[i], starts[i + 1])) for i, m in enumerate(members) if starts[i] < starts[i + 1]]
    out = []
    for name, at in pieces:
        order = _row_order(plan.order, rng, log["member"][at].astype(np.int64) * plan.partitions + log["partition"][at])
        for v in log.values():
            v[at] = v[at][order]
        out.append((name, {k: v[at] for k, v in log.items()}))
    return out


def _row_order(order: str, rng, stream: np.ndarray) -> np.ndarray:
    """Where each row of a file goes. ``interleaved``: the streams (a member's partition: one consuming thread)
    interleaved at random, each stream's rows kept in their order; ``shuffled``: anywhere."""
    n = len(stream)
    if order == "consumption":
        return np.arange(n)
    if order == "shuffled":
        return rng.permutation(n)
    r = rng.random(n)
    key = np.empty(n)
    key[np.argsort(stream, kind="stable")] = r[np.lexsort((r, stream))]  # each stream takes its sorted draws in turn
    return np.argsort(key, kind="stable")


def steps_back(logs: list[tuple[str, dict]], by_sequence: bool = True) -> int:
    """The ``backwards`` truth of the written logs: inside each member's log, in the order of its consumption
    sequence ``n`` (``by_sequence``), else in log order (its files in the order of their first record of the
    partition, rows in file order), the times one partition's next record in one generation is not above the
    previous one. Counted here by one plain sort a member, independently of the analysis."""
    members = np.unique(np.concatenate([log["member"] for _, log in logs])) if logs else []
    return sum(_member_steps_back(logs, member, by_sequence) for member in members)


def _member_steps_back(logs: list[tuple[str, dict]], member, by_sequence: bool) -> int:
    mine = [(i, log, np.flatnonzero(log["member"] == member)) for i, (_, log) in enumerate(logs)]
    cat = lambda k: np.concatenate([log[k][rows] for _, log, rows in mine])  # noqa: E731
    p, g, o = cat("partition").astype(np.int64), cat("generation"), cat("offset")
    if by_sequence:
        order = np.lexsort((cat("n"), g, p))
    else:
        f = np.concatenate([np.full(len(rows), i) for i, _, rows in mine])
        row = np.concatenate([rows for _, _, rows in mine])
        file_of_stream = np.unique(np.stack([p, f]), axis=1, return_inverse=True)[1].ravel()
        first = np.full(file_of_stream.max() + 1, np.iinfo(np.int64).max)
        np.minimum.at(first, file_of_stream, cat("t"))
        order = np.lexsort((row, f, first[file_of_stream], g, p))
    p, g, o = p[order], g[order], o[order]
    same = (p[1:] == p[:-1]) & (g[1:] == g[:-1])
    return int((same & (o[1:] <= o[:-1])).sum())


def _table_out(make, rows: int, path: Path, fmt: str, row_group_rows: int = 256 * 1024) -> None:
    """The table ``make(slice)`` gives for rows 0 to ``rows``, written to ``path``: Parquet one row group at a time
    (only a row group's strings in memory), JSONL whole (a JSONL run that big would not fit the disk anyway)."""
    if fmt == "parquet":
        import pyarrow.parquet as pq
        writer = None
        for start in range(0, max(rows, 1), row_group_rows):
            chunk = make(slice(start, min(start + row_group_rows, rows)))
            writer = writer if writer is not None else pq.ParquetWriter(path, chunk.schema)
            writer.write_table(chunk, row_group_size=row_group_rows)
        writer.close()
        return
    table = make(slice(0, rows))
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
    ap.add_argument("--format", choices=("parquet", "jsonl", "mixed"), default="parquet")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--partitions", type=int, default=12)
    ap.add_argument("--members", type=int, default=3)
    ap.add_argument("--generations", type=int, default=8, help="rebalances (stop-the-world), each a generation")
    ap.add_argument("--stall", action="store_true", help=f"plant a stall of {STALL_MS} ms too")
    ap.add_argument("--order", choices=ORDERS, default="consumption", help="the order of rows inside a consumed file")
    ap.add_argument("--files", type=int, default=0, help="consumed files: 0 = one a member; N = every member's rows "
                    "merged by consumption time and cut into N files")
    ap.add_argument("--clean", action="store_true", help="no planted anomalies (duplicates inside the budget only)")
    ap.add_argument("--no-sequence", action="store_true", help="no consumption sequence column n in consumed/")
    ap.add_argument("--state-keys", type=int, default=0, help="a stateful run over this many keys (state/ written as "
                    "stateful members write it); 0: no state")
    a = ap.parse_args(argv)
    t = time.monotonic()
    truth = generate(a.out, Plan(records=a.records, fmt=a.format, seed=a.seed, partitions=a.partitions, members=a.members,
                                 generations=a.generations, plant=not a.clean, stall=a.stall, order=a.order,
                                 files=a.files, sequence=not a.no_sequence,
                                 state_keys=a.state_keys))
    print(json.dumps({k: v for k, v in truth.__dict__.items() if k != "planted"}))
    print(f"written {a.out} in {time.monotonic() - t:.1f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
