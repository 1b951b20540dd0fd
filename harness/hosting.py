"""Member hosts: many members in one process (consumer_group.members_per_host), each a thread with its own
consumer instance (workloads/member_host.py for librdkafka, the Java member program for java-member).

Which members share which host, the client settings a hosted member changes (each kind declares them, and why, in
workloads/kinds.py), and whether a group fits this machine: checked before anything starts, one error naming the
field.
"""
from __future__ import annotations

import os
import resource

from workloads.kinds import member_kind, suggest

MAX_PROCESS_MEMBERS = 32      # one process a member: what 2 cores start and keep polling in a run's time
MAX_HOSTED_MEMBERS = 2000     # in member hosts
FD_HEADROOM = 256  # the host's own files: its logs, the run's control files, the interpreter's


# A hosted group's members start this far apart, one after another across its hosts. 500 librdkafka members
# started at once opened their bootstrap connections together and the machine's run queue (load 150-530) held their
# ApiVersionRequests past librdkafka's 10 s time-out: each failure reconnects, and the group joined in 30 s, in 215 s
# or not within 310 s (2026-12-01, three runs; docs/benchmarks-history.md "Member hosts' start").
# A scenario sets its own (consumer_group.start_spacing_ms; 0 starts them all at once, a start storm on purpose).
START_SPACING_MS = 20


def start_times(members_before: int, spacing_ms: int = START_SPACING_MS) -> dict:
    """HostConfig's start_after_s and start_spacing_s for a host whose first member is the group's members_before-th
    hosted member to start, each member spacing_ms after the one before."""
    return {"start_after_s": round(members_before * spacing_ms / 1000, 3), "start_spacing_s": spacing_ms / 1000}


def hosted_settings(client: str) -> dict:
    """The client settings a hosted member changes (a member of its own process keeps the client's defaults)."""
    return dict(member_kind(client).hosted_settings)


def host_name(index: int) -> str:
    return f"host-{index}"


def host_of(member_index: int, members_per_host: int) -> str:
    """member-<member_index>'s host: members 1..k on host-1, k+1..2k on host-2, ..."""
    return host_name((member_index - 1) // members_per_host + 1)


def fd_limit() -> int:
    """The open-file limit a host can raise itself to (its hard limit)."""
    return resource.getrlimit(resource.RLIMIT_NOFILE)[1]


def memory_mb() -> int:
    """This machine's physical memory."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") >> 20


def check_hosting(clients: set[str], pinned_per_member: bool, members: int, members_per_host: int,
                  stateful: bool = False) -> None:
    """A hosted group (`clients`: the kinds its members run; `pinned_per_member`: a member spec pins its own
    release; `stateful`: its members keep state, three clients each): kinds that can host, and a group this machine
    can hold. ValueError names the field."""
    for name in sorted(clients):
        kind = member_kind(name)
        if not kind.hosts:
            raise ValueError(f"members_per_host: the {kind.title} runs one member a process"
                             + suggest(lambda k: k.hosts, kind) + " to host them")
    if len(clients) > 1:
        raise ValueError(f"members_per_host: one host runs one client; this group mixes {sorted(clients)}")
    if pinned_per_member:
        raise ValueError("members_per_host: a host runs one client release; give consumer_group.version, not "
                         "per-member versions")
    kind = member_kind(next(iter(clients)))
    per_host = min(members_per_host, members)
    fds_each = kind.fds_per_member + (kind.state_fds_per_member if stateful else 0)
    mb_each = kind.mb_per_member + (kind.state_mb_per_member if stateful else 0)
    stateful_word = " stateful" if stateful else ""
    fds = per_host * fds_each + FD_HEADROOM
    if fds > fd_limit():
        raise ValueError(f"members_per_host: {per_host}{stateful_word} members in one process need about {fds} open "
                         f"files ({fds_each} a member), above this machine's limit of {fd_limit()} (ulimit -Hn); use "
                         "fewer members a host")
    need_mb = members * mb_each
    if need_mb > memory_mb() // 2:
        raise ValueError(f"members: {members}{stateful_word} {kind.name} members need about {need_mb} MB resident "
                         f"({mb_each} MB a member), more than half of this machine's {memory_mb()} MB")
