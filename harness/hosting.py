"""Member hosts: many members in one process (consumer_group.members_per_host), each a thread with its own
consumer instance (workloads/member_host.py for librdkafka, the Java member program for java-member).

Which members share which host, the client settings a hosted member changes (and why), and whether a group
fits this machine: checked before anything starts, one error naming the field.
"""
from __future__ import annotations

import os
import resource
MAX_PROCESS_MEMBERS = 32      # one process a member: what 2 cores start and keep polling in a run's time
MAX_HOSTED_MEMBERS = 2000     # in member hosts
HOSTING_CLIENTS = ("librdkafka", "java-member")

# What a hosted librdkafka member changes from the client's defaults, so that hundreds fit one machine. At the
# defaults each consumer may pre-fetch up to 64 MB (queued.max.messages.kbytes) and 100,000 messages per
# partition (queued.min.messages): 500 members could queue 32 GB. These bound the pre-fetch queue, not what
# a poll returns, so they move no figure while a member keeps up; a member that falls far behind refetches
# sooner. Recorded in each member's `started` facts (hosted_settings).
LIBRDKAFKA_HOSTED = {"queued.max.messages.kbytes": 2048, "queued.min.messages": 2000}
# The Java client pre-fetches per fetch session, bounded by fetch.max.bytes (50 MB) and
# max.partition.fetch.bytes (1 MB) a partition; the JVM's one heap bounds them all together.
JAVA_HOSTED = {"fetch.max.bytes": 4 << 20}

# Bounds from what was measured on this machine (docs/benchmarks-history.md, "Member hosts", benchmarks/member_hosts.py:
# 20 members in one host, 3 brokers, 1,000 records/s): a hosted librdkafka member held 16.1 descriptors (sockets and the
# wake-up pipes of its broker threads) and 2.9 MB resident, a hosted Java member 12.6 and 10.5 MB. The bounds add
# headroom: a member's pre-fetch queue may fill up to its 2 MB bound, a JVM's heap grows to its limit.
FDS_PER_MEMBER = {"librdkafka": 24, "java-member": 16}
MB_PER_MEMBER = {"librdkafka": 6, "java-member": 16}
FD_HEADROOM = 256  # the host's own files: its logs, the run's control files, the interpreter's


def hosted_settings(client: str) -> dict:
    """The client settings a hosted member changes (a member of its own process keeps the client's defaults)."""
    return dict(LIBRDKAFKA_HOSTED if client == "librdkafka" else JAVA_HOSTED)


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


def check_hosting(clients: set[str], pinned_per_member: bool, members: int, members_per_host: int) -> None:
    """A hosted group (`clients`: the clients its members run; `pinned_per_member`: a member spec pins its own
    release): clients that can host, and a group this machine can hold. ValueError names the field."""
    refused = sorted(clients - set(HOSTING_CLIENTS))
    if refused:
        raise ValueError(f"members_per_host: the {' and '.join(refused)} member runs one member a process "
                         "(VerifiableConsumer takes one consumer a JVM); use client: java-member, our own Java member "
                         "program, to host Java members")
    if len(clients) > 1:
        raise ValueError(f"members_per_host: one host runs one client; this group mixes {sorted(clients)}")
    if pinned_per_member:
        raise ValueError("members_per_host: a host runs one client release; give consumer_group.version, not "
                         "per-member versions")
    (client,) = clients
    per_host = min(members_per_host, members)
    fds = per_host * FDS_PER_MEMBER[client] + FD_HEADROOM
    if fds > fd_limit():
        raise ValueError(f"members_per_host: {per_host} members in one process need about {fds} open files "
                         f"({FDS_PER_MEMBER[client]} a member), above this machine's limit of {fd_limit()} "
                         "(ulimit -Hn); use fewer members a host")
    need_mb = members * MB_PER_MEMBER[client]
    if need_mb > memory_mb() // 2:
        raise ValueError(f"members: {members} {client} members need about {need_mb} MB resident "
                         f"({MB_PER_MEMBER[client]} MB a member), more than half of this machine's {memory_mb()} MB")
