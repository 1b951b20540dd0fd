"""A consumer-group member on the Java client: Apache Kafka's own VerifiableConsumer.

This launcher writes the client settings to a properties file and runs the JVM with its stdout on the
member's raw event file (logs/<member>.verifiable.jsonl). The JVM shares the launcher's process group,
which the harness signals as a whole: SIGTERM reaches the JVM (a clean shutdown), SIGSTOP and SIGKILL
freeze or kill both. The launcher only waits, and stops the JVM if the harness dies. VerifiableConsumer prints every record
(`--verbose`) before it commits it, and stdout is a file, so a killed member loses no logged record.
While the JVM runs, the launcher turns the raw events into the run-directory contract
(`workloads.verifiable.Converter`, every half second), so the logs are there even if the harness is
killed; the harness converts once more after the run, for a launcher that was killed itself.
"""
from __future__ import annotations

import glob
import json
import os
import signal
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

from workloads import config as workload_config
from workloads.config import MemberConfig
from workloads.history import drop_unterminated_tail, now_ms, started_facts
from workloads.verifiable import CLIENT, FACTS_EVENT, Converter, FatalWatch

ASSIGNORS = {
    "range": "org.apache.kafka.clients.consumer.RangeAssignor",
    "roundrobin": "org.apache.kafka.clients.consumer.RoundRobinAssignor",
    "sticky": "org.apache.kafka.clients.consumer.StickyAssignor",
    "cooperative-sticky": "org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
}
MAIN_CLASS = "org.apache.kafka.tools.VerifiableConsumer"
CONVERT_EVERY_S = 0.5


def raw_events_path(run_dir: Path, member: str) -> Path:
    return run_dir / "logs" / f"{member}.verifiable.jsonl"


def command_line(cfg: MemberConfig, properties_file: Path) -> list[str]:
    release = cfg.release
    java_options = ["-Xmx256m", "-XX:+UseSerialGC"]
    if release.log4j_config:
        java_options.append(f"-Dlog4j2.configurationFile={release.log4j_config}")
    # VerifiableConsumer subscribes to one topic (the scenario refuses more for a Java member)
    args = [release.bootstrap_option, cfg.bootstrap_servers, "--topic", cfg.topics[0], "--group-id", cfg.group_id,
            "--verbose", "--reset-policy", "earliest", release.config_option, str(properties_file)]
    if release.group_protocol_option:  # VerifiableConsumer before 3.7 has no KIP-848 and no such option
        args += ["--group-protocol", cfg.protocol]
    if cfg.protocol == "classic":
        args += ["--assignment-strategy", ASSIGNORS[cfg.assignor], "--session-timeout", str(cfg.session_timeout_ms)]
    elif cfg.remote_assignor:
        args += ["--group-remote-assignor", cfg.remote_assignor]
    if cfg.instance_id or release.dynamic_instance_id:
        args += ["--group-instance-id", cfg.instance_id or release.dynamic_instance_id]
    if cfg.commit == "auto":
        args.append("--enable-autocommit")
    return ["java", *java_options, "-cp", release.classpath, MAIN_CLASS, *args]


def client_properties(cfg: MemberConfig) -> str:
    props = {"client.id": cfg.member, "max.poll.interval.ms": cfg.max_poll_interval_ms,
             **({"auto.commit.interval.ms": cfg.auto_commit_interval_ms} if cfg.commit == "auto" else {}),
             "max.poll.records": cfg.batch_size,
             **({"metadata.max.age.ms": cfg.metadata_refresh_ms} if cfg.metadata_refresh_ms else {}),
             **cfg.extra}
    if cfg.protocol == "classic":
        props["heartbeat.interval.ms"] = cfg.heartbeat_interval_ms
    return "".join(f"{k}={v}\n" for k, v in props.items())


def kafka_clients_jars(classpath: str):
    for entry in classpath.split(os.pathsep):
        if entry.endswith("*"):
            yield from sorted(glob.glob(os.path.join(os.path.dirname(entry), "kafka-clients-*.jar")))
        elif os.path.basename(entry).startswith("kafka-clients-"):
            yield entry


def kafka_clients_version(classpath: str) -> str | None:
    """The release of the kafka-clients jar on the classpath, as its own AppInfoParser reports it
    (kafka/kafka-version.properties in the jar), pinned or not; None when no such jar is found."""
    for jar in kafka_clients_jars(classpath):
        try:
            with zipfile.ZipFile(jar) as archive:
                text = archive.read("kafka/kafka-version.properties").decode()
        except (OSError, KeyError, zipfile.BadZipFile):
            continue
        pairs = (line.partition("=") for line in text.splitlines())
        version = next((value.strip() for key, _, value in pairs if key.strip() == "version"), None)
        if version:
            return version
    return None


def watch_log(stderr, raw: Path) -> None:
    """Copy the JVM's log to ours (the member's log file) and append the exception that ended VerifiableConsumer
    to the raw event file, as one whole line (O_APPEND: between the JVM's own lines, never inside one)."""
    watch = FatalWatch(now_ms)
    for line in iter(stderr.readline, b""):
        sys.stderr.buffer.write(line)
        sys.stderr.buffer.flush()
        event = watch.line(line.decode(errors="replace"))
        if event is not None:
            fd = os.open(raw, os.O_WRONLY | os.O_APPEND)
            try:
                os.write(fd, (json.dumps(event) + "\n").encode())
            finally:
                os.close(fd)


def main() -> int:
    cfg = workload_config.decode(MemberConfig)
    run_dir = Path(cfg.run_dir)
    properties_file = run_dir / "logs" / f"{cfg.member}.client.properties"
    properties_file.write_text(client_properties(cfg))
    raw = raw_events_path(run_dir, cfg.member)
    drop_unterminated_tail(raw)  # a killed JVM's last, half-printed line: nothing was committed after it
    with open(raw, "ab") as events:
        # the facts VerifiableConsumer does not print, for the converter's typed `started` event
        facts = started_facts(CLIENT, kafka_clients_version(cfg.release.classpath) or cfg.release.client_version, cfg)
        events.write((json.dumps({"name": FACTS_EVENT, "timestamp": now_ms(), **facts}) + "\n").encode())
        events.flush()
        jvm = subprocess.Popen(command_line(cfg, properties_file), stdout=events, stderr=subprocess.PIPE)
    log_watch = threading.Thread(target=watch_log, args=(jvm.stderr, raw), name="jvm-log", daemon=True)
    log_watch.start()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, signal.SIG_IGN)  # the JVM got the same signal; wait for its clean exit
    workload_config.on_harness_exit(jvm.terminate, force=jvm.kill)
    converter = Converter(raw, run_dir, cfg.member, cfg.instance_id)
    while jvm.poll() is None:
        converter.poll()
        time.sleep(CONVERT_EVERY_S)
    log_watch.join(timeout=5)  # the JVM's last log lines, and the fatal event they may hold
    converter.close()
    return jvm.returncode


if __name__ == "__main__":
    sys.exit(main())
