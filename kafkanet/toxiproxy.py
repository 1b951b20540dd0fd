"""A small client for the Toxiproxy 2.x HTTP API.

toxiproxy-python keeps its host and port in class globals and sets no request time-outs, so a
frozen Toxiproxy would hang the harness; this client is one object per server, every call bounded.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import requests

TIMEOUT_S = 10


class ToxiproxyError(RuntimeError):
    pass


@dataclass(frozen=True)
class Proxy:
    name: str
    listen: str
    upstream: str


class Toxiproxy:
    def __init__(self, api_url: str) -> None:
        self.api_url = api_url.rstrip("/")
        self._http = requests.Session()
        # The server answers 403 to browser-like user agents.
        self._http.headers["User-Agent"] = "kafka-chaos"

    def _call(self, method: str, path: str, json: dict | list | None = None) -> Any:
        """The answer's JSON (None when it has no body)."""
        try:
            response = self._http.request(method, self.api_url + path, json=json, timeout=TIMEOUT_S)
        except requests.RequestException as exc:
            raise ToxiproxyError(f"Toxiproxy {method} {path} failed: {exc}") from exc
        if response.status_code >= 300:
            raise ToxiproxyError(f"Toxiproxy {method} {path} -> {response.status_code}: {response.text.strip()}")
        return response.json() if response.content else None

    def version(self) -> str:
        response = self._http.get(self.api_url + "/version", timeout=TIMEOUT_S)
        response.raise_for_status()
        return response.text.strip()

    def create_proxy(self, proxy: Proxy) -> None:
        self._call("POST", "/proxies", {"name": proxy.name, "listen": proxy.listen, "upstream": proxy.upstream, "enabled": True})

    def populate(self, proxies: list[Proxy]) -> None:
        """Create many proxies in one request."""
        self._call("POST", "/populate", [{"name": p.name, "listen": p.listen, "upstream": p.upstream, "enabled": True}
                                         for p in proxies])

    def proxies(self) -> dict:
        return self._call("GET", "/proxies")

    def set_upstream(self, name: str, upstream: str) -> None:
        """Point a proxy elsewhere (host:port); its open connections are closed."""
        self._call("POST", f"/proxies/{name}", {"upstream": upstream})

    def set_enabled(self, name: str, enabled: bool) -> None:
        self._call("POST", f"/proxies/{name}", {"enabled": enabled})

    def add_toxic(self, proxy: str, toxic: str, kind: str, attributes: dict, stream: str = "downstream", toxicity: float = 1.0) -> None:
        body = {"name": toxic, "type": kind, "stream": stream, "toxicity": toxicity, "attributes": attributes}
        self._call("POST", f"/proxies/{proxy}/toxics", body)

    def remove_toxic(self, proxy: str, toxic: str) -> None:
        """Idempotent: removing a toxic that is already gone is not an error."""
        try:
            self._call("DELETE", f"/proxies/{proxy}/toxics/{toxic}")
        except ToxiproxyError as exc:
            if "404" not in str(exc):
                raise

    def reset(self) -> None:
        """Re-enable every proxy and remove every toxic."""
        self._call("POST", "/reset")
