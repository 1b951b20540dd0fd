"""What the harness asks of a running workload process, through a small JSON file in run_dir/control/.

A slow_processing trigger slows a member down; a topic_create trigger gives the producer a new topic.
"""
from __future__ import annotations

import json
import os
from pathlib import Path


class ControlFile:
    """What the harness asks of a running member (e.g. {"processing": {"per_batch_ms": 40000, ...}} while a slow_processing
    trigger lasts); re-read only when the file changes. Absent means: the member's own settings."""

    def __init__(self, path: Path) -> None:
        self.path, self._seen, self._value = path, None, None

    def read(self) -> dict | None:
        try:
            stamp = self.path.stat().st_mtime_ns
        except FileNotFoundError:
            self._seen, self._value = None, None
            return None
        if stamp != self._seen:
            try:
                self._value = json.loads(self.path.read_text())
            except (OSError, ValueError):
                return self._value  # written half-way: keep the last one, read again next batch
            self._seen = stamp
        return self._value


def control_path(run_dir: Path | str, name: str) -> Path:
    """The control file of the workload process `name` (a member, the producer) of a run."""
    return Path(run_dir) / "control" / f"{name}.json"


def write_atomically(path: Path, data: dict) -> None:
    """Written whole or not at all: a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


def host_control_path(run_dir: Path | str, host: str) -> Path:
    """What the harness asks of a member host (control/<host>.host.json: workloads.config.HostConfig's protocol);
    apart from control/<member>.json, which a member reads for itself."""
    return control_path(run_dir, f"{host}.host")


def host_ack_path(run_dir: Path | str, host: str) -> Path:
    """Where a member host says which of its members are down and which run (control/<host>.ack.json)."""
    return control_path(run_dir, f"{host}.ack")
