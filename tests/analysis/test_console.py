"""Issue 37, part 3: nothing but our own words on a user's console. Spark's and the JVM's text goes to
report/analysis.log; an analysis that fails says so in one line naming the step and that log, and exits 3 (no
verdict), never 1 ("anomalies found"). Real processes and a real Spark."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from analysis_runs import clean_run

ROOT = Path(__file__).resolve().parents[2]
JAVA_TEXT = ("Traceback", "\tat ", "org.apache.spark", "WARN", "ERROR", "py4j", "Exception in thread")


def analyze(run_dir, *args, env=None):
    return subprocess.run([sys.executable, "-m", "harness.cli", "analyze", str(run_dir), *args], cwd=ROOT,
                          env=env or {**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=300)


def our_lines_only(stderr: str) -> list[str]:
    """The lines that are not progress lines; fails on any Spark or JVM text."""
    for marker in JAVA_TEXT:
        assert marker not in stderr, stderr
    return [line for line in stderr.splitlines() if not line.startswith("[")]


@pytest.mark.slow  # make test's 30 minutes (a fresh clone: 30 min 46 s on 2026-11-29): the nightly runs it
def test_a_spark_failure_is_one_line_naming_the_step_and_the_log_and_exit_3(tmp_path):
    rd = clean_run(tmp_path / "run", "jsonl").write()
    failed = analyze(rd, "--conf", "spark.sql.shuffle.partitions=0")
    assert failed.returncode == 3, failed.stderr
    log = rd / "report" / "analysis.log"
    [line] = our_lines_only(failed.stderr)
    assert line.startswith("kafka-chaos analyze: the analysis failed at 'starting Spark': ")
    assert "spark.sql.shuffle.partitions" in line and line.endswith(f"details in {log}")
    text = log.read_text()
    assert "Traceback" in text and "INVALID_CONF_VALUE" in text
    again = analyze(rd)  # the run directory is kept as it was: analysable again, and no Spark text on the console
    assert again.returncode == 0, again.stderr
    assert our_lines_only(again.stderr) == []
    assert "Using incubator modules" in log.read_text()  # what the JVM printed, kept in the run directory


@pytest.mark.slow  # make test's 30 minutes: exit 3 in one line runs there without the service
def test_an_error_of_ours_through_the_service_is_one_line_and_exit_3(tmp_path, service_env):
    """A run directory whose report/ is a file: writing the report fails, an error the analysis does not expect.
    The details go to a log that can be written."""
    rd = clean_run(tmp_path / "run", "jsonl").write()
    (rd / "report").write_text("in the way")
    failed = analyze(rd, env=service_env)
    assert failed.returncode == 3, failed.stderr
    [line] = our_lines_only(failed.stderr)
    assert line.startswith("kafka-chaos analyze: the analysis failed at 'report': ") and "details in " in line
    details = Path(line.rsplit("details in ", 1)[1])
    assert details.is_file() and "Traceback" in details.read_text()
    details.unlink()


def test_the_jvm_logs_of_gone_processes_are_swept(tmp_path):
    import os

    from analysis.engine.spark import JVM_LOG_PREFIX, _sweep_dead_jvm_logs
    live, gone = tmp_path / f"{JVM_LOG_PREFIX}{os.getpid()}-a.log", tmp_path / f"{JVM_LOG_PREFIX}999999999-b.log"
    for path in (live, gone):
        path.write_text("x")
    _sweep_dead_jvm_logs(tmp_path)
    assert live.exists() and not gone.exists()
