"""Turn VerifiableConsumer's JSON events into the run-directory contract (consumed/ and events/)."""
from __future__ import annotations

import json
from pathlib import Path

from workloads.history import JsonlLog

CLIENT = "java"
FACTS_EVENT = "kafka_chaos_member"  # written by workloads/java_member.py before the JVM starts


def _partitions(event: dict) -> list[str]:
    return [f"{p['topic']}:{p['partition']}" for p in event.get("partitions", [])]


def convert(raw_path: Path, run_dir: Path, member: str, instance_id: str | None) -> tuple[int, int]:
    """Returns (consumed rows, events) written."""
    consumed = JsonlLog(run_dir / "consumed" / f"{member}.jsonl")
    events = JsonlLog(run_dir / "events" / f"{member}.jsonl")
    rows = written_events = 0
    previous_ts = -1
    facts = {"protocol": None, "assignor": None, "commit": None, "client_version": None}

    def event(ts: int, kind: str, **fields) -> None:
        nonlocal written_events
        events.append({"ts_ms": ts, "member": member, "kind": kind, "generation": -1, **fields})
        written_events += 1

    for line in raw_path.read_text(errors="replace").splitlines() if raw_path.exists() else []:
        try:
            e = json.loads(line)
        except json.JSONDecodeError:
            continue  # the last line of a killed member may be cut short
        name, ts = e.get("name"), e.get("timestamp", -1)
        # VerifiableConsumer commits right after it prints a poll's records: the commit was requested
        # no earlier than the event before it.
        requested_at, previous_ts = previous_ts, ts
        if name == FACTS_EVENT:
            facts = {k: e.get(k) for k in facts}
            continue
        if name == "record_data":
            producer_id, _, seq = str(e.get("value") or "").partition(":")
            consumed.append({"topic": e["topic"], "partition": e["partition"], "offset": e["offset"], "member": member,
                             "consumed_at_ms": ts, "key": e.get("key"), "producer_id": producer_id or None,
                             "seq": int(seq) if seq.isdigit() else None, "instance_id": instance_id,
                             "generation": -1, "client": CLIENT})
            rows += 1
        elif name == "startup_complete":
            event(ts, "started", client=CLIENT, **facts, instance_id=instance_id, detail="VerifiableConsumer")
        elif name == "partitions_assigned":
            event(ts, "assigned", partitions=_partitions(e))
        elif name == "partitions_revoked":
            event(ts, "revoked", partitions=_partitions(e))
        elif name == "offsets_committed":
            offsets = {f"{o['topic']}:{o['partition']}": o["offset"] for o in e.get("offsets") or []}
            if e.get("success"):
                event(ts, "committed", offsets=offsets, requested_at_ms=requested_at)
            else:
                event(ts, "commit_failed", offsets=offsets, requested_at_ms=requested_at, detail=e.get("error"))
        elif name == "shutdown_complete":
            event(ts, "stopped")
    consumed.close()
    events.close()
    return rows, written_events
