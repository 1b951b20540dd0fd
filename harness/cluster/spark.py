"""A Spark standalone cluster in containers for the analysis: one master and N workers of kafka-chaos/spark (the
venv's own Spark, built on first use by scripts/build-images.sh), on a network of their own.

The driver stays in the analysing process on the host, so the executors must reach it: it binds the cluster
network's gateway (the host as the containers see it; nothing outside this machine can reach that address), and
the executors run the image's Python 3.11 (`spark.pyspark.python`). `driver_conf()` holds both, for
`analysis.analyze(..., master=cluster.master_url, conf=cluster.driver_conf())`. The folders to analyse are
mounted read-only at their own path, so that the paths the driver hands out are the executors' paths too. The
master's RPC and web UI ports are published on 127.0.0.1 only.

Every container and the network carry the project label (`make clean` removes them) and a cluster label
(`kafka-chaos spark-cluster down` removes them); a cluster started around one analysis also carries its
owner's pid, so a crashed process's cluster is swept like a crashed run's brokers.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

import docker
from testcontainers.core.container import DockerContainer
from testcontainers.core.network import Network

from harness.cluster.containers import (OWNER_LABEL, PROJECT_LABEL, TAIL_LINES, ClusterError, container_logs,
                                        docker_client, StartedInWith, free_loopback_port, log_tail, remove_container,
                                        remove_network)
from harness.progress import progress
from harness.releases.versions import ROOT
from kafkanet.waiting import NotYet, require
from workloads.owner import this_owner

CLUSTER_LABEL = "org.kafka-chaos.spark-cluster"
MASTER_PORT, MASTER_UI_PORT, WORKER_UI_PORT = 7077, 8080, 8081
EXECUTOR_PYTHON = "/usr/bin/python3"  # Debian bookworm's 3.11, the driver's minor version (the image checks it)
READY_TIMEOUT_S = 120
# The daemons themselves need little; -XX:TieredStopAtLevel=1 starts them sooner on 2 cores.
DAEMON_ENV = {"SPARK_DAEMON_MEMORY": "512m", "SPARK_DAEMON_JAVA_OPTS": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
              "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false", "SPARK_LOCAL_DIRS": "/tmp/spark"}
# A container's own address on the cluster network, for Spark to bind and advertise: the driver on the host can
# reach it (a name would not resolve there).
OWN_ADDRESS = 'export SPARK_LOCAL_IP=$(hostname -i | cut -d" " -f1); '


class SparkClusterError(ClusterError):
    pass


def spark_image() -> str:
    """kafka-chaos/spark:<the venv's pyspark version> (KAFKA_CHAOS_SPARK_IMAGE names another)."""
    import pyspark
    return os.environ.get("KAFKA_CHAOS_SPARK_IMAGE") or f"kafka-chaos/spark:{pyspark.__version__}"


def ensure_spark_image() -> str:
    """Build the image if it is missing or out of date (about 30 s once; a second call checks a label: ~2 s).
    The build's progress lines go to stderr as they come."""
    image = spark_image()
    env = {**os.environ, "KAFKA_CHAOS_SPARK_IMAGE": image, "KAFKA_CHAOS_VENV_PYTHON": sys.executable,
           "LOG_TAG": "spark-image"}
    with subprocess.Popen(["bash", str(ROOT / "scripts" / "build-images.sh"), "spark"], env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT) as build:
        for line in build.stdout:  # the script's progress, relayed as it comes
            print(line, end="", file=sys.stderr, flush=True)
        code = build.wait()
    if code != 0:
        raise SparkClusterError(f"building {image} failed (see the lines above)")
    return image


@dataclass
class SparkCluster(StartedInWith):
    """`with SparkCluster(workers=2, mounts=[run_dir]) as c: analyze(run_dir, master=c.master_url,
    conf=c.driver_conf())`. `cores`: each worker's cores (default: all of this machine's); `memory_mb`: each
    worker's executor memory. `owned=False` leaves the cluster to `kafka-chaos spark-cluster down` (or
    `make clean`) when this process ends."""

    workers: int = 2
    cores: int | None = None
    memory_mb: int = 2560
    mounts: tuple[Path, ...] = ()
    owned: bool = True
    cluster_id: str = field(default_factory=lambda: uuid.uuid4().hex[:8])
    master_url: str = ""
    master_ui_url: str = ""

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ValueError(f"a Spark cluster needs at least one worker, not {self.workers}")
        self.mounts = tuple(sorted({Path(m).resolve() for m in self.mounts}))
        self._network: Network | None = None
        self._containers: list[DockerContainer] = []

    @property
    def name(self) -> str:
        return f"kafka-chaos-spark-{self.cluster_id}"

    def labels(self) -> dict[str, str]:
        owner = {OWNER_LABEL: this_owner()} if self.owned else {}
        return {PROJECT_LABEL: "kafka-chaos", CLUSTER_LABEL: self.cluster_id, **owner}

    def start(self) -> Self:
        for folder in self.mounts:
            if not folder.is_dir():
                raise SparkClusterError(f"{folder}: no such folder to mount for the executors")
        with progress(f"image {spark_image()}"):
            image = ensure_spark_image()
        client = docker_client()
        with progress(f"Spark standalone cluster {self.name}: a master and {self.workers} worker(s)"):
            self._network = Network(docker_network_kw={"labels": self.labels()})
            self._network.name = self.name
            self._network.create()
            self._start_master(image)
            with ThreadPoolExecutor(self.workers) as pool:
                list(pool.map(lambda i: self._start_worker(image, i), range(1, self.workers + 1)))
            self._wait_ready(client)
        return self

    def _container(self, image: str, role: str, command: str) -> DockerContainer:
        container = (DockerContainer(image, command=["bash", "-c", OWN_ADDRESS + "exec " + command])
                     .with_name(f"{self.name}-{role}")
                     .with_network(self._network).with_network_aliases(role)
                     .with_kwargs(labels=self.labels()))
        for key, value in DAEMON_ENV.items():
            container.with_env(key, value)
        return container

    def _start_master(self, image: str) -> None:
        rpc, ui = free_loopback_port(), free_loopback_port()
        container = self._container(image, "spark-master", "spark-class org.apache.spark.deploy.master.Master "
                                    f"--host $SPARK_LOCAL_IP --port {MASTER_PORT} --webui-port {MASTER_UI_PORT}")
        container.ports[f"{MASTER_PORT}/tcp"] = ("127.0.0.1", rpc)
        container.ports[f"{MASTER_UI_PORT}/tcp"] = ("127.0.0.1", ui)
        self._containers.append(container)
        container.start()
        self.master_url, self.master_ui_url = f"spark://127.0.0.1:{rpc}", f"http://127.0.0.1:{ui}"

    def _start_worker(self, image: str, index: int) -> None:
        cores = f"--cores {self.cores} " if self.cores else ""
        container = self._container(
            image, f"spark-worker-{index}", "spark-class org.apache.spark.deploy.worker.Worker "
            f"spark://spark-master:{MASTER_PORT} --host $SPARK_LOCAL_IP {cores}--memory {self.memory_mb}m "
            f"--webui-port {WORKER_UI_PORT} --work-dir /tmp/spark/work")
        for folder in self.mounts:
            container.with_volume_mapping(str(folder), str(folder), mode="ro")
        self._containers.append(container)
        container.start()

    def _wait_ready(self, client) -> None:
        """Until the master's UI counts every worker alive; a container that exits ends the wait at once."""
        require(self._ready, READY_TIMEOUT_S, "the Spark cluster was not ready", error=SparkClusterError,
                fatal=(SparkClusterError,), interval_s=0.3,
                detail=lambda: "\n".join(f"--- {c.get_wrapped_container().name}\n{_tail(c)}" for c in self._containers))

    def _ready(self) -> bool:
        for container in self._containers:
            container.reload()
            if container.status in ("exited", "dead"):
                raise SparkClusterError(f"{container.get_wrapped_container().name} exited during start-up:\n"
                                        f"{_tail(container)}")
        alive = self.alive_workers()
        if alive < self.workers:
            raise NotYet(f"{alive} of {self.workers} workers registered")
        return True

    def alive_workers(self) -> int:
        with urllib.request.urlopen(f"{self.master_ui_url}/json/", timeout=2) as answer:
            return int(json.load(answer).get("aliveworkers", 0))

    def gateway_ip(self) -> str:
        """The host as the containers reach it: the cluster network's gateway."""
        self._network._network.reload()
        return self._network._network.attrs["IPAM"]["Config"][0]["Gateway"]

    def driver_conf(self) -> dict[str, str]:
        """The Spark properties of a driver on this host that uses this cluster."""
        gateway = self.gateway_ip()
        return {"spark.driver.host": gateway, "spark.driver.bindAddress": gateway,
                "spark.pyspark.python": EXECUTOR_PYTHON, "spark.executor.memory": f"{self.memory_mb}m"}

    def analyze_command(self) -> str:
        """The `kafka-chaos analyze` line that uses this cluster (what `spark-cluster up` prints)."""
        conf = " ".join(f"--conf {k}={v}" for k, v in self.driver_conf().items())
        return f"kafka-chaos analyze RUN_DIR --master {self.master_url} {conf}"

    def stop(self) -> None:
        """Remove what this cluster started. Safe to call twice, and after a failed start."""
        started = [c for c in self._containers if c._container is not None]
        if started:
            with ThreadPoolExecutor(len(started)) as pool:
                list(pool.map(remove_container, started))
        self._containers.clear()
        remove_network(self._network)
        self._network = None


def clusters_up() -> dict[str, str]:
    """cluster id -> master URL of every Spark cluster of ours that runs (one a `spark-cluster up` left)."""
    out = {}
    for container in docker_client().containers.list(filters={"label": CLUSTER_LABEL}):
        if container.name.endswith("-spark-master"):
            ports = container.attrs["NetworkSettings"]["Ports"].get(f"{MASTER_PORT}/tcp") or []
            out[container.labels[CLUSTER_LABEL]] = f"spark://127.0.0.1:{ports[0]['HostPort']}" if ports else "?"
    return out


def remove_clusters() -> int:
    """Remove every Spark cluster of ours (containers and networks); how many containers went."""
    client = docker_client()
    containers = client.containers.list(all=True, filters={"label": CLUSTER_LABEL})
    for container in containers:
        container.remove(force=True, v=True)
    for network in client.networks.list(filters={"label": CLUSTER_LABEL}):
        try:
            network.remove()
        except docker.errors.APIError:
            pass
    return len(containers)


def _tail(container: DockerContainer) -> str:
    return "\n".join(f"  | {line}" for line in log_tail(lambda: container_logs(container, tail=TAIL_LINES)).splitlines())
