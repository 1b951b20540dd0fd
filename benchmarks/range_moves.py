"""The range assignors' moves, computed against measured (issue 40, docs/rebalance-cost.md).

A range assignor lays the members out in member-id order and gives each a run of partitions, the first (partitions
mod members) one more. The classic one (eager-range cells): a classic member id is its client.id, a dash and a UUID,
and ours are named member-1 … member-N, so how many partitions a join or a crash moves follows from the names
alone. KIP-848's server-side range assignor (consumer-range cells; KAFKA-16944) does the same over the member ids
the clients drew (random UUIDs: a dynamic member has no instance id to sort by first); they are read from the
coordinator's own description (group-states.jsonl's member_ids), before the trigger and once the group is stable
after it, in the cells sampled since the sampler records them.

This prints, for every such finished cell of a sweep, the partitions the rule moves and the partitions the sweep
measured moving (its `moved`: served by another member at the window's end than before the trigger), and says
whether they agree.

    .venv/bin/python -m benchmarks.range_moves [--sweep sweeps/published]
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def ranges(members: list[str], partitions: int) -> dict[int, str]:
    """partition -> member under the range rule, the member ids sorted as strings (``-`` sorts before a digit, so
    ``member-1-<uuid>`` < ``member-10-<uuid>`` as ``member-1`` < ``member-10``)."""
    ordered = sorted(members)
    quota, extra = divmod(partitions, len(ordered))
    owner, start = {}, 0
    for i, member in enumerate(ordered):
        count = quota + (1 if i < extra else 0)
        owner.update({p: member for p in range(start, start + count)})
        start += count
    return owner


def moved_by_rule(before: list[str], after: list[str], partitions: int) -> int:
    a, b = ranges(before, partitions), ranges(after, partitions)
    return sum(1 for p in range(partitions) if a[p] != b[p])


def changed_members(run_dir: Path, members: list[str]) -> tuple[list[str], list[str]]:
    """(joined, crashed): the members the cell's trigger started or killed, from its faults.jsonl (a join row
    written before faults named their members: the members with an event log beyond the cell's own)."""
    joined, crashed = [], []
    for line in (run_dir / "faults.jsonl").read_text().splitlines():
        fault = json.loads(line)
        if fault["kind"] == "member_join":
            logged = sorted({p.name.split(".")[0] for p in (run_dir / "events").iterdir()} - set(members))
            joined += fault.get("members") or logged
        elif fault["kind"] == "member_crash":
            crashed.append(fault["target"])
    return joined, crashed


def described_ids(run_dir: Path, trigger_ms: int) -> tuple[list[str], list[str]] | None:
    """KIP-848: the member ids the coordinator listed in its last sample before the trigger and in its first Stable
    sample with another member set after it; None when the run's samples carry no member ids."""
    rows = [json.loads(line) for line in (run_dir / "group-states.jsonl").read_text().splitlines()]
    rows = [r for r in rows if r.get("member_ids")]
    before = [r for r in rows if r["ts_ms"] < trigger_ms]
    if not before:
        return None
    ids = sorted(before[-1]["member_ids"])
    after = next((sorted(r["member_ids"]) for r in rows if r["ts_ms"] > trigger_ms and r.get("state") == "Stable"
                  and sorted(r["member_ids"]) != ids), None)
    return (ids, after) if after else None


def trigger_ms(run_dir: Path) -> int:
    return json.loads((run_dir / "faults.jsonl").read_text().splitlines()[0])["injected_at_ms"]


def compare(cell: dict) -> dict | None:
    run_dir = Path(cell["run_dir"])
    members = [f"member-{i}" for i in range(1, cell["members"] + 1)]
    joined, crashed = changed_members(run_dir, members)
    if cell["style"] == "consumer-range":
        described = described_ids(run_dir, trigger_ms(run_dir))
        if described is None:
            return None
        rule = moved_by_rule(*described, cell["partitions"])
    else:
        rule = moved_by_rule(members, [m for m in members if m not in crashed] + joined, cell["partitions"])
    return {"cell": cell["cell"], "members": cell["members"], "trigger": cell["trigger"], "changed": joined + crashed,
            "moved_by_rule": rule, "moved_measured": cell["moved"], "agree": rule == cell["moved"]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sweep", type=Path, default=ROOT / "sweeps" / "published")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "range-moves.json")
    a = ap.parse_args(argv)
    latest = {}
    for line in (a.sweep / "cells.jsonl").read_text().splitlines():
        row = json.loads(line)
        latest[row["cell"]] = row
    cells = [r for r in latest.values() if r["style"] in ("eager-range", "consumer-range") and r["status"] == "ok"]
    compared = [compare(r) for r in sorted(cells, key=lambda r: (r["style"], r["trigger"], r["members"], r["cell"]))]
    rows = [r for r in compared if r]
    for row in rows:
        print(f"{row['cell']:<50} {', '.join(row['changed']):<12} rule {row['moved_by_rule']:>4}  measured "
              f"{row['moved_measured']:>4}  {'agree' if row['agree'] else 'DIFFER'}")
    print(f"{sum(r['agree'] for r in rows)} of {len(rows)} range cells agree with the range rule "
          f"({len(compared) - len(rows)} consumer-range cells sampled before member ids were recorded)")
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(rows, indent=2) + "\n")
    return 0 if all(r["agree"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
