"""What a fault kind may know: the scenario's shape when it is validated, the live run when it fires.

`faults/` never imports the harness: the harness fills these in.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ScenarioFacts:
    """Enough of the scenario to check a fault entry before anything starts."""
    brokers: int
    members: tuple[str, ...]                 # member-1..N, as the harness names them
    topics: dict[str, int] = field(default_factory=dict)  # topic -> partitions
    lanes: tuple[str, ...] = ()              # per-client lanes the cluster will have (e.g. member-1, producer-1)
    group: dict = field(default_factory=dict)  # the consumer group's settings (client, protocol, static_membership, ...)

    @property
    def broker_names(self) -> tuple[str, ...]:
        return tuple(f"kafka-{n}" for n in range(1, self.brokers + 1))


@dataclass
class FaultContext:
    """The live run, handed to `Fault.build` when a step fires."""
    cluster: Any                     # harness.cluster.KafkaCluster: brokers, toxiproxy, admin()
    members: dict[str, Any]          # name -> workloads.services.WorkloadProcess
    timeline: Any                    # faults.timeline.FaultTimeline
    rng: random.Random
    group_id: str
    topic: str
    pool: Any = None                 # harness.run.MemberPool: starts members (joins, bounces, duplicates)
    topics: Any = None               # harness.run.RunTopics: the run's topics; topic_create adds to them
    rpc_proxy: Any = None            # faults.rpc_proxy.RpcProxy every member lane crosses, in a run that has one
