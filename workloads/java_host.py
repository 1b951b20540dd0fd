"""Starts the Java member program (workloads/java, org.kafkachaos.MemberHost): one JVM running every member of a
member host, each a thread with its own KafkaConsumer, writing the run-directory contract as workloads/member.py.

The harness starts this module as `python -m workloads.java_host` with the host's config (workloads.config.HostConfig)
in KAFKA_CHAOS_WORKLOAD_CONFIG. It only builds the java command line and replaces itself with the JVM (os.execvp): the
JVM has the harness as its parent, inherits the environment (the config, the KAFKA_CHAOS_CLIENT_* security settings)
and takes SIGTERM, SIGSTOP and SIGKILL directly. Its classpath is the first member's release (the Kafka image's
libs/*: kafka-clients, jackson, the SLF4J binding) and the program's jar (workloads/java_build.py).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

from workloads import config as workload_config
from workloads.config import HostConfig
from workloads.java_build import member_jar

MAIN_CLASS = "org.kafkachaos.MemberHost"
HEAP_BASE_MB = 64
HEAP_PER_MEMBER_MB = 8  # a consumer's fetch buffers and metadata; hosted members bound fetch.max.bytes (harness/hosting.py)


def heap_mb(members: int) -> int:
    """The JVM's maximum heap for a host of `members` members (64 MB + 8 MB a member)."""
    return HEAP_BASE_MB + HEAP_PER_MEMBER_MB * members


def java_options(cfg: HostConfig) -> list[str]:
    release = cfg.members[0].release
    options = [f"-Xmx{heap_mb(len(cfg.members))}m", "-XX:+UseSerialGC"]
    if release.log4j_config:
        options.append(f"-Dlog4j2.configurationFile={release.log4j_config}")
    return options


def command_line(cfg: HostConfig, jar: Path) -> list[str]:
    release = cfg.members[0].release
    if not release.classpath:
        raise SystemExit(f"{cfg.host}: the member release has no classpath (the Kafka image's libs/*)")
    return ["java", *java_options(cfg), "-cp", f"{release.classpath}{os.pathsep}{jar}", MAIN_CLASS]


def main() -> None:
    cfg = workload_config.decode(HostConfig)
    argv = command_line(cfg, member_jar())
    # the host's log (logs/<host>.log) says how its JVM ran: the heap it was given, the classpath
    print(f"{cfg.host}: {len(cfg.members)} members, heap {heap_mb(len(cfg.members))} MB: {' '.join(argv)}",
          file=sys.stderr, flush=True)
    os.execvp(argv[0], argv)


if __name__ == "__main__":
    main()
