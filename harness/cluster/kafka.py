"""A real KRaft cluster in containers, every client and broker link routed through Toxiproxy: the container
backend, whose brokers and cluster implement faults/backend.py's BrokerHandle and ClusterHandle.

Split by concern: the brokers (harness/cluster/brokers.py), the lanes and their proxies (harness/cluster/lanes.py),
the container engine (harness/cluster/containers.py); here, the cluster's life (start-up, readiness, stop, reset) and
its metadata."""
from __future__ import annotations

import base64
import logging
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

import docker
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from testcontainers.core.container import DockerContainer
from testcontainers.core.network import Network

from faults.backend import BrokerHandle
from harness.cluster import broker_config, log_disk
from harness.cluster.brokers import Broker, BrokerQueries, create_topic_with
from harness.cluster.containers import (ClusterError, check_engine_and_images, free_loopback_port, host_ports, log_tail,
                                        StartedInWith, remove_container, remove_network, run_labels, sweep_stale_containers)
from harness.cluster.lanes import LANE_PORT_BASE, LaneRouting, lane_port
from harness.progress import progress, say
from harness.releases.kafka_release import ensure_kafka_image
from harness.releases.versions import kafka_image, kafka_version, pinned, toxiproxy_image
from harness.scenario import ClusterSpec
from kafkanet import netns
from kafkanet.broker_view import BrokerView, view_of
from kafkanet.clock import now_ms
from kafkanet.probe import api_versions_roundtrip
from kafkanet.toxiproxy import Toxiproxy
from kafkanet.waiting import NotYet, require
from workloads.services import sweep_stale_workloads

READY_TOPIC = "kafka-chaos-ready"


def new_cluster_id() -> str:
    """Like Kafka's Uuid.randomUuid: never starting with '-', which the tools' argument parser
    would take for an option (`kafka-storage format -t -abc...` fails)."""
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


@dataclass
class KafkaCluster(StartedInWith, LaneRouting, BrokerQueries[Broker]):
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
        labels = run_labels(self.run_id)
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
        self.started_at_ms = now_ms()
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
                list(pool.map(remove_container, started))
        for disk in [b.log_disk for b in self.brokers if b.log_disk is not None]:
            log_disk.remove(disk)
        self.brokers.clear()
        self._toxiproxy_container = None
        remove_network(self._network)
        self._network = None

    def reset_faults(self) -> None:
        """Undo whatever faults a previous user of this cluster left behind (a test that failed
        mid-fault): every proxy enabled and every toxic gone, no broker paused or stopped, every partition
        (a group's coordinator among them) led by its preferred replica."""
        if self.toxiproxy is not None:
            self.toxiproxy.reset()
            self.restore_lanes()
        for broker in self.brokers:
            status = broker.status()
            if broker.log_disk is not None:
                broker.free_log_dir()
            if status == "paused":
                broker.resume()
            elif status in ("exited", "created"):
                self.start_broker(broker)
            netns.flush(broker.run_in_netns)
        self.restore_preferred_leaders()

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
        need = len(self.brokers) // 2 + 1
        return require(lambda: self._view_of_a_majority(need), timeout_s,
                       f"no {need} of the {len(self.brokers)} brokers agree on the cluster's metadata", error=ClusterError)

    def _view_of_a_majority(self, need: int) -> BrokerView:
        views = []
        for broker in self.brokers:
            try:
                views.append(view_of(broker.control_address, timeout_s=2))
            except OSError:
                pass
        if not views:
            raise NotYet("no broker answered")
        view, agreeing = Counter(views).most_common(1)[0]
        if agreeing < need:
            raise NotYet(f"{agreeing} of {len(views)} answering brokers agree")
        return view

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

    def _start_brokers(self, labels: dict[str, str]) -> None:
        """Every broker's container, created and started at once (their JVMs start side by side anyway)."""
        host = host_ports(self._toxiproxy_container)
        for node in self._node_ids():
            name = f"kafka-{node}"
            peer_ports = (LANE_PORT_BASE["internal"] + node, LANE_PORT_BASE["controller"] + node)
            self.brokers.append(Broker(node, name, None, f"127.0.0.1:{host[LANE_PORT_BASE['client'] + node]}", "",
                                       peer_ports, {lane: f"127.0.0.1:{host[lane_port(i, node)]}"
                                                    for i, lane in enumerate(self.client_lanes)}))
        with ThreadPoolExecutor(len(self.brokers)) as pool:
            list(pool.map(lambda b: self._start_broker_container(b, labels), self.brokers))

    def _start_broker_container(self, broker: "Broker", labels: dict[str, str], attempts: int = 3) -> None:
        """The CONTROL lane is the broker's own port, published on a loopback port chosen here (the broker must
        advertise it before it starts): the harness's view of the cluster does not go through the fault injector.
        A port taken meanwhile by someone else is chosen again."""
        voters = ",".join(f"{n}@toxiproxy:{LANE_PORT_BASE['controller'] + n}" for n in self._node_ids())
        if self.spec.log_disk_mb is not None and broker.log_disk is None:
            broker.log_disk = log_disk.create(f"{self.run_id}-{broker.name}", self.spec.log_disk_mb)
        for attempt in range(attempts):
            port = free_loopback_port()
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
            if broker.log_disk is not None:
                broker.container.with_volume_mapping(str(broker.log_disk.mount), broker_config.DATA_DIR, "rw")
            broker.container.ports[f"{broker_config.CONTROL_PORT}/tcp"] = ("127.0.0.1", port)
            try:
                broker.container.start()
                return
            except docker.errors.APIError as exc:
                if "port is already allocated" not in str(exc) and "address already in use" not in str(exc) \
                        or attempt == attempts - 1:
                    raise
                if broker.container._container is not None:
                    remove_container(broker.container)

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.spec.startup_timeout_s
        admin = self.admin()
        # the admin client raises KafkaException for every kind of not-yet; a broker that exited ends the wait
        require(lambda: self._ready(admin, deadline), self.spec.startup_timeout_s, "the cluster was not ready",
                error=ClusterError, fatal=(ClusterError,),
                detail=lambda: "\n".join(f"--- {b.name}\n{log_tail(b.logs)}" for b in self.brokers))

    def _ready(self, admin: AdminClient, deadline: float) -> bool:
        for broker in self.brokers:
            broker.container.reload()  # status is cached from start() otherwise
            if broker.container.status in ("exited", "dead"):
                raise ClusterError(f"{broker.name} exited during start-up:\n{log_tail(broker.logs)}")
        brokers = admin.list_topics(timeout=5).brokers
        if len(brokers) != self.spec.brokers:
            raise NotYet(f"{len(brokers)} of {self.spec.brokers} brokers registered")
        with ThreadPoolExecutor(1) as pool:  # side by side with the topic: the group coordinators' topic
            offsets = pool.submit(self._create_offsets_topic, deadline - time.monotonic())
            create_topic_with(admin, NewTopic(READY_TOPIC, 1, min(3, self.spec.brokers)), exist_ok=True)
            offsets.result()
        return True

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

    def admin(self) -> AdminClient:
        if self._admin is None:
            # librdkafka's own log lines (connection refused while brokers start, time-outs while a
            # fault is active) go to Python logging instead of the harness's terminal.
            self._admin = AdminClient({"bootstrap.servers": self.control_bootstrap_servers, "client.id": "kafka-chaos-harness"},
                                      logger=logging.getLogger("kafka-chaos.admin"))
        return self._admin

    def create_topic(self, name: str, partitions: int, replication_factor: int, configs: dict | None = None) -> None:
        create_topic_with(self.admin(), NewTopic(name, partitions, replication_factor, config=configs or {}),
                          exist_ok=False)

    def delete_topics(self, names: list[str], timeout_s: float = 60) -> None:
        """Delete topics a run is done with (a sweep's cells share one cluster, and each broker holds a bounded
        number of partition replicas: faults.triggers.MAX_REPLICAS_PER_BROKER)."""
        for future in self.admin().delete_topics(list(names), operation_timeout=30, request_timeout=timeout_s).values():
            future.result(timeout=timeout_s)

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

    def save_logs(self, logs_dir: Path, since: float | None = None) -> None:
        """Each container's output into logs_dir; with ``since`` (epoch seconds), only what it wrote from then on: a
        run on a shared cluster (a sweep's, the pytest fixture's) keeps its own stretch, not every run's before it."""
        logs_dir.mkdir(parents=True, exist_ok=True)
        for name, container in [(b.name, b.container) for b in self.brokers] + [("toxiproxy", self._toxiproxy_container)]:
            if container is None or container._container is None:
                continue
            try:
                text = container.get_wrapped_container().logs(stdout=True, stderr=True,
                                                               since=int(since) if since else None)
                (logs_dir / f"{name}.log").write_bytes(text)
            except docker.errors.APIError:
                pass
