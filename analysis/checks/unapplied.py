"""Partitions the coordinator held a member owned that the member itself never applied: the coordinator's view
(group-states.jsonl's sampled `assignments`) against the member's own (its `assigned`/`revoked` events).

The two views differ for a moment in every rebalance. A difference is reported only when it cannot be one:
- the group was Stable in every sample of it (a rebalance under way leaves stale assignments in a description), and,
  under KIP-848, the coordinator held the member at the target assignment's epoch (reconciled);
- it lasted at least MIN_MS;
- the member was alive all along: it logged an event (a commit, an assignment) at least MIN_MS into it, so a
  member killed within its session, whose partitions the coordinator keeps until the session ends, is not one.

Under KIP-848, librdkafka loses a partition this way when the one heartbeat response that gives it the partition
times out (docs/upstream/librdkafka-kip848-lost-assignment.md).
"""
from __future__ import annotations

from bisect import bisect_left

from analysis import intervals
from analysis.rundir.history import History

MIN_MS = 15_000  # longer than any reconciliation of a live member: a heartbeat or a SyncGroup is answered in ms


def coordinator_stretches(rows: list[dict], end_ms: int) -> dict[tuple[str, str], list[tuple[int, int]]]:
    """(member, "topic:partition") -> the stretches the coordinator held the member owned it, in a Stable group
    (and, with epochs, with the member reconciled to the target): from the sample that first said so to the one
    that no longer did (or end_ms)."""
    seen = [r for r in rows if r["kind"] in ("state", "unknown")]
    out: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for i, row in enumerate(seen):
        to = seen[i + 1]["ts_ms"] if i + 1 < len(seen) else end_ms
        if row["kind"] != "state" or str(row.get("state", "")).lower() != "stable" or to <= row["ts_ms"]:
            continue
        target, epochs = row.get("assignment_epoch"), row.get("member_epochs") or {}
        for member, partitions in (row.get("assignments") or {}).items():
            if target is not None and epochs.get(member) != target:
                continue
            for tp in partitions:
                stretches = out.setdefault((member, tp), [])
                if stretches and stretches[-1][1] == row["ts_ms"]:
                    stretches[-1] = (stretches[-1][0], to)
                else:
                    stretches.append((row["ts_ms"], to))
    return out


def unapplied(h: History, end_ms: int) -> list[dict]:
    """Every stretch the coordinator held a live member owned a partition its own events never applied (see the
    module's doc), longest first."""
    if not h.group_states:
        return []
    owned: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for p in h.periods:
        owned.setdefault((p.member, f"{p.topic}:{p.partition}"), []).append((p.start, p.end))
    activity: dict[str, list[int]] = {}
    for e in h.events:
        activity.setdefault(e.member, []).append(e.ts)
    for times in activity.values():
        times.sort()
    out = []
    for (member, tp), stretches in coordinator_stretches(h.group_states, end_ms).items():
        mine = sorted((a, b, member) for a, b in owned.get((member, tp), []))
        times = activity.get(member, [])
        for stretch in stretches:
            for a, b in intervals.gaps(mine, *stretch):
                if b - a < MIN_MS:
                    continue
                alive = bisect_left(times, a + MIN_MS)
                if alive < len(times) and times[alive] <= b:
                    out.append({"member": member, "partition": tp, "from_ms": a, "to_ms": b})
    return sorted(out, key=lambda s: (s["from_ms"] - s["to_ms"], s["member"], s["partition"]))
