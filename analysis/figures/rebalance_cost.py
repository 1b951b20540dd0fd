"""What one rebalance trigger cost the group: the figures of a sweep cell (harness/sweep), from the run's history.

A partition is *served* while a live member owns it. A member killed or bounced by a fault (one that ends its
process) stops serving at the fault's injection, though the group may count it an owner until its session expires:
the two costs the sweep measures, paused processing and partitions moved, start at the trigger, not at the
coordinator's noticing it.

- ``trigger_ms``: when the group could first know. The fault's injection; for a member starting (its row's
  ``group_change``: ``member_starts``), the joining member's first event (starting its process is not the rebalance's
  cost); for a fault that ends a process, when the process really stopped (its row's ``stopped_at_ms``: a hosted
  member finishes its batch and its host destroys its consumer first). ``trigger_from`` says which:
  ``injection``, ``member_start`` or ``stop`` (``injection`` for an ended process whose row has no stop time);
  ``stop_delay_ms``: from the injection to that stop, what timing from the injection would have added.
- ``window_end_ms``: :func:`window_end`, the end of what is measured.
- ``first_change_ms``: from the trigger to the first assignment change any member logged (how long the group took
  to notice: a classic member sees added partitions only at its next metadata refresh).
- ``settled``: :func:`settled`, THE rule of a settled cell. ``stable_ms``: the last assignment change or end of an
  unserved stretch in the window; ``time_to_stable_ms`` is it minus ``trigger_ms``, 0 when the trigger changed
  nothing, None when the cell did not settle.
- ``unserved_longest_ms`` / ``unserved_partition_s``: the longest stretch one partition went unserved in the
  window, and the sum over partitions (partition-seconds).
- ``revoked``: partitions members revoked or lost in the window; ``moved``: partitions served by another member (or
  by one at all) at the end than just before the trigger; ``needed``: the fewest that had to move, by the fault's
  ``group_change`` (a member starts: its fair share; a member ends, crashed or gone: its partitions; partitions
  added: the new ones; a member returns, or no change: none).

- ``hit_partitions``: the (topic, partition) pairs that moved or went unserved in the window, where the trigger's
  cost bites (the latency's own baseline: analysis/figures/latency.py); a list, not a figure.

- ``coordinator_rounds``, ``join_phase_ms``, ``assignment_ms``: what the coordinator logged of the rounds (classic) or
  epochs (KIP-848) begun from the fault's injection to the window's end (analysis/rundir/coordinator_log.py.in_window);
  None without a coordinator.log.

The figures read what a faults.jsonl row declares (``group_change``, ``ends_process``), never its kind.
"""
from __future__ import annotations

from analysis.rundir import coordinator_log
from analysis.figures.run_figures import rounds
from analysis.rundir.history import Fault, History, workload_stop
from analysis import intervals

CHANGE_KINDS = ("assigned", "revoked", "lost")


def served_spans(h: History, stopped: dict[str, int]) -> dict[tuple[str, int], list[tuple[int, int, str]]]:
    """(topic, partition) -> its ownership periods as (start, end, member), each cut at its member's process's end
    when a fault ended that process while it owned (``stopped``: member -> ts)."""
    out: dict[tuple[str, int], list[tuple[int, int, str]]] = {}
    for p in h.periods:
        end = p.end
        down = stopped.get(p.member)
        if down is not None and p.start <= down < end:
            end = down
        if end > p.start:
            out.setdefault((p.topic, p.partition), []).append((p.start, end, p.member))
    for spans in out.values():
        spans.sort()
    return out


def owner_at(spans: list[tuple[int, int, str]], ts: int) -> str | None:
    owners = [m for start, end, m in spans if start <= ts < end]
    return owners[-1] if owners else None


def trigger_time(h: History, fault: Fault) -> tuple[int, str]:
    """When the group could first know of the trigger, and from what it is timed (see the module's doc)."""
    if fault.ends_process:
        return fault.stop_ms, "injection" if fault.stopped_at_ms is None else "stop"
    if fault.group_change != "member_starts":
        return fault.injected_at_ms, "injection"
    first: dict[str, int] = {}
    for e in h.events:
        first.setdefault(e.member, e.ts)
    joined = [ts for ts in first.values() if ts >= fault.injected_at_ms]
    return (min(joined), "member_start") if joined else (fault.injected_at_ms, "injection")


def window_end(h: History, fault: Fault, observe_ms: int) -> int:
    """The end of what a trigger's figures cover: ``observe_ms`` after its injection, cut at its heal when the fault
    ended a member (its restart is another rebalance), and at the workload's stop (history.workload_stop)."""
    end = fault.injected_at_ms + observe_ms
    if fault.group_change == "member_ends" and fault.healed_at_ms is not None:
        end = min(end, fault.healed_at_ms)
    return min(end, workload_stop(h))


def settled(h: History, unserved_at_end: int) -> bool:
    """THE rule of a settled cell (the sweep's status and its medians: :func:`status`): the harness saw the group
    stable within its limit and caught up (no ``unsettled`` row in group.jsonl), and no partition was still without
    a live owner at the window's end."""
    return unserved_at_end == 0 and not any(row.get("kind") == "unsettled" for row in h.group or ())


def status(settled_: bool, valid: bool | None) -> str:
    """A measured cell's status: ``ok`` when it settled and the analysis found the run valid (only such a cell's
    figures enter a curve), ``invalid`` when it settled but the run was invalid or could not be judged, else
    ``unsettled``."""
    if not settled_:
        return "unsettled"
    return "ok" if valid is True else "invalid"


def needed_moves(fault: Fault, before: dict[tuple[str, int], str | None], partitions: int, members: int) -> int:
    change = fault.group_change
    if change == "member_starts":
        return partitions // (members + 1)
    if change == "member_ends":
        return sum(owner == fault.target for owner in before.values())
    if change == "partitions_added":
        return sum(owner is None for owner in before.values())
    return 0  # a member that returns, or a fault that changes neither members nor partitions


def cost(h: History, fault: Fault, partitions: list[tuple[str, int]], members: int, end_ms: int) -> dict:
    """The figures of one trigger (``fault``) over [trigger, end_ms): see the module's doc."""
    t0, timed_from = trigger_time(h, fault)
    stopped = {fault.target: fault.stop_ms} if fault.ends_process else {}
    spans = served_spans(h, stopped)
    keys = sorted(set(partitions) | set(spans))
    gaps = {k: intervals.gaps(spans.get(k, []), t0, end_ms) for k in keys}
    changes = [e.ts for e in h.events if e.kind in CHANGE_KINDS and t0 <= e.ts < end_ms]
    open_at_end = sum(1 for g in gaps.values() if g and g[-1][1] >= end_ms)
    ends = [b for g in gaps.values() for _, b in g]
    stable = max(changes + ends, default=None)
    done = settled(h, open_at_end)
    before = {k: owner_at(spans.get(k, []), t0 - 1) for k in keys}
    after_ts = stable if done and stable is not None else end_ms
    after = {k: owner_at(spans.get(k, []), after_ts) for k in keys}
    revoked = sum(len(e.partitions) if e.partitions is not None else 1 for e in h.events
                  if e.kind in ("revoked", "lost") and t0 <= e.ts <= after_ts)
    lengths = [b - a for g in gaps.values() for a, b in g]
    return {
        "trigger_ms": t0,
        "trigger_from": timed_from,
        "stop_delay_ms": fault.stop_ms - fault.injected_at_ms if timed_from == "stop" else None,
        "window_end_ms": end_ms,
        "settled": done,
        "stable_ms": stable if done else None,
        "time_to_stable_ms": (0 if stable is None else stable - t0) if done else None,
        "first_change_ms": min(changes) - t0 if changes else None,
        "rebalances": sum(1 for r in rounds(h) if t0 <= r["start_ms"] < end_ms),
        "unserved_longest_ms": max(lengths, default=0),
        "unserved_partition_s": round(sum(lengths) / 1000, 3),
        "unserved_partitions": sum(1 for g in gaps.values() if g),
        "unserved_at_end": open_at_end,
        "revoked": revoked,
        "moved": sum(1 for k in keys if after[k] != before[k]),
        "hit_partitions": [k for k in keys if after[k] != before[k] or gaps[k]],
        "needed": needed_moves(fault, before, len(keys), members),
        **coordinator_log.in_window(coordinator_log.summary(h), min(t0, fault.injected_at_ms), end_ms),
    }
