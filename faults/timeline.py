"""faults.jsonl: one row per fault, rewritten whole on every change.

A row is written the moment a fault starts to be injected, with healed_at_ms null, so a harness
that dies mid-fault (or an inject that fails half-way) leaves the evidence behind: the analysis
reports it as an unhealed fault.
"""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from kafkanet.clock import now_ms


class FaultTimeline:
    now_ms = staticmethod(now_ms)

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.rows: list[dict] = []
        self._lock = threading.Lock()
        self._write()  # an empty timeline is a fact too: the run had no fault

    def injected(self, kind: str, target: str, params: dict, facts: dict) -> dict:
        """`facts`: what the analysis reads of the fault instead of its kind (Fault.facts: label, ends_process,
        effect_from)."""
        with self._lock:
            row = {"id": f"{kind}-{len(self.rows) + 1}", "kind": kind, "target": target,
                   "injected_at_ms": now_ms(), "healed_at_ms": None, "params": params, **facts}
            self.rows.append(row)
            self._write()
            return row

    def healed(self, row: dict) -> None:
        self.update(row, healed_at_ms=now_ms())

    def update(self, row: dict, **fields: object) -> None:
        with self._lock:
            row.update(fields)
            self._write()

    def _write(self) -> None:
        if self.path is None:
            return
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text("".join(json.dumps(r) + "\n" for r in self.rows))
        os.replace(tmp, self.path)
