"""Versions and image names, read from the repository's `versions.env` (the one place they are pinned).

An environment variable of the same name overrides the file, so a user with a registry can run
`KAFKA_CHAOS_KAFKA_IMAGE=apache/kafka:4.3.1 kafka-chaos run ...`.
"""
from __future__ import annotations

import os
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VERSIONS_FILE = ROOT / "versions.env"


@cache
def _pinned() -> dict[str, str]:
    values: dict[str, str] = {}
    for line in VERSIONS_FILE.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, _, value = line.partition("=")
            values[key.strip()] = value.strip().strip('"')
    return values


def pinned(key: str) -> str:
    value = os.environ.get(key) or _pinned().get(key)
    if not value:
        raise KeyError(f"{key} is not set in {VERSIONS_FILE} nor in the environment")
    return value


def kafka_version(requested: str | None = None) -> str:
    """The brokers' Kafka release: a scenario's cluster.kafka_version, or the one versions.env pins."""
    return requested or pinned("KAFKA_VERSION")


def kafka_image(version: str | None = None) -> str:
    """The brokers' image: versions.env's for its own release, kafka-chaos/kafka:<version> (built locally
    on first use, harness/releases/kafka_release.py) for another."""
    if kafka_version(version) == pinned("KAFKA_VERSION"):
        return pinned("KAFKA_CHAOS_KAFKA_IMAGE")
    return f"kafka-chaos/kafka:{version}"


def toxiproxy_image() -> str:
    return pinned("KAFKA_CHAOS_TOXIPROXY_IMAGE")
