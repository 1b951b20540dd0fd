"""A real KRaft cluster in containers, every client and broker link routed through Toxiproxy: the container
backend, whose brokers and cluster implement faults/backend.py's BrokerHandle and ClusterHandle."""
from __future__ import annotations

import base64
import logging
import os
import socket
import subprocess
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, Self, TypeVar

import docker
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from testcontainers.core.config import testcontainers_config
from testcontainers.core.container import DockerContainer
from testcontainers.core.network import Network

from faults.backend import BrokerHandle
from harness import broker_config
from harness.kafka_release import ensure_kafka_image
from harness.progress import progress, say
from harness.scenario import ClusterSpec
from harness.versions import kafka_image, kafka_version, pinned, toxiproxy_image
from kafkanet import netns
from kafkanet.broker_view import BrokerView, view_of
from kafkanet.probe import api_versions_roundtrip
from kafkanet.quorum import QuorumError, quorum_leader
from kafkanet.rpc_proxy import RpcProxy
from kafkanet.toxiproxy import Proxy, Toxiproxy
from workloads.services import owner_gone, sweep_stale_workloads

# Ryuk cannot be pulled here; the harness removes its own containers (by label) instead.
testcontainers_config.ryuk_disabled = True

PROJECT_LABEL = "org.kafka-chaos.project"
RUN_LABEL = "org.kafka-chaos.run"
OWNER_LABEL = "org.kafka-chaos.owner"  # host:pid of the harness process that started it
TOXIPROXY_API_PORT = 8474
READY_TOPIC = "kafka-chaos-ready"
# Port of each lane's proxy inside the Toxiproxy container: base + node id.
LANE_PORT_BASE = {"client": 10000, "internal": 10200, "controller": 10300}
CLIENT_LANE_PORT_BASE = 11000  # + 10 * the lane's index + node id: one proxy per broker and workload client
PAUSE_ATTEMPTS = 5


class ClusterError(RuntimeError):
    pass


def _labels(run_id: str) -> dict[str, str]:
    return {PROJECT_LABEL: "kafka-chaos", RUN_LABEL: run_id, OWNER_LABEL: f"{socket.gethostname()}:{os.getpid()}"}


# A docker-py port binding: a random host port, published on 127.0.0.1 only.
LOOPBACK_ANY_PORT = ("127.0.0.1",)


def new_cluster_id() -> str:
    """Like Kafka's Uuid.randomUuid: never starting with '-', which the tools' argument parser
    would take for an option (`kafka-storage format -t -abc...` fails)."""
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


@dataclass
class Broker:
    node_id: int
    name: str
    container: DockerContainer | None  # None until its start (KafkaCluster._start_broker_container)
    client_address: str
    control_address: str
    peer_ports: tuple[int, ...] = ()  # the Toxiproxy ports other brokers reach it on (replication, quorum)
    lane_addresses: dict[str, str] = field(default_factory=dict)  # workload client -> host address of its proxy

    def proxy(self, lane: str) -> str:
        return f"{self.name}-{lane}"

    def client_proxies(self) -> list[str]:
        """Every proxy that clients reach this broker through: the shared CLIENT lane and each
        workload client's own lane (never the harness's CONTROL lane)."""
        return [self.proxy("client")] + [self.proxy(lane) for lane in self.lane_addresses]

    # -- the broker's process is its container's main process: the container's life is the broker's ----------

    def _container(self) -> docker.models.containers.Container:
        """The engine's container, its status fresh."""
        container = self.container.get_wrapped_container()
        container.reload()
        return container

    def status(self) -> str:
        """The container's status: running, paused, exited, created, ..."""
        return self._container().status

    def running(self) -> bool:
        return self.status() == "running"

    def pause(self) -> None:
        """docker pause. The cgroup-v1 freezer sometimes gives up on a busy JVM ("OCI runtime pause failed:
        unable to freeze"); runc thaws it again, so another attempt is safe."""
        container = self._container()
        for attempt in range(PAUSE_ATTEMPTS):
            try:
                container.pause()
                return
            except docker.errors.APIError as exc:
                if "unable to freeze" not in str(exc) or attempt == PAUSE_ATTEMPTS - 1:
                    raise
                time.sleep(0.2)

    def resume(self) -> None:
        container = self._container()
        if container.status == "paused":
            try:
                container.unpause()
            except docker.errors.NotFound:
                pass

    def kill(self) -> None:
        self._container().kill(signal="SIGKILL")

    def stop(self, timeout_s: float) -> None:
        self._container().stop(timeout=round(timeout_s))

    def start(self) -> None:
        container = self._container()
        if container.status != "running":
            container.start()

    def run_in_netns(self, argv: list[str]) -> subprocess.CompletedProcess[str] | None:
        """Entered from the host with nsenter (the image has no iptables). A paused container still has its
        namespace, and its rules still count; a stopped one has none."""
        pid = self._container().attrs["State"]["Pid"]
        return netns.nsenter(pid, argv) if pid else None

    def logs(self) -> str:
        return _container_logs(self.container)


B = TypeVar("B", bound=BrokerHandle)


class BrokerQueries(Generic[B]):
    """What every backend answers the same way from its brokers and its view of the metadata."""
    brokers: list[B]

    def view(self, timeout_s: float = 60) -> BrokerView:
        raise NotImplementedError

    def broker(self, name: str) -> B:
        for broker in self.brokers:
            if broker.name == name:
                return broker
        raise KeyError(f"no broker named {name!r}; brokers are {[b.name for b in self.brokers]}")

    def broker_by_id(self, node_id: int) -> B:
        return next(b for b in self.brokers if b.node_id == node_id)

    def active_controller(self, timeout_s: float = 60) -> int:
        """The node id of the KRaft quorum's leader. Retried for timeout_s: for a few seconds after the
        active controller dies no broker can say (DescribeQuorum times out until the election ends)."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                return quorum_leader([b.control_address for b in self.brokers])
            except QuorumError:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.5)

    def registered_brokers(self) -> set[int]:
        """Node ids of the brokers registered and unfenced."""
        return set(self.view().brokers)

    def under_replicated(self) -> list[str]:
        """Every partition (internal topics included) whose ISR lacks one of its replicas."""
        return self.view().under_replicated()

    def wait_until(self, condition, timeout_s: float, what: str, broker: BrokerHandle | None = None) -> None:
        """Poll a condition (an exception counts as not yet); ClusterError with the broker's log tail if it never holds."""
        deadline, last = time.monotonic() + timeout_s, "never true"
        while time.monotonic() < deadline:
            try:
                if condition():
                    return
            except Exception as exc:
                last = str(exc)
            time.sleep(0.2)
        tail = f"\n{_tail(broker.logs)}" if broker is not None else ""
        raise ClusterError(f"{what} within {timeout_s:.0f} s ({last}){tail}")


@dataclass
class KafkaCluster(BrokerQueries[Broker]):
    spec: ClusterSpec
    run_id: str
    client_lanes: tuple[str, ...] = ()  # workload clients that get a lane of their own (member-1, producer-1, ...)
    brokers: list[Broker] = field(default_factory=list)
    cluster_id: str = field(default_factory=new_cluster_id)
    owned = True                # the harness started it: every fault may touch it
    capabilities = ("processes", "toxiproxy", "lanes", "containers")  # faults.base.REQUIREMENTS, all of them

    def __post_init__(self) -> None:
        self._network: Network | None = None
        self._toxiproxy_container: DockerContainer | None = None
        self.toxiproxy: Toxiproxy | None = None
        self._admin: AdminClient | None = None
        self.started_at_ms: int | None = None
        self.start_s: dict[str, float] = {}

    # -- lifecycle --------------------------------------------------------------------------

    def __enter__(self) -> Self:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def image(self) -> str:
        return kafka_image(self.spec.kafka_version)

    def start(self) -> Self:
        if self.spec.kafka_version is not None:  # KafkaVersionError: that release cannot be built here
            with progress(f"image {self.image}"):
                ensure_kafka_image(self.spec.kafka_version, log=say)
        started = time.monotonic()
        check_engine_and_images(self.image)
        sweep_stale_containers()
        sweep_stale_workloads()
        labels = _labels(self.run_id)
        with self._step("network", f"network kafka-chaos-{self.run_id}"):
            self._network = Network(docker_network_kw={"labels": labels})
            self._network.name = f"kafka-chaos-{self.run_id}"
            self._network.create()
        with self._step("toxiproxy", f"toxiproxy ({toxiproxy_image()})"):
            self._start_toxiproxy(labels)
        with self._step("brokers", f"{self.spec.brokers} KRaft brokers ({self.image})"):
            self._start_brokers(labels)
        with self._step("ready", "brokers registered and a topic with RF 3 created"):
            self._wait_ready()
        self.start_s["total"] = round(time.monotonic() - started, 2)
        self.started_at_ms = int(time.time() * 1000)
        return self

    @contextmanager
    def _step(self, name: str, what: str):
        """A start-up step: shown as progress, its seconds kept in start_s (cluster.json says where start-up went)."""
        started = time.monotonic()
        with progress(what):
            yield
        self.start_s[name] = round(time.monotonic() - started, 2)

    def stop(self) -> None:
        """Remove everything this cluster started. Safe to call twice, and after a failed start."""
        self._admin = None
        started = [c for c in [b.container for b in self.brokers] + [self._toxiproxy_container]
                   if c is not None and c._container is not None]
        if started:  # side by side: each removal mostly waits for the engine to kill and clean up a container
            with ThreadPoolExecutor(len(started)) as pool:
                list(pool.map(_remove, started))
        self.brokers.clear()
        self._toxiproxy_container = None
        if self._network is not None and self._network._network is not None:
            try:
                self._network.remove()
            except docker.errors.APIError:
                pass
            self._network = None

    def reset_faults(self) -> None:
        """Undo whatever faults a previous user of this cluster left behind (a test that failed
        mid-fault): every proxy enabled and every toxic gone, no broker paused or stopped."""
        if self.toxiproxy is not None:
            self.toxiproxy.reset()
            self.restore_lanes()
        for broker in self.brokers:
            status = broker.status()
            if status == "paused":
                broker.resume()
            elif status in ("exited", "created"):
                self.start_broker(broker)
            netns.flush(broker.run_in_netns)

    # -- broker lifecycle (faults/lifecycle.py) ------------------------------------------------

    def start_broker(self, broker: BrokerHandle, timeout_s: float = 120) -> None:
        """Start a stopped broker again with its data (the start-up script formats only an empty
        directory) and wait until it has registered with the controller, unfenced: a KRaft broker is
        fenced until it has caught up with the metadata log."""
        broker.start()
        # A crash shorter than the broker's session leaves its old registration standing, so being
        # listed is not enough: the restarted process must answer too (a KRaft broker opens its
        # listeners only once it has caught up and been unfenced).
        self.wait_until(lambda: api_versions_roundtrip(broker.control_address) is not None
                        and broker.node_id in self.registered_brokers(), timeout_s,
                        f"{broker.name} did not come back (answering and registered)", broker)

    def view(self, timeout_s: float = 60) -> BrokerView:
        """The cluster's metadata as a majority of the brokers hold it. A client library asks any broker,
        and one cut off from the quorum keeps answering with what it last heard; the brokers in touch with
        the quorum, always a majority (or there is no quorum), agree once each has applied the same records.
        Not DescribeQuorum's leader: for a while after the active controller dies, that question times out
        on every broker (seen for over 30 s on a loaded machine)."""
        need, deadline, seen = len(self.brokers) // 2 + 1, time.monotonic() + timeout_s, "no broker answered"
        while True:
            views = []
            for broker in self.brokers:
                try:
                    views.append(view_of(broker.control_address, timeout_s=2))
                except OSError:
                    pass
            if views:
                view, agreeing = Counter(views).most_common(1)[0]
                if agreeing >= need:
                    return view
                seen = f"{agreeing} of {len(views)} answering brokers agree"
            if time.monotonic() >= deadline:
                raise ClusterError(f"no {need} of the {len(self.brokers)} brokers agree on the cluster's metadata "
                                   f"within {timeout_s:.0f} s ({seen})")
            time.sleep(0.2)

    def wait_rejoined(self, brokers: Sequence[BrokerHandle], timeout_s: float = 120) -> None:
        """Wait until every one of these brokers that is running (not stopped, not paused) is registered
        and unfenced: after a partition heals, a fenced broker must catch up with the metadata log first."""
        waited = [b for b in brokers if b.running()]
        self.wait_until(lambda: {b.node_id for b in waited} <= self.registered_brokers(), timeout_s,
                        f"{', '.join(b.name for b in waited)} not registered again")

    def quorum_replication(self) -> dict[int, dict[str, str]]:
        """Each KRaft voter as the quorum leader sees it (LogEndOffset, Lag, LastFetchTimestamp,
        LastCaughtUpTimestamp in epoch ms, Status), from `kafka-metadata-quorum.sh describe --replication`
        run inside a running broker. That starts a JVM (seconds of CPU), so start_broker does not poll
        it: a broker is unfenced only once its metadata log, which is its voter's log (combined
        mode), has caught up, and the tests cross-check that here."""
        for broker in self.brokers:
            container = broker.container.get_wrapped_container()
            container.reload()
            if container.status != "running":
                continue
            result = container.exec_run(["kafka-metadata-quorum.sh", "--bootstrap-controller",
                                         f"localhost:{broker_config.CONTROLLER_PORT}", "describe", "--replication"],
                                        demux=True)
            lines = (result.output[0] or b"").decode().splitlines()
            if result.exit_code == 0 and lines and lines[0].startswith("NodeId"):
                header = [name.strip() for name in lines[0].split("\t")]
                rows = [dict(zip(header, (cell.strip() for cell in line.split("\t")))) for line in lines[1:] if line.strip()]
                return {int(row["NodeId"]): row for row in rows}
        raise ClusterError("no running broker described the metadata quorum")

    # -- start-up ---------------------------------------------------------------------------

    def _node_ids(self) -> range:
        return range(1, self.spec.brokers + 1)

    def _start_toxiproxy(self, labels: dict[str, str]) -> None:
        container = (DockerContainer(toxiproxy_image(), command=["-host=0.0.0.0", f"-port={TOXIPROXY_API_PORT}"])
                     .with_name(f"kafka-chaos-{self.run_id}-toxiproxy")
                     .with_network(self._network).with_network_aliases("toxiproxy")
                     .with_kwargs(labels=labels))
        container.ports[f"{TOXIPROXY_API_PORT}/tcp"] = LOOPBACK_ANY_PORT
        for node in self._node_ids():
            container.ports[f"{LANE_PORT_BASE['client'] + node}/tcp"] = LOOPBACK_ANY_PORT
            for index in range(len(self.client_lanes)):
                container.ports[f"{self._lane_port(index, node)}/tcp"] = LOOPBACK_ANY_PORT
        self._toxiproxy_container = container
        container.start()
        self.toxiproxy = Toxiproxy(f"http://127.0.0.1:{self._host_ports(container)[TOXIPROXY_API_PORT]}")
        _wait_for(lambda: self.toxiproxy.version(), 30, "the Toxiproxy API did not answer", container)
        upstream_ports = {"client": broker_config.CLIENT_PORT, "internal": broker_config.INTERNAL_PORT,
                          "controller": broker_config.CONTROLLER_PORT}
        proxies = [Proxy(f"kafka-{node}-{lane}", f"0.0.0.0:{base + node}", f"kafka-{node}:{upstream_ports[lane]}")
                   for node in self._node_ids() for lane, base in LANE_PORT_BASE.items()]
        proxies += [Proxy(f"kafka-{node}-{lane}", f"0.0.0.0:{self._lane_port(index, node)}",
                          f"kafka-{node}:{broker_config.LANE_PORT + index}")
                    for node in self._node_ids() for index, lane in enumerate(self.client_lanes)]
        self.toxiproxy.populate(proxies)

    @staticmethod
    def _lane_port(index: int, node: int) -> int:
        return CLIENT_LANE_PORT_BASE + 10 * index + node

    def _start_brokers(self, labels: dict[str, str]) -> None:
        """Every broker's container, created and started at once (their JVMs start side by side anyway)."""
        host = self._host_ports(self._toxiproxy_container)
        for node in self._node_ids():
            name = f"kafka-{node}"
            peer_ports = (LANE_PORT_BASE["internal"] + node, LANE_PORT_BASE["controller"] + node)
            self.brokers.append(Broker(node, name, None, f"127.0.0.1:{host[LANE_PORT_BASE['client'] + node]}", "",
                                       peer_ports, {lane: f"127.0.0.1:{host[self._lane_port(i, node)]}"
                                                    for i, lane in enumerate(self.client_lanes)}))
        with ThreadPoolExecutor(len(self.brokers)) as pool:
            list(pool.map(lambda b: self._start_broker_container(b, labels), self.brokers))

    def _start_broker_container(self, broker: "Broker", labels: dict[str, str], attempts: int = 3) -> None:
        """The CONTROL lane is the broker's own port, published on a loopback port chosen here (the broker must
        advertise it before it starts): the harness's view of the cluster does not go through the fault injector.
        A port taken meanwhile by someone else is chosen again."""
        voters = ",".join(f"{n}@toxiproxy:{LANE_PORT_BASE['controller'] + n}" for n in self._node_ids())
        for attempt in range(attempts):
            port = _free_loopback_port()
            broker.control_address = f"127.0.0.1:{port}"
            lanes = broker_config.Lanes(
                client_host_address=broker.client_address, control_host_address=broker.control_address,
                internal_proxy_address=f"toxiproxy:{LANE_PORT_BASE['internal'] + broker.node_id}",
                controller_proxy_address=f"toxiproxy:{LANE_PORT_BASE['controller'] + broker.node_id}",
                client_lanes=tuple(broker.lane_addresses.values()))
            broker.container = (DockerContainer(self.image, command=["bash", "-c", broker_config.startup_script()])
                                .with_name(f"kafka-chaos-{self.run_id}-{broker.name}")
                                .with_network(self._network).with_network_aliases(broker.name)
                                .with_env("KAFKA_CHAOS_SERVER_PROPERTIES",
                                          broker_config.render(broker.node_id, lanes, voters, self.spec.broker_config))
                                .with_env("KAFKA_CHAOS_CLUSTER_ID", self.cluster_id)
                                .with_env("KAFKA_HEAP_OPTS", f"-Xms{self.spec.heap} -Xmx{self.spec.heap}")
                                .with_env("KAFKA_OPTS", broker_config.JVM_OPTS)
                                .with_kwargs(labels=labels))
            broker.container.ports[f"{broker_config.CONTROL_PORT}/tcp"] = ("127.0.0.1", port)
            try:
                broker.container.start()
                return
            except docker.errors.APIError as exc:
                if "port is already allocated" not in str(exc) and "address already in use" not in str(exc) \
                        or attempt == attempts - 1:
                    raise
                if broker.container._container is not None:
                    _remove(broker.container)

    @staticmethod
    def _host_ports(container: DockerContainer) -> dict[int, int]:
        """Every published port of a container: container port -> host port (one look-up)."""
        wrapped = container.get_wrapped_container()
        wrapped.reload()
        return {int(port.split("/")[0]): int(bindings[0]["HostPort"])
                for port, bindings in wrapped.attrs["NetworkSettings"]["Ports"].items() if bindings}

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.spec.startup_timeout_s
        admin = self.admin()
        last_error = "no answer yet"
        while time.monotonic() < deadline:
            for broker in self.brokers:
                broker.container.reload()  # status is cached from start() otherwise
                if broker.container.status in ("exited", "dead"):
                    raise ClusterError(f"{broker.name} exited during start-up:\n{_tail(broker.logs)}")
            try:
                brokers = admin.list_topics(timeout=5).brokers
                if len(brokers) == self.spec.brokers:
                    with ThreadPoolExecutor(1) as pool:  # side by side with the topic: the group coordinators' topic
                        offsets = pool.submit(self._create_offsets_topic, deadline - time.monotonic())
                        create_topic_with(admin, NewTopic(READY_TOPIC, 1, min(3, self.spec.brokers)), exist_ok=True)
                        offsets.result()
                    return
                last_error = f"{len(brokers)} of {self.spec.brokers} brokers registered"
            except Exception as exc:  # the admin client raises KafkaException for every kind of not-yet
                last_error = str(exc)
            time.sleep(0.2)
        tails = "\n".join(f"--- {b.name}\n{_tail(b.logs)}" for b in self.brokers)
        raise ClusterError(f"the cluster was not ready after {self.spec.startup_timeout_s:.0f} s ({last_error}).\n{tails}")

    def _create_offsets_topic(self, timeout_s: float) -> None:
        """__consumer_offsets is created by the first FindCoordinator a broker answers: asked here, while the
        cluster starts, the first run's members do not wait for it while they join. A plain consumer's
        committed() asks it (never an admin call to the coordinator: librdkafka issue 4605, harness/group.py)."""
        consumer = Consumer({"bootstrap.servers": self.control_bootstrap_servers, "group.id": READY_TOPIC,
                             "enable.auto.commit": False}, logger=logging.getLogger("kafka-chaos.admin"))
        try:
            consumer.committed([TopicPartition(READY_TOPIC, 0)], timeout=max(1.0, timeout_s))
        finally:
            consumer.close()

    # -- what users of the cluster need --------------------------------------------------------

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

    def admin(self) -> AdminClient:
        if self._admin is None:
            # librdkafka's own log lines (connection refused while brokers start, time-outs while a
            # fault is active) go to Python logging instead of the harness's terminal.
            self._admin = AdminClient({"bootstrap.servers": self.control_bootstrap_servers, "client.id": "kafka-chaos-harness"},
                                      logger=logging.getLogger("kafka-chaos.admin"))
        return self._admin

    def create_topic(self, name: str, partitions: int, replication_factor: int) -> None:
        create_topic_with(self.admin(), NewTopic(name, partitions, replication_factor), exist_ok=False)

    def describe(self) -> dict:
        """What cluster.json records."""
        return {
            "cluster_id": self.cluster_id,
            "run_id": self.run_id,
            "kafka_version": kafka_version(self.spec.kafka_version),
            "toxiproxy_version": pinned("TOXIPROXY_VERSION"),
            "images": {"kafka": self.image, "toxiproxy": toxiproxy_image()},
            "bootstrap_servers": self.bootstrap_servers,
            "toxiproxy_api": self.toxiproxy.api_url if self.toxiproxy else None,
            "brokers": [{"node_id": b.node_id, "name": b.name, "client_address": b.client_address,
                         "control_address": b.control_address, "client_proxy": b.proxy("client"),
                         "lanes": {lane: {"address": address, "proxy": b.proxy(lane)} for lane, address in b.lane_addresses.items()},
                         "container": b.container._name} for b in self.brokers],
            "client_lanes": list(self.client_lanes),
            "proxies": sorted(self.toxiproxy.proxies()) if self.toxiproxy else [],
            "started_at_ms": self.started_at_ms,
            "start_s": self.start_s,
        }

    def save_logs(self, logs_dir: Path) -> None:
        logs_dir.mkdir(parents=True, exist_ok=True)
        for name, container in [(b.name, b.container) for b in self.brokers] + [("toxiproxy", self._toxiproxy_container)]:
            if container is None or container._container is None:
                continue
            try:
                stdout, stderr = container.get_logs()
                (logs_dir / f"{name}.log").write_bytes(stdout + stderr)
            except docker.errors.APIError:
                pass


class NoDockerEngine(ClusterError):
    """No Docker engine answers."""


def docker_client() -> docker.DockerClient:
    """A client of the Docker engine that answers; NoDockerEngine when none does."""
    try:
        client = docker.from_env()
        client.ping()
    except Exception as exc:
        raise NoDockerEngine(f"no Docker engine answers ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})") from None
    return client


def check_engine_and_images(kafka: str) -> None:
    """Fail before starting anything, with what to do about it (the brokers of another Kafka release are
    built on first use: harness/kafka_release.py)."""
    try:
        client = docker_client()
    except NoDockerEngine as exc:
        raise ClusterError(f"{exc}; `make setup` starts one (as root)") from None
    for image in (kafka, toxiproxy_image()):
        try:
            client.images.get(image)
        except docker.errors.ImageNotFound:
            raise ClusterError(f"image {image} is not on this machine; `make setup` builds it") from None


def create_topic_with(admin: AdminClient, topic: NewTopic, exist_ok: bool) -> None:
    """Create one topic and wait for it (the harness's cluster and an external one alike)."""
    future = admin.create_topics([topic], operation_timeout=30, request_timeout=30)[topic.topic]
    try:
        future.result(timeout=60)
    except Exception as exc:
        if exist_ok and "TOPIC_ALREADY_EXISTS" in str(exc):
            return
        raise


def _container_logs(container: DockerContainer) -> str:
    stdout, stderr = container.get_logs()
    return (stdout + stderr).decode(errors="replace")


def _tail(logs: Callable[[], str], lines: int = 30) -> str:
    try:
        return "\n".join(logs().splitlines()[-lines:])
    except Exception as exc:  # the tail is only for an error message
        return f"(no logs: {exc})"


def _wait_for(check, timeout_s: float, what: str, container: DockerContainer) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            check()
            return
        except Exception as exc:
            if time.monotonic() > deadline:
                raise ClusterError(f"{what} within {timeout_s:.0f} s: {exc}\n{_tail(lambda: _container_logs(container))}") from None
            time.sleep(0.3)


def _free_loopback_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _remove(container: DockerContainer) -> None:
    try:
        wrapped = container.get_wrapped_container()
        wrapped.reload()
        if wrapped.status == "paused":
            wrapped.unpause()
        wrapped.remove(force=True, v=True)
    except docker.errors.NotFound:
        pass


def sweep_stale_containers(include_live: bool = False) -> int:
    """Remove containers and networks of ours whose owning harness process is gone (or all, if asked)."""
    client = docker_client()
    removed = 0

    def stale(labels: dict[str, str]) -> bool:
        if OWNER_LABEL not in labels:
            return False  # not started by a harness process: e.g. a cluster brought up from compose.yaml
        if include_live:
            return True
        return owner_gone(labels[OWNER_LABEL])

    for container in client.containers.list(all=True, filters={"label": PROJECT_LABEL}):
        if stale(container.labels):
            if container.status == "paused":
                container.unpause()
            container.remove(force=True, v=True)
            removed += 1
    for network in client.networks.list(filters={"label": PROJECT_LABEL}):
        if stale(network.attrs.get("Labels") or {}):
            try:
                network.remove()
            except docker.errors.APIError:
                pass
    return removed
