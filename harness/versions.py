"""Versions and image names, read from the repository's `versions.env` (the one place they are pinned).

An environment variable of the same name overrides the file, so a user with a registry can run
`KAFKA_CHAOS_KAFKA_IMAGE=apache/kafka:4.3.1 kafka-chaos run ...`.
"""
from __future__ import annotations

import os
from functools import cache
from pathlib import Path

VERSIONS_FILE = Path(__file__).resolve().parent.parent / "versions.env"


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


def kafka_image() -> str:
    return pinned("KAFKA_CHAOS_KAFKA_IMAGE")


def toxiproxy_image() -> str:
    return pinned("KAFKA_CHAOS_TOXIPROXY_IMAGE")
