"""Faults on a broker's process: a GC-like freeze (docker pause / unpause)."""
from __future__ import annotations

import time

import docker

from faults.base import Fault
from faults.failover import WatchesCoordinator
from faults.targets import broker_in

PAUSE_ATTEMPTS = 5


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

    def __init__(self, broker, params=None, **kw) -> None:
        super().__init__(broker, params, **kw)
        self._container = broker.container.get_wrapped_container()

    def _inject(self) -> None:
        # The cgroup-v1 freezer sometimes gives up on a busy JVM ("OCI runtime pause failed: unable to
        # freeze"); runc thaws it again, so another attempt is safe.
        for attempt in range(PAUSE_ATTEMPTS):
            try:
                self._container.pause()
                return
            except docker.errors.APIError as exc:
                if "unable to freeze" not in str(exc) or attempt == PAUSE_ATTEMPTS - 1:
                    raise
                time.sleep(0.2)

    def _heal(self) -> None:
        self._container.reload()
        if self._container.status == "paused":
            try:
                self._container.unpause()
            except docker.errors.NotFound:
                pass
