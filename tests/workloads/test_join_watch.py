"""A librdkafka member not assigned within its join watch writes its client's group debug log
(workloads/client_debug.py). Real librdkafka in a real member host, pointed at a port nobody listens on: no member
can join, so each one's watch expires; what is checked is what it writes, and that librdkafka's own warnings still
reach the host's log as librdkafka writes them."""
import json
import re
import time
from dataclasses import replace
from pathlib import Path

from workloads.client_debug import RING_LINES
from workloads.config import HostConfig
from workloads.services import host_process
from test_member_host_unit import member


def events(run_dir: Path, name: str) -> list[dict]:
    path = run_dir / "events" / f"{name}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_a_member_not_assigned_within_its_watch_writes_its_group_debug_log_and_one_without_a_watch_does_not(tmp_path):
    watched = replace(member("member-1", tmp_path), join_watch_s=2.0)
    unwatched = member("member-2", tmp_path)  # join_watch_s None: as a Java member, or a run that asks for none
    own_debug = replace(member("member-3", tmp_path), join_watch_s=2.0, extra={"debug": "fetch"})  # the user's own
    process = host_process(HostConfig(host="host-1", run_dir=str(tmp_path),
                                      members=[watched, unwatched, own_debug])).start()
    try:
        deadline = time.monotonic() + 30
        while not any(e["kind"] == "join_overdue" for e in events(tmp_path, "member-1")):
            assert time.monotonic() < deadline and process.alive(), (tmp_path / "logs" / "host-1.log").read_text()
            time.sleep(0.2)
        time.sleep(1.5)  # lines after the watch expired go on into the file
    finally:
        assert process.stop(20) == 0
    [overdue] = [e for e in events(tmp_path, "member-1") if e["kind"] == "join_overdue"]
    assert overdue["debug_log"] == "logs/member-1.cgrp.log" and overdue["waited_ms"] == 2000
    started = [e for e in events(tmp_path, "member-1") if e["kind"] == "started"][0]
    assert overdue["ts_ms"] - started["ts_ms"] >= 2000

    lines = (tmp_path / "logs" / "member-1.cgrp.log").read_text().splitlines()
    assert lines[0].startswith("# member-1: no assignment 2 s after it subscribed")
    kept = [line for line in lines if not line.startswith("#")]
    line_format = re.compile(r"%[0-7]\|\d+\.\d{3}\|[A-Z]+\|[\w.-]+#consumer-\d+\| ")  # librdkafka's own
    assert [line for line in kept if not line_format.match(line)] == []
    assert any("|CGRPSTATE|" in line for line in kept) and any("SUBSCRIBE" in line for line in kept)
    stamps = [float(line.split("|")[1]) for line in kept]
    assert min(stamps) * 1000 < overdue["ts_ms"] < max(stamps) * 1000  # the ring's lines, then the ones after
    assert len(kept) > RING_LINES or min(stamps) * 1000 < started["ts_ms"] + 1000  # the ring kept the earliest
    assert not (tmp_path / "logs" / "member-2.cgrp.log").exists() and not (tmp_path / "logs" / "member-3.cgrp.log").exists()
    assert not any(e["kind"] == "join_overdue" for e in events(tmp_path, "member-2") + events(tmp_path, "member-3"))

    host_log = (tmp_path / "logs" / "host-1.log").read_text()
    assert re.search(r"%[34]\|\d+\.\d{3}\|FAIL\|[\w.-]+#consumer-\d+\| .*Connection refused", host_log), host_log[-2000:]
    assert "|CGRPSTATE|" not in host_log  # a watched member's debug lines go to its file, never to the process log
