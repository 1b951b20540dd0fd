"""Issue 22 (librdkafka#4605): a workload process that a signal the harness did not send ends (SIGABRT from an
assertion inside librdkafka) cannot log its own end; the harness logs it, as a `crashed` event in the process's
events file. Signals the harness sends (a stop, a member_crash's SIGKILL) log nothing. Real processes."""
import json
import textwrap
from pathlib import Path

import pytest

from workloads.config import AdminProbeConfig
from workloads.services import WorkloadProcess

MODULE = """
import os, signal, sys, time
mode = os.environ["HA_MODE"]
if mode == "abort":
    os.abort()
if mode == "segv":
    os.kill(os.getpid(), signal.SIGSEGV)
time.sleep(60)
"""


@pytest.fixture
def workload(tmp_path, monkeypatch):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "ha_dying.py").write_text(textwrap.dedent(MODULE))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "lib"))
    run_dir = tmp_path / "run"

    def make(mode: str, role: str | None = "admin_probe", name: str = "admin-probe-1") -> WorkloadProcess:
        monkeypatch.setenv("HA_MODE", mode)
        config = AdminProbeConfig(name, str(run_dir), "localhost:1", "g", "describe", 1000, 3000)
        return WorkloadProcess(name, "ha_dying", config, run_dir, role=role).start()
    return make


def ended(process: WorkloadProcess) -> int | None:
    """Its exit code once it has ended by itself; then stop(), which returns once the harness logged the end."""
    process.process.wait(30)
    return process.stop()


def events(process: WorkloadProcess) -> list[dict]:
    path = Path(process.run_dir) / "events" / f"{process.name}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_an_abort_is_logged_as_a_crashed_event_with_its_signal(workload):
    process = workload("abort")
    assert ended(process) == -6
    [row] = events(process)
    assert {k: row[k] for k in ("member", "kind", "signal", "exit_code", "role")} == \
        {"member": "admin-probe-1", "kind": "crashed", "signal": "SIGABRT", "exit_code": -6, "role": "admin_probe"}
    assert isinstance(row["ts_ms"], int)


def test_a_member_death_is_logged_without_a_role(workload):
    process = workload("segv", role="member", name="member-1")
    assert ended(process) == -11
    [row] = events(process)
    assert row["kind"] == "crashed" and row["signal"] == "SIGSEGV" and "role" not in row


@pytest.mark.parametrize("how", ["stop", "kill"])
def test_signals_the_harness_sent_log_nothing(workload, how):
    process = workload("sleep")
    code = process.stop(timeout_s=30) if how == "stop" else process.kill()
    assert code in (-15, -9)  # the module handles no SIGTERM: the harness's own signal ended it
    process.stop()
    assert events(process) == []


@pytest.mark.parametrize("client, logged", [("librdkafka", True), ("command", False)])
def test_a_member_with_an_output_topic_is_watched_unless_it_is_a_program_in_output_topic_mode(
        tmp_path, monkeypatch, client, logged):
    """A transactional member of ours writes its output topic and its own events: its death by a signal is logged
    there; a program of the user's read back from its output topic writes none, and none is made for it."""
    from workloads.config import ClientRelease, MemberConfig, ProcessingConfig, TransactionSettings
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "ha_dying.py").write_text(textwrap.dedent(MODULE))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "lib"))
    monkeypatch.setenv("HA_MODE", "abort")
    run_dir = tmp_path / "run"
    cfg = MemberConfig(member="member-1", run_dir=str(run_dir), client=client, release=ClientRelease(),
                       bootstrap_servers="127.0.0.1:1", group_id="g", topics=["chaos"], pattern=None,
                       metadata_refresh_ms=None, protocol="classic", assignor="range", remote_assignor=None,
                       session_timeout_ms=10_000, heartbeat_interval_ms=1_000, max_poll_interval_ms=300_000,
                       commit="transaction" if client == "librdkafka" else "sync", auto_commit_interval_ms=None,
                       processing=ProcessingConfig(), batch_size=500, output_topic="g-txn-out",
                       transaction=TransactionSettings(200, 60_000) if client == "librdkafka" else None)
    process = WorkloadProcess("member-1", "ha_dying", cfg, run_dir, role="member").start()
    assert ended(process) == -6
    assert [e["kind"] for e in events(process)] == (["crashed"] if logged else [])


def test_a_process_without_an_events_file_is_not_watched(workload):
    process = workload("abort", role=None, name="producer-1")
    assert ended(process) == -6
    assert events(process) == []
