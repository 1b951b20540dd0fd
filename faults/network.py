"""Network faults, all through Toxiproxy (this kernel has no netem)."""
from __future__ import annotations

from pydantic import Field, model_validator

from faults.base import FaultParams
from faults.broker import BrokerFault


class ProxyCut(BrokerFault):
    """Disable a broker's proxies: open connections are closed, new ones refused."""
    kind = "proxy_cut"

    def __init__(self, broker, params=None, lanes: tuple[str, ...] = ("client",), **kw) -> None:
        super().__init__(broker, params, lanes=list(lanes), **kw)
        self._proxies = [broker.proxy(lane) for lane in lanes]

    def _inject(self) -> None:
        for proxy in self._proxies:
            self.toxiproxy.set_enabled(proxy, False)

    def _heal(self) -> None:
        for proxy in self._proxies:
            self.toxiproxy.set_enabled(proxy, True)


class LatencyParams(FaultParams):
    latency_ms: int = Field(gt=0, le=600_000, description="added to every response")
    jitter_ms: int = Field(0, ge=0)

    @model_validator(mode="after")
    def _jitter_below_latency(self):
        if self.jitter_ms > self.latency_ms:
            raise ValueError(f"jitter_ms: must not exceed latency_ms ({self.latency_ms}), got {self.jitter_ms}")
        return self


class Latency(BrokerFault):
    """Delay every response from a broker's client lane (a Toxiproxy `latency` toxic, downstream)."""
    kind = "latency"
    Params = LatencyParams

    def __init__(self, broker, params: LatencyParams, **kw) -> None:
        super().__init__(broker, params, **kw)
        self._proxy = broker.proxy("client")
        self._toxic = f"kafka-chaos-latency-{broker.name}"

    def _inject(self) -> None:
        self.toxiproxy.add_toxic(self._proxy, self._toxic, "latency",
                                  {"latency": self.spec.latency_ms, "jitter": self.spec.jitter_ms})

    def _heal(self) -> None:
        self.toxiproxy.remove_toxic(self._proxy, self._toxic)
