"""The workload processes' typed configs, and how the harness hands one over: one JSON document in an
environment variable (not on the command line, where `ps` would show any credential in it).

Plain dataclasses: a member pinned to another confluent-kafka runs in that release's own venv, where
nothing but the standard library and this tree can be assumed.
"""
from __future__ import annotations

import json
import os
import signal
import threading
import time
from dataclasses import asdict, dataclass, field, is_dataclass
from typing import TypeVar, get_args, get_origin, get_type_hints

ENV_VAR = "KAFKA_CHAOS_WORKLOAD_CONFIG"
# How long a member waits for a batch: librdkafka's consume() time-out, the Java member program's poll (Member.POLL)
BATCH_WAIT_MS = 500
T = TypeVar("T")


@dataclass(frozen=True)
class ProcessingConfig:
    """The application's work per batch (the scenario's consumer_group.processing)."""
    per_record_ms: float = 0
    per_batch_ms: float = 0
    distribution: str = "fixed"  # or "exponential", whose mean is the fixed value
    seed: int = 0


@dataclass(frozen=True)
class KeySpace:
    """A stateful run's keys (the scenario's `state` block): record seq's key is k<seq mod keys>, and key k<i> lives
    in partition i mod partitions, of the input topic and of its changelog alike, so each partition holds exactly
    keys_per_partition keys. The producer names the partition itself: no client's partitioner is involved."""
    keys_per_partition: int
    partitions: int

    @property
    def keys(self) -> int:
        return self.keys_per_partition * self.partitions

    def key_of(self, seq: int) -> tuple[str, int]:
        """Record seq's key and its partition."""
        index = seq % self.keys
        return f"k{index}", index % self.partitions

    def keys_of(self, partition: int) -> list[str]:
        """The keys that live in a partition."""
        return [f"k{i}" for i in range(partition, self.keys, self.partitions)]


@dataclass(frozen=True)
class StateConfig:
    """What a stateful member keeps (workloads/state.py): per (partition, key) a count, a sum of seq and the last
    input offset, in memory, written through to the changelog topic and restored from it."""
    changelog: str
    keys: KeySpace
    keep_on_revoke: bool = False


@dataclass(frozen=True)
class WarmupSettings:
    """Classic Streams' warm-up tasks (KIP-441): max.warmup.replicas, acceptable.recovery.lag,
    probing.rebalance.interval.ms."""
    max_warmup_replicas: int
    acceptable_recovery_lag: int
    probing_rebalance_interval_ms: int


@dataclass(frozen=True)
class StreamsSettings:
    """A Kafka Streams member's (workloads/streams): processing.guarantee, standby replicas, stream threads, warm-ups
    (None: every instance counts as caught up); the defaults are the scenario's (StreamsSpec). The Java side:
    MemberConfig.Streams."""
    guarantee: str
    standby_replicas: int
    threads: int
    warmup: WarmupSettings | None = None


@dataclass(frozen=True)
class TransactionSettings:
    """`commit: transaction` (workloads/transactions.py): a transaction every interval_ms, transaction.timeout.ms, and
    every abort_every-th transaction aborted on purpose (0: none); the defaults are the scenario's (TransactionSpec)."""
    interval_ms: int
    timeout_ms: int
    abort_every: int = 0
    request_timeout_ms: int | None = None  # None: the client's own
    call_timeout_ms: int = 30_000
    transactional_id: str = "member"  # or "partition": one producer an input partition


@dataclass(frozen=True)
class ClientRelease:
    """How a member of one client release runs (harness/releases/client_versions.py resolves it, cached)."""
    python: str | None = None  # librdkafka: the interpreter of that confluent-kafka release's venv
    client_version: str | None = None  # None: the release the harness ships
    librdkafka_version: str | None = None  # the one bundled in a pinned confluent-kafka
    classpath: str | None = None  # java: that release's jars
    log4j_config: str | None = None
    config_option: str = "--command-config"  # VerifiableConsumer's option for a properties file
    group_protocol_option: bool = True  # VerifiableConsumer has --group-protocol (3.7 and later)
    bootstrap_option: str = "--bootstrap-server"  # --broker-list before 2.6 (KIP-499)
    group_instance_id_option: bool = True  # VerifiableConsumer has --group-instance-id (2.3 and later)
    dynamic_instance_id: str | None = None  # what a dynamic member passes to it where it is required (2.3, 2.4)


@dataclass(frozen=True)
class MemberConfig:
    """Everything a member process needs, whatever its kind (workloads/kinds.py)."""
    member: str
    run_dir: str
    client: str
    release: ClientRelease
    bootstrap_servers: str
    group_id: str
    topics: list[str]
    pattern: str | None
    metadata_refresh_ms: int | None
    protocol: str
    assignor: str | None
    remote_assignor: str | None
    session_timeout_ms: int
    heartbeat_interval_ms: int
    max_poll_interval_ms: int
    commit: str
    auto_commit_interval_ms: int | None
    processing: ProcessingConfig
    batch_size: int
    extra: dict = field(default_factory=dict)
    instance_id: str | None = None
    subscribed_topics: list[str] | None = None  # only these of `topics` (a member spec's own); None: all of them
    host: str | None = None  # the member host it runs in (HostConfig); None: a process of its own
    hosted_settings: dict = field(default_factory=dict)  # client settings a hosted member changes (harness/hosting.py)
    join_watch_s: float | None = None  # librdkafka: no assignment this long after subscribing writes its group debug
    #                                    log (workloads/client_debug.py); the harness passes the group's stable limit
    command: list[str] | str | None = None  # a command member's program (workloads/command.py): argv, or sh -c's
    workdir: str | None = None  # the folder the command starts in
    start_timeout_s: float = 60  # a command member logs `started` within this
    output_topic: str | None = None  # output-topic mode: the topic a command member writes what it consumed to
    state: StateConfig | None = None  # a stateful member (the scenario's `state` block)
    streams: StreamsSettings | None = None  # a Kafka Streams member's settings (consumer_group.streams)
    transaction: TransactionSettings | None = None  # commit: transaction's settings (consumer_group.transaction)


@dataclass(frozen=True)
class HostConfig:
    """A member host (workloads/member_host.py, or the Java member program): one process running many members,
    each in a thread with its own consumer instance and its own logs (consumer_group.members_per_host).

    The harness asks a host to bring one of its members down, or up again, through control/<host>.host.json:
    {"crashed": [names], "stopped": [names]}, the members that must be down: crashed as if its process was killed
    (no commit, no leave, nothing more logged), or stopped by a graceful close (a leave). A name taken off both
    lists starts again under the same name. The host answers in control/<host>.ack.json ({"crashed": [...],
    "down_at_ms": {name: ms}, "stopped": [...], "running": [...]}; down_at_ms: when each crashed member's consumer
    was destroyed) once it has done so. SIGTERM stops every member cleanly; SIGSTOP freezes
    them all (a GC pause of the whole process)."""
    host: str
    run_dir: str
    members: list[MemberConfig]
    start_after_s: float = 0.0    # when its first member starts, and how long after that each next one: a large
    start_spacing_s: float = 0.0  # group's starts spread out (harness/hosting.py start_times)


@dataclass(frozen=True)
class ProducerConfig:
    producer_id: str
    run_dir: str
    bootstrap_servers: str
    topics: list[str]
    records: int
    rate: float
    acks: str
    idempotence: bool
    extra: dict = field(default_factory=dict)
    flush_timeout_s: float = 150
    keys: KeySpace | None = None  # a stateful run's keys; None: record seq's key is str(seq)


@dataclass(frozen=True)
class AdminProbeConfig:
    """The admin probe (workloads/admin_probe.py): one admin call about the group every every_ms."""
    probe_id: str
    run_dir: str
    bootstrap_servers: str
    group_id: str
    call: str  # "describe" (DescribeConsumerGroups) or "offsets" (ListConsumerGroupOffsets)
    every_ms: int
    request_timeout_ms: int
    release: ClientRelease = field(default_factory=ClientRelease)


def encode(config) -> dict[str, str]:
    return {ENV_VAR: json.dumps(asdict(config))}


def decode(cls: type[T]) -> T:
    try:
        encoded = os.environ[ENV_VAR]
    except KeyError:
        raise SystemExit(f"{ENV_VAR} is not set: workload processes are started by the kafka-chaos harness") from None
    return decode_text(cls, encoded)


def decode_text(cls: type[T], encoded: str) -> T:
    return _from_dict(cls, json.loads(encoded))


def _from_dict(cls, data: dict):
    hints = get_type_hints(cls)
    return cls(**{name: _field(hints[name], value) for name, value in data.items()})


def _field(hint, value):
    """A field's value as its type says: a dataclass (or None where it is optional), a list of one (a host's
    members), or the value itself."""
    optional = [a for a in get_args(hint) if a is not type(None)] if type(None) in get_args(hint) else []
    if len(optional) == 1 and is_dataclass(optional[0]):
        return None if value is None else _from_dict(optional[0], value)
    if is_dataclass(hint):
        return _from_dict(hint, value)
    if get_origin(hint) is list and is_dataclass(item := get_args(hint)[0]):
        return [_from_dict(item, v) for v in value]
    return value


def run_workload(factory, config_class) -> int:
    """A workload process's main: its config from the harness; SIGTERM or SIGINT asks it to stop cleanly,
    and so does the death of the harness (an aborted harness runs no `finally`)."""
    workload = factory(decode(config_class))

    def stop(signum=None, frame=None):
        workload.stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    on_harness_exit(stop, force=lambda: os._exit(1))
    return workload.run()


def on_harness_exit(stop, force, poll_s: float = 1.0, grace_s: float = 15.0) -> None:
    """Once the process that started this one is gone (we get re-parented): `stop`, and `force` if a
    clean stop has not ended the process within grace_s (closing a client can wait on a frozen broker)."""
    parent = os.getppid()

    def watch():
        while os.getppid() == parent:
            time.sleep(poll_s)
        stop()
        time.sleep(grace_s)
        force()

    threading.Thread(target=watch, name="harness-watch", daemon=True).start()
