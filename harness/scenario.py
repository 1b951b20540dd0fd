"""The scenario file: what cluster, which workload, which faults, when.

Every field is validated before anything starts; a bad value gives one error that names the field
(`consumer_group.heartbeat_interval_ms: must be below session_timeout_ms (10000)`).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

BROKER_TARGETS = ("coordinator", "controller", "leader", "random")
BROKER_FAULTS = ("broker_freeze", "proxy_cut", "latency")
MEMBER_FAULTS = ("member_freeze", "member_crash")
MEMBER_TARGETS = ("random-member",)


class ScenarioError(ValueError):
    """A scenario that cannot run; the message names the field."""


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ClusterSpec(Strict):
    brokers: int = Field(3, ge=1, le=5)
    broker_config: dict[str, str | int | bool] = Field(default_factory=dict, description="extra server.properties entries")
    heap: str = Field("512m", pattern=r"^\d+[mg]$")
    startup_timeout_s: float = Field(120, gt=0)


class TopicSpec(Strict):
    name: str = Field("chaos", pattern=r"^[A-Za-z0-9._-]{1,200}$")
    partitions: int = Field(6, ge=1, le=1000)
    replication_factor: int = Field(3, ge=1)


class ProducerSpec(Strict):
    records: int = Field(100_000, ge=1)
    rate: int = Field(5000, ge=0, description="records per second; 0 = as fast as possible")
    acks: Literal["all", "1", "0"] = "all"
    idempotence: bool = True
    config: dict[str, str | int | bool] = Field(default_factory=dict, description="extra librdkafka producer settings")

    @model_validator(mode="after")
    def _idempotence_needs_acks_all(self):
        if self.idempotence and self.acks != "all":
            raise ValueError("acks: an idempotent producer needs acks=all (or set idempotence: false)")
        return self


class ConsumerGroupSpec(Strict):
    group_id: str = "chaos-group"
    members: int = Field(3, ge=1, le=32)
    client: Literal["librdkafka", "java"] = Field("librdkafka", description="java: Apache Kafka's VerifiableConsumer")
    protocol: Literal["classic", "consumer"] = "classic"
    assignor: Literal["range", "roundrobin", "sticky", "cooperative-sticky"] | None = "range"
    remote_assignor: Literal["uniform", "range"] | None = None
    static_membership: bool = False
    commit: Literal["sync", "async"] = "sync"
    session_timeout_ms: int | None = Field(10_000, ge=1000)
    heartbeat_interval_ms: int | None = Field(1_000, ge=100)
    max_poll_interval_ms: int = Field(300_000, ge=1000)
    batch_size: int = Field(500, ge=1, le=100_000)
    config: dict[str, str | int | bool] = Field(default_factory=dict, description="extra librdkafka consumer settings")

    @model_validator(mode="after")
    def _client_rules(self):
        if self.client == "librdkafka" and self.assignor == "sticky":
            raise ValueError("assignor: librdkafka has no eager 'sticky' assignor; use cooperative-sticky, or client: java")
        if self.client == "java" and self.commit == "async":
            raise ValueError("commit: the Java member (VerifiableConsumer) commits synchronously only")
        return self

    @model_validator(mode="after")
    def _protocol_rules(self):
        if self.protocol == "consumer":
            # KIP-848: the broker owns timing and assignment; librdkafka rejects these at construction.
            for field in ("session_timeout_ms", "heartbeat_interval_ms", "assignor"):
                if getattr(self, field) is not None and field in self.model_fields_set:
                    raise ValueError(f"{field}: not allowed with protocol: consumer (the broker sets it; use remote_assignor)")
        else:
            if self.remote_assignor is not None:
                raise ValueError("remote_assignor: only with protocol: consumer")
            if self.session_timeout_ms is None or self.heartbeat_interval_ms is None or self.assignor is None:
                raise ValueError("session_timeout_ms, heartbeat_interval_ms and assignor are required with protocol: classic")
            if self.heartbeat_interval_ms >= self.session_timeout_ms:
                raise ValueError(
                    f"heartbeat_interval_ms: must be below session_timeout_ms ({self.session_timeout_ms}), "
                    f"got {self.heartbeat_interval_ms}")
        return self

    def effective(self) -> "ConsumerGroupSpec":
        """Drop the classic-only defaults when the KIP-848 protocol is chosen."""
        if self.protocol == "consumer":
            return self.model_copy(update={"session_timeout_ms": None, "heartbeat_interval_ms": None, "assignor": None})
        return self


class FaultSpec(Strict):
    kind: Literal["broker_freeze", "proxy_cut", "latency", "member_freeze", "member_crash"]
    target: str = Field(description="broker faults: kafka-1..N or one of " + ", ".join(BROKER_TARGETS)
                        + "; member faults: member-1..N or random-member")
    at_s: float = Field(ge=0, description="seconds after the workload starts")
    duration_s: float = Field(gt=0, le=3600, description="until the heal (a crashed member restarts then)")
    latency_ms: int | None = Field(None, gt=0, le=600_000, description="latency only")
    jitter_ms: int = Field(0, ge=0)

    @model_validator(mode="after")
    def _latency_needs_its_delay(self):
        if (self.kind == "latency") != (self.latency_ms is not None):
            raise ValueError("latency_ms: required with kind: latency, and only there")
        return self


class RunSpec(Strict):
    drain_timeout_s: float = Field(180, gt=0, description="after the producer and all faults end, how long to wait for the group to catch up")
    seed: int = 0
    log_format: Literal["parquet", "jsonl"] = Field(
        "parquet", description="what produced/ and consumed/ are left in: members append JSONL while they run; "
                               "with parquet the logs are rewritten once the workload has stopped (kafka-chaos compact)")


class AnalysisSpec(Strict):
    enabled: bool = True
    grace_ms: int = Field(30_000, ge=0)


class Scenario(Strict):
    name: str = Field("default", pattern=r"^[A-Za-z0-9._-]{1,80}$")
    cluster: ClusterSpec = Field(default_factory=ClusterSpec)
    topic: TopicSpec = Field(default_factory=TopicSpec)
    producer: ProducerSpec = Field(default_factory=ProducerSpec)
    consumer_group: ConsumerGroupSpec = Field(default_factory=ConsumerGroupSpec)
    faults: list[FaultSpec] = Field(default_factory=list)
    run: RunSpec = Field(default_factory=RunSpec)
    analysis: AnalysisSpec = Field(default_factory=AnalysisSpec)

    @model_validator(mode="after")
    def _cross_checks(self):
        if self.topic.replication_factor > self.cluster.brokers:
            raise ValueError(f"topic.replication_factor: {self.topic.replication_factor} is more than cluster.brokers ({self.cluster.brokers})")
        brokers = [f"kafka-{n}" for n in range(1, self.cluster.brokers + 1)] + list(BROKER_TARGETS)
        members = [f"member-{n}" for n in range(1, self.consumer_group.members + 1)] + list(MEMBER_TARGETS)
        for i, fault in enumerate(self.faults):
            allowed = brokers if fault.kind in BROKER_FAULTS else members
            if fault.target not in allowed:
                raise ValueError(f"faults[{i}].target: {fault.target!r} is not one of {allowed} for {fault.kind}")
        return self

    def to_yaml(self) -> str:
        data = self.model_copy(update={"consumer_group": self.consumer_group.effective()}).model_dump(mode="json")
        return yaml.safe_dump(data, sort_keys=False)


def _describe(error: ValidationError, source: str) -> str:
    lines = []
    for item in error.errors():
        where = ".".join(str(p) for p in item["loc"]) or "scenario"
        message = item["msg"].removeprefix("Value error, ")
        if item["type"] == "extra_forbidden":
            message = "unknown field"
        named = re.match(r"^([\w\[\].]+): (.*)$", message)
        if named:  # a model-level check names its own field: attach it to the path
            where = named.group(1) if where == "scenario" else f"{where}.{named.group(1)}"
            message = named.group(2)
        lines.append(f"{where}: {message}")
    return f"{source}: invalid scenario\n  " + "\n  ".join(lines)


def parse_scenario(data: object, source: str = "scenario") -> Scenario:
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ScenarioError(f"{source}: a scenario is a YAML mapping, got {type(data).__name__}")
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        raise ScenarioError(_describe(exc, source)) from None


def load_scenario(path: str | Path) -> Scenario:
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read the scenario: {exc.strerror}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ScenarioError(f"{path}: not valid YAML: {exc}") from None
    return parse_scenario(data, str(path))
