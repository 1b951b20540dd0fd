"""What every fault is: inject(), heal() (idempotent), a context manager, recorded in the timeline."""
from __future__ import annotations

import threading

from faults.timeline import FaultTimeline


class Fault:
    kind = "fault"

    def __init__(self, target: str, timeline: FaultTimeline | None = None, **params) -> None:
        self.target = target
        self.params = params
        self.timeline = timeline or FaultTimeline(None)
        self.record: dict | None = None
        self._lock = threading.Lock()

    @property
    def active(self) -> bool:
        return self.record is not None and self.record["healed_at_ms"] is None

    def inject(self) -> "Fault":
        with self._lock:
            if not self.active:
                self._inject()
                self.record = self.timeline.injected(self.kind, self.target, self.params)
        return self

    def heal(self) -> bool:
        """Heal if active; True if this call healed it."""
        with self._lock:
            if not self.active:
                return False
            self._heal()
            self.timeline.healed(self.record)
            return True

    def __enter__(self) -> "Fault":
        return self.inject()

    def __exit__(self, *exc) -> None:
        self.heal()

    def _inject(self) -> None:
        raise NotImplementedError

    def _heal(self) -> None:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{self.kind}({self.target})"
