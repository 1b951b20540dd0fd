"""`kafka-chaos run` as a user runs it, to its end, each with its own cluster: exit 0 with the analysis service on
(warmed while the group drains), exit 1 on an anomaly planted for certain, `--no-analysis`, and an analysis that
fails (exit 3 in one line, the run directory kept and analysable again). The exit codes are what CI reads."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from analysis.api import service
from kafkanet.waiting import wait_until

pytestmark = pytest.mark.cluster
ROOT = Path(__file__).resolve().parents[2]
SMALL = {"name": "cli-run", "producer": {"records": 4000, "rate": 2000},
         "faults": [{"kind": "broker_freeze", "target": "kafka-1", "at_s": 1, "duration_s": 1}]}


def kafka_chaos(tmp_path, scenario: dict, *args, **env):
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(scenario))
    runs = tmp_path / "runs"
    done = subprocess.run([sys.executable, "-m", "harness.cli", "run", str(path), "--runs-dir", str(runs), *args],
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT), **env}, capture_output=True, text=True,
                          timeout=600)
    [run_dir] = list(runs.iterdir())
    return done, run_dir


def our_lines(stderr: str) -> list[str]:
    """stderr less the progress lines: what a user reads of ours, and no JVM or Spark text."""
    for marker in ("Traceback", "\tat ", "org.apache.spark", "WARN"):
        assert marker not in stderr, stderr[-3000:]
    return [line for line in stderr.splitlines() if not line.startswith("[")]


@pytest.mark.slow  # make test's 30 minutes (a fresh clone: 30 min 46 s on 2026-11-29): the nightly runs it
def test_a_clean_run_with_the_analysis_service_warmed_while_the_group_drains_exits_0(tmp_path):
    folder = Path(f"/tmp/kc-svc-{os.getpid()}-run")
    env = {service.ENV: "1", service.DIR_ENV: str(folder)}
    try:
        done, run_dir = kafka_chaos(tmp_path, SMALL, **env)
        assert done.returncode == 0, done.stderr[-3000:]
        assert our_lines(done.stderr) == []
        printed = done.stdout.split(f"run directory: {run_dir}\n", 1)[1]
        summary = json.loads(printed[:printed.index("}") + 1])
        assert summary["valid"] is True and summary["lost_records"] == 0 and summary["produced_records"] == 4000
        assert f"report: {run_dir / 'report' / 'index.html'}" in done.stdout
        log = next(folder.glob("*.log")).read_text()
        assert log.index("warm-up begins") < log.index("warm-up: "), log  # warmed during the drain, then the run's
        assert json.loads((run_dir / "report" / "summary.json").read_text())["valid"] is True
    finally:
        os.environ[service.DIR_ENV] = str(folder)
        try:
            service.stop()
            wait_until(lambda: not service.running(), 30)
        finally:
            os.environ.pop(service.DIR_ENV)


def test_a_run_with_an_anomaly_exits_1(tmp_path):
    """A loss planted for certain: partitions added at 2 s are written to within 2 s (the producer's metadata
    refresh) while the group, with auto.offset.reset=latest, notices them only after 10 s and starts them at their
    end: the records written in between are passed over, and the group reads past them (`lost`)."""
    scenario = {"name": "planted-loss", "producer": {"records": 28000, "rate": 2000},
                "consumer_group": {"metadata_refresh_ms": 10000, "config": {"auto.offset.reset": "latest"}},
                "faults": [{"kind": "partitions_add", "target": "topic", "partitions": 12, "at_s": 2, "duration_s": 1}]}
    done, run_dir = kafka_chaos(tmp_path, scenario, KAFKA_CHAOS_ANALYSIS_SERVICE="0")
    assert done.returncode == 1, done.stderr[-3000:]
    assert our_lines(done.stderr) == []
    summary = json.loads((run_dir / "report" / "summary.json").read_text())
    assert summary["valid"] is False and summary["lost_records"] > 0, summary["anomaly_counts"]


@pytest.mark.slow  # make test's 30 minutes: --no-analysis runs in make test below (a group that did not settle, exit 1)
def test_no_analysis_exits_0_and_leaves_the_run_to_analyse(tmp_path):
    done, run_dir = kafka_chaos(tmp_path, SMALL, "--no-analysis")
    assert done.returncode == 0, done.stderr[-3000:]
    assert not list(run_dir.glob("report/*")) and "report:" not in done.stdout
    assert list((run_dir / "consumed").iterdir()) and (run_dir / "faults.jsonl").read_text()


@pytest.mark.slow  # make test's 30 minutes: exit 1 runs there (an anomaly, above); the unsettled finding in test_group_settling.py
def test_a_group_that_did_not_settle_exits_1_without_the_analysis_too(tmp_path):
    """Issue 38, item 2: a finding about the group, not a harness failure (exit 3); said in one line."""
    scenario = {**SMALL, "producer": {"records": 400, "rate": 2000}, "consumer_group": {"members": 2, "client": "java"},
                "faults": [], "run": {"stable_timeout_s": 0.3}}  # a JVM's start alone is longer (test_group_settling.py)
    done, run_dir = kafka_chaos(tmp_path, scenario, "--no-analysis")
    assert done.returncode == 1, done.stderr[-3000:]
    lines = our_lines(done.stderr)
    assert len(lines) == 1, done.stderr[-3000:]
    [line] = lines
    assert line.startswith("finding: the group did not become stable within 0.3 s (last seen: "), line
    assert json.loads((run_dir / "run.json").read_text())["errors"] == []


def test_an_analysis_that_fails_is_exit_3_in_one_line_and_the_run_directory_is_kept(tmp_path):
    """Issue 37: Spark cannot start (a driver memory the JVM refuses): `kafka-chaos run` says so in one line, with no
    JVM or Spark text on the console, exits 3 (no verdict, never 1: "anomalies found"), and keeps the run directory,
    which `kafka-chaos analyze` then analyses."""
    done, run_dir = kafka_chaos(tmp_path, SMALL, KAFKA_CHAOS_ANALYSIS_SERVICE="0", KAFKA_CHAOS_SPARK_DRIVER_MEMORY="1k")
    assert done.returncode == 3, done.stderr[-3000:]
    lines = our_lines(done.stderr)
    assert len(lines) == 1, done.stderr[-3000:]
    [line] = lines
    assert line.startswith(f"kafka-chaos: the analysis of {run_dir} failed: cannot start Spark")
    assert line.endswith(f"`kafka-chaos analyze {run_dir}` analyses it again")
    assert "Too small" in (run_dir / "report" / "analysis.log").read_text()  # the JVM's own words, kept
    again = subprocess.run([sys.executable, "-m", "harness.cli", "analyze", str(run_dir)], cwd=ROOT, capture_output=True,
                           env={**os.environ, "PYTHONPATH": str(ROOT), "KAFKA_CHAOS_ANALYSIS_SERVICE": "0"}, text=True,
                           timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
