"""What a fault kind may know: the scenario's shape when it is validated, the live run when it fires.

`faults/` never imports the harness: the harness fills these in, with a backend's objects that implement
the protocols of faults/backend.py.
"""
from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field

from faults.backend import ClusterHandle, MemberHandle, PoolHandle, TopicsHandle
from faults.timeline import FaultTimeline
from kafkanet.rpc_proxy import RpcProxy


@dataclass(frozen=True)
class ScenarioFacts:
    """Enough of the scenario to check a fault entry before anything starts."""
    brokers: int
    members: tuple[str, ...]                 # member-1..N, as the harness names them
    topics: dict[str, int] = field(default_factory=dict)  # topic -> partitions
    lanes: tuple[str, ...] = ()              # per-client lanes the cluster will have (e.g. member-1, producer-1)
    group: dict = field(default_factory=dict)  # the consumer group's settings (client, protocol, static_membership, ...)
    member_kinds: dict[str, str] = field(default_factory=dict)  # member-N -> its kind (consumer_group.client, its own)
    log_disk_mb: int | None = None           # cluster.log_disk_mb: each broker's log directory on a disk of its own
    producing: bool = False                  # a member produces: a stateful member's changelog, an output topic
    kafka_version: str | None = None         # cluster.kafka_version (None: the harness's pinned release)
    transaction_version: int | None = None   # cluster.transaction_version (None: the brokers' own, by release)

    @property
    def broker_names(self) -> tuple[str, ...]:
        return tuple(f"kafka-{n}" for n in range(1, self.brokers + 1))


@dataclass
class FaultContext:
    """The live run, handed to `Fault.build` when a step fires."""
    cluster: ClusterHandle
    members: Mapping[str, MemberHandle]  # by name, the ones started later included
    timeline: FaultTimeline
    rng: random.Random
    group_id: str
    topic: str
    pool: PoolHandle | None = None       # starts members (joins, bounces, duplicates)
    topics: TopicsHandle | None = None   # the run's topics; topic_create adds to them
    rpc_proxy: RpcProxy | None = None    # the request-aware proxy every member lane crosses, in a run that has one
