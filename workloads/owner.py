"""Who started a container, a disk or a workload process: an owner id that names one harness process beyond doubt.

`host:boot:pidns:pid:start`: the host name, the kernel's boot id (a reboot ends every process), the PID namespace
(a PID means something only inside its own), the PID and the process's start time in clock ticks since boot (a
reused PID has another). A harness removes what an owner left only when that owner is provably gone: on this host,
and a process of this boot and PID namespace that no longer runs, or runs with another start time. Another host's,
or another PID namespace's, is never touched (`kafka-chaos clean --all` says what it removes). An older owner id,
`host:pid`, is read as before on this host, and as another's elsewhere.
"""
from __future__ import annotations

import os
import socket
from enum import Enum
from functools import cache
from pathlib import Path


class Owner(Enum):
    LIVE = "live"          # the owning process runs
    GONE = "gone"          # provably ended: what it left may be removed
    FOREIGN = "foreign"    # another host's or PID namespace's: nothing here can tell, nothing is touched


def this_owner() -> str:
    return ":".join([socket.gethostname(), _boot_id(), _pid_namespace(), str(os.getpid()), _start_time(os.getpid()) or "?"])


def owner_state(owner: str) -> Owner:
    parts = owner.split(":")
    if len(parts) == 2:  # host:pid, written before the owner id named the boot, namespace and start time
        host, pid = parts
        return Owner.FOREIGN if host != socket.gethostname() else _pid_state(pid, None)
    if len(parts) != 5:
        return Owner.FOREIGN
    host, boot, pidns, pid, start = parts
    if host != socket.gethostname() or pidns != _pid_namespace():
        return Owner.FOREIGN
    if boot != _boot_id():
        return Owner.GONE
    return _pid_state(pid, start)


def owner_gone(owner: str) -> bool:
    return owner_state(owner) is Owner.GONE


def _pid_state(pid: str, start: str | None) -> Owner:
    if not pid.isdigit():
        return Owner.FOREIGN
    now = _start_time(int(pid))
    if now is None:
        return Owner.GONE
    return Owner.LIVE if start is None or start == now else Owner.GONE


@cache
def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return "?"


@cache
def _pid_namespace() -> str:
    try:
        return os.readlink("/proc/self/ns/pid").strip("pid:[]")
    except OSError:
        return "?"


def _start_time(pid: int) -> str | None:
    """The process's start time (field 22 of /proc/PID/stat, after the command's closing parenthesis); None: gone."""
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None
