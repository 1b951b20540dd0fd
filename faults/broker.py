"""Faults on a broker's process: a GC-like freeze (docker pause / unpause)."""
from __future__ import annotations

import docker

from faults.base import Fault


class BrokerFreeze(Fault):
    """Every thread of the broker stops; TCP connects still succeed, nothing is answered."""
    kind = "broker_freeze"

    def __init__(self, broker, **kw) -> None:
        super().__init__(broker.name, **kw)
        self._container = broker.container.get_wrapped_container()

    def _inject(self) -> None:
        self._container.pause()

    def _heal(self) -> None:
        self._container.reload()
        if self._container.status == "paused":
            try:
                self._container.unpause()
            except docker.errors.NotFound:
                pass
