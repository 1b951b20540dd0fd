"""What several checks share: a run's deliveries in order, its duplicate ranges and how each step between two deliveries
is judged (pair verdicts, budgets)."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from functools import cached_property
from typing import NamedTuple
import bisect

from analysis.engine.kernels import NO_EVENTS_PERIOD, OUTSIDE_PERIOD, U64, shared_runs
from analysis.rundir.history import ENDS, OPEN, Commit, History, Period, commit_mode, parse_tp


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
    for group in merged_by_signature(items, lambda it: (it.topic, it.partition, it.members, it.gens, it.budget, it.reason)):
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


def merged_by_signature(items, signature, bounds=lambda it: (it.first, it.last)):
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


def index_ranges(offsets: list[int]) -> list[IndexRange]:
    """The index ranges of consecutive offsets in a sorted list."""
    out, i = [], 0
    for j in range(1, len(offsets) + 1):
        if j == len(offsets) or offsets[j] != offsets[j - 1] + 1:
            out.append(IndexRange(i, j))
            i = j
    return out


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


def ambiguity(h: History, cases: list[str]) -> dict:
    """A check's info on operations known late or never: the cases only one reading of them would report
    (``ambiguous``, with up to 20 ``ambiguous_examples``), and the commits never answered (``indeterminate_commits``)."""
    return {"ambiguous": len(cases), "ambiguous_examples": cases[:20],
            "indeterminate_commits": sum(1 for c in h.commits if c.info)}


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
