"""Issue 13: the warm analysis service behind `kafka-chaos analyze` and `kafka-chaos run`: started on first use,
reused, the same summary as an analysis in-process, bad input and exit codes as before, only its owner can reach
it, and it goes away when asked, when idle and when its code changes. Real processes, a real Spark, a folder of
its own; nothing is left running."""
import json
import os
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from analysis import analyze

from analysis import service
from analysis_runs import clean_run, known_run
from kafkanet.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def env(service_env):
    return service_env


def cli(env, *args, timeout=300):
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)


def pid_of_service() -> int:
    """The pid of the service that started last (its log's first line says: analysis service PID on ...)."""
    return int([line for line in service._log().read_text().splitlines() if line.startswith("analysis service ")][-1].split()[2])


def strip(summary: dict) -> dict:
    return {k: v for k, v in summary.items() if k not in ("analysis_seconds", "spark")}


def test_analyze_starts_the_service_once_and_gives_the_summary_of_a_local_analysis(tmp_path, env, spark):
    rd = known_run(tmp_path / "run", "parquet").write()
    first = cli(env, "analyze", str(rd), "--json")
    assert first.returncode == 1, first.stderr  # the run has planted losses
    assert "starting the analysis service" in first.stderr
    pid = pid_of_service()
    again = cli(env, "analyze", str(rd), "--json")
    assert again.returncode == 1 and "starting the analysis service" not in again.stderr
    assert pid_of_service() == pid  # the same process answered
    for phase in ("loading", "scanning", "checks", "report"):
        assert f"] {phase}" in again.stderr  # its progress reaches the terminal
    local = analyze(rd, spark=spark)
    assert strip(json.loads(again.stdout)) == strip(local)

    folder = service.folder()
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700  # only its owner reaches the socket
    assert stat.S_IMODE(service.socket_path().stat().st_mode) == 0o600


def test_bad_input_through_the_service_is_one_line_and_exit_2(tmp_path, env):
    rd = clean_run(tmp_path / "run", "jsonl").write()
    (rd / "consumed" / "b.jsonl").write_text('{"topic": "t", "partition": 0, "offset": "x"}\n{}\n')
    done = cli(env, "analyze", str(rd))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith("kafka-chaos analyze: bad input: consumed/b.jsonl:1")


@pytest.mark.slow  # make test's 30 minutes (a fresh clone: 30 min 46 s on 2026-11-29): the nightly runs it
def test_a_service_of_other_code_steps_aside_and_an_idle_one_exits(tmp_path, env, monkeypatch):
    rd = clean_run(tmp_path / "run", "parquet").write()
    monkeypatch.setenv("KAFKA_CHAOS_ANALYSIS_IDLE_S", "3")  # the service started below reads it
    assert service.analyze(rd)["valid"] is True
    old = pid_of_service()
    with socket.socket(socket.AF_UNIX) as conn:  # a client of other code (an update happened meanwhile)
        conn.connect(str(service.socket_path()))
        conn.sendall(json.dumps({"op": "analyze", "run_dir": str(rd), "options": {}, "code": "other"}).encode() + b"\n")
        assert json.loads(conn.makefile().readline()) == {"stale": True}
    assert not service.running()  # from its answer on, no client reaches it (one would be served by stale code)
    assert service.analyze(rd)["valid"] is True  # a new service, of this code
    assert pid_of_service() != old
    wait_until(lambda: not service.running(), 60, interval_s=0.5)
    assert not service.running(), "the idle service did not exit"
    assert "exits: idle" in service._log().read_text()


@pytest.mark.slow  # make test's 30 minutes: the service's start, answer and bad input run there
def test_clean_stops_the_service(tmp_path, env):
    rd = clean_run(tmp_path / "run", "parquet").write()
    assert cli(env, "analyze", str(rd)).returncode == 0
    assert service.running()
    done = cli(env, "clean")
    assert "stopped the analysis service" in done.stdout
    wait_until(lambda: not service.running(), 30)
    assert not service.running()


@pytest.mark.slow  # make test's 30 minutes: the service's start, answer and stop run there
def test_a_warm_up_stops_for_a_request_and_a_warm_service_warms_no_more(tmp_path, env, monkeypatch):
    """A run asks for a warm-up while its group drains: the small run analysed again and again (the JIT keeps
    compiling), until a request waits, which is then served after the round under way; a warm service skips it."""
    monkeypatch.setenv("KAFKA_CHAOS_ANALYSIS_WARM_ROUNDS", "40")  # the service started below reads it
    rd = clean_run(tmp_path / "run", "parquet").write()
    service.warm_up()  # in the background, as `kafka-chaos run` does
    wait_until(lambda: service.running() and "warm-up begins" in service._log().read_text(), 180, interval_s=0.5)
    assert service.analyze(rd)["valid"] is True
    wait_until(lambda: "a request came" in service._log().read_text(), 60, interval_s=0.5)
    line = next(x for x in service._log().read_text().splitlines() if x.startswith("warm-up: "))
    assert 1 <= int(line.split()[1]) < 40, line


@pytest.mark.slow  # 11 s, a start of its own; the warm-up's stop is tested above in make test
def test_a_service_that_analysed_enough_runs_skips_the_warm_up(tmp_path, env, monkeypatch):
    monkeypatch.setenv("KAFKA_CHAOS_ANALYSIS_WARM_ROUNDS", "2")
    warm = lambda: service._ask({"op": "warm", "code": service.code_version()}, lambda *a: None)  # noqa: E731
    assert warm() == {"warm": 2}
    assert warm() == {"warm": 0}


@pytest.mark.parametrize("name, value", [(service.WARM_ENV, "eight"), (service.IDLE_ENV, "-1")])
def test_a_setting_of_the_service_that_cannot_work_is_bad_input_before_anything_starts(name, value, tmp_path, env):
    rd = clean_run(tmp_path / "run", "parquet").write()
    bad = {**env, name: value}
    for args in (("analyze", str(rd)), ("run", "scenarios/default.yaml", "--runs-dir", str(tmp_path / "runs"))):
        done = cli(bad, *args)
        assert done.returncode == 2, done.stderr
        said = [line for line in done.stderr.splitlines() if not line.startswith("[kafka-chaos")]  # not progress
        assert len(said) == 1 and f"bad input: {name}={value!r}" in said[0], done.stderr
    assert not service.running() and not (tmp_path / "runs").exists()  # no service, no cluster, no run
