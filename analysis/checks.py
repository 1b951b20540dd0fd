"""The checks, each declared once in REGISTRY: its name, the inputs it needs, whether its findings make a
run invalid, its count unit, its colour in the report, and a function from the facts of one run (``Facts``:
the history, what records.check_groups reported, the records read back) to its anomalies.

Every anomaly has one shape::

    {"type", "topic", "partition", "offsets": [first, last], "count", "members", "generations",
     "time_ms": [t0, t1], "fault_ids", ...type-specific fields}

``offsets`` is an inclusive range; ``count`` is in the check's unit. The summary, the report's type list
and colours, ``compare``'s columns and the CLI help are derived from REGISTRY: a new check is one function
decorated with :func:`check`, and one test.
"""
from __future__ import annotations

import bisect
from collections import defaultdict
from dataclasses import dataclass, field
from functools import cached_property

from typing import Callable, NamedTuple

from . import figures, unapplied
from .history import ENDS, OPEN, Commit, History, Period, commit_mode, parse_tp, periods_by_key, workload_stop
from .records import (LOG_ORDER_NOTE, NO_EVENTS_PERIOD, OUTSIDE_PERIOD, U64, UNPLACED, CommitAsked, DeliveryWindow,
                      OwnershipAsked, Span, Step, merge_spans, shared_runs, side_totals)
from .records import bits_of as bits


@dataclass
class Delivery:
    member: str
    period: int
    t0: int          # earliest time this delivery can have happened (block-level group: its tmin)
    t1: int          # latest
    gens: tuple
    order: tuple = ()


class DupRange(NamedTuple):
    """Offsets first..last of one partition, each delivered to exactly the same deliveries, with one budget verdict."""
    topic: str
    partition: int
    first: int
    last: int
    deliveries: int
    members: tuple
    gens: tuple
    budget: str          # within, over or unknown
    reason: str
    t0: int
    t1: int

    @property
    def width(self) -> int:
        return self.last - self.first + 1


@dataclass
class Context:
    history: History
    periods: dict[int, Period] = field(default_factory=dict)
    commits: dict[tuple[str, str, int], list[Commit]] = field(default_factory=dict)
    commit_ts: dict[tuple[str, str, int], list[int]] = field(default_factory=dict)
    owners: dict[tuple[str, int], list[Period]] = field(default_factory=dict)

    @cached_property
    def start_positions(self) -> "StartPositions":
        """Where an ownership can have begun, by the commits' windows: one per analysis, for commit_ahead and the
        loss budget."""
        return StartPositions(self.history.commits)

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
class Verdict(NamedTuple):
    """The budget verdict of one re-delivery ("within", "over" or "unknown") and why."""
    budget: str
    reason: str


class PairVerdict(NamedTuple):
    """The verdict of a pair of deliveries whatever the offset, but for ``commit``: a "within" verdict turns "over"
    below the last commit (None: none) of ``owner``, the previous delivery's ownership, before that ownership ended."""
    budget: str
    reason: str
    owner: Period | None = None
    commit: Commit | None = None


def pair_verdict(ctx: Context, prev: Delivery, cur: Delivery, topic: str, partition: int) -> PairVerdict:
    """The part of the budget rule that does not depend on the offset."""
    if not ctx.history.has_events:
        return PairVerdict("unknown", "no events")
    for d in (prev, cur):
        if d.period == NO_EVENTS_PERIOD:
            return PairVerdict("unknown", f"member {d.member} logged no events")
    if prev.period >= 0 and prev.member == cur.member and prev.period == cur.period:
        return PairVerdict("over", f"re-delivered to {cur.member} inside the same ownership (a step back, not a rebalance)")
    if prev.period == OUTSIDE_PERIOD:
        return PairVerdict("over", f"first delivered to {prev.member} while it did not own the partition")
    if cur.period == OUTSIDE_PERIOD:
        return PairVerdict("over", f"re-delivered to {cur.member} while it did not own the partition")
    owner = ctx.periods[prev.period]
    if owner.end > cur.t0:
        return PairVerdict("over", f"{owner.member} still owned the partition when {cur.member} consumed it again (two owners)")
    c = ctx.last_commit(owner.member, topic, partition, owner.start, cur.t0)
    return PairVerdict("within", f"in {owner.member}'s uncommitted tail after it was {owner.end_kind}", owner, c)


def _pair(ctx: Context, prev: Delivery, cur: Delivery, topic: str, partition: int, cache: dict) -> PairVerdict:
    key = (id(prev), id(cur))
    if key not in cache:
        cache[key] = pair_verdict(ctx, prev, cur, topic, partition)
    return cache[key]


def commit_cut(ctx: Context, prev: Delivery, cur: Delivery, topic: str, partition: int, cache: dict) -> Commit | None:
    """The commit below which this pair's "within" verdict turns "over" (None: the verdict holds for any offset)."""
    return _pair(ctx, prev, cur, topic, partition, cache).commit


def classify_budget(ctx: Context, prev: Delivery, cur: Delivery, topic: str, partition: int, offset: int,
                    cache: dict) -> Verdict:
    """The verdict of one re-delivery. Within budget means: the previous delivery was by an owner whose ownership had
    ended (revoked, lost, left) before this one, and the offset is at or above that owner's last successful commit
    (Kafka's committed offset: the next one to consume)."""
    v = _pair(ctx, prev, cur, topic, partition, cache)
    if v.commit is not None and v.owner is not None and offset < v.commit.offset:
        return Verdict("over", f"below {v.owner.member}'s last commit ({v.commit.offset}) before its ownership ended "
                               f"({v.owner.end_kind})")
    return Verdict(v.budget, v.reason)


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


class Duplicates(NamedTuple):
    """What :func:`duplicates` found: the ``duplicate`` and ``duplicate_over_budget`` anomalies, and their counts."""
    anomalies: list[dict]
    over_budget: list[dict]
    stats: dict


def duplicates(ctx: Context, groups: list[dict], rows: list[dict]) -> Duplicates:
    """Offsets delivered to the same deliveries are judged as one range, cut only where a commit makes the budget rule
    change its verdict: the work grows with the blocks re-delivered, not with their offsets."""
    drilled = defaultdict(list)
    for r in rows:
        drilled[(r["topic"], r["partition"], r["offset"] >> 6)].append(r)
    by_block = defaultdict(list)
    for g in groups:
        by_block[(g["topic"], g["partition"], g["b"])].append(g)
    cache: dict = {}
    items: list[DupRange] = []
    keep = []  # caches are keyed by id(): keep every delivery alive so that no id is reused meanwhile

    def add(topic, partition, lo, hi, ds):
        """Offsets lo..hi, each delivered to exactly the deliveries ds (in delivery order)."""
        keep.append(ds)
        members, gens = tuple(sorted({d.member for d in ds})), tuple(sorted({g for d in ds for g in d.gens}))
        t0, t1 = min(d.t0 for d in ds[1:]), max(d.t1 for d in ds[1:])
        commits = [commit_cut(ctx, ds[i - 1], ds[i], topic, partition, cache) for i in range(1, len(ds))]
        cuts = sorted({c.offset for c in commits if c is not None and lo < c.offset <= hi})
        for a, z in zip([lo] + cuts, cuts + [hi + 1]):  # the verdict is the same for every offset of [a, z)
            verdicts = [classify_budget(ctx, ds[i - 1], ds[i], topic, partition, a, cache) for i in range(1, len(ds))]
            over = [v.reason for v in verdicts if v.budget == "over"]
            unknown = [v.reason for v in verdicts if v.budget == "unknown"]
            budget = "over" if over else ("unknown" if unknown else "within")
            reason = over[0] if over else (unknown[0] if unknown else verdicts[0].reason)
            items.append(DupRange(topic, partition, a, z - 1, len(ds), members, gens, budget, reason, t0, t1))

    for key in sorted(by_block):
        topic, partition, b = key
        if key in drilled:
            by_off = defaultdict(list)
            for r in drilled[key]:
                gens = (r["generation"],) if r["generation"] is not None and r["generation"] >= 0 else ctx.period_gens(r["period"])
                by_off[r["offset"]].append(Delivery(r["member"], r["period"], r["ts"], r["ts"], gens,
                                                    (r["ts"], r["fh"], r["blk"], r["pos"])))
            for off in sorted(by_off):
                ds = by_off[off]
                if len(ds) > 1:
                    ds.sort(key=lambda d: d.order)
                    add(topic, partition, off, off, ds)
            continue
        pairs = sorted(((Delivery(g["member"], g["period"], g["tmin"], g["tmax"], _gens(g, ctx), (g["tmin"], g["tmax"], g["member"])),
                         g["mask"]) for g in by_block[key]), key=lambda x: x[0].order)
        # consecutive offsets with the same deliveries: one range
        for lo, hi, who in shared_runs([m for _, m in pairs]):
            add(topic, partition, b * 64 + lo, b * 64 + hi, [pairs[i][0] for i in who])
    dup, over_list = [], []
    for group in _merge(items, lambda it: (it.topic, it.partition, it.members, it.gens, it.budget, it.reason)):
        head = group[0]
        base = {"topic": head.topic, "partition": head.partition, "offsets": [head.first, group[-1].last],
                "count": sum(it.width for it in group),
                "extra_deliveries": sum((it.deliveries - 1) * it.width for it in group), "members": list(head.members),
                "generations": list(head.gens), "time_ms": [min(it.t0 for it in group), max(it.t1 for it in group)]}
        dup.append({"type": "duplicate", **base, "budget": head.budget, "reason": head.reason})
        if head.budget == "over":
            over_list.append({"type": "duplicate_over_budget", **base, "reason": head.reason})
    stats = {"duplicated_offsets": sum(it.width for it in items),
             "extra_deliveries": sum((it.deliveries - 1) * it.width for it in items),
             "over_budget_offsets": sum(it.width for it in items if it.budget == "over"),
             "unknown_budget_offsets": sum(it.width for it in items if it.budget == "unknown")}
    return Duplicates(dup, over_list, stats)


def _merge(items, signature, bounds=lambda it: (it.first, it.last)):
    """Group ranges of equal signature that follow each other (``bounds``: an item's first and last offset)."""
    out, cur = [], []
    for it in items:
        if cur and signature(it) == signature(cur[-1]) and bounds(it)[0] == bounds(cur[-1])[1] + 1:
            cur.append(it)
        else:
            if cur:
                out.append(cur)
            cur = [it]
    if cur:
        out.append(cur)
    return out


class IndexRange(NamedTuple):
    """Items [start, stop) of a list."""
    start: int
    stop: int


def _ranges(offsets: list[int]) -> list[IndexRange]:
    """The index ranges of consecutive offsets in a sorted list."""
    out, i = [], 0
    for j in range(1, len(offsets) + 1):
        if j == len(offsets) or offsets[j] != offsets[j - 1] + 1:
            out.append(IndexRange(i, j))
            i = j
    return out


# -------------------------------------------------------------------------------------- the facts of a run
@dataclass
class Facts:
    """What the checks read: the history, the per-partition results of records.check_groups (``got``),
    the records read back (``rows``, with their period), and a way to ask Spark for more (``query``)."""
    history: History
    ctx: Context
    got: dict
    rows: list[dict]
    need_rows: set
    steps: list[Step]
    query: Callable | None = None          # query(kind, arg) -> rows: a follow-up Spark query, only when needed
    stall_ms: int = 5_000
    observe_end: int = OPEN
    expected_fatal: tuple = ()             # members the scenario expects to end on a fatal error (ANY_MEMBER: any)
    has_columns: tuple = ()
    memo: dict = field(default_factory=dict)

    def once(self, key, fn):
        if key not in self.memo:
            self.memo[key] = fn()
        return self.memo[key]


class CheckResult(NamedTuple):
    """What a check returns: its anomalies, its count in its unit (``total``: a tuple's ``count`` is a method) and
    what else it tells (its info; a ``status`` there replaces "ran")."""
    anomalies: list[dict]
    total: int
    info: dict


@dataclass(frozen=True)
class Check:
    name: str
    needs: tuple            # "events", "faults", or consumed/ columns
    invalidates: bool
    unit: str
    color: str
    run: Callable           # Facts -> CheckResult; may raise Undecided


REGISTRY: dict[str, Check] = {}


def check(name, *, needs=(), invalidates=True, unit, color):
    def register(fn):
        REGISTRY[name] = Check(name, tuple(needs), invalidates, unit, color, fn)
        return fn
    return register


def invalid_types() -> tuple:
    return tuple(n for n, c in REGISTRY.items() if c.invalidates)


# ------------------------------------------------------------------------------------------------ checks
def _duplicates(x: Facts) -> Duplicates:
    rows = [r for r in x.rows if (r["topic"], r["partition"], r["offset"] >> 6) in x.need_rows]
    return x.once("dup", lambda: duplicates(x.ctx, x.got.get("groups", []), rows))


@check("duplicate", invalidates=False, unit="distinct topic/partition/offset consumed more than once", color="#8c8c8c")
def duplicate_check(x: Facts):
    found = _duplicates(x)
    st = found.stats
    extra = sum(r["extra"] for r in x.got.get("stats", []))
    if st["extra_deliveries"] != extra:
        raise AssertionError(f"block counts say {extra} extra deliveries, records say {st['extra_deliveries']}")
    return CheckResult(found.anomalies, st["duplicated_offsets"], {"extra_deliveries": st["extra_deliveries"]})


# ------------------------------------------------------------------------------------------------- losses
AT_MOST_ONCE = ("auto", "before_process")


@dataclass(frozen=True)
class LossWindow:
    """Offsets [lo, hi] of one partition that a member committed before it logged them, and then crashed:
    Kafka will not deliver them again, and the member never logged them. The loss budget of an at-most-once
    commit mode, the dual of the duplicate budget."""
    lo: int
    hi: int
    member: str
    mode: str
    crashed_at: int


class LostOffset(NamedTuple):
    """An acked record nobody consumed: its ``offset``, the ``block`` row (check_groups' "dirty") it is in, and the
    loss window that explains it (None: none does)."""
    offset: int
    block: dict
    window: LossWindow | str | None  # its loss budget; UNSEEN: nothing was read that far; None: lost


def crashes(h: History) -> dict[str, list[int]]:
    """member -> times its process was killed (a fault that ends its target's process, when it really stopped, or a
    ``crashed`` event it logged)."""
    out = defaultdict(list)
    for f in h.faults:
        if f.ends_process:
            out[f.target].append(f.stop_ms)
    for e in h.events:
        if e.kind == "crashed":
            out[e.member].append(e.ts)
    return out


def loss_windows(ctx: Context) -> dict[tuple[str, int], list[LossWindow]]:
    """For each ownership by a member in an at-most-once commit mode that its crash ended: from the committed
    offset when the ownership began (where the member started to fetch; the lowest any reading of the commits then
    in flight gives) up to the member's last commit before the crash, a commit sent and never answered included
    (it may have taken effect). Under sync and async commits (log, then commit) there are none."""
    h = ctx.history
    modes = {e.member: commit_mode(e) for e in h.events if e.kind == "started"}
    if not set(modes.values()) & set(AT_MOST_ONCE):
        return {}
    killed = crashes(h)
    starts = ctx.start_positions
    in_flight = defaultdict(list)  # (member, topic, partition) -> its commits never answered
    for c in h.commits:
        if c.info:
            in_flight[(c.member, c.topic, c.partition)].append(c)
    out = defaultdict(list)
    for p in h.periods:
        mode = modes.get(p.member)
        if mode not in AT_MOST_ONCE:
            continue
        for t in killed.get(p.member, ()):
            if not p.start <= t <= p.logged_end:
                continue
            last = ctx.last_commit(p.member, p.topic, p.partition, p.start, t)
            unanswered = [c.offset for c in in_flight[(p.member, p.topic, p.partition)] if p.start <= c.earliest <= t]
            top = max(([last.offset] if last is not None else []) + unanswered, default=None)
            lo, _ = starts.at((p.topic, p.partition), p.start, set())  # the widest budget any reading gives
            if top is not None and top > lo:
                out[(p.topic, p.partition)].append(LossWindow(lo, top - 1, p.member, mode, t))
    return out


def read_frontiers(x: Facts) -> dict[tuple[str, int], int]:
    """(topic, partition) -> the highest offset some member of the group read past: the highest it consumed there,
    or the group's last successful commit there less one. An acked record nobody consumed is ``lost`` at or below
    it (a read went past it without it) and ``unseen`` above it (nothing has been read that far yet: the record is
    still in Kafka), as Jepsen's Kafka checker tells them apart."""
    def frontiers():
        out: dict[tuple[str, int], int] = {}
        for r in x.got.get("periods", []):
            key = (r["topic"], r["partition"])
            out[key] = max(out.get(key, -1), r["omax"])
        for c in x.history.commits:
            if c.ok:
                key = (c.topic, c.partition)
                out[key] = max(out.get(key, -1), c.offset - 1)
        return out
    return x.once("read_frontiers", frontiers)


def _losses(x: Facts):
    """(anomalies, counts) of ``lost``, ``lost_within_budget`` and ``unseen``: every acked record nobody consumed,
    split by the read frontier (:func:`read_frontiers`) and the loss budget (:func:`loss_windows`)."""
    def split():
        windows = loss_windows(x.ctx) if x.history.has_events else {}
        frontier = read_frontiers(x)
        out = {"lost": [], "lost_within_budget": [], "unseen": []}
        counts = {"lost": 0, "lost_within_budget": 0, "unseen": 0}
        by_tp = defaultdict(list)
        for r in x.got.get("dirty", []):
            if r["lostmask"]:
                by_tp[(r["topic"], r["partition"])].append(r)
        for (topic, partition), rs in sorted(by_tp.items()):
            cells = sorted((r["b"] * 64 + j, r) for r in rs for j in bits(r["lostmask"]))
            ws, top = windows.get((topic, partition), []), frontier.get((topic, partition), -1)
            lost_offsets = [LostOffset(o, r, UNSEEN if o > top else next((w for w in ws if w.lo <= o <= w.hi), None))
                            for o, r in cells]
            for run in _merge(lost_offsets, lambda it: it.window, lambda it: (it.offset, it.offset)):
                kind, a = _loss_anomaly(x, topic, partition, run)
                if kind == "unseen":
                    a.update(read_up_to=None if top < 0 else top,
                             reason=f"acked, never consumed, and beyond every member's last position and the group's "
                                    f"last commit ({'nothing read' if top < 0 else f'read up to {top}'}): still in Kafka")
                out[kind].append(a)
                counts[kind] += a["count"]
        return out, counts
    return x.once("losses", split)


UNSEEN = "unseen"  # a LostOffset's window when nothing has been read that far


def _loss_anomaly(x: Facts, topic: str, partition: int, run: list[LostOffset]) -> tuple[str, dict]:
    window, offsets = run[0].window, [it.offset for it in run]
    t0 = min(it.block["ptmin"] for it in run)
    t1 = max(max(it.block["ptmax"], it.block["ctmax"] or it.block["ptmax"]) for it in run)
    owners = x.ctx.owners_during(topic, partition, t0, t1)
    kind = "lost" if window is None else UNSEEN if window == UNSEEN else "lost_within_budget"
    a = {"type": kind, "topic": topic, "partition": partition, "offsets": [offsets[0], offsets[-1]],
         "count": len(offsets), "members": sorted({p.member for p in owners}),
         "generations": sorted({p.generation for p in owners if p.generation is not None}), "time_ms": [t0, t1]}
    if kind == "lost_within_budget":
        a.update(members=[window.member], time_ms=[t0, max(t1, window.crashed_at)],
                 reason=f"committed by {window.member} (commit: {window.mode}) and never logged: "
                        f"it was killed at {window.crashed_at}")
    return kind, a


@check("lost", unit="acked (ok) records never consumed that a member read or committed past, outside any loss budget",
       color="#d62728")
def lost(x: Facts):
    out, counts = _losses(x)
    return CheckResult(out["lost"], counts["lost"], {})


@check("lost_within_budget", invalidates=False, needs=("events",), unit="acked records never consumed that a crashed "
       "at-most-once member (commit: auto or before_process) had committed", color="#f7b6d2")
def lost_within_budget(x: Facts):
    out, counts = _losses(x)
    return CheckResult(out["lost_within_budget"], counts["lost_within_budget"], {})


@check("unseen", invalidates=False, unit="acked records never consumed, beyond every member's last position and the "
       "group's last commit in their partition (still in Kafka: the group had not read that far)", color="#c7c7c7")
def unseen(x: Facts):
    """Not a loss: the group had not caught up when the run ended. Its info gives the lag per partition (``lag``:
    topic, partition, unseen records, the offset read up to)."""
    out, counts = _losses(x)
    lag = defaultdict(int)
    for a in out["unseen"]:
        lag[(a["topic"], a["partition"], a["read_up_to"])] += a["count"]
    return CheckResult(out["unseen"], counts["unseen"], {"lag": [
        {"topic": t, "partition": p, "unseen": n, "read_up_to": top} for (t, p, top), n in sorted(lag.items(), key=str)]})


@check("lost_unplaced", needs=("producer_id", "seq"), unit="acks without an offset (status unplaced) never consumed, in "
       "a partition the group read past the producer's next ok record there", color="#a50f15")
def lost_unplaced(x: Facts):
    """An ``unplaced`` ack (the client acknowledged it with no error and no offset: librdkafka 2.16.0's first record
    to a partition just added) that nobody consumed as its producer_id/seq, although the group read past the lowest
    offset of an ok-acked record of the same producer, topic and partition with a higher seq (``next_ok_offset``):
    the producer writes a partition in seq order, so the record, had it been written, would stand below that one,
    and was read past. One anomaly a record; ``offsets`` is null (its place is unknown). The others are counted in
    the info: ``unplaced_consumed`` (written after all), ``unplaced_unseen`` (no later ok record of the producer
    there, or the group had not read that far). The scan counts the unplaced rows; only a run with some asks Spark
    (records.unplaced_acks)."""
    total = side_totals(x.got).get(UNPLACED)
    total = total.rows if total else 0
    acks = x.query("unplaced", total) if total else []
    frontier = read_frontiers(x)
    out, unseen_acks = [], 0
    for r in acks:
        nxt, top = r["next_ok"], frontier.get((r["topic"], r["partition"]), -1)
        if nxt is None or nxt > top:
            unseen_acks += 1
            continue
        out.append({"type": "lost_unplaced", "topic": r["topic"], "partition": r["partition"], "offsets": None, "count": 1,
                    "members": [], "generations": [], "time_ms": [r["acked_at_ms"], r["acked_at_ms"]],
                    "producer_id": r["producer_id"], "seq": r["seq"], "next_ok_offset": nxt, "read_up_to": top,
                    "reason": f"acknowledged without an offset and never consumed; {r['producer_id']}'s next ok record "
                              f"in the partition (a higher seq) is at offset {nxt}, and the group read up to {top}"})
    return CheckResult(out, len(out), {"unplaced": total, "unplaced_consumed": total - len(acks),
                                       "unplaced_unseen": unseen_acks})


@check("duplicate_write", needs=("producer_id", "seq"), unit="producer_id/seq pairs stored at more than one offset",
       color="#bcbd22")
def duplicate_writes(x: Facts):
    """One producer_id/seq stored at more than one topic/partition/offset (a producer-side duplicate). A retry
    that duplicates a write always leaves a consumed copy nobody acked ok (the attempt whose acknowledgement
    was lost), so only the producer_id/seq of such records are looked up: a run without them pays nothing."""
    cells = {(r["topic"], r["partition"], r["b"] * 64 + j) for r in x.got.get("dirty", []) for j in bits(r["unackedmask"])}
    pairs = {(r["producer_id"], r["seq"]) for r in x.query("unacked", cells)} if cells else set()
    by_pair = defaultdict(list)
    for r in (x.query("copies", pairs) if pairs else []):
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
    return CheckResult(out, len(out), {"unacked_records": len(cells)})


@check("skip", needs=("events",), unit="known records a member did not consume inside one ownership of a partition",
       color="#ff7f0e")
def skips(x: Facts):
    """Known records (acked, or consumed by anyone) inside the offset range one member consumed during one
    ownership of a partition, that it did not consume in that ownership."""
    skipped = defaultdict(dict)  # (member, topic, partition, period) -> {offset: (t0, t1)}
    for r in x.got.get("skip", []):
        key = (r["member"], r["topic"], r["partition"], r["period"])
        for j in bits(r["bits"]):
            skipped[key].setdefault(r["b"] * 64 + j, (r["t0"], r["t1"]))
    anomalies, total = [], 0
    for key in sorted(skipped, key=lambda k: (k[1], k[2], k[0], k[3])):
        member, topic, partition, period = key
        offs = sorted(skipped[key])
        total += len(offs)
        for r in _ranges(offs):
            times = [skipped[key][o] for o in offs[r.start:r.stop]]
            anomalies.append({"type": "skip", "topic": topic, "partition": partition,
                              "offsets": [offs[r.start], offs[r.stop - 1]], "count": r.stop - r.start,
                              "members": [member], "generations": list(x.ctx.period_gens(period)),
                              "time_ms": [min(t[0] for t in times), max(t[1] for t in times)], "period": period})
    return CheckResult(anomalies, total, {})


@check("backwards", needs=("events",), unit="times a member's next consumed record (by its consumption sequence n, "
       "else in its log) was not above the previous one inside one ownership", color="#9467bd")
def backwards(x: Facts):
    """Every step back between two records that follow each other in the member's consumption (records.log_pass):
    by the consumption sequence ``n`` when every consumed file carries it, exact in any row order and file layout;
    else by the member's log, exact only when its rows are in consumption order (said in the check's note)."""
    by_sequence = getattr(x.steps, "by_sequence", False)
    info = {"judged_by": "sequence"} if by_sequence else {"judged_by": "log order", "note": LOG_ORDER_NOTE}
    if getattr(x.steps, "unsequenced", 0):
        info["rows_without_n"] = x.steps.unsequenced  # left out: a file with the column, a row without a value
    out = []
    for s in x.steps:
        prev, nxt = s.before, s.after
        out.append({"type": "backwards", "topic": s.topic, "partition": s.partition, "offsets": [nxt.offset, prev.offset],
                    "count": 1, "members": [s.member], "generations": list(x.ctx.period_gens(s.period)),
                    "time_ms": [prev.ts, nxt.ts], "from_offset": prev.offset, "to_offset": nxt.offset, "period": s.period})
    out.sort(key=lambda a: (a["topic"], a["partition"], a["time_ms"][0]))
    return CheckResult(out, len(out), info)


@check("commit_regression", needs=("events",), unit="times a partition's committed offset went down", color="#17becf")
def commit_regressions(x: Facts):
    out = []
    by_tp = defaultdict(list)
    for c in x.history.commits:
        if c.ok:
            by_tp[(c.topic, c.partition)].append(c)
    ambiguous = []
    for (topic, partition), cs in sorted(by_tp.items()):
        cs.sort(key=lambda c: (c.eff_ts, c.line))
        for prev, cur in zip(cs, cs[1:]):
            if cur.offset < prev.offset and cur.member != prev.member and cur.earliest <= prev.eff_ts:
                # two members' commits in flight together: the broker may have applied them in either order
                ambiguous.append(f"{topic}:{partition} {prev.offset} by {prev.member}, {cur.offset} by {cur.member}")
            elif cur.offset < prev.offset:
                out.append({"type": "commit_regression", "topic": topic, "partition": partition,
                            "offsets": [cur.offset, prev.offset - 1], "count": 1,
                            "members": sorted({prev.member, cur.member}),
                            "generations": sorted({g for g in (prev.generation, cur.generation) if g is not None and g >= 0}),
                            "time_ms": [prev.eff_ts, cur.eff_ts], "from_offset": prev.offset, "to_offset": cur.offset,
                            "by": cur.member})
    return CheckResult(out, len(out), {"commits": sum(1 for c in x.history.commits if c.ok),
                                       **ambiguity(x.history, ambiguous)})


# ------------------------------------------------------------------------------------------ commit ahead
def _known(generation) -> bool:
    return generation is not None and generation >= 0


def ownership_of(by_key: dict, c: Commit) -> Period | None:
    """The ownership a commit belongs to: the member's last ownership of the partition begun by the time it logged
    the commit (a commit on revocation is logged after the ``revoked`` event), passing over one of a later
    generation than the commit's own (a revocation's commit logged after the partition was assigned again)."""
    return next((p for p in reversed(by_key.get((c.member, c.topic, c.partition), []))
                 if p.start <= c.ts and not (_known(c.generation) and _known(p.generation) and p.generation > c.generation)),
                None)


class StartPositions:
    """Where a member can have begun to fetch in an ownership of a partition: the partition's committed offset then.
    Commits are Jepsen's operations with a window: each took effect somewhere between ``earliest`` (sent) and
    ``eff_ts`` (its answer, or the hand-over); one never answered (``info``) at some time from ``earliest`` up to
    ``eff_ts``, or never."""

    def __init__(self, commits: list[Commit]):
        done, self.info = defaultdict(list), defaultdict(list)
        for c in commits:
            if c.ok:
                done[(c.topic, c.partition)].append(c)
            elif c.info:
                self.info[(c.topic, c.partition)].append(c)
        self.done, self.done_ts, self.sent, self.sent_ts, self.widest = {}, {}, {}, {}, {}
        for tp, cs in done.items():
            self.done[tp] = sorted(cs, key=lambda c: (c.eff_ts, c.line))
            self.done_ts[tp] = [c.eff_ts for c in self.done[tp]]
            self.sent[tp] = sorted(cs, key=lambda c: (c.earliest, c.line))
            self.sent_ts[tp] = [c.earliest for c in self.sent[tp]]
            self.widest[tp] = max(c.eff_ts - c.earliest for c in cs)

    def at(self, tp: tuple[str, int], until: int, own: set) -> tuple[int, int]:
        """(lowest, highest) committed offset that some reading of the commits gives at ``until`` (0, the earliest
        offset, where no commit need have taken effect). The last commit to take effect by then is one that may have
        (earliest <= until) and that no other is known to follow before ``until``: none known to have taken effect
        by then (eff_ts <= until) was sent after it took effect. The ownership's ``own`` commits (ids) are passed
        over."""
        follows = self._follows(tp, until, own)
        offsets = [c.offset for c in self._maybe_last(tp, until, own, follows)]
        offsets += [c.offset for c in self.info.get(tp, ()) if id(c) not in own and c.earliest <= until
                    and (follows is None or c.eff_ts >= follows)]
        if not offsets:
            return 0, 0
        return (0 if follows is None else min(offsets)), max(offsets)

    def _follows(self, tp, until: int, own: set) -> int | None:
        """The latest sending of a commit known to have taken effect by ``until`` (None: none is)."""
        done, times, widest = self.done.get(tp, []), self.done_ts.get(tp, []), self.widest.get(tp, 0)
        i = bisect.bisect_right(times, until) - 1
        while i >= 0 and id(done[i]) in own:
            i -= 1
        if i < 0:
            return None
        follows, oldest = done[i].earliest, times[i] - widest  # sent no earlier than eff_ts - widest
        while i >= 0 and times[i] >= oldest:
            if id(done[i]) not in own:
                follows = max(follows, done[i].earliest)
            i -= 1
        return follows

    def _maybe_last(self, tp, until: int, own: set, follows: int | None):
        sent, starts, widest = self.sent.get(tp, []), self.sent_ts.get(tp, []), self.widest.get(tp, 0)
        j = bisect.bisect_right(starts, until) - 1
        while j >= 0 and (follows is None or starts[j] >= follows - widest):
            c = sent[j]
            if id(c) not in own and (follows is None or c.eff_ts >= follows):
                yield c
            j -= 1


class CommitSpan(NamedTuple):
    """A successful ``commit`` in its ``ownership``, vouching for offsets [lo, commit.offset) in every reading of
    the commits that may have been the partition's committed offset when the ownership began, and for
    [lo_sure, commit.offset) in the reading that starts it lowest (lo_sure < lo: the start is ambiguous)."""
    commit: Commit
    ownership: Period
    lo: int
    lo_sure: int


def commit_spans(x: Facts) -> list[CommitSpan]:
    """Every successful commit that vouches for some offsets: from the member's previous commit in that ownership,
    or from where it began to fetch (:class:`StartPositions`, looked up by the member's first delivery in the
    ownership, so that a previous owner's commit answered late still counts)."""
    h, by_key = x.history, periods_by_key(x.history.periods)
    first = {(r["member"], r["topic"], r["partition"], r["period"]): r["tmin"] for r in x.got.get("periods", [])}
    starts = x.ctx.start_positions
    by_period = defaultdict(list)
    for c in sorted((c for c in h.commits if c.ok), key=lambda c: (c.ts, c.line)):
        p = ownership_of(by_key, c)
        if p is not None:
            by_period[p.id].append((c, p))
    out = []
    for cs in by_period.values():
        own, done = {id(c) for c, _ in cs}, -1
        for c, p in cs:
            until = min(c.ts, first.get((c.member, c.topic, c.partition, p.id), OPEN))
            lowest, highest = starts.at((c.topic, c.partition), until, own)
            lo, lo_sure = max(highest, done), max(lowest, done)
            if c.offset > lo_sure:
                out.append(CommitSpan(c, p, lo, lo_sure))
            done = max(done, c.offset)
    return out


def _cleared(x: Facts, span: CommitSpan, lo: int) -> bool:
    """The groups prove that the member consumed every known record the commit vouches for from ``lo`` in its
    ownership: the range lies inside the offsets it consumed there, and no known record inside those was skipped."""
    c, p = span.commit, span.ownership
    r = x.once("consumed_ranges", lambda: {(r["member"], r["topic"], r["partition"], r["period"]): r
                                            for r in x.got.get("periods", [])}).get((c.member, c.topic, c.partition, p.id))
    if r is None or lo < r["omin"] or c.offset - 1 > r["omax"]:
        return False
    holes = x.once("holes", lambda: _holes(x.got.get("skip", []))).get((c.member, c.topic, c.partition, p.id), [])
    i = bisect.bisect_left(holes, lo)
    return i == len(holes) or holes[i] >= c.offset


def _holes(rows: list[dict]) -> dict[tuple, list[int]]:
    out = defaultdict(list)
    for r in rows:
        out[(r["member"], r["topic"], r["partition"], r["period"])] += [r["b"] * 64 + j for j in bits(r["bits"])]
    return {k: sorted(v) for k, v in out.items()}


def _fetching_until(by_key: dict, p: Period) -> int:
    """The end of an ownership by the member's own log: its logged end, or its next ownership of the partition."""
    later = [q.start for q in by_key.get((p.member, p.topic, p.partition), []) if q.start > p.start]
    return min([p.logged_end] + [t - 1 for t in later])


def ownerships_asked(spans: list[CommitSpan], by_key: dict) -> list[OwnershipAsked]:
    """One question per ownership, however many commits it has. A commit's id is its place in ``spans`` for the
    range every reading gives it; its place plus len(spans) for the wider range of the reading where no commit in
    flight took effect, asked only when that range is wider."""
    commits: dict[int, list[CommitAsked]] = {}
    ownerships: dict[int, Period] = {}
    for i, (c, p, lo, lo_sure) in enumerate(spans):
        ownerships.setdefault(p.id, p)
        if c.offset > lo:
            commits.setdefault(p.id, []).append(CommitAsked(i, lo, c.offset, c.ts))
        if lo_sure < lo:
            commits.setdefault(p.id, []).append(CommitAsked(i + len(spans), lo_sure, c.offset, c.ts))
    return [OwnershipAsked(p.id, p.member, p.topic, p.partition, p.start, _fetching_until(by_key, p), commits[p.id])
            for p in ownerships.values()]


def commit_ahead_asks(x: Facts) -> tuple[list[CommitSpan], list[OwnershipAsked]]:
    """The commits the groups cannot clear, and the question that settles them (one term an ownership). Known from
    the history and the groups alone, before any record is read again: the analysis asks it beside the log pass."""
    def asks():
        spans = [s for s in commit_spans(x) if not _cleared(x, s, s.lo_sure)]
        return spans, ownerships_asked(spans, periods_by_key(x.history.periods))
    return x.once("commit_ahead_asks", asks)


@check("commit_ahead", needs=("events",), unit="successful commits past an acked record the member never consumed in "
       "that ownership", color="#ad494a")
def commit_ahead(x: Facts):
    """A member committed offset C on a partition while an ok-acked record o with lo <= o < C was never consumed by
    it in that ownership; lo is its previous commit in the ownership, or where it began to fetch (the partition's
    committed offset then, 0 when none). Only acked records count: offsets that are no record (transaction markers,
    aborted or compacted records) or whose write is not known to have succeeded are not skipped records.
    Invalidating: a commit is the member's promise that every record below it was processed; under at-least-once,
    committing past an unprocessed record is how one gets lost once the partition moves (librdkafka#4844), even when
    a rebalance or reset later delivers it to someone. Records in an at-most-once member's loss budget (committed,
    then killed before it logged them: ``lost_within_budget``) are not reported. The groups clear almost every
    commit; the rest are settled by one Spark query keyed by ownership (``records.commits_ahead``). One row per commit: the committed
    offset, the last offset the member had consumed in [lo, C) by then (null: none), the first acked offset it
    skipped, and how many acked records it skipped (``skipped``)."""
    spans, asked = commit_ahead_asks(x)
    found = {r["id"]: r for r in (x.query("commits_ahead", asked) if asked else [])}
    budgets = loss_windows(x.ctx)

    def ahead(c: Commit, r: dict | None) -> bool:
        return r is not None and not any(w.member == c.member and w.lo <= r["first"] and r["last"] <= w.hi
                                         for w in budgets.get((c.topic, c.partition), []))
    out, ambiguous = [], []
    for i, (c, p, lo, lo_sure) in enumerate(spans):
        r = found.get(i)
        if not ahead(c, r):
            if ahead(c, found.get(i + len(spans))):  # only if no commit in flight when the ownership began took effect
                ambiguous.append(f"{c.member} {c.topic}:{c.partition} committed {c.offset}: from {lo_sure} or {lo}")
            continue
        gens = [c.generation] if _known(c.generation) else list(x.ctx.period_gens(p.id))
        last = r["last_consumed"]
        out.append({"type": "commit_ahead", "topic": c.topic, "partition": c.partition, "offsets": [r["first"], r["last"]],
                    "count": 1, "members": [c.member], "generations": gens, "time_ms": [c.ts, c.ts],
                    "committed_offset": c.offset, "from_offset": lo, "last_consumed": last, "first_skipped": r["first"],
                    "skipped": r["n"], "period": p.id,
                    "reason": f"{c.member} committed {c.offset} having consumed "
                              f"{'nothing' if last is None else f'up to {last}'} since {lo}: {r['n']} acked record(s) "
                              f"from {r['first']} never consumed in that ownership"})
    return CheckResult(out, len(out), {"commits": sum(1 for c in x.history.commits if c.ok), "queried": len(spans),
                                       "ownerships_queried": len(asked), **ambiguity(x.history, ambiguous)})


def ambiguity(h: History, cases: list[str]) -> dict:
    """A check's info on operations known late or never: the cases only one reading of them would report
    (``ambiguous``, with up to 20 ``ambiguous_examples``), and the commits never answered (``indeterminate_commits``)."""
    return {"ambiguous": len(cases), "ambiguous_examples": cases[:20],
            "indeterminate_commits": sum(1 for c in h.commits if c.info)}


@check("duplicate_over_budget", needs=("events",), unit="duplicated offsets not explained by a revoked owner's "
       "uncommitted tail", color="#e377c2")
def over_budget(x: Facts):
    found = _duplicates(x)
    st = found.stats
    info = {"within_budget_offsets": st["duplicated_offsets"] - st["over_budget_offsets"] - st["unknown_budget_offsets"]}
    if st["unknown_budget_offsets"]:
        info.update(status="unknown", undecided_offsets=st["unknown_budget_offsets"], reason="some members logged no events")
    return CheckResult(found.over_budget, st["over_budget_offsets"], info)


# --------------------------------------------------------------------------------------------- liveness
def delivery_spans(x: Facts) -> dict[tuple[str, int], list[Span]]:
    """(topic, partition) -> when the partition was delivered, with no gap above stall_ms inside a span. The
    executor's spans, with the records of the blocks it could not settle (records.stall_blocks, read back) added
    as points."""
    blocks = {(r["topic"], r["partition"], r["b"]) for r in x.got.get("stall_blocks", [])}
    points = [(r["topic"], r["partition"], r["ts"], r["ts"], r["offset"]) for r in x.rows
              if (r["topic"], r["partition"], r["offset"] >> 6) in blocks]
    spans = [(r["topic"], r["partition"], r["start"], r["end"], r["omax"]) for r in x.got.get("spans", [])] + points
    if not spans:
        return {}
    code: dict[tuple[str, int], int] = {}
    key = [code.setdefault((t, p), len(code)) for t, p, *_ in spans]
    _, _, t0, t1, top = zip(*spans)
    out: dict[tuple[str, int], list[Span]] = defaultdict(list)
    names = list(code)
    for k, s in merge_spans(t0, t1, top, x.stall_ms, key=key):  # every partition at once
        out[names[k]].append(s)
    return dict(out)


def rounds(x: Facts) -> list[dict]:
    return x.once("rounds", lambda: figures.rounds(x.history))


class Interval(NamedTuple):
    """From ``start`` to ``end`` (ms)."""
    start: int
    end: int


def dead(x: Facts) -> dict[str, list[Interval]]:
    return x.once("dead", lambda: _dead(x.history))


def _subtract(span: Interval, cuts: list[Interval]) -> list[Interval]:
    """What is left of ``span`` once every interval of ``cuts`` is taken out."""
    left, (a, z) = [], span
    for lo, hi in sorted(cuts):
        if hi < a or lo > z:
            continue
        if lo > a:
            left.append(Interval(a, lo))
        a = max(a, hi)
    if a < z:
        left.append(Interval(a, z))
    return left


def _dead(h: History) -> dict[str, list[Interval]]:
    """member -> when its process was not running: from a kill to its next start."""
    starts = defaultdict(list)
    for e in h.events:
        if e.kind == "started":
            starts[e.member].append(e.ts)
    return {m: [Interval(t, min((s for s in starts[m] if s > t), default=OPEN)) for t in ts]
            for m, ts in crashes(h).items()}


def _not_watched(x: Facts, topic: str, partition: int) -> list[Interval]:
    """When a stall of this partition is not the group's fault to avoid: no owner (in the group's view), its
    owner's process not running, or a rebalance under way."""
    owned = []
    for p in x.ctx.owners.get((topic, partition), []):
        owned += _subtract(Interval(p.start, min(p.end, x.observe_end)), dead(x).get(p.member, []))
    return _subtract(Interval(-OPEN, OPEN), owned) + [Interval(r["start_ms"], r["end_ms"]) for r in rounds(x)]


def assignment_waits(x: Facts) -> list[dict]:
    """Members that joined (``started``) or lost their assignment and had to rejoin, and were given no assignment
    (an ``assigned`` event, empty or not: the rebalance answered) for longer than stall_ms while their process
    ran. Before the group first formed nobody waits for the group: the first join also creates the coordinator's
    state, which takes what it takes."""
    h = x.history
    formed = min((e.ts for e in h.events if e.kind == "assigned"), default=None)
    out = []

    def close(member, since, until, open_):
        a = max(since, formed) if formed is not None else since
        z = min([until] + [d.start for d in dead(x).get(member, []) if a < d.start < until])
        if z - a > x.stall_ms:
            out.append({"type": "stall", "topic": None, "partition": None, "offsets": None, "count": 1,
                        "members": [member], "generations": [], "time_ms": [a, z], "stalled_ms": z - a,
                        "waiting_for": "assignment", "open": open_ and z == until,
                        "reason": f"{member} waited {(z - a) / 1000:.1f} s for an assignment"
                                  f"{' (to the end)' if open_ and z == until else ''}"})

    by_member: dict[str, list] = {}
    for e in h.events:  # one pass: a member's events in their order
        by_member.setdefault(e.member, []).append(e)
    for member in h.members_with_events:
        since = None
        for e in by_member.get(member, []):
            if e.kind in ("started", "lost") and since is None:
                since = e.ts
            elif e.kind == "assigned" and since is not None:
                close(member, since, e.ts, False)
                since = None
            elif e.kind in ENDS:
                since = None
        if since is not None:
            close(member, since, x.observe_end, True)
    return out


class Gap(NamedTuple):
    """A partition's time without a delivery: from ``last`` (a delivery, or None) to ``nxt`` (the next delivery, or
    observe_end); ``top``: the highest offset delivered before it (-1: none)."""
    topic: str
    partition: int
    last: int | None
    nxt: int
    top: int

    @property
    def waiting_key(self) -> tuple[str, int, int]:
        """Its key in the first-ack bounds: the first record above ``top`` is the one that waits."""
        return self.topic, self.partition, self.top


class AckBounds(NamedTuple):
    """Bounds on when the first record above an offset was acked (records.first_ack; both None: none was)."""
    lo: int | None
    hi: int | None


def _waiting_since(bounds: AckBounds, last: int | None, nxt: int):
    """When a gap from ``last`` (a delivery, or None) to ``nxt`` began to hold back acked records, given the bounds on
    when the first record above everything delivered was acked (None: none was, or not before nxt); ``...`` when
    the bounds cannot say."""
    lo, hi = bounds
    if lo is None or lo >= nxt:
        return None
    if hi is not None and (lo == hi or (last is not None and hi <= last)):
        return hi if last is None else max(last, hi)
    return ...


@check("stall", needs=("events",), invalidates=False, unit="windows longer than stall_ms in which a partition with acked "
       "records waiting, a live owner and no rebalance under way had no delivery, or a member that joined had no "
       "assignment", color="#7f7f7f")
def stall(x: Facts):
    """The group stopped although it could go on. A partition: between two deliveries (or after the last), acked
    records above everything delivered so far were waiting, for longer than stall_ms outside every window with
    no live owner or with a rebalance under way. Exact: the spans come from the block groups and the records of
    the blocks that could hide a gap; when the first waiting record was acked comes from the produced blocks
    (records.first_ack), and where they cannot say, from the records of that block read back (at most 63 a gap;
    ``first_ack_queries``). A member: see
    :func:`assignment_waits` (KAFKA-14024: a join stuck until max.poll.interval.ms)."""
    waits = assignment_waits(x)
    spans = delivery_spans(x)
    gaps: list[Gap] = []
    for r in x.got.get("stats", []):
        tp, top = (r["topic"], r["partition"]), -1
        ss = spans.get((r["topic"], r["partition"]), [])
        prev = None
        for s in ss + [Span(x.observe_end, x.observe_end, -1)]:
            if s.start - (prev if prev is not None else -OPEN) > x.stall_ms:
                gaps.append(Gap(*tp, prev, s.start, top))
            prev, top = s.end, max(top, s.top)
    acked = {(r["topic"], r["partition"], r["top"]): AckBounds(r["lo"], r["hi"]) for r in x.got.get("acks", [])}
    unsure = {g.waiting_key for g in gaps
              if _waiting_since(acked.get(g.waiting_key, AckBounds(0, None)), g.last, g.nxt) is ...}
    if unsure:  # exact: the first ack above a block's end (the executor's), and the block's own rows above top
        rows = defaultdict(list)
        for r in x.query("acked_in_block", unsure):
            rows[(r["topic"], r["partition"], r["offset"] >> 6)].append(r)
        for topic, partition, top in unsure:
            end = acked[(topic, partition, top | 63)]
            assert end.lo == end.hi, f"no exact first ack after {topic}:{partition}@{top | 63}"
            times = [r["ts"] for r in rows[(topic, partition, top >> 6)] if r["offset"] > top] + [end.lo]
            first = min((t for t in times if t is not None), default=None)
            acked[(topic, partition, top)] = AckBounds(first, first)
    out = []
    for topic, partition, last, nxt, top in gaps:
        start = _waiting_since(acked[(topic, partition, top)], last, nxt)
        if start is None:
            continue
        for a, z in _subtract(Interval(start, nxt), _not_watched(x, topic, partition)):
            if z - a > x.stall_ms:
                owners = x.ctx.owners_during(topic, partition, a, z)
                members = sorted({p.member for p in owners})
                out.append({"type": "stall", "topic": topic, "partition": partition, "offsets": [top + 1, top + 1],
                            "count": 1, "members": members,
                            "generations": sorted({p.generation for p in owners if p.generation is not None}),
                            "time_ms": [a, z], "stalled_ms": z - a, "waiting_for": "delivery",
                            "last_delivery_ms": last, "open": nxt >= x.observe_end,
                            "reason": f"nothing delivered for {(z - a) / 1000:.1f} s while acked records waited, "
                                      f"owner {', '.join(members) or '?'} alive"})
    out += waits
    return CheckResult(out, len(out), {"stall_ms": x.stall_ms, "first_ack_queries": len(unsure)})


class SplitWindow(NamedTuple):
    """Where rebalance ``rebalance`` (one of :func:`rounds`) gave a partition to two members and both still owned it
    (ownerships ``a`` and ``b``): from ``start`` to ``end``; ``id`` names it in the question to Spark."""
    id: int
    topic: str
    partition: int
    a: Period
    b: Period
    start: int
    end: int
    rebalance: dict

    @property
    def asked(self) -> DeliveryWindow:
        return DeliveryWindow(self.id, self.topic, self.partition, self.a.member, self.b.member, self.start, self.end)


@check("split_ownership", needs=("events",), unit="partitions one rebalance gave to two members that both delivered "
       "it while each still owned it", color="#8c564b")
def split_ownership(x: Facts):
    """One rebalance round ends with the same partition owned by two of the members it assigned, each by its own
    log, and both deliver records of it while their ownerships overlap (KAFKA-7026). A member that was frozen
    and still believes in an older assignment (a zombie) took no part in the round: that is not a split."""
    windows: dict[tuple[int, int], SplitWindow] = {}
    for r in rounds(x):
        owners, members = defaultdict(list), set(r["members"])
        for p in x.history.periods:
            if p.member in members and p.start <= r["end_ms"] < p.logged_end:
                owners[(p.topic, p.partition)].append(p)
        for (topic, partition), ps in owners.items():
            for i, a in enumerate(ps):
                for b in ps[i + 1:]:
                    lo, hi = max(a.start, b.start), min(a.logged_end, b.logged_end, x.observe_end)
                    windows.setdefault((a.id, b.id), SplitWindow(len(windows), topic, partition, a, b, lo, hi, r))
    if not windows:
        return CheckResult([], 0, {})
    per_member, twice = x.query("window_deliveries", [w.asked for w in windows.values()])
    delivered = {(r["w"], r["member"]): r["count"] for r in per_member}
    both = {r["w"]: r for r in twice}
    out = []
    for w, topic, partition, a, b, lo, hi, rnd in sorted(windows.values(), key=lambda v: v.id):
        if not (delivered.get((w, a.member)) and delivered.get((w, b.member))):
            continue
        d = both.get(w, {"n": 0})
        out.append({"type": "split_ownership", "topic": topic, "partition": partition,
                    "offsets": [d["lo"], d["hi"]] if d["n"] else None,
                    "count": 1, "members": sorted((a.member, b.member)),
                    "generations": [rnd["generation"]] if rnd["generation"] is not None else [],
                    "time_ms": [lo, hi], "round": rnd["index"], "delivered_twice": d["n"],
                    "delivered": {a.member: delivered[(w, a.member)], b.member: delivered[(w, b.member)]},
                    "reason": f"rebalance #{rnd['index']} gave it to both; {d['n']} record(s) delivered by both"})
    return CheckResult(out, len(out), {})


# ------------------------------------------------------------------------------------------ member ends
ANY_MEMBER = "any"


def fatal_ends(h: History) -> list:
    """The events on which a member ended on a client error it could not go on after: an ``error`` marked
    ``fatal``, ``fenced`` (always an end; run directories written before ``fatal`` existed carry no flag), and a
    ``crashed`` with a ``signal``: the harness logs a death by a signal it did not send (an abort in the client)."""
    return [e for e in h.events if (e.kind in ("fenced", "error") and e.facts.get("fatal", e.kind == "fenced") is True)
            or (e.kind == "crashed" and e.facts.get("signal"))]


class Drawn(NamedTuple):
    """A request of a member's that a fault (``fault_id``) answered with an error: the fault's ``hit`` row."""
    hit: dict
    fault_id: str


def _drawn_by(h: History, member: str, error: str, at: int) -> Drawn | None:
    """The last request of this member a fault answered with this very error, before ``at``."""
    hits = [Drawn(hit, f.id) for f in h.faults if f.params.get("error") == error for hit in f.hits
            if hit.get("member") == member and hit.get("at_ms", OPEN) <= at]
    return max(hits, key=lambda d: d.hit["at_ms"], default=None)


def _expected_by(x: Facts, member: str, at: int) -> str | None:
    """Who expects this member's fatal end: "scenario" (analysis.expected_fatal), a fault's id (its row's
    ``expected_fatal``, a fault injected before the end), or None."""
    if member in x.expected_fatal or ANY_MEMBER in x.expected_fatal:
        return "scenario"
    return next((f.id for f in x.history.faults if member in f.expected_fatal and f.injected_at_ms <= at), None)


@check("member_fatal", needs=("events",), unit="members that ended on a fatal client error the scenario did not expect",
       color="#393b79")
def member_fatal(x: Facts):
    """A member killed by its own client (FENCED_INSTANCE_ID, or any error the client marks fatal): in production
    an application that died, although its partitions move on and the run may otherwise read valid. One anomaly
    per fatal end, with the error, the request that drew it (the member's own log, else the rpc fault that answered
    that member with that error), its generation and the fault before it. Ends the scenario or a fault expects are
    listed in the info, not reported."""
    h = x.history
    out, expected = [], []
    for e in fatal_ends(h):
        error = str(e.facts.get("error") or e.facts.get("signal") or (e.detail or "").partition(": ")[0] or e.kind)  # detail: "NAME: text"
        text = (e.detail or "").removeprefix(f"{error}: ")
        drawn = _drawn_by(h, e.member, error, e.ts)
        generation = e.generation if e.generation is not None and e.generation >= 0 else \
            (drawn.hit.get("generation") if drawn else None)
        by = _expected_by(x, e.member, e.ts)
        if by is not None:
            expected.append({"member": e.member, "error": error, "time_ms": e.ts, "expected_by": by})
            continue
        before = [f for f in h.faults if f.injected_at_ms <= e.ts]
        out.append({"type": "member_fatal", "topic": None, "partition": None, "offsets": None, "count": 1,
                    "members": [e.member], "generations": [generation] if generation is not None else [],
                    "time_ms": [e.ts, e.ts], "error": error, "error_text": text, "event": e.kind,
                    "request": e.facts.get("request") or (drawn.hit.get("api") if drawn else None),
                    "request_from": "member" if e.facts.get("request") else (drawn.fault_id if drawn else None),
                    "generation": generation, "preceding_fault": before[-1].id if before else None,
                    "reason": f"{e.member} ended on {error}" + (f" ({text})" if text else "")})
    return CheckResult(out, len(out), {"expected": expected, "expected_fatal": list(x.expected_fatal)})


@check("unhealed_fault", needs=("faults",), unit="faults never healed", color="#000000")
def unhealed_faults(x: Facts):
    out = [{"type": "unhealed_fault", "topic": None, "partition": None, "offsets": None, "count": 1, "members": [],
            "generations": [], "time_ms": [f.injected_at_ms, None], "fault_ids": [f.id], "kind": f.kind,
            "target": f.target} for f in x.history.faults if f.healed_at_ms is None]
    return CheckResult(out, len(out), {})


@check("unsettled", unit="times the group did not become stable or catch up within its limit", color="#e6550d")
def unsettled(x: Facts):
    """The harness's group.jsonl says the group did not settle within its limit (harness/settling.py): a finding
    about Kafka or the client. One anomaly per time, with the group's last description, the lag per partition and
    each lagging partition's last owner (the member whose ownership began last, before then), when that ownership
    ended by the member's own events (`owned_until`: null while it still held it), and who the coordinator said held
    it at the time (`coordinator_owner`, from group-states.jsonl: under KIP-848 a partition can be assigned on the
    coordinator to a member that never applied it), and the members that started, alive, that the coordinator did not
    list (`unlisted`), with the group debug log each wrote when its join was overdue (`debug_logs`)."""
    rows = x.history.group
    if rows is None:
        return CheckResult([], 0, {"status": "ran", "observed": False})
    out = []
    for row in (r for r in rows if r["kind"] == "unsettled"):
        lag = {tp: n for tp, n in (row.get("lag") or {}).items() if n > 0}
        held = {tp: last_ownership(x.history, tp, row["ts_ms"]) for tp in lag}
        owners = {tp: p.member if p else None for tp, p in held.items()}
        coordinator = coordinator_owners(x.history.group_states, lag, row["ts_ms"])
        unlisted = unlisted_members(x.history, row["ts_ms"])
        debug_logs = {e.member: e.facts["debug_log"] for e in x.history.events
                      if e.kind == "join_overdue" and e.member in unlisted and "debug_log" in e.facts}
        out.append({"type": "unsettled", "topic": None, "partition": None, "offsets": None, "count": 1,
                    "members": sorted({m for m in [*owners.values(), *coordinator.values(), *unlisted] if m}),
                    "generations": [],
                    "time_ms": [row["ts_ms"] - row["limit_ms"], row["ts_ms"]], "phase": row.get("phase"),
                    "limit_ms": row["limit_ms"], "expected_members": row.get("expected_members"),
                    "partitions_total": row.get("partitions"), "last_described": row.get("last_described"),
                    "lag": lag, "last_owner": owners,
                    "owned_until": {tp: None if p is None or p.end > row["ts_ms"] else p.end for tp, p in held.items()},
                    "coordinator_owner": coordinator, "unlisted": unlisted, "debug_logs": debug_logs,
                    "reason": ("not stable" if row.get("phase") == "join" else "not caught up") +
                              f" within {row['limit_ms'] / 1000:g} s" + (
                                  f"; {', '.join(unlisted)}: started, alive, and not in the group the coordinator "
                                  "described" if unlisted else "") + (
                                  f" (its client's group log: {', '.join(debug_logs.values())})" if debug_logs else "")})
    return CheckResult(out, len(out), {"observed": True})


@check("unapplied_assignment", invalidates=False, needs=("events",), unit="partitions a live member left unapplied "
       f"for {unapplied.MIN_MS // 1000} s or more while its coordinator, in a stable group, held it owned them",
       color="#7b4173")
def unapplied_assignment(x: Facts):
    """The coordinator's view against the member's own (analysis/unapplied.py): a partition the coordinator held a
    member owned, in a stable group, that the member never applied, though it was alive. Under KIP-848 librdkafka
    does this when it times out the one heartbeat response that gave it the partition. Reported, not invalid: the
    partition waits (the records are not lost) until the member's assignment changes again. Needs
    group-states.jsonl's assignments (without them `observed` is false)."""
    h = x.history
    if not h.group_states:
        return CheckResult([], 0, {"status": "ran", "observed": False})
    end = min(workload_stop(h), max(r["ts_ms"] for r in h.group_states))
    out = []
    for s in unapplied.unapplied(h, end):
        topic, partition = parse_tp(s["partition"], "group-states.jsonl", "assignments")
        held = s["to_ms"] - s["from_ms"]
        out.append({"type": "unapplied_assignment", "topic": topic, "partition": partition, "offsets": None, "count": 1,
                    "members": [s["member"]], "generations": [], "time_ms": [s["from_ms"], s["to_ms"]], "held_ms": held,
                    "reason": f"the coordinator held {s['member']} owned {s['partition']} for {held / 1000:.1f} s in a "
                              f"stable group; {s['member']} never applied it"})
    return CheckResult(out, len(out), {"observed": True, "min_ms": unapplied.MIN_MS})


def unlisted_members(h: History, at_ms: int) -> list[str]:
    """The members that had started and not ended by `at_ms` (their own events) and that the coordinator's last
    description before then did not list (group-states.jsonl's member_ids, client.id = the member's name): a member
    that never joined, or was dropped. Empty when no sample listed the members."""
    listed = [r for r in h.group_states or [] if r.get("member_ids") is not None and r["ts_ms"] <= at_ms]
    if not listed:
        return []
    names = set(listed[-1]["member_ids"].values())
    ended: dict[str, bool] = {}  # member -> whether its last start or end by at_ms was an end
    for e in (e for e in h.events if e.ts <= at_ms):
        if e.kind in ENDS or e.kind == "started":
            ended[e.member] = e.kind in ENDS
        else:
            ended.setdefault(e.member, False)
    return sorted(m for m, gone in ended.items() if not gone and m not in names)


def last_ownership(h: History, tp: str, before_ms: int):
    """The ownership period of "topic:partition" that began last before `before_ms` (None: never owned)."""
    topic, partition = parse_tp(tp, "group.jsonl", "lag")
    started = [p for p in h.periods if p.topic == topic and p.partition == partition and p.start <= before_ms]
    return max(started, key=lambda p: p.start) if started else None


def coordinator_owners(states: list[dict] | None, partitions, at_ms: int) -> dict[str, str | None]:
    """Who the coordinator said held each partition at `at_ms` (its last sampled assignments then); empty when the run
    sampled none."""
    seen = [r for r in states or [] if r["kind"] == "state" and r.get("assignments") is not None and r["ts_ms"] <= at_ms]
    if not seen:
        return {}
    holder = {tp: member for member, tps in seen[-1]["assignments"].items() for tp in tps}
    return {tp: holder.get(tp) for tp in partitions}


def attribute(anomalies: list[dict], h: History, grace_ms: int) -> None:
    """fault_ids: the faults whose window (History.blame_windows: the cause window plus grace, cut at the workload's
    stop) overlaps the anomaly's time."""
    windows = [(fid, lo, hi) for fid, (lo, hi) in h.blame_windows(grace_ms, OPEN).items()]
    for a in anomalies:
        if a["type"] == "unhealed_fault":
            continue
        t0, t1 = a["time_ms"]
        t1 = t0 if t1 is None else t1
        a["fault_ids"] = [fid for fid, lo, hi in windows if t0 <= hi and t1 >= lo]
