"""Issue 38, item 3: the harness's own failures, as `kafka-chaos run` meets them, each on its own cluster: a producer
that dies, a workload that does not end, and the Docker engine gone mid-run (its socket refused, so a fault's inject
fails half-way, its heal and the teardown too). Each is exit 3 with its line in run.json, and nothing of ours is
left running once the engine answers again and `kafka-chaos clean` has run."""
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import docker
import pytest
import yaml

from docker_gate import DockerGate
from harness.cluster.containers import RUN_LABEL
from kafkanet.waiting import wait_until

pytestmark = pytest.mark.cluster
ROOT = Path(__file__).resolve().parents[2]


class Run:
    """`kafka-chaos run SCENARIO --no-analysis` in the background; its stderr read line by line as it comes."""

    def __init__(self, tmp_path: Path, scenario: dict, **env) -> None:
        path = tmp_path / "scenario.yaml"
        path.write_text(yaml.safe_dump(scenario))
        self.runs = tmp_path / "runs"
        self.env = {**os.environ, "PYTHONPATH": str(ROOT), "KAFKA_CHAOS_ANALYSIS_SERVICE": "0", **env}
        self.proc = subprocess.Popen([sys.executable, "-m", "harness.cli", "run", str(path), "--runs-dir",
                                      str(self.runs), "--no-analysis"], cwd=ROOT, env=self.env, text=True,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=lambda: self.lines.extend(self.proc.stderr), daemon=True)
        self._reader.start()

    def said(self, text: str) -> bool:
        return any(text in line for line in list(self.lines))

    def end(self) -> tuple[int, Path, dict]:
        code = self.proc.wait(timeout=600)
        self._reader.join(10)
        [run_dir] = list(self.runs.iterdir())
        return code, run_dir, json.loads((run_dir / "run.json").read_text())

    def clean(self) -> None:
        done = subprocess.run([sys.executable, "-m", "harness.cli", "clean"], cwd=ROOT, env=self.env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr


def workload_pids(runs: Path) -> list[int]:
    """Processes whose environment names this test's runs folder: the members and the producer of its run."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if str(runs).encode() in (entry / "environ").read_bytes() and b"workloads." in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


def assert_nothing_left(run: Run, run_dir: Path) -> None:
    run.clean()
    engine = docker.from_env()
    assert engine.containers.list(all=True, filters={"label": f"{RUN_LABEL}={run_dir.name}"}) == []
    assert engine.networks.list(filters={"label": f"{RUN_LABEL}={run_dir.name}"}) == []
    assert workload_pids(run.runs) == []


def test_a_producer_that_dies_is_a_harness_failure(tmp_path):
    run = Run(tmp_path, {"name": "producer-dies", "producer": {"records": 40000, "rate": 2000}})
    assert wait_until(lambda: run.said("workload and faults ..."), 300), run.lines[-5:]
    producer = []
    assert wait_until(lambda: producer.extend(p for p in workload_pids(run.runs)
                                              if b"workloads.producer" in Path(f"/proc/{p}/cmdline").read_bytes()) or producer, 60)
    time.sleep(1)
    os.kill(producer[0], signal.SIGKILL)
    code, run_dir, facts = run.end()
    assert code == 3, run.lines[-10:]
    [error] = facts["errors"]
    assert error.startswith("producer exited with -9; see logs/producer"), facts
    assert any(line.startswith("harness: producer exited with -9") for line in run.lines)
    assert_nothing_left(run, run_dir)


@pytest.mark.slow  # make test's 30 minutes (a fresh clone: 29 min 32 s of tests on 2026-11-29): a producer that dies keeps the harness-failure exit in make test
def test_a_workload_that_does_not_end_is_a_harness_failure(tmp_path):
    run = Run(tmp_path, {"name": "workload-never-ends", "producer": {"records": 200000, "rate": 1000},
                         "run": {"workload_timeout_s": 3, "drain_timeout_s": 2}})
    code, run_dir, facts = run.end()
    assert code == 3, run.lines[-10:]
    assert facts["errors"] == ["the workload did not end within 3 s"], facts
    assert_nothing_left(run, run_dir)


@pytest.mark.slow  # make test's 30 minutes (a fresh clone: 29 min 32 s of tests on 2026-11-29)
def test_the_docker_engine_gone_mid_run(tmp_path):
    """The engine's socket refuses from the start of the workload: the broker freeze at 2 s fails at its inject (its
    row is in faults.jsonl with inject_error, never healed), its heal fails, the logs and the teardown fail; the run
    says each in run.json and exits 3. The engine answers again; `kafka-chaos clean` removes the cluster left behind."""
    gate = DockerGate(tmp_path / "docker.sock").open()
    try:
        run = Run(tmp_path, {"name": "engine-gone", "producer": {"records": 8000, "rate": 2000},
                             "faults": [{"kind": "broker_freeze", "target": "kafka-1", "at_s": 2, "duration_s": 2}]},
                  DOCKER_HOST=gate.docker_host)
        assert wait_until(lambda: run.said("workload and faults ..."), 300), run.lines[-5:]
        gate.close()
        code, run_dir, facts = run.end()
    finally:
        gate.open()
    assert code == 3, run.lines[-10:]
    errors = facts["errors"]
    assert any(e.startswith("broker_freeze@2s on kafka-1: inject failed") for e in errors), errors
    assert any("heal failed" in e for e in errors), errors
    assert any(e.startswith("the cluster could not be removed") for e in errors), errors
    [row] = [json.loads(line) for line in (run_dir / "faults.jsonl").read_text().splitlines()]
    assert row["inject_error"] and row["healed_at_ms"] is None, row
    left = docker.from_env().containers.list(all=True, filters={"label": f"{RUN_LABEL}={run_dir.name}"})
    assert left, "the teardown could not have removed the cluster"
    run.env["DOCKER_HOST"] = gate.docker_host
    assert_nothing_left(run, run_dir)
