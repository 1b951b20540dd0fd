"""The run directory (contract v1 in DESIGN.md): where every fact of a run is written."""
from __future__ import annotations

import json
import secrets
import time
from pathlib import Path

SUBDIRS = ("produced", "consumed", "events", "logs", "report")


def new_run_id(name: str) -> str:
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{name}-{secrets.token_hex(3)}"


def create_run_dir(runs_root: Path, run_id: str) -> Path:
    run_dir = runs_root / run_id
    for sub in SUBDIRS:
        (run_dir / sub).mkdir(parents=True, exist_ok=True)
    return run_dir


def write_json(path: Path, data: dict) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n")
