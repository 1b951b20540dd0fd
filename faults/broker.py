"""Faults on a broker's process: a GC-like freeze (BrokerHandle.pause / resume)."""
from __future__ import annotations

from faults.base import Fault
from faults.failover import WatchesCoordinator
from faults.targets import broker_in


class BrokerFault(WatchesCoordinator, Fault):
    """A fault on one broker, the target resolved (a role to the broker holding it) when it fires."""
    target_kind = "broker"

    def __init__(self, broker, params=None, *, cluster=None, toxiproxy=None, group_id: str | None = None, **kw) -> None:
        self.spec = params or self.Params()
        super().__init__(broker.name, **{**self.spec.model_dump(), **kw})
        self.broker, self.cluster = broker, cluster
        self.toxiproxy = toxiproxy or (cluster.toxiproxy if cluster is not None else None)
        self.watch_coordinator(cluster, group_id, kw.get("requested_target"))

    @classmethod
    def build(cls, ctx, target, params, **record):
        return cls(broker_in(ctx, target), params, cluster=ctx.cluster, group_id=ctx.group_id,
                   timeline=ctx.timeline, **record)


class BrokerFreeze(BrokerFault):
    """Every thread of the broker stops; TCP connects still succeed, nothing is answered."""
    kind = "broker_freeze"

    def _inject(self) -> None:
        self.broker.pause()

    def _heal(self) -> None:
        self.broker.resume()
