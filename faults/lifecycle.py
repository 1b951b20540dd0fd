"""Broker process faults: a hard crash, a graceful restart, and a rolling restart as an operator deploys.

A crash is SIGKILL (no controlled shutdown, no flushed state beyond what the log already had), a
graceful stop is SIGTERM (a controlled shutdown: the controller moves the broker's leaderships away
first), and a start brings the same broker back with its data (faults/backend.py's BrokerHandle, which
the container backend does to the broker's container). Waiting for a broker to come back means waiting
until it is registered and unfenced again, which a KRaft broker is only once it has caught up with the
metadata log.
"""
from __future__ import annotations

import threading
import time
from typing import Unpack

from pydantic import Field

from faults.backend import BrokerHandle, ClusterHandle
from faults.base import Fault, FaultParams, StepRecord, params_as
from faults.broker import BrokerFault
from faults.context import FaultContext, ScenarioFacts
from faults.targets import broker_in
from faults.timeline import FaultTimeline
from kafkanet.clock import now_ms

GRACEFUL_STOP_S = 60  # a graceful stop's time-out before SIGKILL; a controlled shutdown takes seconds
ROLL_LIMIT_S = 900


class BrokerCrash(BrokerFault):
    """SIGKILL the broker's JVM; the heal starts the same broker again, with its data, and waits
    until it has rejoined (registered and unfenced)."""
    kind = "broker_crash"
    ends_process = True

    def _inject(self) -> None:
        self.broker.kill()

    def _heal(self) -> None:
        self.cluster.start_broker(self.broker)


class BrokerRestart(BrokerFault):
    """A graceful stop (SIGTERM: controlled shutdown, leaders moved away first); the broker stays
    down for duration_s, then the heal starts it and waits until it has rejoined."""
    kind = "broker_restart"

    def _inject(self) -> None:
        self.broker.stop(GRACEFUL_STOP_S)

    def _heal(self) -> None:
        self.cluster.start_broker(self.broker)


class RollingRestartParams(FaultParams):
    order: list[str] | None = Field(None, min_length=1, description="brokers to restart, in this order (default: kafka-1..N)")
    settle_s: float = Field(0, ge=0, le=600, description="extra wait after each broker is back and nothing is under-replicated")
    replicated_timeout_s: float = Field(300, gt=0, description="how long to wait for every ISR to be full before the next broker")

    def check(self, facts: ScenarioFacts, target: str) -> None:
        if self.order is None:
            return
        for i, name in enumerate(self.order):
            if name not in facts.broker_names:
                raise ValueError(f"order[{i}]: {name!r} is not one of {list(facts.broker_names)}")
        if len(set(self.order)) != len(self.order):
            raise ValueError(f"order: lists a broker twice: {self.order}")


class RollingRestart(Fault):
    """Every broker in turn, as an operator deploys: a graceful stop, a start, then wait until the
    broker is back and no partition is under-replicated before the next one goes down. Each step is
    noted in faults.jsonl (`steps`). The roll runs in its own thread, so the nemesis goes on with
    other steps meanwhile. The heal, due at duration_s, waits for the roll to end (at most
    ROLL_LIMIT_S) and then starts any broker still down: give duration_s at least the roll's length
    (15-40 s a broker on the shared 2-core machine), or that heal holds the nemesis thread until the roll ends."""
    kind = "rolling_restart"
    target_kind = "cluster"
    Params = RollingRestartParams

    def __init__(self, cluster: ClusterHandle, order: list[BrokerHandle], params: RollingRestartParams, *,
                 timeline: FaultTimeline | None = None, **kw: object) -> None:
        super().__init__("cluster", timeline, **{**params.model_dump(), **kw})
        self.cluster, self.order, self.spec = cluster, order, params

    @classmethod
    def build(cls, ctx: FaultContext, target: str, params: FaultParams, **record: Unpack[StepRecord]) -> Fault:
        spec = params_as(RollingRestartParams, params)
        order = [broker_in(ctx, name) for name in spec.order] if spec.order else list(ctx.cluster.brokers)
        return cls(ctx.cluster, order, spec, timeline=ctx.timeline, **record)

    def _inject(self) -> None:
        self.steps: list[dict] = []
        self.error: str | None = None
        self._thread = threading.Thread(target=self._roll, name="rolling-restart", daemon=True)
        self._thread.start()

    def _roll(self) -> None:
        try:
            for broker in self.order:
                step = {"broker": broker.name, "down_ms": now_ms()}
                broker.stop(GRACEFUL_STOP_S)
                step["stopped_ms"] = now_ms()
                self.cluster.start_broker(broker)
                step["up_ms"] = now_ms()
                self.cluster.wait_until(lambda: not self.cluster.under_replicated(), self.spec.replicated_timeout_s,
                                        f"partitions still under-replicated after {broker.name} came back", broker)
                step["replicated_ms"] = now_ms()
                self.steps.append(step)
                self.note(steps=self.steps)
                time.sleep(self.spec.settle_s)
        except Exception as exc:  # a roll that stopped half-way is a finding, in faults.jsonl; the heal restores
            self.error = f"{type(exc).__name__}: {exc}"
            self.note(steps=self.steps, roll_error=self.error)

    def _heal(self) -> None:
        thread = getattr(self, "_thread", None)
        if thread is not None:
            thread.join(ROLL_LIMIT_S)
        for broker in self.order:  # whatever happened to the roll, every broker runs afterwards
            self.cluster.start_broker(broker)
        if thread is not None and thread.is_alive():
            raise RuntimeError(f"the rolling restart did not finish within {ROLL_LIMIT_S} s")
