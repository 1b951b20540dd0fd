"""Issue 38, item 4: an owner id names one harness process beyond doubt (host, boot, PID namespace, PID, start time);
only an owner on this host and provably gone counts as gone, another host's or namespace's is never judged."""
import os
import socket
import subprocess

from workloads.owner import Owner, owner_state, this_owner


def with_part(owner: str, index: int, value: str) -> str:
    parts = owner.split(":")
    parts[index] = value
    return ":".join(parts)


def test_a_live_owner_a_gone_one_and_a_reused_pid():
    me = this_owner()
    assert owner_state(me) is Owner.LIVE
    gone = subprocess.Popen(["true"])
    gone.wait()
    assert owner_state(with_part(me, 3, str(gone.pid))) is Owner.GONE
    assert owner_state(with_part(me, 4, "1")) is Owner.GONE, "this PID with another start time is another process"


def test_another_host_or_pid_namespace_is_foreign_and_another_boot_gone():
    me = this_owner()
    assert owner_state(with_part(me, 0, "another-host")) is Owner.FOREIGN
    assert owner_state(with_part(me, 2, "4026531000")) is Owner.FOREIGN
    assert owner_state(with_part(me, 1, "00000000-0000-0000-0000-000000000000")) is Owner.GONE  # rebooted since


def test_the_older_host_pid_owner_is_read_as_before_here_and_as_foreign_elsewhere():
    gone = subprocess.Popen(["true"])
    gone.wait()
    assert owner_state(f"{socket.gethostname()}:{os.getpid()}") is Owner.LIVE
    assert owner_state(f"{socket.gethostname()}:{gone.pid}") is Owner.GONE
    assert owner_state(f"another-host:{os.getpid()}") is Owner.FOREIGN  # before, another host counted as gone
    assert owner_state("garbage") is Owner.FOREIGN
