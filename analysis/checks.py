"""Anomaly checks on what records.py collected (small: only the blocks the counts flag) plus the history.

Every check returns anomalies as dicts of one shape::

    {"type", "topic", "partition", "offsets": [first, last], "count", "members", "generations",
     "time_ms": [t0, t1], "fault_ids", ...type-specific fields}

``offsets`` is an inclusive range; ``count`` is in the type's unit (see COUNT_UNITS).
"""
from __future__ import annotations

import bisect
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from .history import OPEN, Commit, History, Period, period_column
from .records import NO_EVENTS_PERIOD, OUTSIDE_PERIOD

COUNT_UNITS = {
    "duplicate": "distinct topic/partition/offset consumed more than once",
    "lost": "acked (ok) records never consumed",
    "skip": "records a member jumped over inside one ownership of a partition",
    "backwards": "times a member's next consumed offset went back inside one ownership",
    "commit_regression": "times a partition's committed offset went down",
    "duplicate_over_budget": "duplicated offsets not explained by a revoked owner's uncommitted tail",
    "unhealed_fault": "faults never healed",
    "duplicate_write": "producer_id/seq pairs stored at more than one offset",
}
INVALID_TYPES = ("lost", "skip", "backwards", "commit_regression", "duplicate_over_budget", "unhealed_fault",
                 "duplicate_write")
TYPES = ("duplicate", "lost", "duplicate_write", "skip", "backwards", "commit_regression",
         "duplicate_over_budget", "unhealed_fault")
U64 = (1 << 64) - 1


def bits(mask: int) -> list[int]:
    m = mask & U64
    out = []
    while m:
        low = m & -m
        out.append(low.bit_length() - 1)
        m ^= low
    return out


def decode(blocks: list[int], masks: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Offsets set in the masks of the given blocks, and the index of the block each came from (sorted)."""
    if not blocks:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    m = np.array([x & U64 for x in masks], dtype=np.uint64)
    bitmat = np.unpackbits(m.view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")
    rows, cols = np.nonzero(bitmat)
    offsets = np.array(blocks, dtype=np.int64)[rows] * 64 + cols
    order = np.argsort(offsets, kind="stable")
    return offsets[order], rows[order]


def runs(offsets: np.ndarray) -> list[tuple[int, int]]:
    """Index ranges [i, j) of consecutive offsets."""
    if len(offsets) == 0:
        return []
    cut = np.nonzero(np.diff(offsets) != 1)[0] + 1
    starts = np.concatenate([[0], cut])
    ends = np.concatenate([cut, [len(offsets)]])
    return list(zip(starts.tolist(), ends.tolist()))


@dataclass
class Delivery:
    member: str
    period: int
    t0: int          # earliest time this delivery can have happened (block-level group: its tmin)
    t1: int          # latest
    gens: tuple
    order: tuple = ()


@dataclass
class Context:
    history: History
    periods: dict[int, Period] = field(default_factory=dict)
    commits: dict[tuple[str, str, int], list[Commit]] = field(default_factory=dict)
    commit_ts: dict[tuple[str, str, int], list[int]] = field(default_factory=dict)
    owners: dict[tuple[str, int], list[Period]] = field(default_factory=dict)

    @classmethod
    def build(cls, h: History) -> "Context":
        ctx = cls(h, {p.id: p for p in h.periods})
        for c in h.commits:
            if c.ok:
                ctx.commits.setdefault((c.member, c.topic, c.partition), []).append(c)
        for key, cs in ctx.commits.items():
            cs.sort(key=lambda c: (c.eff_ts, c.line))
            ctx.commit_ts[key] = [c.eff_ts for c in cs]
        for p in h.periods:
            ctx.owners.setdefault((p.topic, p.partition), []).append(p)
        for v in ctx.owners.values():
            v.sort(key=lambda p: p.start)
        return ctx

    def last_commit(self, member, topic, partition, since, until) -> Commit | None:
        key = (member, topic, partition)
        ts = self.commit_ts.get(key)
        if not ts:
            return None
        i = bisect.bisect_right(ts, until) - 1
        if i < 0:
            return None
        c = self.commits[key][i]
        return c if c.eff_ts >= since else None

    def period_gens(self, period: int) -> tuple:
        p = self.periods.get(period)
        return (p.generation,) if p is not None and p.generation is not None else ()

    def owners_during(self, topic, partition, t0, t1) -> list[Period]:
        return [p for p in self.owners.get((topic, partition), []) if p.start <= t1 and p.end >= t0]


def _gens(row, ctx: Context) -> tuple:
    g = tuple(sorted({x for x in (row.get("gmin"), row.get("gmax")) if x is not None}))
    return g or ctx.period_gens(row.get("period", -9))


# ------------------------------------------------------------------------------------------- duplicates
def pair_verdict(ctx: Context, prev: Delivery, cur: Delivery, topic: str, partition: int):
    """The part of the budget rule that does not depend on the offset: (verdict, reason, commit) where a
    "within" verdict still needs offset >= commit.offset (when there is a commit)."""
    if not ctx.history.has_events:
        return "unknown", "no events", None
    for d in (prev, cur):
        if d.period == NO_EVENTS_PERIOD:
            return "unknown", f"member {d.member} logged no events", None
    if prev.period >= 0 and prev.member == cur.member and prev.period == cur.period:
        return "over", f"re-delivered to {cur.member} inside the same ownership (a step back, not a rebalance)", None
    if prev.period == OUTSIDE_PERIOD:
        return "over", f"first delivered to {prev.member} while it did not own the partition", None
    if cur.period == OUTSIDE_PERIOD:
        return "over", f"re-delivered to {cur.member} while it did not own the partition", None
    owner = ctx.periods[prev.period]
    if owner.end > cur.t0:
        return "over", f"{owner.member} still owned the partition when {cur.member} consumed it again (two owners)", None
    c = ctx.last_commit(owner.member, topic, partition, owner.start, cur.t0)
    return "within", f"in {owner.member}'s uncommitted tail after it was {owner.end_kind}", (c, owner)


def classify_budget(ctx: Context, prev: Delivery, cur: Delivery, topic: str, partition: int, offset: int, cache=None):
    """("within" | "over" | "unknown", reason) for one re-delivery. Within budget means: the previous delivery
    was by an owner whose ownership had ended (revoked, lost, left) before this one, and the offset is at or
    above that owner's last successful commit (Kafka's committed offset: the next one to consume)."""
    key = (id(prev), id(cur))
    if cache is not None and key in cache:
        verdict, reason, extra = cache[key]
    else:
        verdict, reason, extra = pair_verdict(ctx, prev, cur, topic, partition)
        if cache is not None:
            cache[key] = (verdict, reason, extra)
    if verdict == "within" and extra is not None:
        c, owner = extra
        if c is not None and offset < c.offset:
            return "over", f"below {owner.member}'s last commit ({c.offset}) before its ownership ended ({owner.end_kind})"
    return verdict, reason


def duplicate_blocks_needing_rows(ctx: Context, groups: list[dict]) -> set[tuple]:
    """Blocks whose groups cannot settle the duplicates exactly: a group with a repeat inside (its mask
    hides how often each offset came), or a previous owner whose ownership ended inside the re-delivering
    group's time span (order unclear at block level)."""
    need = set()
    by_block = defaultdict(list)
    for g in groups:
        by_block[(g["topic"], g["partition"], g["b"])].append(g)
        if g["n"] > bin(g["mask"] & U64).count("1"):
            need.add((g["topic"], g["partition"], g["b"]))
    for key, gs in by_block.items():
        if key in need or len(gs) < 2:
            continue
        for g in gs:
            p = ctx.periods.get(g["period"])
            if p is None or p.end == OPEN:
                continue
            for h in gs:
                if h is not g and h["tmin"] < p.end <= h["tmax"]:
                    need.add(key)
    return need


def duplicates(ctx: Context, groups: list[dict], rows: list[dict]) -> tuple[list[dict], list[dict], dict]:
    """(duplicate anomalies, duplicate_over_budget anomalies, stats)."""
    drilled = defaultdict(list)
    for r in rows:
        drilled[(r["topic"], r["partition"], r["offset"] >> 6)].append(r)
    by_block = defaultdict(list)
    for g in groups:
        by_block[(g["topic"], g["partition"], g["b"])].append(g)
    cache: dict = {}
    facts: dict = {}   # tuple of deliveries -> (members, gens, t0, t1)
    items = []         # (topic, partition, offset, deliveries, members, gens, budget, reason, t0, t1)
    extra = 0

    keep = []  # caches are keyed by id(): keep every delivery alive so that no id is reused meanwhile

    def add(topic, partition, off, ds):
        nonlocal extra
        keep.append(ds)
        key = tuple(map(id, ds))
        f = facts.get(key)
        if f is None:
            f = facts[key] = (tuple(sorted({d.member for d in ds})), tuple(sorted({g for d in ds for g in d.gens})),
                              min(d.t0 for d in ds[1:]), max(d.t1 for d in ds[1:]))
        extra += len(ds) - 1
        verdicts = [classify_budget(ctx, ds[i - 1], ds[i], topic, partition, off, cache) for i in range(1, len(ds))]
        over = [r for v, r in verdicts if v == "over"]
        unknown = [r for v, r in verdicts if v == "unknown"]
        budget = "over" if over else ("unknown" if unknown else "within")
        reason = over[0] if over else (unknown[0] if unknown else verdicts[0][1])
        items.append((topic, partition, off, len(ds), f[0], f[1], budget, reason, f[2], f[3]))

    for key in sorted(by_block):
        topic, partition, b = key
        if key in drilled:
            by_off = defaultdict(list)
            for r in drilled[key]:
                gens = (r["generation"],) if r["generation"] is not None and r["generation"] >= 0 else ctx.period_gens(r["period"])
                by_off[r["offset"]].append(Delivery(r["member"], r["period"], r["ts"], r["ts"], gens,
                                                    (r["ts"], r["_file"] or "", r["_block"] or 0, r["_row"] or 0)))
            for off in sorted(by_off):
                ds = by_off[off]
                if len(ds) > 1:
                    ds.sort(key=lambda d: d.order)
                    add(topic, partition, off, ds)
            continue
        pairs = sorted(((Delivery(g["member"], g["period"], g["tmin"], g["tmax"], _gens(g, ctx), (g["tmin"], g["tmax"], g["member"])),
                         g["mask"]) for g in by_block[key]), key=lambda x: x[0].order)
        slots = defaultdict(list)
        for d, m in pairs:
            for j in bits(m):
                slots[j].append(d)
        for j in sorted(slots):
            if len(slots[j]) > 1:
                add(topic, partition, b * 64 + j, slots[j])
    dup, over_list = [], []
    for group in _merge(items, lambda it: (it[0], it[1], it[4], it[5], it[6], it[7])):
        topic, partition = group[0][0], group[0][1]
        base = {"topic": topic, "partition": partition, "offsets": [group[0][2], group[-1][2]], "count": len(group),
                "extra_deliveries": sum(it[3] - 1 for it in group), "members": list(group[0][4]),
                "generations": list(group[0][5]), "time_ms": [min(it[8] for it in group), max(it[9] for it in group)]}
        budget, reason = group[0][6], group[0][7]
        dup.append({"type": "duplicate", **base, "budget": budget, "reason": reason})
        if budget == "over":
            over_list.append({"type": "duplicate_over_budget", **base, "reason": reason})
    stats = {"duplicated_offsets": len(items), "extra_deliveries": extra,
             "over_budget_offsets": sum(1 for it in items if it[6] == "over"),
             "unknown_budget_offsets": sum(1 for it in items if it[6] == "unknown")}
    return dup, over_list, stats


def _merge(items, signature):
    """Group consecutive offsets of equal signature into ranges."""
    out, cur = [], []
    for it in items:
        if cur and signature(it) == signature(cur[-1]) and it[2] == cur[-1][2] + 1:
            cur.append(it)
        else:
            if cur:
                out.append(cur)
            cur = [it]
    if cur:
        out.append(cur)
    return out


# ------------------------------------------------------------------------------------------------- lost
def lost(ctx: Context, blocks: list[dict]) -> tuple[list[dict], int]:
    anomalies, total = [], 0
    by_tp = defaultdict(list)
    for r in blocks:
        if r["lost"]:
            by_tp[(r["topic"], r["partition"])].append(r)
    for (topic, partition), rs in sorted(by_tp.items()):
        offsets, idx = decode([r["b"] for r in rs], [r["lostmask"] for r in rs])
        total += len(offsets)
        t0s = np.array([r["ptmin"] for r in rs], dtype=np.int64)[idx]
        t1s = np.array([max(r["ptmax"], r["ctmax"] or r["ptmax"]) for r in rs], dtype=np.int64)[idx]
        for i, j in runs(offsets):
            t0, t1 = int(t0s[i:j].min()), int(t1s[i:j].max())
            owners = ctx.owners_during(topic, partition, t0, t1)
            anomalies.append({"type": "lost", "topic": topic, "partition": partition,
                              "offsets": [int(offsets[i]), int(offsets[j - 1])], "count": j - i,
                              "members": sorted({p.member for p in owners}),
                              "generations": sorted({p.generation for p in owners if p.generation is not None}),
                              "time_ms": [t0, t1]})
    return anomalies, total


# -------------------------------------------------------------------------------- skip and backwards
def skips(ctx: Context, flags: list[dict], gaps: list[dict], gap_bits: list[dict], rows: list[dict],
          known: dict[tuple, int]) -> tuple[list[dict], int]:
    """Known records a member jumped over inside one ownership: never consumed in that ownership
    (``missing`` bits, gaps between blocks), or consumed only after a later offset (record order)."""
    skipped = defaultdict(dict)  # (member, topic, partition, period) -> {offset: (t0, t1)}
    for r in flags:
        if r["missing"]:
            key = (r["member"], r["topic"], r["partition"], r["period"])
            for j in bits(r["missing"]):
                skipped[key].setdefault(r["b"] * 64 + j, (r["tmin"], r["tmax"]))
    for g in gap_bits:
        r = gaps[g["gid"]]
        key = (r["member"], r["topic"], r["partition"], r["period"])
        for j in bits(g["bits"]):
            skipped[key].setdefault(g["b"] * 64 + j, (r["prev_tmax"], r["tmin"]))
    for key, seq in _sequences(rows).items():
        member, topic, partition, period = key
        for prev, nxt in zip(seq, seq[1:]):
            if nxt["offset"] > prev["offset"] + 1:
                # consecutive only if every block in between was read back (rows hold only some blocks)
                if any((topic, partition, b) not in known for b in range(prev["offset"] >> 6, (nxt["offset"] >> 6) + 1)):
                    continue
                for off in range(prev["offset"] + 1, nxt["offset"]):
                    if known.get((topic, partition, off >> 6), 0) >> (off & 63) & 1:
                        skipped[key].setdefault(off, (prev["ts"], nxt["ts"]))
    anomalies, total = [], 0
    for key in sorted(skipped, key=lambda k: (k[1], k[2], k[0], k[3])):
        member, topic, partition, period = key
        offs = sorted(skipped[key])
        total += len(offs)
        arr = np.array(offs, dtype=np.int64)
        for i, j in runs(arr):
            times = [skipped[key][o] for o in offs[i:j]]
            anomalies.append({"type": "skip", "topic": topic, "partition": partition, "offsets": [offs[i], offs[j - 1]],
                              "count": j - i, "members": [member], "generations": list(ctx.period_gens(period)),
                              "time_ms": [min(t[0] for t in times), max(t[1] for t in times)], "period": period})
    return anomalies, total


def _sequences(rows: list[dict]) -> dict[tuple, list[dict]]:
    """Each (member, topic, partition, period)'s records in the order the member logged them: file order
    (the log is appended in consumption order; a wall clock that steps back does not reorder it), files of
    one member ordered by their first timestamp."""
    seqs = defaultdict(list)
    first_ts: dict = {}
    for r in rows:
        f = r["_file"] or ""
        first_ts[f] = min(first_ts.get(f, r["ts"]), r["ts"])
        if r["period"] is not None and r["period"] >= 0:
            seqs[(r["member"], r["topic"], r["partition"], r["period"])].append(r)
    for v in seqs.values():
        v.sort(key=lambda r: (first_ts[r["_file"] or ""], r["_file"] or "", r["_block"] or 0, r["_row"] or 0))
    return seqs


def _step_back(ctx: Context, key: tuple, prev: tuple[int, int], nxt: tuple[int, int]) -> dict:
    """The backwards anomaly of one step from prev to nxt, each (offset, ts), inside ownership key
    (member, topic, partition, period)."""
    member, topic, partition, period = key
    return {"type": "backwards", "topic": topic, "partition": partition, "offsets": [nxt[0], prev[0]], "count": 1,
            "members": [member], "generations": list(ctx.period_gens(period)), "time_ms": [prev[1], nxt[1]],
            "from_offset": prev[0], "to_offset": nxt[0], "period": period}


def backwards(ctx: Context, flags: list[dict], rows: list[dict]) -> tuple[list[dict], int]:
    flagged = {(r["member"], r["topic"], r["partition"], r["period"]) for r in flags
               if r["repeat"] or r["order_in"] or r["order_across"]}
    anomalies = []
    found = set()
    for key, seq in _sequences(rows).items():
        if key not in flagged:
            continue
        for prev, nxt in zip(seq, seq[1:]):
            if nxt["offset"] <= prev["offset"]:
                found.add(key)
                anomalies.append(_step_back(ctx, key, (prev["offset"], prev["ts"]), (nxt["offset"], nxt["ts"])))
    for r in flags:  # a repeat is a step back whatever the rows say; report it even if they were not read back
        key = (r["member"], r["topic"], r["partition"], r["period"])
        if r["repeat"] and key not in found:
            found.add(key)
            anomalies.append({"type": "backwards", "topic": r["topic"], "partition": r["partition"],
                              "offsets": [r["omin"], r["omax"]], "count": 1, "members": [r["member"]],
                              "generations": list(ctx.period_gens(r["period"])), "time_ms": [r["tmin"], r["tmax"]],
                              "period": r["period"], "detail": "position not resolved to single records"})
    anomalies.sort(key=lambda a: (a["topic"], a["partition"], a["time_ms"][0]))
    return anomalies, len(anomalies)


def backwards_in_log_order(ctx: Context, table, hist) -> tuple[list[dict], int]:
    """Exact: every step back (the next record not above the previous one) in each member's log order, inside
    one ownership, over ALL consumed records (an Arrow table from records.q_log_order). The block checks cannot
    see a reordering strictly inside one 64-offset block; this can, at the cost of every record's position
    (used below api.EXACT_ORDER_MAX_ROWS). Same order and anomalies as :func:`backwards` on drilled rows."""
    df = table.to_pandas()
    if df.empty:
        return [], 0
    df["period"] = period_column(df, hist.periods, hist.members_with_events)
    df = df[df["period"] >= 0]
    df["_first"] = df.groupby("_file")["ts"].transform("min")  # files of one member by their first record
    df = df.sort_values(["member", "topic", "partition", "period", "_first", "_file", "_block", "_row"], kind="stable")
    keys = ["member", "topic", "partition", "period"]
    same = np.ones(len(df), dtype=bool)
    for k in keys:
        col = df[k].to_numpy()
        same[1:] &= col[1:] == col[:-1]
    same[0] = False
    off, ts = df["offset"].to_numpy(), df["ts"].to_numpy()
    back = np.flatnonzero(same[1:] & (off[1:] <= off[:-1])) + 1
    anomalies = []
    for i in back.tolist():
        r = df.iloc[i]
        key = (r["member"], r["topic"], int(r["partition"]), int(r["period"]))
        anomalies.append(_step_back(ctx, key, (int(off[i - 1]), int(ts[i - 1])), (int(off[i]), int(ts[i]))))
    anomalies.sort(key=lambda a: (a["topic"], a["partition"], a["time_ms"][0]))
    return anomalies, len(anomalies)


# ---------------------------------------------------------------------------------- duplicate writes
def duplicate_writes(copies: list[dict]) -> list[dict]:
    """One producer_id/seq stored at more than one topic/partition/offset (a producer-side duplicate)."""
    by_pair = defaultdict(list)
    for r in copies:
        by_pair[(r["producer_id"], r["seq"])].append(r)
    out = []
    for (pid, seq), rs in sorted(by_pair.items()):
        if len(rs) < 2:
            continue
        rs.sort(key=lambda r: (r["topic"], r["partition"], r["offset"]))
        out.append({"type": "duplicate_write", "topic": rs[0]["topic"], "partition": rs[0]["partition"],
                    "offsets": [rs[0]["offset"], rs[-1]["offset"]], "count": 1, "members": [], "generations": [],
                    "time_ms": [min(r["tmin"] for r in rs), max(r["tmax"] for r in rs)], "producer_id": pid, "seq": seq,
                    "copies": [f"{r['topic']}:{r['partition']}@{r['offset']}" for r in rs]})
    return out


# ------------------------------------------------------------------------------------- commits, faults
def commit_regressions(ctx: Context) -> list[dict]:
    out = []
    by_tp = defaultdict(list)
    for c in ctx.history.commits:
        if c.ok:
            by_tp[(c.topic, c.partition)].append(c)
    for (topic, partition), cs in sorted(by_tp.items()):
        cs.sort(key=lambda c: (c.eff_ts, c.line))
        for prev, cur in zip(cs, cs[1:]):
            if cur.offset < prev.offset:
                out.append({"type": "commit_regression", "topic": topic, "partition": partition,
                            "offsets": [cur.offset, prev.offset - 1], "count": 1,
                            "members": sorted({prev.member, cur.member}),
                            "generations": sorted({g for g in (prev.generation, cur.generation) if g is not None and g >= 0}),
                            "time_ms": [prev.eff_ts, cur.eff_ts], "from_offset": prev.offset, "to_offset": cur.offset,
                            "by": cur.member})
    return out


def unhealed_faults(h: History) -> list[dict]:
    return [{"type": "unhealed_fault", "topic": None, "partition": None, "offsets": None, "count": 1, "members": [],
             "generations": [], "time_ms": [f.injected_at_ms, None], "fault_ids": [f.id], "kind": f.kind,
             "target": f.target} for f in h.faults if f.healed_at_ms is None]


def attribute(anomalies: list[dict], h: History, grace_ms: int) -> None:
    """fault_ids: the faults whose window [injected_at, healed_at + grace] overlaps the anomaly's time."""
    windows = [(f.id, f.injected_at_ms, (f.healed_at_ms if f.healed_at_ms is not None else OPEN) + grace_ms)
               for f in h.faults]
    for a in anomalies:
        if a["type"] == "unhealed_fault":
            continue
        t0, t1 = a["time_ms"]
        t1 = t0 if t1 is None else t1
        a["fault_ids"] = [fid for fid, lo, hi in windows if t0 <= hi and t1 >= lo]
