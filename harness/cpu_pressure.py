"""How starved for CPU the machine was while a phase of a run went on: Linux's pressure stall information
(/proc/pressure/cpu, `some`): the share of the phase's wall time during which at least one runnable task waited for
a CPU. It is the machine's, not the run's alone: everything on it counts. Near 0 on an idle machine; near 100 when
there is always more to run than cores (a 500-member group on 2 cores). None where the kernel has no PSI."""
from __future__ import annotations

import time
from pathlib import Path

PSI_CPU = Path("/proc/pressure/cpu")


def waited_us() -> int | None:
    """The kernel's running total of microseconds some task waited for a CPU; None without PSI."""
    try:
        some = PSI_CPU.read_text().splitlines()[0]
        return int(some.rsplit("total=", 1)[1])
    except (OSError, IndexError, ValueError):
        return None


class Stopwatch:
    """Wall time and CPU waiting from its start; `pct()` the share of the one that was the other."""

    def __init__(self) -> None:
        self.started_s, self.waited = time.monotonic(), waited_us()

    def pct(self) -> float | None:
        now = waited_us()
        elapsed_us = (time.monotonic() - self.started_s) * 1e6
        if now is None or self.waited is None or elapsed_us <= 0:
            return None
        return round(min(100.0, 100 * (now - self.waited) / elapsed_us), 1)
