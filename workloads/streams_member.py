"""A Kafka Streams member (consumer_group.client: streams): one instance of the project's Streams program
(workloads/streams, built by workloads/java_build.py), started with its MemberConfig in the environment.

This module execs the JVM in its own process, so the process the harness started is the instance: SIGTERM closes it
(a leave), SIGSTOP freezes it, SIGKILL crashes it, and a restart finds its state directory (run_dir/streams-state/
<member>) where the crashed instance left it. The program writes its events itself (the contract library's
ChaosStreams); what it processed, and the state it built, the harness reads from its output topic after the run.

KAFKA_CHAOS_STREAMS_APPLY_TWICE=PARTITION:OFFSET (a test's) plants a bug: that input record is applied twice.
"""
from __future__ import annotations

import os
import shutil
import sys

from workloads.java_build import JavaBuildError, streams_jar

MAIN_CLASS = "org.kafkachaos.streams.StreamsMember"
APPLY_TWICE_ENV = "KAFKA_CHAOS_STREAMS_APPLY_TWICE"
# a small heap (RocksDB's memory is off the heap), the serial collector on a 2-core machine; Streams' own log lines at
# WARN, its thread and task life at INFO (what a reader of logs/<member>.log needs around a rebalance)
JVM_OPTIONS = ["-Xms64m", "-Xmx384m", "-XX:+UseSerialGC",
               "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
               "-Dorg.slf4j.simpleLogger.log.org.apache.kafka.streams.processor.internals.StreamThread=info",
               "-Dorg.slf4j.simpleLogger.log.org.apache.kafka.streams.KafkaStreams=info",
               "-Dorg.slf4j.simpleLogger.showDateTime=true",
               "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss.SSS"]


def argv(jar: str, apply_twice: str | None = None) -> list[str]:
    java = shutil.which("java")
    if java is None:
        raise JavaBuildError("java is not on PATH: `make setup` installs it")
    return [java, *JVM_OPTIONS, "-cp", jar, MAIN_CLASS, *(["--apply-twice", apply_twice] if apply_twice else [])]


def main() -> None:
    try:
        command = argv(str(streams_jar()), os.environ.get(APPLY_TWICE_ENV))
    except JavaBuildError as exc:
        sys.exit(f"the Streams member program cannot run: {exc}")
    sys.stdout.flush()
    os.execv(command[0], command)


if __name__ == "__main__":
    main()
