"""A consumer-group member on the Java client: Apache Kafka's own VerifiableConsumer.

This launcher writes the client settings to a properties file, points stdout at the member's raw
event file (logs/<member>.verifiable.jsonl) and execs the JVM, so the member is one process that the
harness can stop, kill and freeze like the librdkafka member. VerifiableConsumer prints every record
(`--verbose`) before it commits it, and stdout is a file, so a killed member loses no logged record.
After the run `workloads.verifiable.convert` turns the raw events into the run-directory contract.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

from workloads import config as workload_config

ASSIGNORS = {
    "range": "org.apache.kafka.clients.consumer.RangeAssignor",
    "roundrobin": "org.apache.kafka.clients.consumer.RoundRobinAssignor",
    "sticky": "org.apache.kafka.clients.consumer.StickyAssignor",
    "cooperative-sticky": "org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
}
MAIN_CLASS = "org.apache.kafka.tools.VerifiableConsumer"


def raw_events_path(run_dir: Path, member: str) -> Path:
    return run_dir / "logs" / f"{member}.verifiable.jsonl"


def command_line(cfg: dict, properties_file: Path) -> list[str]:
    java_options = ["-Xmx256m", "-XX:+UseSerialGC"]
    if cfg.get("log4j_config"):
        java_options.append(f"-Dlog4j2.configurationFile={cfg['log4j_config']}")
    args = ["--bootstrap-server", cfg["bootstrap_servers"], "--topic", cfg["topic"], "--group-id", cfg["group_id"],
            "--verbose", "--reset-policy", "earliest", "--group-protocol", cfg["protocol"],
            "--command-config", str(properties_file)]
    if cfg["protocol"] == "classic":
        args += ["--assignment-strategy", ASSIGNORS[cfg["assignor"]], "--session-timeout", str(cfg["session_timeout_ms"])]
    elif cfg.get("remote_assignor"):
        args += ["--group-remote-assignor", cfg["remote_assignor"]]
    if cfg.get("instance_id"):
        args += ["--group-instance-id", cfg["instance_id"]]
    return ["java", *java_options, "-cp", cfg["classpath"], MAIN_CLASS, *args]


def client_properties(cfg: dict) -> str:
    props = {"client.id": cfg["member"], "max.poll.interval.ms": cfg["max_poll_interval_ms"],
             "max.poll.records": cfg["batch_size"], **cfg.get("extra", {})}
    if cfg["protocol"] == "classic":
        props["heartbeat.interval.ms"] = cfg["heartbeat_interval_ms"]
    return "".join(f"{k}={v}\n" for k, v in props.items())


def main() -> None:
    cfg = workload_config.decode()
    run_dir = Path(cfg["run_dir"])
    properties_file = run_dir / "logs" / f"{cfg['member']}.client.properties"
    properties_file.write_text(client_properties(cfg))
    events = os.open(raw_events_path(run_dir, cfg["member"]), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(events, sys.stdout.fileno())
    os.execvp("java", command_line(cfg, properties_file))


if __name__ == "__main__":
    main()
