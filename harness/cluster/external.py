"""A Kafka cluster someone else runs: the harness connects to it, runs its workloads and the faults it
can apply, and leaves the cluster as it found it.

What it can do there (faults.base.REQUIREMENTS): always the faults on its own processes and topics
(member freezes, crashes, joins, slow processing, partitions added to the run's topic, ...); the faults
on a broker's client listener (toxics, proxy_cut) when a Toxiproxy stands in front of the brokers
(`toxiproxy_url`): each broker is matched with the proxy that listens on the port the broker advertises.
Those hit every client of the cluster, so they are refused unless `allow_destructive`. Faults that
need the harness's own topology (per-client lanes, links between brokers) or the brokers' containers
are skipped, each with its reason. The brokers implement faults/backend.py's BrokerHandle by refusing
what needs their processes (pause, kill, ...) with one error naming the broker and the operation.

Credentials for SASL/SSL come from the environment (workloads/security.py) and are never written.
"""
from __future__ import annotations

import logging
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

from confluent_kafka.admin import AdminClient, NewTopic

from faults.backend import BrokerHandle
from harness.cluster.brokers import BrokerQueries, create_topic_with
from harness.scenario import ClusterSpec
from kafkanet.broker_view import BrokerView, PartitionView
from kafkanet.toxiproxy import Toxiproxy, ToxiproxyError
from workloads.security import security_config

CAPABILITIES = ("processes", "toxiproxy")


class ExternalClusterError(RuntimeError):
    pass


@dataclass
class ExternalBroker:
    node_id: int
    name: str
    client_address: str
    client_proxy: str | None = None  # the user's Toxiproxy proxy in front of it, if any
    peer_ports: tuple[int, ...] = ()  # brokers reach each other directly: no lanes of ours

    @property
    def control_address(self) -> str:
        """No CONTROL lane of the harness: the broker's advertised client listener."""
        return self.client_address

    def proxy(self, lane: str) -> str:
        if lane != "client" or self.client_proxy is None:
            raise ExternalClusterError(f"{self.name}: no Toxiproxy proxy for its {lane} lane on an external cluster")
        return self.client_proxy

    def client_proxies(self) -> list[str]:
        return [self.client_proxy] if self.client_proxy else []

    # -- the broker's process is the cluster owner's ----------------------------------------------------------

    def _refuse(self, operation: str) -> NoReturn:
        raise ExternalClusterError(f"{self.name}: cannot {operation} a broker of an external cluster: that needs "
                                   "control of the brokers' processes, which only the harness's own cluster gives")

    def pause(self) -> None:
        self._refuse("pause")

    def resume(self) -> None:
        self._refuse("resume")

    def kill(self) -> None:
        self._refuse("kill")

    def stop(self, timeout_s: float) -> None:
        self._refuse("stop")

    def start(self) -> None:
        self._refuse("start")

    def running(self) -> bool:
        self._refuse("watch the process of")

    def run_in_netns(self, argv: list[str]) -> subprocess.CompletedProcess[str] | None:
        self._refuse("enter the network namespace of")

    def logs(self) -> str:
        self._refuse("read the logs of")

    def fill_log_dir(self) -> int:
        self._refuse("fill the log directory of")

    def free_log_dir(self) -> None:
        self._refuse("free the log directory of")


@dataclass
class ExternalCluster(BrokerQueries[ExternalBroker]):
    bootstrap_servers: str
    toxiproxy_url: str | None = None
    allow_destructive: bool = False
    client_lanes: tuple[str, ...] = ()
    brokers: list[ExternalBroker] = field(default_factory=list)
    owned = False  # the harness did not start it: faults that touch it are destructive

    def __post_init__(self) -> None:
        self.toxiproxy = Toxiproxy(self.toxiproxy_url) if self.toxiproxy_url else None
        self.spec = ClusterSpec()
        self._admin: AdminClient | None = None
        self.started_at_ms = None

    @property
    def capabilities(self) -> tuple[str, ...]:
        return CAPABILITIES if self.toxiproxy else ("processes",)

    def __enter__(self) -> "ExternalCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> "ExternalCluster":
        """Learn the brokers (and their proxies); one error if the cluster or the Toxiproxy does not answer."""
        try:
            metadata = self.admin().list_topics(timeout=15)
        except Exception as exc:
            raise ExternalClusterError(f"--bootstrap-servers {self.bootstrap_servers}: no answer within 15 s ({exc})") from None
        proxies = self._proxies_by_port()
        self.brokers = [ExternalBroker(b.id, f"kafka-{b.id}", f"{b.host}:{b.port}", proxies.get(b.port))
                        for b in sorted(metadata.brokers.values(), key=lambda b: b.id)]
        unmatched = [b.name for b in self.brokers if self.toxiproxy and b.client_proxy is None]
        if unmatched:
            raise ExternalClusterError(f"--toxiproxy-url {self.toxiproxy_url}: no proxy listens on the port that "
                                       f"{', '.join(unmatched)} advertise(s); the brokers must advertise their proxies")
        self.spec = ClusterSpec(brokers=len(self.brokers))
        return self

    def _proxies_by_port(self) -> dict[int, str]:
        if self.toxiproxy is None:
            return {}
        try:
            listed = self.toxiproxy.proxies()
        except ToxiproxyError as exc:
            raise ExternalClusterError(f"--toxiproxy-url {self.toxiproxy_url}: {exc}") from None
        return {int(p["listen"].rsplit(":", 1)[1]): name for name, p in listed.items()}

    def stop(self) -> None:
        """Nothing to remove: the cluster is not ours. Our toxics are gone (reset_faults)."""
        self.reset_faults()
        self._admin = None

    def reset_faults(self) -> None:
        """Remove the toxics and re-enable the proxies this harness touched (named kafka-chaos-*),
        leaving anything else on the user's Toxiproxy alone."""
        if self.toxiproxy is None:
            return
        for name, proxy in self.toxiproxy.proxies().items():
            if name not in {b.client_proxy for b in self.brokers}:
                continue
            for toxic in proxy.get("toxics", []):
                if toxic["name"].startswith("kafka-chaos-"):
                    self.toxiproxy.remove_toxic(name, toxic["name"])
            if not proxy.get("enabled", True):
                self.toxiproxy.set_enabled(name, True)

    # -- what the run needs -------------------------------------------------------------------------
    def lane_bootstrap_servers(self, client: str) -> str:
        """No lanes of its own: every client shares the cluster's listener."""
        return self.bootstrap_servers

    @property
    def control_bootstrap_servers(self) -> str:
        return self.bootstrap_servers

    def admin(self) -> AdminClient:
        if self._admin is None:
            self._admin = AdminClient({"bootstrap.servers": self.bootstrap_servers, "client.id": "kafka-chaos-harness",
                                       **security_config()}, logger=logging.getLogger("kafka-chaos.admin"))
        return self._admin

    def view(self, timeout_s: float = 30) -> BrokerView:
        """The metadata as the cluster's client listener gives it (no chosen broker here)."""
        md = self.admin().list_topics(timeout=timeout_s)
        parts = tuple(sorted((PartitionView(t, p.id, p.leader, tuple(p.isrs), tuple(p.replicas))
                              for t, tm in md.topics.items() for p in tm.partitions.values()),
                             key=lambda v: (v.topic, v.partition)))
        return BrokerView(frozenset(md.brokers), parts)

    @property
    def toxiproxy_ip(self) -> str:
        raise ExternalClusterError("an external cluster's brokers reach each other directly, not through a Toxiproxy of ours")

    def start_broker(self, broker: BrokerHandle, timeout_s: float = 120) -> None:
        broker.start()  # an ExternalBroker refuses it, naming itself

    def wait_rejoined(self, brokers: Sequence[BrokerHandle], timeout_s: float = 120) -> None:
        raise ExternalClusterError("cannot wait for brokers of an external cluster to rejoin after a cut between "
                                   "them: that needs the harness's own lanes between the brokers")

    def create_topic(self, name: str, partitions: int, replication_factor: int, configs: dict | None = None) -> None:
        """At most one replica per broker the cluster has."""
        create_topic_with(self.admin(), NewTopic(name, partitions, min(replication_factor, len(self.brokers)),
                                                 config=configs or {}), exist_ok=False)

    def describe(self) -> dict:
        """What cluster.json records: addresses only, never a credential."""
        return {"external": True, "bootstrap_servers": self.bootstrap_servers, "toxiproxy_api": self.toxiproxy_url,
                "brokers": [{"node_id": b.node_id, "name": b.name, "client_address": b.client_address,
                             "client_proxy": b.client_proxy} for b in self.brokers],
                "client_lanes": list(self.client_lanes), "allow_destructive": self.allow_destructive}

    def save_logs(self, logs_dir: Path, since: float | None = None) -> None:
        """The brokers' logs are the cluster owner's."""
