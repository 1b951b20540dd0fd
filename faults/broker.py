"""Faults on a broker's process: a GC-like freeze (BrokerHandle.pause / resume)."""
from __future__ import annotations

from typing import Unpack

from faults.backend import BrokerHandle, ClusterHandle
from faults.base import Fault, FaultParams, StepRecord
from faults.context import FaultContext
from faults.failover import WatchesCoordinator
from faults.targets import TargetError, broker_in, toxiproxy_of
from faults.timeline import FaultTimeline
from kafkanet.toxiproxy import Toxiproxy


class BrokerFault(WatchesCoordinator):
    """A fault on one broker, the target resolved (a role to the broker holding it) when it fires.
    `target`: what faults.jsonl records it under, when that is not the broker (a pair of brokers)."""
    target_kind = "broker"

    def __init__(self, broker: BrokerHandle, params: FaultParams | None = None, *, target: str | None = None,
                 cluster: ClusterHandle | None = None, toxiproxy: Toxiproxy | None = None, group_id: str | None = None,
                 timeline: FaultTimeline | None = None, **kw: object) -> None:
        self.spec = params or self.Params()
        super().__init__(target or broker.name, timeline, **{**self.spec.model_dump(), **kw})
        self.broker = broker
        self._cluster, self._toxiproxy = cluster, toxiproxy
        self.watch_coordinator(broker, cluster, group_id, kw.get("requested_target"))

    @classmethod
    def build(cls, ctx: FaultContext, target: str, params: FaultParams, **record: Unpack[StepRecord]) -> Fault:
        return cls(broker_in(ctx, target), params, cluster=ctx.cluster, group_id=ctx.group_id,
                   timeline=ctx.timeline, **record)

    @property
    def cluster(self) -> ClusterHandle:
        if self._cluster is None:
            raise TargetError(f"{self!r} was built without its cluster")
        return self._cluster

    @property
    def toxiproxy(self) -> Toxiproxy:
        return self._toxiproxy or toxiproxy_of(self.cluster)


class BrokerFreeze(BrokerFault):
    """Every thread of the broker stops; TCP connects still succeed, nothing is answered."""
    kind = "broker_freeze"

    def _inject(self) -> None:
        self.broker.pause()

    def _heal(self) -> None:
        self.broker.resume()
