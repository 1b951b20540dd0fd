"""The librdkafka member host's control protocol (workloads/member_host.py), without a broker: consumers pointed at
a port nobody listens on poll nothing, so what is tested is the host's own bookkeeping: a crash, a graceful stop and
a restart asked through control/<host>.json, each answered in control/<host>.ack.json, and the harness side
(workloads.services.HostControl) waiting for that answer."""
import json
import os
import time
from pathlib import Path

import pytest

from workloads.config import ClientRelease, HostConfig, MemberConfig, ProcessingConfig
from workloads.control import host_ack_path
from workloads.history import now_ms
from workloads.services import HostControl, HostedMember, host_process



def member(name: str, run_dir: Path, host: str = "host-1") -> MemberConfig:
    return MemberConfig(member=name, run_dir=str(run_dir), client="librdkafka", release=ClientRelease(),
                        bootstrap_servers="127.0.0.1:1", group_id="g", topics=["t"], pattern=None,
                        metadata_refresh_ms=None, protocol="classic", assignor="range", remote_assignor=None,
                        session_timeout_ms=10_000, heartbeat_interval_ms=1000, max_poll_interval_ms=300_000,
                        commit="sync", auto_commit_interval_ms=None, processing=ProcessingConfig(), batch_size=100,
                        host=host, hosted_settings={"queued.max.messages.kbytes": 2048})


@pytest.fixture
def host(tmp_path):
    config = HostConfig(host="host-1", run_dir=str(tmp_path), members=[member(f"member-{i}", tmp_path) for i in (1, 2, 3)])
    process = host_process(config).start()
    control = HostControl(process)
    deadline = time.monotonic() + 30
    while len(control.state().get("running", [])) < 3:
        assert time.monotonic() < deadline, (tmp_path / "logs" / "host-1.log").read_text()
        time.sleep(0.1)
    yield process, control, [HostedMember(m, control) for m in config.members]
    process.stop(20)


def events(run_dir: Path, name: str) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "events" / f"{name}.jsonl").read_text().splitlines()]


def test_each_member_writes_its_own_started_event_with_its_host(host, tmp_path):
    for name in ("member-1", "member-2", "member-3"):
        started = [e for e in events(tmp_path, name) if e["kind"] == "started"]
        assert len(started) == 1 and started[0]["member"] == name and started[0]["host"] == "host-1"
        assert started[0]["hosted_settings"] == {"queued.max.messages.kbytes": 2048}


def test_a_crash_ends_one_member_without_a_stopped_event_and_a_restart_brings_it_back(host, tmp_path):
    process, control, (m1, m2, m3) = host
    asked = now_ms()
    m2.kill()
    down = control.state()["down_at_ms"]["member-2"]
    assert control.state() == {"crashed": ["member-2"], "down_at_ms": {"member-2": down}, "stopped": [],
                               "running": ["member-1", "member-3"]}
    assert asked <= down <= now_ms() and m2.down_at_ms == down  # its consumer's destruction, as the host saw it
    assert not m2.alive() and m1.alive() and m3.alive()
    assert [e["kind"] for e in events(tmp_path, "member-2")] == ["started"]  # no stopped: as a killed process
    m2.start()
    assert m2.alive() and control.state()["crashed"] == []
    assert [e["kind"] for e in events(tmp_path, "member-2")] == ["started", "started"]


def test_a_graceful_stop_of_one_member_closes_it_and_leaves_the_others(host, tmp_path):
    process, control, (m1, m2, m3) = host
    m3.stop()
    assert control.state()["stopped"] == ["member-3"] and not m3.alive() and m1.alive()
    assert events(tmp_path, "member-3")[-1]["kind"] == "stopped"


def test_sigterm_stops_every_member_cleanly(host, tmp_path):
    process, control, members = host
    assert process.stop(20) == 0
    for name in ("member-1", "member-2", "member-3"):
        assert events(tmp_path, name)[-1]["kind"] == "stopped"


def test_a_host_killed_by_a_signal_not_sent_is_a_crash_of_each_of_its_members(host, tmp_path):
    process, control, members = host
    os.killpg(process.pid, 6)  # SIGABRT: as a failed assertion in librdkafka would end it
    process.process.wait(10)
    process.watcher.join(10)
    for name in ("member-1", "member-2", "member-3"):
        assert events(tmp_path, name)[-1]["kind"] == "crashed"


def test_a_host_starts_its_members_one_after_another_at_its_spacing_from_its_start_time(tmp_path):
    config = HostConfig(host="host-1", run_dir=str(tmp_path), members=[member(f"member-{i}", tmp_path) for i in (1, 2, 3)],
                        start_after_s=1.0, start_spacing_s=0.5)
    launched = now_ms()
    process = host_process(config).start()
    try:
        control = HostControl(process)
        deadline = time.monotonic() + 30
        while len(control.state().get("running", [])) < 3:
            assert time.monotonic() < deadline, (tmp_path / "logs" / "host-1.log").read_text()
            time.sleep(0.1)
    finally:
        process.stop(20)
    started = [events(tmp_path, f"member-{i}")[0]["ts_ms"] for i in (1, 2, 3)]
    # the k-th to start did not start before start_after_s + k spacings (as the Java host's twin asserts it)
    assert all(at - launched >= 1000 + 500 * k for k, at in enumerate(sorted(started))), (launched, started)


def test_ack_path_is_in_the_control_folder(tmp_path):
    assert host_ack_path(tmp_path, "host-1") == tmp_path / "control" / "host-1.ack.json"


def test_the_host_writes_every_threads_stack_into_its_log_when_asked(host, tmp_path):
    """What the harness does when a host does not answer in time (HostControl.ask): the stacks show where a member
    it could not bring down waits."""
    process, control, _ = host
    assert control.dump_stacks()
    log = tmp_path / "logs" / "host-1.log"
    deadline = time.monotonic() + 10
    # the host's main thread and each member's; read until all are there (faulthandler writes thread by thread)
    while not ((text := log.read_text()).count("Thread 0x") >= 4 and "in run" in text):
        assert time.monotonic() < deadline, text
        time.sleep(0.1)
