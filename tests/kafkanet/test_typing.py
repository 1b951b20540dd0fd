"""The typed seams checked by mypy (its files and settings in pyproject.toml's [tool.mypy]): the floor package,
every fault kind (which may call only what the protocols of faults/backend.py name), and both backends held against
those protocols (backends_conform.py).

mypy rather than isinstance against runtime_checkable protocols: those see only that a member exists, while
mypy compares every signature and type (a backend whose start_broker took another argument, or whose brokers
returned a name as bytes, passes isinstance and fails here)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def mypy(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mypy", *args], cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_the_seams_type_check():
    result = mypy()
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_backend_without_a_broker_operation_fails_the_check(tmp_path):
    """The check can fail: a backend broker that cannot pause is not a BrokerHandle."""
    lacking = tmp_path / "lacking.py"
    lacking.write_text(
        "from harness.cluster.external import ExternalBroker\nfrom faults.backend import BrokerHandle\n\n"
        "class NoPause(ExternalBroker):\n    pause = None  # type: ignore[assignment]\n\n"
        "def handle(broker: NoPause) -> BrokerHandle:\n    return broker\n")
    result = mypy("--follow-imports=silent", "--ignore-missing-imports", str(lacking))
    assert result.returncode == 1 and "pause" in result.stdout, result.stdout + result.stderr


def fault_kind(tmp_path: Path, inject: str) -> Path:
    """A broker fault kind in a file of its own whose inject is `inject`."""
    tmp_path.mkdir()
    kind = tmp_path / "reboot_kind.py"
    kind.write_text(
        "from faults.broker import BrokerFault\n\n"
        "class Reboot(BrokerFault):\n    kind = 'reboot'\n\n"
        f"    def _inject(self) -> None:\n        {inject}\n\n"
        "    def _heal(self) -> None:\n        self.broker.start()\n")
    return kind


def test_a_fault_kind_calling_a_broker_method_no_protocol_names_fails_the_check(tmp_path):
    """The check can fail: a kind that reaches past BrokerHandle (here for the container backend's own
    `container`) would work on one backend only, and mypy refuses it; the same kind calling stop() passes."""
    flags = ("--follow-imports=silent", "--ignore-missing-imports", "--check-untyped-defs")
    fine = mypy(*flags, str(fault_kind(tmp_path / "fine", "self.broker.stop(60)")))
    assert fine.returncode == 0, fine.stdout + fine.stderr
    reaching = mypy(*flags, str(fault_kind(tmp_path / "reaching", "self.broker.container.restart()")))
    assert reaching.returncode == 1 and '"BrokerHandle" has no attribute "container"' in reaching.stdout, \
        reaching.stdout + reaching.stderr
