"""What a fault may use of the run: the seams between a fault kind and the cluster it runs against.

A backend is that cluster: the harness's own containers (harness/cluster/kafka.py) or a cluster someone else
runs (harness/cluster/external.py). Fault kinds call only what these protocols name, never a container engine, so
a fault works on every backend that offers what it calls. A backend that cannot do something (pause a
broker it does not own) refuses with one error naming the broker and the operation, and leaves the
requirement out of its `capabilities` (faults.base.REQUIREMENTS), so the harness skips such faults before
the run instead. docs/backends.md says what a new backend implements.
"""
from __future__ import annotations

import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

from confluent_kafka.admin import AdminClient

from kafkanet.broker_view import BrokerView
from kafkanet.toxiproxy import Toxiproxy
from workloads.config import AdminProbeConfig, HostConfig, MemberConfig, ProducerConfig


@runtime_checkable
class BrokerHandle(Protocol):
    """One broker: its process (pause, resume, kill, stop, start), its network namespace, its logs, and
    the proxies in front of it."""

    @property
    def name(self) -> str: ...  # kafka-N

    @property
    def node_id(self) -> int: ...

    @property
    def control_address(self) -> str: ...  # host:port where the harness asks this broker alone

    @property
    def peer_ports(self) -> tuple[int, ...]: ...  # Toxiproxy ports the other brokers reach it on (none: no lanes)

    def proxy(self, lane: str) -> str:
        """The Toxiproxy proxy of one lane (client, internal, controller, or a workload client's)."""
        ...

    def client_proxies(self) -> list[str]:
        """Every proxy clients reach it through (never the harness's own CONTROL lane)."""
        ...

    def pause(self) -> None:
        """Freeze every thread (a stop-the-world pause): connects succeed, nothing is answered."""
        ...

    def resume(self) -> None:
        """Undo pause(); nothing if it is not paused."""
        ...

    def kill(self) -> None:
        """SIGKILL: no controlled shutdown."""
        ...

    def stop(self, timeout_s: float) -> None:
        """A graceful stop (SIGTERM, a controlled shutdown), SIGKILL after timeout_s."""
        ...

    def start(self) -> None:
        """Start it again with its data (nothing if it runs); ClusterHandle.start_broker also waits for it."""
        ...

    def running(self) -> bool:
        """Its process runs and is not paused."""
        ...

    def run_in_netns(self, argv: list[str]) -> subprocess.CompletedProcess[str] | None:
        """A command run inside its network namespace (kafkanet.netns's iptables); None when it has none (down)."""
        ...

    def logs(self) -> str:
        """What it has printed so far."""
        ...

    def fill_log_dir(self) -> int:
        """Fill the disk of its log directory (the cluster's size-limited log disk); the bytes it took. Works
        while it is down too."""
        ...

    def free_log_dir(self) -> None:
        """Undo fill_log_dir(); nothing if it is not filled."""
        ...


@runtime_checkable
class ClusterHandle(Protocol):
    """The cluster: its brokers, what it believes (metadata, the quorum), its admin client, and the waits a
    fault's heal needs."""

    @property
    def brokers(self) -> Sequence[BrokerHandle]: ...

    @property
    def client_lanes(self) -> tuple[str, ...]: ...  # workload clients with a lane (proxies) of their own

    @property
    def toxiproxy(self) -> Toxiproxy | None: ...

    @property
    def capabilities(self) -> tuple[str, ...]: ...  # keys of faults.base.REQUIREMENTS it gives

    @property
    def owned(self) -> bool: ...  # the harness started it: every fault may touch it

    @property
    def control_bootstrap_servers(self) -> str: ...  # the harness's own lane: faults never touch it

    @property
    def toxiproxy_ip(self) -> str: ...  # where broker-to-broker traffic goes (what a partition drops)

    def broker(self, name: str) -> BrokerHandle: ...

    def broker_by_id(self, node_id: int) -> BrokerHandle: ...

    def view(self, timeout_s: float = 60) -> BrokerView:
        """The cluster's metadata as the brokers in touch with the quorum hold it."""
        ...

    def active_controller(self, timeout_s: float = 60) -> int:
        """The node id of the KRaft quorum's leader."""
        ...

    def under_replicated(self) -> list[str]: ...

    def admin(self) -> AdminClient: ...

    def elect_preferred_leaders(self, partitions: list[tuple[str, int]], timeout_s: float = 120) -> None:
        """A preferred leader election of these partitions; returns once each leader is its first replica."""
        ...

    def create_topic(self, name: str, partitions: int, replication_factor: int, configs: dict | None = None) -> None:
        """Create a topic (with these topic configs) and wait until it exists."""
        ...

    def start_broker(self, broker: BrokerHandle, timeout_s: float = 120) -> None:
        """broker.start(), then wait until it answers and is registered, unfenced."""
        ...

    def wait_rejoined(self, brokers: Sequence[BrokerHandle], timeout_s: float = 120) -> None:
        """Wait until every running one of these brokers is registered and unfenced again."""
        ...

    def wait_until(self, condition: Callable[[], object], timeout_s: float, what: str,
                   broker: BrokerHandle | None = None) -> None:
        """Poll a condition; an error naming `what` (and the broker's log tail) if it never holds."""
        ...


@runtime_checkable
class MemberHandle(Protocol):
    """One workload process (a group member, or the producer)."""

    @property
    def name(self) -> str: ...

    @property
    def run_dir(self) -> Path: ...

    @property
    def config(self) -> MemberConfig | ProducerConfig | AdminProbeConfig | HostConfig: ...  # its typed config (workloads/config.py)

    @property
    def lane(self) -> str | None: ...  # the client lane it was started on (None: its own name's)

    def start(self) -> MemberHandle: ...

    def stop(self, timeout_s: float = 30) -> int | None: ...

    def kill(self) -> int | None: ...

    def freeze(self) -> None: ...

    def resume(self) -> None: ...

    def alive(self) -> bool: ...


@runtime_checkable
class HostedMemberHandle(MemberHandle, Protocol):
    """A member inside a member host (consumer_group.members_per_host): its `lane` is its host's, shared with the
    host's other members; kill() and stop() act on it alone (asked of its host), freeze() on the whole host."""

    @property
    def lane(self) -> str: ...  # its host's (host-N)

    @property
    def host_members(self) -> list[str]: ...  # every member of its host, itself included

    @property
    def leave_guard(self) -> bool: ...  # whether its crash first keeps its leaves from the brokers (the request-aware proxy)

    @property
    def down_at_ms(self) -> int | None: ...  # when its consumer was destroyed, as its host said, the last time it was crashed

    @property
    def sent_while_down(self) -> list[dict]: ...  # what it sent from that guard to its restart (the proxy's record)


@runtime_checkable
class PoolHandle(Protocol):
    """Starts the group's members: a join, a restarted bounce, a duplicate group.instance.id."""

    def start(self, name: str, lane: str | None = None, instance: int | None = None,
              like: int | None = None) -> MemberHandle: ...

    def next_names(self, count: int) -> list[str]: ...


@runtime_checkable
class TopicsHandle(Protocol):
    """The run's topics; topic_create adds one, and the producer writes to it from then on."""

    @property
    def names(self) -> Sequence[str]: ...

    def add(self, name: str) -> None: ...

