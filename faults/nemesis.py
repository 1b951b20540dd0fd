"""The nemesis: runs a schedule of faults against the clock, and heals every fault at the end.

As in Jepsen's combined nemesis, each step is an injector with its own final heal; `heal_all()`
runs every heal, in order, whatever happened before (normal end, exception, SIGINT/SIGTERM).
Heals are due `duration_s` after the inject actually finished (a slow broker pause does not eat
into the fault's length). A heal runs beside the schedule, in its own thread: a broker's restart waits minutes at
most for the broker to rejoin, and the next fault's inject and heal keep their own times meanwhile (a partition
healed late can be what keeps the restarted broker out). A heal that fails is retried; if it still fails it is reported as an
error (the harness then exits 3) with the fault left unhealed in faults.jsonl, and the other heals
still run.
"""
from __future__ import annotations

import heapq
import threading
import time
from dataclasses import dataclass
from typing import Callable

from faults.base import Fault

HEAL_ATTEMPTS = 3
HEAL_RETRY_S = 1.0


@dataclass(frozen=True)
class Step:
    at_s: float
    duration_s: float
    make_fault: Callable[[], Fault]  # called when the step fires, so targets resolve then
    describe: str


class Nemesis:
    def __init__(self, steps: list[Step], log: Callable[[str], None] = print) -> None:
        self.steps = sorted(steps, key=lambda s: s.at_s)
        self.log = log
        self.faults: list[Fault] = []
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._healing: list[threading.Thread] = []

    def start(self) -> "Nemesis":
        self._thread = threading.Thread(target=self._run, name="nemesis", daemon=True)
        self._t0 = time.monotonic()
        self._thread.start()
        return self

    def _run(self) -> None:
        # (due time, order, what): inject a step at its at_s, heal its fault at_s + duration_s after.
        queue: list[tuple[float, int, Step | Fault]] = [(s.at_s, i, s) for i, s in enumerate(self.steps)]
        heapq.heapify(queue)
        counter = len(queue)
        while queue and not self._stop.is_set():
            due, _, due_item = queue[0]
            if self._stop.wait(max(0.0, self._t0 + due - time.monotonic())):
                return
            heapq.heappop(queue)
            if isinstance(due_item, Step):
                fault = self._inject(due_item)
                if fault is not None:
                    counter += 1
                    injected_at = time.monotonic() - self._t0
                    heapq.heappush(queue, (injected_at + due_item.duration_s, counter, fault))
            else:
                self._heal_beside(due_item)
        self._join_heals()

    def _heal_beside(self, fault: Fault) -> None:
        thread = threading.Thread(target=self._heal, args=(fault,), name=f"heal-{fault.kind}", daemon=True)
        self._healing.append(thread)
        thread.start()

    def _join_heals(self) -> None:
        for thread in list(self._healing):
            thread.join()

    def _inject(self, step: Step) -> Fault | None:
        try:
            fault = step.make_fault()
            self.faults.append(fault)  # before inject: a half-done inject is healed at the end too
            fault.inject()
            self.log(f"nemesis: injected {fault!r} for {step.duration_s:g} s")
            return fault
        except Exception as exc:
            self.errors.append(f"{step.describe}: inject failed: {exc}")
            self.log(f"nemesis: {step.describe}: inject failed: {exc}")
            return None

    def _heal(self, fault: Fault) -> None:
        for attempt in range(1, HEAL_ATTEMPTS + 1):
            try:
                if fault.heal():
                    self.log(f"nemesis: healed {fault!r}")
                return
            except Exception as exc:
                self.log(f"nemesis: {fault!r}: heal attempt {attempt} of {HEAL_ATTEMPTS} failed: {exc}")
                if attempt == HEAL_ATTEMPTS:
                    error = f"{fault!r}: heal failed {HEAL_ATTEMPTS} times: {exc}"
                    if error not in self.errors:
                        self.errors.append(error)
                else:
                    time.sleep(HEAL_RETRY_S * attempt)

    @property
    def finished(self) -> bool:
        return self._thread is not None and not self._thread.is_alive()

    def active(self) -> list[Fault]:
        return [f for f in self.faults if f.active]

    def heal_all(self) -> None:
        """The final heal: stop the schedule, then heal every fault still active."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(30)
        for fault in self.faults:  # a heal still running beside holds its fault's lock: this one then finds it healed
            self._heal(fault)
        self._join_heals()
