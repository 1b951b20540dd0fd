"""The `split_ownership` check: partitions one rebalance gave to two members that both delivered them."""
from __future__ import annotations

from collections import defaultdict
from typing import NamedTuple

from analysis.checks.framework import CheckResult, Facts, check
from analysis.engine.spark_plan import DeliveryWindow
from analysis.rundir.history import Period


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


@check("split_ownership", asks=("window_deliveries",),
       needs=("events",), unit="partitions one rebalance gave to two members that both delivered "
       "it while each still owned it", color="#8c564b")
def split_ownership(x: Facts):
    """One rebalance round ends with the same partition owned by two of the members it assigned, each by its own
    log, and both deliver records of it while their ownerships overlap (KAFKA-7026). A member that was frozen
    and still believes in an older assignment (a zombie) took no part in the round: that is not a split."""
    windows: dict[tuple[int, int], SplitWindow] = {}
    for r in x.rounds():
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
