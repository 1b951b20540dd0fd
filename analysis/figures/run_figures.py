"""Rebalance figures from the rebuilt ownership: rounds, windows with no owner, revocations, time to stable."""
from __future__ import annotations

from analysis.rundir.history import OPEN, History, group_protocol

ROUND_GAP_MS = 2000  # without group generations, assignment changes closer than this belong to one rebalance


def _kip848(h: History) -> bool:
    return any(e.kind == "started" and group_protocol(e) == "consumer" for e in h.events)


def rounds(h: History) -> list[dict]:
    """Rebalances. With classic-protocol generations in the events: one per generation of ``assigned``;
    otherwise (librdkafka without generations, KIP-848 member epochs) assignment changes of all members
    clustered in time (a gap above ROUND_GAP_MS starts a new one)."""
    changes = [e for e in h.events if e.kind in ("assigned", "revoked", "lost")]
    if not changes:
        return []
    assigned = [e for e in changes if e.kind == "assigned"]
    out = []
    if assigned and not _kip848(h) and all(e.generation is not None and e.generation >= 0 for e in assigned):
        by_gen: dict[int, list] = {}
        for e in assigned:
            by_gen.setdefault(e.generation, []).append(e)
        prev_end = -OPEN
        for gen in sorted(by_gen):
            evs = by_gen[gen]
            first, last = min(e.ts for e in evs), max(e.ts for e in evs)
            starts = [e.ts for e in changes if e.kind != "assigned" and prev_end < e.ts <= first]
            out.append({"generation": gen, "start_ms": min(starts + [first]), "end_ms": last,
                        "members": sorted({e.member for e in evs})})
            prev_end = last
        out.sort(key=lambda r: r["start_ms"])
    else:
        cur = None
        for e in changes:
            if cur is None or e.ts - cur["end_ms"] > ROUND_GAP_MS:
                cur = {"generation": None, "start_ms": e.ts, "end_ms": e.ts, "members": set()}
                out.append(cur)
            cur["end_ms"] = e.ts
            cur["members"].add(e.member)
        for r in out:
            r["members"] = sorted(r["members"])
    for i, r in enumerate(out):
        r["index"] = i + 1
    return out


def no_owner_windows(h: History, partitions: list[tuple[str, int]], observe_end: int) -> dict:
    per = {}
    for p in h.periods:
        per.setdefault((p.topic, p.partition), []).append((p.start, min(p.end, observe_end)))
    out, total, longest = [], 0, 0
    for tp in sorted(set(partitions) | set(per)):
        spans = sorted(per.get(tp, []))
        if not spans:
            out.append({"topic": tp[0], "partition": tp[1], "windows": [], "total_ms": None, "never_owned": True})
            continue
        windows, covered = [], spans[0][0]
        for s, e in spans:
            if s > covered:
                windows.append([covered, s])
            covered = max(covered, e)
        if covered < observe_end:
            windows.append([covered, observe_end])
        t = sum(e - s for s, e in windows)
        total += t
        longest = max([longest] + [e - s for s, e in windows])
        out.append({"topic": tp[0], "partition": tp[1], "windows": windows, "total_ms": t})
    return {"partitions": out, "total_ms": total, "longest_ms": longest}


def outside_ownership(period_summaries: list[dict], outside: int) -> dict[str, dict]:
    """The zombie window of each member: the records it handed to the application for partitions it did not
    own (by the group's view), and the first and last time it did."""
    out: dict[str, dict] = {}
    for s in period_summaries:
        if s["period"] != outside:
            continue
        m = out.setdefault(s["member"], {"records": 0, "first_ms": s["tmin"], "last_ms": s["tmax"]})
        m["records"] += s["n"]
        m["first_ms"], m["last_ms"] = min(m["first_ms"], s["tmin"]), max(m["last_ms"], s["tmax"])
    return {member: {**v, "window_ms": v["last_ms"] - v["first_ms"]} for member, v in sorted(out.items())}


def revocations_while_alive(h: History) -> dict:
    by_member: dict[str, int] = {}
    last_assigned = {}
    for e in h.events:
        if e.kind == "assigned":
            last_assigned[e.member] = e.ts
    for e in h.events:
        if e.kind in ("revoked", "lost") and (e.partitions is None or e.partitions):
            if last_assigned.get(e.member, -1) > e.ts:
                n = len(e.partitions) if e.partitions is not None else 1
                by_member[e.member] = by_member.get(e.member, 0) + n
    return {"partitions_revoked": sum(by_member.values()), "by_member": dict(sorted(by_member.items()))}


def fault_recovery(h: History, rnds: list[dict], windows: dict, grace_ms: int, observe_end: int) -> dict[str, dict]:
    gaps = {(w["topic"], w["partition"]): w["windows"] for w in windows["partitions"]}

    def stable_from(t):
        moved = True
        while moved:
            moved = False
            for ws in gaps.values():
                for s, e in ws:
                    if s <= t < e:
                        t, moved = e, True
        return t

    out = {}
    blamed = h.blame_windows(grace_ms, observe_end)  # a round the workload's stop begins is no fault's
    for f in h.faults:
        lo, hi = blamed.get(f.id, (0, -1))
        rs = [r for r in rnds if lo <= r["start_ms"] <= hi]
        if not rs:
            out[f.id] = {"rebalances": 0, "time_to_stable_ms": 0 if h.events else None}
            continue
        t = stable_from(max(r["end_ms"] for r in rs))
        out[f.id] = {"rebalances": len(rs), "time_to_stable_ms": t - lo if t < observe_end or t == max(r["end_ms"] for r in rs) else None,
                     "rebalance_indexes": [r["index"] for r in rs]}
    return out
