"""A phase's CPU pressure (harness/cpu_pressure.py): the share of its wall time some task waited for a CPU, read from
the kernel's /proc/pressure/cpu. On this machine's kernel, real: a phase that keeps three busy processes a core shows
most of its time under pressure."""
import os
import time

import pytest

from harness import cpu_pressure

pytestmark = pytest.mark.skipif(cpu_pressure.waited_us() is None, reason="the kernel has no PSI")


def spin(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def test_more_busy_processes_than_cores_show_as_pressure():
    cores = os.cpu_count() or 1
    watch = cpu_pressure.Stopwatch()
    children = []
    for _ in range(cores * 3):
        pid = os.fork()
        if pid == 0:
            spin(1.5)
            os._exit(0)
        children.append(pid)
    for pid in children:
        os.waitpid(pid, 0)
    busy = watch.pct()
    assert busy is not None and busy > 50, busy


def test_a_stopwatch_without_psi_says_none(monkeypatch, tmp_path):
    monkeypatch.setattr(cpu_pressure, "PSI_CPU", tmp_path / "absent")
    assert cpu_pressure.Stopwatch().pct() is None
