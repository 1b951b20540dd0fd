"""The `stall` check: the group stopped although it could go on (a partition with acked records waiting, or a member
given no assignment), with the rounds and dead times it reads."""
from __future__ import annotations

from collections import Counter, defaultdict
from typing import NamedTuple

from analysis.checks.context import crashes
from analysis.checks.framework import CheckResult, Facts, check
from analysis.checks.stuck_prepare import prepared_transactions
from analysis.intervals import Span, gaps, merge_spans
from analysis.rundir.history import ENDS, OPEN, History


def delivery_spans(x: Facts) -> dict[tuple[str, int], list[Span]]:
    """(topic, partition) -> when the partition was delivered, with no gap above stall_ms inside a span. The
    executor's spans, with the records of the blocks it could not settle (spark_plan.stall_blocks, read back) added
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


class Interval(NamedTuple):
    """From ``start`` to ``end`` (ms)."""
    start: int
    end: int


def dead(x: Facts) -> dict[str, list[Interval]]:
    return x.once("dead", lambda: _dead(x.history))


def _subtract(span: Interval, cuts: list[Interval]) -> list[Interval]:
    """What is left of ``span`` once every interval of ``cuts`` is taken out (intervals.gaps, the one rule)."""
    return [Interval(a, z) for a, z in gaps(sorted(cuts), span.start, span.end)]
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
    return _subtract(Interval(-OPEN, OPEN), owned) + [Interval(r["start_ms"], r["end_ms"]) for r in x.rounds()]


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
    """Bounds on when the first record above an offset was acked (kernels.first_ack; both None: none was)."""
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


@check("stall", reads=("stats", "spans", "acks", "stall_blocks", "rows"), asks=("acked_in_block",),
       needs=("events",), invalidates=False, unit="windows longer than stall_ms in which a partition with acked "
       "records waiting, a live owner and no rebalance under way had no delivery, or a member that joined had no "
       "assignment", color="#7f7f7f")
def stall(x: Facts):
    """The group stopped although it could go on. A partition: between two deliveries (or after the last), acked
    records above everything delivered so far were waiting, for longer than stall_ms outside every window with
    no live owner or with a rebalance under way. Exact: the spans come from the block groups and the records of
    the blocks that could hide a gap; when the first waiting record was acked comes from the produced blocks
    (kernels.first_ack), and where they cannot say, from the records of that block read back (at most 63 a gap;
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
    held = x.history.held_inputs
    for topic, partition, last, nxt, top in gaps:
        start = _waiting_since(acked[(topic, partition, top)], last, nxt)
        if start is None or top + 1 in held.get((topic, partition), ()):  # delivered behind an open transaction
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
    from analysis.checks.eos_reads import hanging_transactions  # here: imported above, it would register its checks first
    prepared = prepared_transactions(x)
    out += hanging_transactions(x) + prepared.stalls
    by_cause = Counter(a.get("cause") or a["waiting_for"] for a in out)  # delivery, hanging_transaction, ...
    return CheckResult(out, len(out), {"stall_ms": x.stall_ms, "first_ack_queries": len(unsure),
                                       "by_cause": dict(sorted(by_cause.items())),
                                       "transactions_prepared_across_a_move": prepared.across_a_move})
