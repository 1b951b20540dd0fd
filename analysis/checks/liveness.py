"""The `unhealed_fault` and `unsettled` checks: a fault never healed, a group that did not settle or catch up in time."""
from __future__ import annotations

from analysis.checks.context import coordinator_owners, last_ownership, unlisted_members
from analysis.checks.framework import CheckResult, Facts, check


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
        commands = row.get("unlisted") or {}  # output-topic mode: the harness names them, with their commands
        unlisted = sorted({*unlisted_members(x.history, row["ts_ms"]), *commands})
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
                    **({"commands": commands} if commands else {}),
                    "reason": ("not stable" if row.get("phase") == "join" else "not caught up") +
                              f" within {row['limit_ms'] / 1000:g} s" + (
                                  f"; {', '.join(unlisted)}: started, alive, and not in the group the coordinator "
                                  "described" if unlisted else "") + (
                                  f" (its client's group log: {', '.join(debug_logs.values())})" if debug_logs else "")})
    return CheckResult(out, len(out), {"observed": True})
