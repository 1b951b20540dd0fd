"""Brokers of another Apache Kafka release (a scenario's cluster.kafka_version): the image is built on first
use exactly as `make images` builds the default one (scripts/build-images.sh: that release's jars from
Maven Central on the project's Debian base), then kept like any other image.

KRaft releases from 3.7 on: the harness's server.properties (static `controller.quorum.voters`, combined
broker+controller nodes, `kafka-storage.sh format -t ID -c FILE`) works unchanged on each of them.
"""
from __future__ import annotations

import os
import subprocess

import docker

from harness.releases.client_versions import maven_lacks_release, version_tuple
from harness.releases.versions import ROOT, kafka_image, pinned

OLDEST = (3, 7)
KIP_848_GA = (4, 0)  # the consumer group protocol before 4.0 was early access, off by default
KIP_1071_GA = (4, 2)  # the streams group protocol: on by default on clusters formatted at 4.2 or later
STREAMS_STATIC_AND_WARMUP = (4, 4)  # the streams protocol's static membership and warm-up tasks
BUILD_TIMEOUT_S = 900


class KafkaVersionError(ValueError):
    pass


def check_kafka_version(version: str) -> None:
    """What can be told without the registry."""
    if version_tuple(version)[:2] < OLDEST:
        raise KafkaVersionError(f"Kafka {version} is older than 3.7, the oldest release the harness runs in KRaft")


def ensure_kafka_image(version: str, log=print) -> str:
    """The image of Kafka `version`'s brokers, built (about 30 s, jars cached in ~/.m2) if it is not here."""
    check_kafka_version(version)
    image = kafka_image(version)
    if version == pinned("KAFKA_VERSION") or _present(image):
        return image
    log(f"building {image} (Kafka {version}'s jars from Maven Central; once)")
    env = {**os.environ, "KAFKA_VERSION": version, "KAFKA_CHAOS_KAFKA_IMAGE": image}
    result = subprocess.run(["bash", str(ROOT / "scripts" / "build-images.sh"), "kafka"], env=env,
                            capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    if result.returncode != 0:
        if maven_lacks_release(result.stderr):
            raise KafkaVersionError(f"Kafka {version} is not a release on Maven Central")
        tail = "\n".join(result.stderr.strip().splitlines()[-8:])
        raise KafkaVersionError(f"building {image} failed:\n{tail}")
    return image


def _present(image: str) -> bool:
    try:
        docker.from_env().images.get(image)
        return True
    except docker.errors.ImageNotFound:
        return False
