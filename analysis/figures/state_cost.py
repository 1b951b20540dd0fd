"""What a trigger cost a stateful run's members in rebuilt state (the scenario's `state` block), from its events and
state rows, so that a sweep's --refigure needs no Spark:

- ``restore_ms``: the longest restore of one partition that ended in the window (restore_end's elapsed_ms);
- ``records_replayed``: the changelog records those restores read;
- ``restores``: how many ended in the window (None when none did, shown "–");
- ``first_processing_ms``: the longest from a partition's assignment in the window to its new owner's first record
  processed (its first state row of the partition): the restore and the wait for it together. An owner that lost the
  partition (revoked or lost) before processing a record of it waited until then: its wait ends there, never at a
  record it processed under a later assignment.

None for every figure in a run that kept no state.
"""
from __future__ import annotations

from bisect import bisect_left

from analysis.rundir.history import History

FIGURES = ("restore_ms", "records_replayed", "restores", "first_processing_ms")


def state_figures(h: History, start_ms: int, end_ms: int) -> dict:
    if h.state is None:
        return dict.fromkeys(FIGURES)
    ended = [e for e in h.events if e.kind == "restore_end" and start_ms <= e.ts <= end_ms
             and not e.facts.get("aborted")]
    first_rows = _row_times(h.state.rows)
    ends: dict[tuple[str, str, int], list[int]] = {}  # a member's revocations and losses of a partition, in time
    for e in h.events:
        if e.kind in ("revoked", "lost"):
            for topic, partition in e.partitions or []:
                ends.setdefault((e.member, topic, partition), []).append(e.ts)
    for times in ends.values():
        times.sort()
    waits = []
    for e in h.events:
        if e.kind != "assigned" or not start_ms <= e.ts <= end_ms:
            continue
        for topic, partition in e.partitions or []:
            key = (e.member, topic, partition)
            times, gone = first_rows.get(key, []), ends.get(key, [])
            i, j = bisect_left(times, e.ts), bisect_left(gone, e.ts)  # at or after the assignment
            first = times[i] if i < len(times) else None
            lost_at = gone[j] if j < len(gone) else None
            if lost_at is not None and (first is None or lost_at < first):
                waits.append(lost_at - e.ts)  # lost before its first record: waited until then
            elif first is not None:
                waits.append(first - e.ts)
    return {"restore_ms": max((e.facts.get("elapsed_ms", 0) for e in ended), default=None),
            "records_replayed": sum(e.facts.get("records", 0) for e in ended) if ended else None,
            "restores": len(ended) or None,
            "first_processing_ms": max(waits, default=None)}


def _row_times(rows) -> dict[tuple[str, str, int], list[int]]:
    """(member, topic, partition) -> the times of its state rows, sorted."""
    grouped = rows.group_by(["member", "topic", "partition"]).aggregate([("ts_ms", "list")]).to_pylist()
    return {(g["member"], g["topic"], g["partition"]): sorted(g["ts_ms_list"]) for g in grouped}


def restore_spans(h: History) -> list[dict]:
    """Each restore of a partition: member, topic, partition, start_ms, end_ms (None: it never ended), records and
    aborted, pairing a member's restore_start with its next restore_end of the partition (the report draws them on the
    ownership timeline)."""
    open_: dict[tuple[str, str, int], dict] = {}
    out = []
    for e in sorted(h.events, key=lambda e: e.ts):
        if e.kind not in ("restore_start", "restore_end"):
            continue
        for topic, partition in e.partitions or []:
            key = (e.member, topic, partition)
            if e.kind == "restore_start":
                open_[key] = {"member": e.member, "topic": topic, "partition": partition, "start_ms": e.ts,
                              "end_ms": None, "records": None, "aborted": None}
                out.append(open_[key])
            elif key in open_:
                open_.pop(key).update(end_ms=e.ts, records=e.facts.get("records"), aborted=e.facts.get("aborted"))
    return out
