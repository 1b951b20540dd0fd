"""The container engine under the harness's own clusters: labels that say whose a container is, the engine
client, a container's logs and removal, and the sweep of what a killed harness left behind."""
from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Self

import docker
from testcontainers.core.config import testcontainers_config
from testcontainers.core.container import DockerContainer

from harness.cluster import log_disk
from harness.releases.versions import toxiproxy_image
from workloads.owner import owner_gone, owner_state, this_owner

# Ryuk cannot be pulled here; the harness removes its own containers (by label) instead.
testcontainers_config.ryuk_disabled = True

PROJECT_LABEL = "org.kafka-chaos.project"
RUN_LABEL = "org.kafka-chaos.run"
OWNER_LABEL = "org.kafka-chaos.owner"  # the owner id of the harness process that started it (workloads/owner.py)
# A docker-py port binding: a random host port, published on 127.0.0.1 only.
LOOPBACK_ANY_PORT = ("127.0.0.1",)


class ClusterError(RuntimeError):
    pass


def run_labels(run_id: str) -> dict[str, str]:
    return {PROJECT_LABEL: "kafka-chaos", RUN_LABEL: run_id, OWNER_LABEL: this_owner()}


class NoDockerEngine(ClusterError):
    """No Docker engine answers."""


def engine_unreachable(exc: BaseException) -> bool:
    """The Docker engine did not answer (its socket refused or gone), as the SDK and requests raise it."""
    import requests
    return isinstance(exc, (NoDockerEngine, requests.exceptions.ConnectionError)) or \
        (isinstance(exc, docker.errors.DockerException) and not isinstance(exc, docker.errors.APIError))


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
    built on first use: harness/releases/kafka_release.py)."""
    try:
        client = docker_client()
    except NoDockerEngine as exc:
        raise ClusterError(f"{exc}; `make setup` starts one (as root)") from None
    for image in (kafka, toxiproxy_image()):
        try:
            client.images.get(image)
        except docker.errors.ImageNotFound:
            raise ClusterError(f"image {image} is not on this machine; `make setup` builds it") from None


def host_ports(container: DockerContainer) -> dict[int, int]:
    """Every published port of a container: container port -> host port (one look-up)."""
    wrapped = container.get_wrapped_container()
    wrapped.reload()
    return {int(port.split("/")[0]): int(bindings[0]["HostPort"])
            for port, bindings in wrapped.attrs["NetworkSettings"]["Ports"].items() if bindings}


TAIL_LINES = 30  # what an error message shows of a log


def container_logs(container: DockerContainer, tail: int | None = None) -> str:
    """Its whole output, stdout then stderr; with ``tail``, only the last ``tail`` lines of both streams in the order
    written, cut by the engine: a long-running container's log is not read to show its end."""
    if tail is not None:
        return container.get_wrapped_container().logs(tail=tail).decode(errors="replace")
    stdout, stderr = container.get_logs()
    return (stdout + stderr).decode(errors="replace")


def log_tail(logs: Callable[[], str], lines: int = TAIL_LINES) -> str:
    """The last ``lines`` lines ``logs()`` gives, for an error message (which a failure to read them must not cost)."""
    try:
        return "\n".join(logs().splitlines()[-lines:])
    except Exception as exc:  # the tail is only for an error message
        return f"(no logs: {exc})"


def free_loopback_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def remove_container(container: DockerContainer) -> None:
    try:
        wrapped = container.get_wrapped_container()
        wrapped.reload()
        if wrapped.status == "paused":
            wrapped.unpause()
        wrapped.remove(force=True, v=True)
    except docker.errors.NotFound:
        pass
    except docker.errors.APIError as exc:  # another remover (`kafka-chaos clean`, a SIGTERM's cleanup) got there first
        if exc.status_code != 409 or "already in progress" not in str(exc):
            raise


def remove_network(network) -> None:
    """Remove a testcontainers Network that was created (a network still in use by a container stays)."""
    if network is not None and network._network is not None:
        try:
            network.remove()
        except docker.errors.APIError:
            pass


def sweep_stale_containers(include_live: bool = False, say=None) -> int:
    """Remove containers and networks of ours whose owning harness process is provably gone (workloads/owner.py):
    never one of another host or PID namespace, whose owner nothing here can see. ``include_live`` removes every one
    a harness started, live or another's (`kafka-chaos clean --all`); ``say(line)`` is told each container removed
    and whose it was."""
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
            if say is not None:
                owner = container.labels[OWNER_LABEL]
                say(f"removed {container.name} (run {container.labels.get(RUN_LABEL, '?')}, owner {owner}: "
                    f"{owner_state(owner).value})")
    for network in client.networks.list(filters={"label": PROJECT_LABEL}):
        if stale(network.attrs.get("Labels") or {}):
            try:
                network.remove()
            except docker.errors.APIError:
                pass
    log_disk.sweep_stale_disks(include_live)  # after the containers that had them mounted
    return removed


class StartedInWith:
    """`with X(...) as x:` starts x and stops it at the end; a start that fails stops what it had begun, so nothing
    is left running (a cluster of containers, a Spark cluster)."""

    def start(self) -> Self:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc) -> None:
        self.stop()
