"""A sweep's folder: what it is (sweep.json: the file it runs and its fingerprint), one row a finished cell
(cells.jsonl, appended and flushed as each cell ends: a sweep killed mid-cell loses only that cell), the cells'
run directories (runs/; a row names its own relative to the folder), and what is drawn from the rows
(harness/sweep/outputs.py). A published sweep keeps sweep.json and cells.jsonl beside its page (harness/sweep/
publish.py), and a folder on another machine starts from them (:meth:`SweepDir.adopt`)."""
from __future__ import annotations

import fnmatch
import json
import os
from datetime import datetime, timezone
from pathlib import Path

from harness.scenario import ScenarioError
from harness.sweep.spec import SweepSpec

SWEEP_FILE = "sweep.json"
CELLS_FILE = "cells.jsonl"
RETRIED = ("failed",)  # a cell the harness could not finish runs again when the sweep resumes


def measured_before(row: dict, since: str) -> bool:
    """The row was measured before ``since`` (a rerun's start): rows written before rows had a time count as earlier."""
    return row.get("measured_at", "") < since


def utc_now() -> str:
    """The time as rows and sweep.json keep it (ISO 8601, UTC, to the second: it sorts as text)."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


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
                "started": utc_now(), "spec": spec.model_dump(mode="json")}
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

    def relative(self, run_dir: Path) -> str:
        """A cell's run directory as its row keeps it: relative to the sweep's folder (a published row names no
        path of the machine that ran it)."""
        try:
            return str(Path(run_dir).resolve().relative_to(self.path.resolve()))
        except ValueError:
            return str(run_dir)

    def run_dir(self, row: dict) -> Path | None:
        """The cell's run directory, if it is still there (a row resumed from published rows keeps a path whose
        directory stayed on the machine that ran it); rows written before paths were relative give an absolute one."""
        if not row.get("run_dir"):
            return None
        path = self.path / row["run_dir"]  # an absolute run_dir stays itself
        return path if path.is_dir() else None

    def adopt(self, published: Path, spec: SweepSpec, source: str) -> int:
        """Start this (new or empty) folder from the rows a published page keeps beside it (``published``, e.g.
        docs/rebalance-cost/: its sweep.json and cells.jsonl): the sweep then resumes from them. Returns how many
        rows; ScenarioError (nothing written) when this folder is not empty, ``published`` holds no sweep, or one
        started from another sweep file than ``spec``."""
        if self.path.exists() and any(self.path.iterdir()):
            raise ScenarioError(f"--adopt: {self.path} is not empty; give a new folder to start from {published}")
        if not all((published / name).is_file() for name in (SWEEP_FILE, CELLS_FILE)):
            raise ScenarioError(f"--adopt: {published} holds no published sweep ({SWEEP_FILE} and {CELLS_FILE})")
        SweepDir(published).same_sweep(spec, source)
        self.runs.mkdir(parents=True, exist_ok=True)
        for name in (SWEEP_FILE, CELLS_FILE):
            (self.path / name).write_bytes((published / name).read_bytes())
        return len(self.rows())

    def stale(self, pattern: str, finished: list[str]) -> set[str]:
        """The finished cells matching ``pattern`` (fnmatch, over cell ids) measured before this rerun began: the
        first run of a pattern records when it began in sweep.json (``reruns``), so a rerun cut short and started
        again with the same pattern runs only the cells it had not run yet."""
        meta = self.meta()
        reruns = meta.setdefault("reruns", {})
        if pattern not in reruns:
            reruns[pattern] = utc_now()
            (self.path / SWEEP_FILE).write_text(json.dumps(meta, indent=2) + "\n")
        since = reruns[pattern]
        latest = {row["cell"]: row for row in self.rows()}
        return {cell for cell in finished if fnmatch.fnmatchcase(cell, pattern)
                and measured_before(latest[cell], since)}

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
