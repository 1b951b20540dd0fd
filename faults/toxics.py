"""Every Toxiproxy toxic, on any lane, either direction (this kernel has no netem: Toxiproxy is how a
link gets slow, lossy or strange).

Target: a broker (kafka-N or a role) and its `lane` (`client`, the default: every client-facing proxy
of that broker; `internal`: replication into it; `controller`: the quorum; or one workload client's
lane, e.g. `member-2`), or a workload client (member-N, producer-1, random-member): its lane to every
broker, or to one (`broker`). `stream`: `downstream` (broker to client, the default), `upstream` or
`both`; `toxicity`: the probability that a connection gets the toxic. Each toxic is named after its
fault's id, so two faults on one proxy never collide and a heal removes exactly its own.
"""
from __future__ import annotations

import secrets
from typing import ClassVar, Literal, Self, Unpack

from pydantic import Field, model_validator

from faults.backend import BrokerHandle
from faults.base import Fault, FaultParams, StepRecord, params_as
from faults.context import FaultContext, ScenarioFacts
from faults.failover import WatchesCoordinator
from faults.network import client_lane
from faults.targets import broker_in, check_broker_target, is_client_target, toxiproxy_of
from faults.timeline import FaultTimeline
from kafkanet.toxiproxy import Toxiproxy

BROKER_LANES = ("client", "internal", "controller")


class ToxicParams(FaultParams):
    lane: str = Field("client", description="with a broker target: client, internal, controller or a workload client's lane")
    broker: str | None = Field(None, description="with a client target: only its lane to this broker (any broker target)")
    stream: Literal["downstream", "upstream", "both"] = "downstream"
    toxicity: float = Field(1.0, gt=0, le=1, description="the probability that a connection gets the toxic")

    def check(self, facts: ScenarioFacts, target: str) -> None:
        if self.lane not in BROKER_LANES and self.lane not in facts.lanes:
            raise ValueError(f"lane: {self.lane!r} is not one of {list(BROKER_LANES) + list(facts.lanes)}")
        client_target = is_client_target(target)
        if self.lane != "client" and client_target:
            raise ValueError(f"lane: goes with a broker target; {target} is a client, the toxic is on its own lane")
        if self.broker is not None and not client_target:
            raise ValueError(f"broker: goes with a client target (member-N, producer-1); {target} is a broker already")
        if self.broker is not None:
            try:
                check_broker_target(self.broker, facts)
            except ValueError as exc:
                raise ValueError(f"broker{str(exc).removeprefix('target')}") from None

    def attributes(self) -> dict:
        raise NotImplementedError


class Toxic(WatchesCoordinator):
    target_kind = "lane"
    needs = "toxiproxy"
    toxic_type: ClassVar[str]

    def __init__(self, target: str, proxies: list[str], toxiproxy: Toxiproxy, params: ToxicParams,
                 broker: BrokerHandle | None = None, *, timeline: FaultTimeline | None = None, **kw: object) -> None:
        self.spec = params
        super().__init__(target, timeline, **{**params.model_dump(), **kw})
        self.proxies, self.toxiproxy, self.broker = proxies, toxiproxy, broker
        self._token = secrets.token_hex(3)

    @classmethod
    def requirement(cls, target: str, params: FaultParams) -> str:
        """A broker's client listener through any Toxiproxy; a client's own lane or a link between brokers
        only through the harness's."""
        return "lanes" if is_client_target(target) or params_as(ToxicParams, params).lane != "client" else "toxiproxy"

    @classmethod
    def build(cls, ctx: FaultContext, target: str, params: FaultParams, **record: Unpack[StepRecord]) -> Fault:
        spec = params_as(ToxicParams, params)
        name, proxies, broker = toxic_proxies(ctx, target, spec)
        fault = cls(name, proxies, toxiproxy_of(ctx.cluster), spec, broker, timeline=ctx.timeline, **record)
        if broker is not None:
            fault.watch_coordinator(broker, ctx.cluster, ctx.group_id, record.get("requested_target"))
        return fault

    def _streams(self) -> list[str]:
        return ["downstream", "upstream"] if self.spec.stream == "both" else [self.spec.stream]

    def _toxic_name(self, stream: str) -> str:
        """Unique per fault, also across timelines (a test's fault next to a run's): id plus a token."""
        return f"kafka-chaos-{self.row()['id']}-{self._token}-{stream}"

    def _inject(self) -> None:
        self.note(proxies=self.proxies, toxics=[self._toxic_name(stream) for stream in self._streams()])
        for proxy in self.proxies:
            for stream in self._streams():
                self.toxiproxy.add_toxic(proxy, self._toxic_name(stream), self.toxic_type, self.spec.attributes(),
                                         stream=stream, toxicity=self.spec.toxicity)

    def _heal(self) -> None:
        for proxy in self.proxies:
            for stream in self._streams():
                self.toxiproxy.remove_toxic(proxy, self._toxic_name(stream))


def toxic_proxies(ctx: FaultContext, target: str, params: ToxicParams) -> tuple[str, list[str], BrokerHandle | None]:
    """What the fault is on (its name in faults.jsonl), the proxies it puts its toxics on, and the
    broker when the target is one (a client target is on every broker, or on `broker` only)."""
    if is_client_target(target):
        lane = client_lane(ctx, target)
        if params.broker is None:
            return lane, [b.proxy(lane) for b in ctx.cluster.brokers], None
        broker = broker_in(ctx, params.broker)
        return f"{broker.name}/{lane}", [broker.proxy(lane)], None
    broker = broker_in(ctx, target)
    if params.lane == "client":
        return broker.name, broker.client_proxies(), broker
    if params.lane not in BROKER_LANES:
        client_lane(ctx, params.lane)  # raises if this cluster has no such lane
    return f"{broker.name}/{params.lane}", [broker.proxy(params.lane)], broker


class LatencyParams(ToxicParams):
    latency_ms: int = Field(gt=0, le=600_000, description="added to the data in the chosen direction")
    jitter_ms: int = Field(0, ge=0)

    @model_validator(mode="after")
    def _jitter_below_latency(self) -> Self:
        if self.jitter_ms > self.latency_ms:
            raise ValueError(f"jitter_ms: must not exceed latency_ms ({self.latency_ms}), got {self.jitter_ms}")
        return self

    def attributes(self) -> dict:
        return {"latency": self.latency_ms, "jitter": self.jitter_ms}


class Latency(Toxic):
    """Delay the data on a lane by latency_ms (± jitter_ms)."""
    kind, toxic_type, Params = "latency", "latency", LatencyParams


class BandwidthParams(ToxicParams):
    rate_kb_s: int = Field(ge=0, le=10_000_000, description="KB per second; 0 lets nothing through")

    def attributes(self) -> dict:
        return {"rate": self.rate_kb_s}


class Bandwidth(Toxic):
    """Cap a lane's throughput at rate_kb_s."""
    kind, toxic_type, Params = "bandwidth", "bandwidth", BandwidthParams


class SlicerParams(ToxicParams):
    average_size: int = Field(gt=0, le=1_000_000, description="bytes per slice")
    size_variation: int = Field(0, ge=0)
    delay_us: int = Field(0, ge=0, le=10_000_000, description="between slices")

    @model_validator(mode="after")
    def _variation_below_size(self) -> Self:
        if self.size_variation >= self.average_size:
            raise ValueError(f"size_variation: must be below average_size ({self.average_size}), got {self.size_variation}")
        return self

    def attributes(self) -> dict:
        return {"average_size": self.average_size, "size_variation": self.size_variation, "delay": self.delay_us}


class Slicer(Toxic):
    """Cut the data into small slices, optionally with a delay between them (TCP fragmentation)."""
    kind, toxic_type, Params = "slicer", "slicer", SlicerParams


class ResetPeerParams(ToxicParams):
    timeout_ms: int = Field(0, ge=0, le=3_600_000, description="reset after this long (0: at once)")

    def attributes(self) -> dict:
        return {"timeout": self.timeout_ms}


class ResetPeer(Toxic):
    """Reset connections (TCP RST) after timeout_ms: requests fail, clients reconnect."""
    kind, toxic_type, Params = "reset_peer", "reset_peer", ResetPeerParams


class TimeoutParams(ToxicParams):
    timeout_ms: int = Field(0, ge=0, le=3_600_000, description="close after this long; 0: hold the data forever (a blackhole)")

    def attributes(self) -> dict:
        return {"timeout": self.timeout_ms}


class Timeout(Toxic):
    """Stop all data on a lane; close the connection after timeout_ms, or never (0: a blackhole)."""
    kind, toxic_type, Params = "timeout", "timeout", TimeoutParams


class LimitDataParams(ToxicParams):
    bytes: int = Field(gt=0, le=10**12, description="close each connection once this many bytes have passed")

    def attributes(self) -> dict:
        return {"bytes": self.bytes}


class LimitData(Toxic):
    """Close each connection after a number of bytes."""
    kind, toxic_type, Params = "limit_data", "limit_data", LimitDataParams


class SlowCloseParams(ToxicParams):
    delay_ms: int = Field(gt=0, le=3_600_000)

    def attributes(self) -> dict:
        return {"delay": self.delay_ms}


class SlowClose(Toxic):
    """Delay the close of a connection by delay_ms."""
    kind, toxic_type, Params = "slow_close", "slow_close", SlowCloseParams
