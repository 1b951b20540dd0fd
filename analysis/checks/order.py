"""The order checks: `skip` (a record passed inside one ownership), `backwards` (a member's next record not above the
previous one) and `commit_regression` (a committed offset going down)."""
from __future__ import annotations

from collections import defaultdict

from analysis.checks.context import ambiguity, crashes, index_ranges
from analysis.checks.framework import CheckResult, Facts, check
from analysis.engine.kernels import bits_of as bits
from analysis.engine.spark_plan import LOG_ORDER_NOTE


@check("skip", reads=("skip",),
       needs=("events",), unit="known records a member did not consume inside one ownership of a partition",
       color="#ff7f0e")
def skips(x: Facts):
    """Known records (acked, or consumed by anyone) inside the offset range one member consumed during one
    ownership of a partition, that it did not consume in that ownership.

    In output-topic mode the rows are the output records a member wrote, and a write still in its producer when the
    member's process was killed is lost with it, while later ones to other output partitions had gone out: a gap in
    an ownership that ended in the member's crash. At least once allows it (the next owner replays from the last
    commit; a record no one delivers again is `lost`), so it is no skip; counted apart (info
    `unflushed_at_crash`)."""
    skipped = defaultdict(dict)  # (member, topic, partition, period) -> {offset: (t0, t1)}
    for r in x.got.get("skip", []):
        key = (r["member"], r["topic"], r["partition"], r["period"])
        for j in bits(r["bits"]):
            skipped[key].setdefault(r["b"] * 64 + j, (r["t0"], r["t1"]))
    killed = crashes(x.history) if x.history.output is not None else {}
    unflushed = [key for key in skipped if _died_with_its_writes(x.ctx.periods.get(key[3]), killed)]
    excused = sum(len(skipped.pop(key)) for key in unflushed)
    anomalies, total = [], 0
    for key in sorted(skipped, key=lambda k: (k[1], k[2], k[0], k[3])):
        member, topic, partition, period = key
        offs = sorted(skipped[key])
        total += len(offs)
        for r in index_ranges(offs):
            times = [skipped[key][o] for o in offs[r.start:r.stop]]
            anomalies.append({"type": "skip", "topic": topic, "partition": partition,
                              "offsets": [offs[r.start], offs[r.stop - 1]], "count": r.stop - r.start,
                              "members": [member], "generations": list(x.ctx.period_gens(period)),
                              "time_ms": [min(t[0] for t in times), max(t[1] for t in times)], "period": period})
    return CheckResult(anomalies, total, {"unflushed_at_crash": excused} if x.history.output is not None else {})


def _died_with_its_writes(owner, killed: dict[str, list[int]]) -> bool:
    """The ownership ended in its member's crash: its process was killed (a fault that ends it, or a `crashed` event)
    while it owned the partition (as loss_windows reads a crash)."""
    return owner is not None and any(owner.start <= t <= owner.logged_end for t in killed.get(owner.member, ()))


@check("backwards", reads=("steps",),
       needs=("events",), unit="times a member's next consumed record (by its consumption sequence n, "
       "else in its log) was not above the previous one inside one ownership", color="#9467bd")
def backwards(x: Facts):
    """Every step back between two records that follow each other in the member's consumption (spark_plan.log_pass):
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


@check("commit_regression", needs=("events", "commits"), unit="times a partition's committed offset went down", color="#17becf")
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
