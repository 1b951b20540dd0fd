"""A group that does not settle is a finding about Kafka or the client, never a harness failure.

One rule for `run`, the zoo, the sweep and the pytest plugin, because all of them run through `harness.run`:
- a group not stable within its limit once its members have started (`run.stable_timeout_s`; by default
  60 s + 0.5 s a member, so that a 500-member join has 310 s), and a drain that does not catch up within
  `run.drain_timeout_s`, are written to the run's group.jsonl as an `unsettled` row, with the group's last
  description and the lag per partition. The run goes on (the faults, the drain) and is analysed: the
  `unsettled` check reports the row as an anomaly that invalidates the run (exit 1), adding each lagging
  partition's last owner.
- Only what the harness could not observe or do is a harness failure (exit 3): a group it could not describe once
  in the whole wait, a cluster that does not start, a fault that does not heal.

group.jsonl also keeps every description the harness had of the group (`described` rows), so the report can show
what the group was doing while it waited.
"""
from __future__ import annotations

from pathlib import Path

from workloads.history import JsonlLog, now_ms

GROUP_FILE = "group.jsonl"
STABLE_BASE_S = 60.0
STABLE_PER_MEMBER_S = 0.5


def stable_limit_s(configured_s: float | None, members: int) -> float:
    """How long a group of `members` may take to become stable: the scenario's run.stable_timeout_s, else one that
    grows with the group (a join's rounds grow with it: librdkafka#4629, a 1,800-member assignment in 240 s)."""
    return configured_s if configured_s is not None else STABLE_BASE_S + STABLE_PER_MEMBER_S * members


def lag_by_partition(end_offsets: dict[tuple[str, int], int], committed: dict[tuple[str, int], int]) -> dict[str, int]:
    """Records behind the group's committed offset, per "topic:partition" (only the partitions behind)."""
    return {f"{t}:{p}": end - committed.get((t, p), 0) for (t, p), end in sorted(end_offsets.items())
            if end > committed.get((t, p), 0)}


def settled(run_json: dict) -> bool:
    """A run.json's group settled: stable in time and caught up (a run before group.jsonl: caught up)."""
    return not run_json.get("unsettled") and run_json.get("drained", True)


def finding_line(row: dict) -> str:
    """One line for the console and run.json: what did not settle, within what, and how it was when last seen."""
    limit = f"{row['limit_ms'] / 1000:g} s"
    seen = row.get("last_described")
    state = (f"{seen['state']}, {seen['members']} of {row['expected_members']} members, {seen['assigned']} of "
             f"{row['partitions']} partitions assigned") if seen else "never described"
    if row["phase"] == "join":
        return f"the group did not become stable within {limit} (last seen: {state})"
    lag = row.get("lag") or {}
    behind = f"{sum(lag.values())} records behind on {len(lag)} partitions" if lag else "its lag unknown"
    return f"the group had not caught up after {limit}: {behind} (last seen: {state})"


class GroupLog:
    """run_dir/group.jsonl: what the harness saw of the group (the contract: docs/DESIGN.md)."""

    def __init__(self, run_dir: Path) -> None:
        self._log = JsonlLog(Path(run_dir) / GROUP_FILE)

    def described(self, phase: str, description: dict) -> None:
        self._write({"kind": "described", "phase": phase, **description})

    def unsettled(self, phase: str, limit_s: float, expected_members: int, partitions: int,
                  last_described: dict | None, lag: dict[str, int] | None,
                  unlisted: dict[str, str] | None = None) -> dict:
        """`unlisted`: the members the harness saw running and the coordinator did not list, with their commands
        (output-topic mode: the members write no events the analysis could tell it from)."""
        row = {"kind": "unsettled", "phase": phase, "limit_ms": round(limit_s * 1000),
               "expected_members": expected_members, "partitions": partitions,
               "last_described": last_described, "lag": lag}
        if unlisted is not None:
            row["unlisted"] = unlisted
        return self._write(row)

    def _write(self, row: dict) -> dict:
        row = {"ts_ms": now_ms(), **row}
        self._log.append(row)
        self._log.flush()
        return row

    def close(self) -> None:
        self._log.close()
