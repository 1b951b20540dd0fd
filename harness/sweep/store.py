"""A sweep's folder: what it is (sweep.json: the file it runs and its fingerprint), one row a finished cell
(cells.jsonl, appended and flushed as each cell ends: a sweep killed mid-cell loses only that cell), the cells'
run directories (runs/), and what is drawn from the rows (harness/sweep/outputs.py)."""
from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path

from harness.scenario import ScenarioError
from harness.sweep.spec import SweepSpec

SWEEP_FILE = "sweep.json"
CELLS_FILE = "cells.jsonl"
RETRIED = ("failed",)  # a cell the harness could not finish runs again when the sweep resumes


class SweepDir:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    @property
    def runs(self) -> Path:
        return self.path / "runs"

    def open(self, spec: SweepSpec, source: str) -> dict[str, dict]:
        """Start the folder, or resume it: the finished cells by id. A folder of another sweep, or of this one's
        file since changed, is refused (ScenarioError) and left as it is."""
        meta_path = self.path / SWEEP_FILE
        if meta_path.exists():
            self.same_sweep(spec, source)
            self._drop_partial_line()
            return self.finished()
        if self.path.exists() and any(self.path.iterdir()):
            raise ScenarioError(f"--out: {self.path} is not empty and holds no sweep; give an empty or new folder")
        self.runs.mkdir(parents=True, exist_ok=True)
        meta = {"name": spec.name, "source": source, "fingerprint": spec.fingerprint(),
                "started": datetime.now(timezone.utc).isoformat(timespec="seconds"), "spec": spec.model_dump(mode="json")}
        meta_path.write_text(json.dumps(meta, indent=2) + "\n")
        return {}

    def same_sweep(self, spec: SweepSpec, source: str) -> None:
        """ScenarioError unless this folder holds a sweep started from ``spec`` as it is now."""
        meta_path = self.path / SWEEP_FILE
        if not meta_path.exists():
            raise ScenarioError(f"--out: {self.path} holds no sweep")
        meta = json.loads(meta_path.read_text())
        if meta.get("fingerprint") != spec.fingerprint():
            raise ScenarioError(f"{source}: the sweep in {self.path} was started from a different sweep file "
                                f"({meta.get('source')}, fingerprint {meta.get('fingerprint')}, now "
                                f"{spec.fingerprint()}); its finished cells are kept there: give --out another "
                                "folder, or restore the file it was started with")

    def _drop_partial_line(self) -> None:
        """A sweep killed while it wrote a row leaves half a line: cut it, so the next row starts a line of its own."""
        path = self.path / CELLS_FILE
        if path.exists():
            data = path.read_bytes()
            if data and not data.endswith(b"\n"):
                path.write_bytes(data[:data.rfind(b"\n") + 1])

    def meta(self) -> dict:
        return json.loads((self.path / SWEEP_FILE).read_text())

    def rows(self) -> list[dict]:
        path = self.path / CELLS_FILE
        if not path.exists():
            return []
        rows = []
        for line in path.read_text().splitlines():
            try:
                rows.append(json.loads(line))
            except ValueError:  # the last line of a sweep killed while it wrote: that cell runs again
                continue
        return rows

    def finished(self) -> dict[str, dict]:
        """The latest row of each cell, except the cells to run again."""
        latest = {row["cell"]: row for row in self.rows()}
        return {cell: row for cell, row in latest.items() if row["status"] not in RETRIED}

    def append(self, row: dict) -> None:
        with (self.path / CELLS_FILE).open("a", encoding="utf-8") as out:
            out.write(json.dumps(row, sort_keys=True) + "\n")
            out.flush()
            os.fsync(out.fileno())
