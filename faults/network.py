"""Network faults, all through Toxiproxy (this kernel has no netem)."""
from __future__ import annotations

from faults.base import Fault


class ProxyCut(Fault):
    """Disable a broker's proxies: open connections are closed, new ones refused."""
    kind = "proxy_cut"

    def __init__(self, toxiproxy, broker_name: str, lanes: tuple[str, ...] = ("client",), **kw) -> None:
        super().__init__(broker_name, lanes=list(lanes), **kw)
        self._toxiproxy = toxiproxy
        self._proxies = [f"{broker_name}-{lane}" for lane in lanes]

    def _inject(self) -> None:
        for proxy in self._proxies:
            self._toxiproxy.set_enabled(proxy, False)

    def _heal(self) -> None:
        for proxy in self._proxies:
            self._toxiproxy.set_enabled(proxy, True)


class Latency(Fault):
    """Delay every response from a broker's client lane (a Toxiproxy `latency` toxic, downstream)."""
    kind = "latency"

    def __init__(self, toxiproxy, broker_name: str, latency_ms: int, jitter_ms: int = 0, **kw) -> None:
        super().__init__(broker_name, latency_ms=latency_ms, jitter_ms=jitter_ms, **kw)
        self._toxiproxy = toxiproxy
        self._proxy = f"{broker_name}-client"
        self._toxic = f"kafka-chaos-latency-{broker_name}"

    def _inject(self) -> None:
        self._toxiproxy.add_toxic(self._proxy, self._toxic, "latency",
                                  {"latency": self.params["latency_ms"], "jitter": self.params["jitter_ms"]})

    def _heal(self) -> None:
        self._toxiproxy.remove_toxic(self._proxy, self._toxic)
