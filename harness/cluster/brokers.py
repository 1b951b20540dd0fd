"""A broker of the harness's own cluster (the container backend's BrokerHandle: its process is its
container's main process), and the questions every backend answers the same way from its brokers."""
from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import docker
from confluent_kafka import ElectionType, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from testcontainers.core.container import DockerContainer

from faults.backend import BrokerHandle
from harness.cluster.containers import ClusterError, container_logs, log_tail
from harness.cluster.log_disk import LogDisk
from kafkanet import netns
from kafkanet.broker_view import BrokerView
from kafkanet.quorum import QuorumError, quorum_leader
from kafkanet.waiting import require, retry

PAUSE_ATTEMPTS = 5


@dataclass
class Broker:
    node_id: int
    name: str
    container: DockerContainer | None  # None until its start (KafkaCluster._start_broker_container)
    client_address: str
    control_address: str
    peer_ports: tuple[int, ...] = ()  # the Toxiproxy ports other brokers reach it on (replication, quorum)
    lane_addresses: dict[str, str] = field(default_factory=dict)  # workload client -> host address of its proxy
    log_disk: LogDisk | None = None  # its log directory's own disk (cluster.log_disk_mb), else the container's layer

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
        return container_logs(self.container)

    def fill_log_dir(self) -> int:
        return self._disk().fill()

    def free_log_dir(self) -> None:
        self._disk().free()

    def _disk(self) -> LogDisk:
        if self.log_disk is None:
            raise ClusterError(f"{self.name}: its log directory has no disk of its own to fill; start the cluster "
                               "with cluster.log_disk_mb")
        return self.log_disk


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
        return retry(lambda: quorum_leader([b.control_address for b in self.brokers]), timeout_s,
                     "no broker told who leads the quorum", error=QuorumError, interval_s=0.5)

    def registered_brokers(self) -> set[int]:
        """Node ids of the brokers registered and unfenced."""
        return set(self.view().brokers)

    def under_replicated(self) -> list[str]:
        """Every partition (internal topics included) whose ISR lacks one of its replicas."""
        return self.view().under_replicated()

    def admin(self) -> AdminClient:
        raise NotImplementedError

    def elect_preferred_leaders(self, partitions: list[tuple[str, int]], timeout_s: float = 120) -> None:
        """A preferred leader election, then wait until every leader is its partition's first replica (an
        election that was not needed is no error)."""
        future = self.admin().elect_leaders(ElectionType.PREFERRED, [TopicPartition(t, p) for t, p in partitions])
        for tp, error in future.result(timeout=60).items():
            if error is not None and "ELECTION_NOT_NEEDED" not in str(error):
                raise ClusterError(f"preferred leader election of {tp.topic}:{tp.partition}: {error}")
        wanted = set(partitions)
        self.wait_until(lambda: all(p.leader == p.replicas[0] for p in self.view().partitions
                                    if (p.topic, p.partition) in wanted), timeout_s, "leaders not on their preferred replicas")

    def restore_preferred_leaders(self, timeout_s: float = 120) -> None:
        """Leadership as a fresh cluster has it: a broker that crashed or restarted comes back leading nothing,
        and would otherwise carry its partitions' (and groups') leadership elsewhere into the next run. Waits
        for the ISRs to be full first: a preferred replica that has not caught up cannot be elected."""
        off = [(p.topic, p.partition) for p in self.view().partitions if p.replicas and p.leader != p.replicas[0]]
        if not off:
            return
        self.wait_until(lambda: not self.under_replicated(), timeout_s, "partitions still under-replicated")
        self.elect_preferred_leaders(off, timeout_s)

    def wait_until(self, condition, timeout_s: float, what: str, broker: BrokerHandle | None = None) -> None:
        """Poll a condition (an exception counts as not yet); ClusterError with the broker's log tail if it never holds."""
        require(condition, timeout_s, what, error=ClusterError,
                detail=None if broker is None else lambda: log_tail(broker.logs))


def create_topic_with(admin: AdminClient, topic: NewTopic, exist_ok: bool) -> None:
    """Create one topic and wait for it (the harness's cluster and an external one alike)."""
    future = admin.create_topics([topic], operation_timeout=30, request_timeout=30)[topic.topic]
    try:
        future.result(timeout=60)
    except Exception as exc:
        if exist_ok and "TOPIC_ALREADY_EXISTS" in str(exc):
            return
        raise
