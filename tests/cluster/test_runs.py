"""Whole runs on the real cluster: the default scenario, and a run interrupted mid-fault."""
import json
import signal
import subprocess
import sys
from pathlib import Path

import docker
import pytest
import yaml

from harness.cluster.containers import PROJECT_LABEL, RUN_LABEL, sweep_stale_containers
from kafkanet.waiting import wait_until
from run_logs import rows

pytestmark = pytest.mark.cluster
ROOT = Path(__file__).resolve().parents[2]


def test_default_scenario_loses_nothing_and_the_summary_agrees_with_the_logs(chaos_run):
    scenario = yaml.safe_load((ROOT / "scenarios" / "default.yaml").read_text())
    outcome = chaos_run(scenario)
    assert outcome.errors == [], outcome.errors
    assert outcome.drained
    summary = outcome.summary

    produced = rows(outcome.run_dir / "produced")
    consumed = rows(outcome.run_dir / "consumed")
    assert not list(outcome.run_dir.glob("*/*.partial"))
    assert [p.suffix for p in (outcome.run_dir / "consumed").iterdir()] == [".parquet"] * 3, "logs compacted"
    acked = {(r["topic"], r["partition"], r["offset"]) for r in produced if r.get("status", "ok") == "ok"}
    deliveries: dict[tuple, int] = {}
    for r in consumed:
        key = (r["topic"], r["partition"], r["offset"])
        deliveries[key] = deliveries.get(key, 0) + 1

    assert summary["lost_records"] == 0 == len(acked - deliveries.keys())
    assert summary["produced_records"] == len(acked) == scenario["producer"]["records"]
    assert summary["consumed_rows"] == len(consumed)
    assert summary["duplicated_offsets"] == sum(1 for n in deliveries.values() if n > 1)
    assert summary["duplicate_extra_deliveries"] == sum(n - 1 for n in deliveries.values())

    [fault] = rows(outcome.run_dir, "faults")
    assert fault["kind"] == "broker_freeze" and fault["healed_at_ms"] - fault["injected_at_ms"] >= 11_000
    assert (outcome.run_dir / "report" / "index.html").stat().st_size > 0
    assert (outcome.run_dir / "logs" / f"{fault['target']}.log").read_text().count("INFO") > 10  # brokers really log
    # its librdkafka members joined in time: none kept its group debug lines (workloads/client_debug.py), and their
    # process logs carry no debug line (the watch keeps them in memory only)
    assert list((outcome.run_dir / "logs").glob("*.cgrp.log")) == []
    member_logs = [p.read_text() for p in (outcome.run_dir / "logs").glob("member-*.log")]
    assert member_logs and not any("%7|" in text for text in member_logs)


def test_sigterm_mid_fault_heals_and_removes_everything(tmp_path):
    """Run as a replay of the plan `validate --plan` printed (no cluster needed for it): the run executes
    that plan, and its faults are the plan's."""
    scenario = tmp_path / "long.yaml"
    scenario.write_text(yaml.safe_dump({
        "name": "interrupted", "producer": {"records": 1_000_000, "rate": 1000},
        "faults": [{"kind": "broker_freeze", "target": "kafka-1", "at_s": 1, "duration_s": 600},
                   {"kind": "proxy_cut", "target": "kafka-3", "at_s": 1, "duration_s": 600}]}))
    plan = tmp_path / "plan.json"
    plan.write_text(subprocess.run([sys.executable, "-m", "harness.cli", "validate", "--plan", str(scenario)],
                                   capture_output=True, text=True, check=True).stdout)
    runs = tmp_path / "runs"
    process = subprocess.Popen([sys.executable, "-m", "harness.cli", "run", "--plan", str(plan), "--runs-dir", str(runs)],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        def both_injected() -> Path | None:
            found = list(runs.glob("*/faults.jsonl"))
            return found[0] if found and len(found[0].read_text().splitlines()) == 2 else None

        wait_until(lambda: process.poll() is not None or both_injected(), 240, interval_s=0.5)
        faults_file = both_injected()
        assert faults_file is not None, "both faults were never injected"
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=180)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, output
    faults = rows(faults_file.parent, "faults")
    assert faults and all(f["healed_at_ms"] is not None for f in faults), faults
    planned = json.loads(plan.read_text())["schedule"]
    assert sorted((f["kind"], f["target"]) for f in faults) == sorted((f["kind"], f["target"]) for f in planned)
    ran = json.loads((faults_file.parent / "plan.json").read_text())
    assert ran["schedule"] == planned and ran["members"] == json.loads(plan.read_text())["members"]
    run_id = faults_file.parent.name
    left = docker.from_env().containers.list(all=True, filters={"label": f"{RUN_LABEL}={run_id}"})
    assert left == [], [c.name for c in left]
    ours = [c.name for c in docker.from_env().containers.list(all=True, filters={"label": PROJECT_LABEL})
            if c.labels.get(RUN_LABEL) == run_id]
    assert ours == []
    assert workload_processes_of(run_id) == []


@pytest.mark.slow  # make test's 30 minutes (a fresh clone: 29 min 32 s of tests on 2026-11-29): make test keeps the SIGTERM cleanup; the nightly this and the mid-crash kill
def test_a_killed_harness_leaves_nothing_behind_for_long(tmp_path):
    """SIGKILL runs no `finally`: members stop by themselves, and the next start sweeps the containers."""
    scenario = tmp_path / "long.yaml"
    scenario.write_text(yaml.safe_dump({"name": "killed", "producer": {"records": 1_000_000, "rate": 1000},
                                        "consumer_group": {"client": "java", "members": 2},
                                        "faults": [{"kind": "broker_freeze", "target": "kafka-2", "at_s": 1, "duration_s": 600}]}))
    runs = tmp_path / "runs"
    process = subprocess.Popen([sys.executable, "-m", "harness.cli", "run", str(scenario), "--runs-dir", str(runs)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: any(f.read_text() for f in runs.glob("*/faults.jsonl")), 240, interval_s=0.5)
        [run_dir] = list(runs.iterdir())
        assert workload_processes_of(run_dir.name), "no workload was running"
    finally:
        process.kill()
        process.wait()
    # a clean stop may wait on the frozen broker; 15 s later it is forced
    wait_until(lambda: not workload_processes_of(run_dir.name), 60, interval_s=0.5)
    assert workload_processes_of(run_dir.name) == []
    for member in ("member-1", "member-2"):  # the Java launchers converted their output while they ran
        printed = [json.loads(line) for line in (run_dir / "logs" / f"{member}.verifiable.jsonl").read_text().splitlines()
                   if line.endswith("}")]
        consumed, events = run_dir / "consumed" / f"{member}.jsonl", run_dir / "events" / f"{member}.jsonl"
        assert len(consumed.read_text().splitlines()) == sum(e.get("name") == "record_data" for e in printed)
        assert "started" in {json.loads(line)["kind"] for line in events.read_text().splitlines()}
    sweep_stale_containers()  # the run's 3 brokers (one paused) and Toxiproxy: their owner is gone. (Not counted:
    # another harness starting meanwhile on the same engine sweeps them too, and may be first.)
    assert docker.from_env().containers.list(all=True, filters={"label": f"{RUN_LABEL}={run_dir.name}"}) == []


def workload_processes_of(run_id: str) -> list[int]:
    """Pids whose workload config (an environment variable) names this run."""
    pids = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if b"KAFKA_CHAOS_WORKLOAD_CONFIG" in (data := environ.read_bytes()) and run_id.encode() in data:
                pids.append(int(environ.parent.name))
        except OSError:
            continue
    return pids


@pytest.mark.slow
def test_the_next_command_cleans_up_after_a_harness_killed_mid_crash_split_and_freeze(tmp_path):
    """SIGKILL while a broker is crashed (its container stopped), another is split off (iptables rules in
    its namespace) and a member is frozen (SIGSTOP, so it cannot notice its harness is gone):
    `kafka-chaos clean` leaves nothing stopped, paused, cut or running."""
    scenario = tmp_path / "long.yaml"
    scenario.write_text(yaml.safe_dump({
        "name": "killed-mid-faults", "producer": {"records": 1_000_000, "rate": 1000},
        "consumer_group": {"members": 2},
        "faults": [{"kind": "broker_crash", "target": "kafka-1", "at_s": 1, "duration_s": 600},
                   {"kind": "split", "target": "kafka-3", "at_s": 1, "duration_s": 600},
                   {"kind": "member_freeze", "target": "member-2", "at_s": 1, "duration_s": 600}]}))
    runs = tmp_path / "runs"
    process = subprocess.Popen([sys.executable, "-m", "harness.cli", "run", str(scenario), "--runs-dir", str(runs)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        def three_injected() -> bool:
            found = list(runs.glob("*/faults.jsonl"))
            return bool(found) and sum("inject_done_ms" in line for line in found[0].read_text().splitlines()) == 3

        wait_until(lambda: process.poll() is not None or three_injected(), 300, interval_s=0.5)
        [run_dir] = list(runs.iterdir())
        assert sum("inject_done_ms" in line for line in (run_dir / "faults.jsonl").read_text().splitlines()) == 3
    finally:
        process.kill()
        process.wait()
    assert any(c.status == "exited" for c in docker.from_env().containers.list(
        all=True, filters={"label": f"{RUN_LABEL}={run_dir.name}"})), "the crashed broker should be left stopped"
    clean = subprocess.run([sys.executable, "-m", "harness.cli", "clean"], capture_output=True, text=True, timeout=120)
    assert clean.returncode == 0 and "thawed 1 " in clean.stdout, clean.stdout + clean.stderr
    assert docker.from_env().containers.list(all=True, filters={"label": f"{RUN_LABEL}={run_dir.name}"}) == []
    # the thawed member sees its harness gone and stops (forced after 15 s)
    wait_until(lambda: not workload_processes_of(run_dir.name), 60, interval_s=0.5)
    assert workload_processes_of(run_dir.name) == []

