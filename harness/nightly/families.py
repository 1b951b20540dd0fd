"""Which fault families a test session or a night really ran, read from the run directories it left: every row of
faults.jsonl of a run on a real cluster (its cluster.json names the cluster Kafka gave it) is one family, its kind,
or `rpc:<action>` for a rule on the group's requests. `make test` fails when a family did not run at all; the
nightly gate turns red when a family the previous complete night ran did not run (harness/nightly/gate.py)."""
from __future__ import annotations

import json
import typing
from collections import Counter
from pathlib import Path

LEDGER_FILE = "families.json"


def all_families() -> list[str]:
    """Every fault kind, the rpc kind by its actions."""
    from faults.kinds import fault_kinds
    from faults.rpc import RpcParams
    actions = typing.get_args(RpcParams.model_fields["action"].annotation)
    return sorted([k for k in fault_kinds() if k != "rpc"] + [f"rpc:{a}" for a in actions])


def run_families(run_dir: Path) -> list[str]:
    """The families injected in one run directory: none unless it ran on a real cluster."""
    try:
        if "cluster_id" not in json.loads((run_dir / "cluster.json").read_text()):
            return []
        rows = [json.loads(line) for line in (run_dir / "faults.jsonl").read_text().splitlines() if line.strip()]
    except (OSError, ValueError):
        return []
    return [f"rpc:{(r.get('params') or {}).get('action')}" if r.get("kind") == "rpc" else str(r.get("kind"))
            for r in rows if isinstance(r, dict)]


def families_under(*roots: Path) -> Counter:
    """How many times each family was injected in the run directories under `roots`."""
    ran: Counter = Counter()
    for root in roots:
        if root is not None and Path(root).is_dir():
            for faults in Path(root).rglob("faults.jsonl"):
                ran.update(run_families(faults.parent))
    return ran


def write_ledger(path: Path, ran: Counter, selection: str) -> dict:
    """families.json: what ran, how often, what did not, and the selection that ran ("all": every family test)."""
    ledger = {"selection": selection, "ran": dict(sorted(ran.items())),
              "not_run": [f for f in all_families() if f not in ran]}
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(ledger, indent=2) + "\n")
    return ledger
