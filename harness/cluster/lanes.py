"""How clients and brokers reach each other: every link through a Toxiproxy proxy (the cluster's CLIENT lane,
the brokers' INTERNAL and CONTROLLER lanes, and one lane per workload client), the CONTROL lane straight to each
broker for the harness alone, and a lane sent through the request-aware proxy for rpc faults. A part of
KafkaCluster (harness/cluster/kafka.py), which starts the proxies' container before the brokers."""
from __future__ import annotations

from contextlib import contextmanager

from testcontainers.core.container import DockerContainer
from testcontainers.core.network import Network

from harness.cluster import broker_config
from harness.cluster.brokers import Broker
from harness.cluster.containers import ClusterError, LOOPBACK_ANY_PORT, container_logs, host_ports, log_tail
from harness.releases.versions import toxiproxy_image
from kafkanet.rpc_proxy import RpcProxy
from kafkanet.toxiproxy import Proxy, Toxiproxy
from kafkanet.waiting import retry

TOXIPROXY_API_PORT = 8474
# Port of each lane's proxy inside the Toxiproxy container: base + node id.
LANE_PORT_BASE = {"client": 10000, "internal": 10200, "controller": 10300}
CLIENT_LANE_PORT_BASE = 11000  # + 10 * the lane's index + node id: one proxy per broker and workload client


def lane_port(index: int, node: int) -> int:
    return CLIENT_LANE_PORT_BASE + 10 * index + node


class LaneRouting:
    """The lanes of a cluster: its Toxiproxy, the addresses clients are given, and re-pointing a lane."""
    run_id: str
    brokers: list[Broker]
    client_lanes: tuple[str, ...]
    toxiproxy: Toxiproxy | None
    _network: Network | None
    _toxiproxy_container: DockerContainer | None

    def _node_ids(self) -> range:
        raise NotImplementedError

    def _start_toxiproxy(self, labels: dict[str, str]) -> None:
        container = (DockerContainer(toxiproxy_image(), command=["-host=0.0.0.0", f"-port={TOXIPROXY_API_PORT}"])
                     .with_name(f"kafka-chaos-{self.run_id}-toxiproxy")
                     .with_network(self._network).with_network_aliases("toxiproxy")
                     .with_kwargs(labels=labels))
        container.ports[f"{TOXIPROXY_API_PORT}/tcp"] = LOOPBACK_ANY_PORT
        for node in self._node_ids():
            container.ports[f"{LANE_PORT_BASE['client'] + node}/tcp"] = LOOPBACK_ANY_PORT
            for index in range(len(self.client_lanes)):
                container.ports[f"{lane_port(index, node)}/tcp"] = LOOPBACK_ANY_PORT
        self._toxiproxy_container = container
        container.start()
        self.toxiproxy = Toxiproxy(f"http://127.0.0.1:{host_ports(container)[TOXIPROXY_API_PORT]}")
        retry(self.toxiproxy.version, 30, "the Toxiproxy API did not answer", error=ClusterError, interval_s=0.3,
              detail=lambda: log_tail(lambda: container_logs(container)))
        upstream_ports = {"client": broker_config.CLIENT_PORT, "internal": broker_config.INTERNAL_PORT,
                          "controller": broker_config.CONTROLLER_PORT}
        proxies = [Proxy(f"kafka-{node}-{lane}", f"0.0.0.0:{base + node}", f"kafka-{node}:{upstream_ports[lane]}")
                   for node in self._node_ids() for lane, base in LANE_PORT_BASE.items()]
        proxies += [Proxy(f"kafka-{node}-{lane}", f"0.0.0.0:{lane_port(index, node)}",
                          f"kafka-{node}:{broker_config.LANE_PORT + index}")
                    for node in self._node_ids() for index, lane in enumerate(self.client_lanes)]
        self.toxiproxy.populate(proxies)


    @property
    def bootstrap_servers(self) -> str:
        """Workload clients: every broker's CLIENT lane, through Toxiproxy."""
        return ",".join(b.client_address for b in self.brokers)

    def lane_bootstrap_servers(self, client: str) -> str:
        """A workload client's own lane: every broker through that client's proxies."""
        if client not in self.client_lanes:
            raise ClusterError(f"this cluster has no lane for {client!r}; its lanes: {', '.join(self.client_lanes) or 'none'}")
        return ",".join(b.lane_addresses[client] for b in self.brokers)

    @property
    def control_bootstrap_servers(self) -> str:
        """The harness's own admin lane; faults never touch it."""
        return ",".join(b.control_address for b in self.brokers)

    @property
    def toxiproxy_ip(self) -> str:
        """Toxiproxy's address on the cluster network: where every broker-to-broker connection goes."""
        return self._network_ip(self._toxiproxy_container)

    def _network_ip(self, container: DockerContainer) -> str:
        wrapped = container.get_wrapped_container()
        wrapped.reload()
        return wrapped.attrs["NetworkSettings"]["Networks"][self._network.name]["IPAddress"]

    @property
    def gateway_ip(self) -> str:
        """The host as the containers reach it: the cluster network's gateway (a proxy on the host listens there)."""
        self._network._network.reload()
        return self._network._network.attrs["IPAM"]["Config"][0]["Gateway"]

    def lane_upstreams(self, lane: str) -> dict[str, tuple[str, int]]:
        """Where each broker's proxy on a client's lane forwards to: that broker's listener for the lane, by its
        address on the cluster network (reachable from the host too)."""
        port = broker_config.LANE_PORT + self.client_lanes.index(lane)
        return {broker.name: (self._network_ip(broker.container), port) for broker in self.brokers}

    def point_lane(self, lane: str, addresses: dict[str, str] | None) -> None:
        """Send a client's lane through something else: each broker's proxy on it forwards to `addresses[broker
        name]` (host:port), or, with None, to the broker's own listener again (as the cluster started it)."""
        for broker in self.brokers:
            upstream = addresses[broker.name] if addresses is not None else self._lane_listener(broker, lane)
            self.toxiproxy.set_upstream(broker.proxy(lane), upstream)

    def _lane_listener(self, broker: "Broker", lane: str) -> str:
        return f"{broker.name}:{broker_config.LANE_PORT + self.client_lanes.index(lane)}"

    def restore_lanes(self) -> None:
        """Every client lane pointed at its brokers again (one lookup; only a lane left re-pointed is touched)."""
        upstreams = {name: p["upstream"] for name, p in self.toxiproxy.proxies().items()}
        for lane in self.client_lanes:
            if any(upstreams.get(b.proxy(lane)) != self._lane_listener(b, lane) for b in self.brokers):
                self.point_lane(lane, None)

    @contextmanager
    def proxied_lanes(self, lanes: list[str]):
        """Every given client lane through one request-aware proxy (kafkanet/rpc_proxy.py), which runs in this
        process on the cluster network's gateway: Toxiproxy -> the proxy -> the broker's listener for the lane.
        Yields the proxy; on exit the lanes point at their brokers again and the proxy stops."""
        gateway = self.gateway_ip
        upstreams = {(lane, name): address for lane in lanes for name, address in self.lane_upstreams(lane).items()}
        proxy = RpcProxy({f"{lane}@{name}": address for (lane, name), address in upstreams.items()}, host=gateway).start()
        try:
            for lane in lanes:
                self.point_lane(lane, {b.name: f"{gateway}:{proxy.ports[f'{lane}@{b.name}']}" for b in self.brokers})
            yield proxy
        finally:
            try:
                for lane in lanes:
                    self.point_lane(lane, None)
            finally:
                proxy.stop()
