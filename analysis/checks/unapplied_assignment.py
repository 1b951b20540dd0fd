"""The `unapplied_assignment` check: partitions a live member left unapplied while its coordinator held it owned them
(analysis/checks/unapplied.py)."""
from __future__ import annotations

from analysis.checks import unapplied
from analysis.checks.framework import CheckResult, Facts, check
from analysis.rundir.history import parse_tp, workload_stop


@check("unapplied_assignment", invalidates=False, needs=("events",), unit="partitions a live member left unapplied "
       f"for {unapplied.MIN_MS // 1000} s or more while its coordinator, in a stable group, held it owned them",
       color="#7b4173")
def unapplied_assignment(x: Facts):
    """The coordinator's view against the member's own (analysis/checks/unapplied.py): a partition the coordinator held a
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


