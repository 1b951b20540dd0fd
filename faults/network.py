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
