"""The Java client's jars and tool log config, taken from the Kafka image in use (ours or apache/kafka),
so the Java members run exactly the client that ships with the brokers. Cached per image id."""
from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import docker

CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "kafka-chaos" / "java-client"


def java_client(image: str) -> tuple[str, Path | None]:
    """(classpath, log4j2 config for tools or None)."""
    client = docker.from_env()
    image_id = client.images.get(image).id.split(":")[-1][:16]
    home = CACHE / image_id
    if not (home / "libs").is_dir():
        _extract(client, image, home)
    config = next((p for p in (home / "config" / "tools-log4j2.properties", home / "config" / "tools-log4j2.yaml")
                   if p.exists()), None)
    return str(home / "libs" / "*"), config


def _extract(client, image: str, home: Path) -> None:
    partial = home.with_suffix(".partial")
    partial.mkdir(parents=True, exist_ok=True)
    container = client.containers.create(image, command=["true"], labels={"org.kafka-chaos.project": "kafka-chaos"})
    try:
        for folder in ("/opt/kafka/libs", "/opt/kafka/config"):
            stream, _ = container.get_archive(folder)
            with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as archive:
                archive.extractall(partial, filter="data")
    finally:
        container.remove(force=True)
    partial.rename(home)
