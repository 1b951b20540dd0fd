"""Rows of a run directory's logs, JSONL or Parquet (a run leaves produced/ and consumed/ as Parquet)."""
import json
from pathlib import Path

import pyarrow.parquet as pq


def rows(folder: Path, name: str = "*") -> list[dict]:
    out = []
    for path in sorted(folder.glob(f"{name}.jsonl")):
        out += [json.loads(line) for line in path.read_text().splitlines() if line]
    for path in sorted(folder.glob(f"{name}.parquet")):
        out += pq.read_table(path).to_pylist()
    return out


def owned_before(outcome, member: str, at_ms: int) -> set[str]:
    """The partitions `member` owned just before at_ms, replayed from its events: `assigned` adds (eager
    revokes everything first, cooperative assigns increments), `revoked` and `lost` remove."""
    owned: set[str] = set()
    for e in sorted(rows(outcome.run_dir / "events"), key=lambda e: e["ts_ms"]):
        if e["member"] != member or e["ts_ms"] >= at_ms:
            continue
        if e["kind"] == "assigned":
            owned |= set(e["partitions"])
        elif e["kind"] in ("revoked", "lost"):
            owned -= set(e["partitions"])
    return owned


def handed_over(run_dir: Path, member: str, partitions, after_ms: int) -> int | None:
    """When a member other than ``member`` was first assigned one of ``partitions``, at or after ``after_ms``."""
    return min((e["ts_ms"] for e in rows(run_dir / "events") if e["member"] != member and e["kind"] == "assigned"
                and e["ts_ms"] >= after_ms and set(e["partitions"]) & set(partitions)), default=None)
