"""The scenario file: what cluster, which workload, which faults, when.

Every field is validated before anything starts; a bad value gives one error that names the field
(`consumer_group.heartbeat_interval_ms: must be below session_timeout_ms (10000)`).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal, Union

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, create_model, model_validator

from faults.base import Fault, FaultParams
from faults.context import ScenarioFacts
from faults.kinds import fault_kinds
from faults.schedule import random_schedule
from faults.targets import TARGET_CHECKS



class ScenarioError(ValueError):
    """A scenario that cannot run; the message names the field."""


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ClusterSpec(Strict):
    brokers: int = Field(3, ge=1, le=5)
    broker_config: dict[str, str | int | bool] = Field(default_factory=dict, description="extra server.properties entries")
    heap: str = Field("512m", pattern=r"^\d+[mg]$")
    startup_timeout_s: float = Field(120, gt=0)
    spare_lanes: int = Field(2, ge=0, le=16, description="per-client lanes beyond the scenario's members, for members that join later")


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


class ProcessingSpec(Strict):
    """The application's work on each batch, between consume() and the log: what makes a member slow."""
    per_record_ms: float = Field(0, ge=0, le=60_000)
    per_batch_ms: float = Field(0, ge=0, le=3_600_000)
    distribution: Literal["fixed", "exponential"] = Field("fixed", description="exponential: the mean is the fixed value")
    seed: int = 0


class ConsumerGroupSpec(Strict):
    group_id: str = "chaos-group"
    members: int = Field(3, ge=1, le=32)
    client: Literal["librdkafka", "java"] = Field("librdkafka", description="java: Apache Kafka's VerifiableConsumer")
    protocol: Literal["classic", "consumer"] = "classic"
    assignor: Literal["range", "roundrobin", "sticky", "cooperative-sticky"] | None = "range"
    remote_assignor: Literal["uniform", "range"] | None = None
    static_membership: bool = False
    commit: Literal["sync", "async", "auto", "before_process"] = Field(
        "sync", description="sync/async: log then commit (at least once); auto: enable.auto.commit, offsets stored as "
                            "consume() returns them; before_process: commit then log (at most once, on purpose)")
    auto_commit_interval_ms: int = Field(5000, ge=1, le=3_600_000, description="with commit: auto")
    processing: ProcessingSpec = Field(default_factory=ProcessingSpec)
    session_timeout_ms: int | None = Field(10_000, ge=1000)
    heartbeat_interval_ms: int | None = Field(1_000, ge=100)
    max_poll_interval_ms: int = Field(300_000, ge=1000)
    batch_size: int = Field(500, ge=1, le=100_000)
    config: dict[str, str | int | bool] = Field(default_factory=dict, description="extra librdkafka consumer settings")

    @model_validator(mode="after")
    def _client_rules(self):
        if self.client == "librdkafka" and self.assignor == "sticky":
            raise ValueError("assignor: librdkafka has no eager 'sticky' assignor; use cooperative-sticky, or client: java")
        if self.client == "java" and self.commit not in ("sync", "auto"):
            raise ValueError(f"commit: the Java member (VerifiableConsumer) commits sync or auto only, not {self.commit}")
        if self.client == "java" and self.processing != ProcessingSpec():
            raise ValueError("processing: the Java member (VerifiableConsumer) has no processing delay; use client: librdkafka")
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
            if self.max_poll_interval_ms < self.session_timeout_ms:
                raise ValueError(f"max_poll_interval_ms: must be at least session_timeout_ms ({self.session_timeout_ms}), "
                                 f"got {self.max_poll_interval_ms} (both clients refuse it)")
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


class FaultEntry(Strict):
    """What every scenario fault entry has; each kind adds its own parameters (its `Params`), flat."""
    kind: str
    target: str = Field(description="what it hits: see the kind's target kind in faults/targets.py")
    at_s: float = Field(ge=0, description="seconds after the workload starts")
    duration_s: float = Field(gt=0, le=3600, description="from the end of the inject until the heal")

    @property
    def fault_class(self) -> type[Fault]:
        return FAULT_KINDS[self.kind]

    @property
    def params(self) -> FaultParams:
        """The kind's own parameters, as its Params model."""
        return self.fault_class.Params(**{k: getattr(self, k) for k in self.fault_class.Params.model_fields})


def _entry_model(kind: str, cls: type[Fault]) -> type[FaultEntry]:
    return create_model(f"{cls.__name__}Entry", __base__=(cls.Params, FaultEntry), __doc__=cls.__doc__,
                        kind=(Literal[kind], Field(description=(cls.__doc__ or "").strip())))


FAULT_KINDS = fault_kinds()
FaultSpec = Annotated[Union[tuple(_entry_model(k, c) for k, c in FAULT_KINDS.items())], Field(discriminator="kind")]
FAULT_ENTRY = TypeAdapter(FaultSpec)


def _range(lo_min: float):
    def check(value: tuple[float, float]) -> tuple[float, float]:
        lo, hi = value
        if lo < lo_min or hi < lo:
            raise ValueError(f"must be [low, high] with {lo_min:g} <= low <= high, got [{lo:g}, {hi:g}]")
        return value
    return check


class RandomFaultsSpec(Strict):
    """A seeded random schedule drawn from a menu of faults (faults/schedule.py)."""
    faults: list[dict[str, Any]] = Field(min_length=1, description="the menu: fault entries without at_s and duration_s")
    seed: int | None = Field(None, description="default: run.seed")
    start_s: float = Field(5, ge=0, description="when the first fault may start")
    until_s: float | None = Field(None, gt=0, description="no fault starts after this; default: the producer's planned time")
    interval_s: Annotated[tuple[float, float], AfterValidator(_range(0))] = Field((5, 15), description="quiet gap after each heal")
    duration_s: Annotated[tuple[float, float], AfterValidator(_range(0.1))] = Field((3, 10), description="each fault's length")

    @model_validator(mode="after")
    def _menu_entries_are_faults(self):
        for i, entry in enumerate(self.faults):
            if "at_s" in entry or "duration_s" in entry:
                raise ValueError(f"faults[{i}]: at_s and duration_s are drawn by the schedule; leave them out")
            try:
                FAULT_ENTRY.validate_python({**entry, "at_s": 0, "duration_s": 1})
            except ValidationError as exc:
                item = exc.errors()[0]
                raise ValueError(f"faults[{i}]{_path(item)}: {_message(item)}") from None
        return self

    def menu(self) -> list[FaultEntry]:
        return [FAULT_ENTRY.validate_python({**entry, "at_s": 0, "duration_s": 1}) for entry in self.faults]


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
    random_faults: RandomFaultsSpec | None = Field(None, description="a seeded random schedule, added to faults")
    run: RunSpec = Field(default_factory=RunSpec)
    analysis: AnalysisSpec = Field(default_factory=AnalysisSpec)

    @model_validator(mode="after")
    def _cross_checks(self):
        if self.topic.replication_factor > self.cluster.brokers:
            raise ValueError(f"topic.replication_factor: {self.topic.replication_factor} is more than cluster.brokers ({self.cluster.brokers})")
        facts = self.facts()
        for i, fault in enumerate(self.faults):
            _check_fault(fault, facts, f"faults[{i}]")
        for i, fault in enumerate(self.random_faults.menu() if self.random_faults else []):
            _check_fault(fault, facts, f"random_faults.faults[{i}]")
        return self

    def schedule(self) -> list[FaultEntry]:
        """Every fault of the run in time order: the listed ones and the seeded random ones."""
        drawn = []
        if self.random_faults:
            spec, facts = self.random_faults, self.facts()
            planned_s = self.producer.records / self.producer.rate if self.producer.rate else 60
            drawn = [FAULT_ENTRY.validate_python(entry) for entry in random_schedule(
                spec.faults, seed=self.run.seed if spec.seed is None else spec.seed, start_s=spec.start_s,
                until_s=spec.until_s or planned_s, interval_s=spec.interval_s, duration_s=spec.duration_s,
                brokers=list(facts.broker_names), members=list(facts.members))]
        return sorted([*self.faults, *drawn], key=lambda f: f.at_s)

    def with_schedule(self, entries: list[dict], source: str) -> "Scenario":
        """This scenario with exactly these faults (a schedule file being replayed), checked like a scenario."""
        data = self.model_dump(mode="json")
        data.update(faults=entries, random_faults=None)
        return parse_scenario(data, source)

    def client_lanes(self, spares: bool = True) -> tuple[str, ...]:
        """The workload clients that get a lane of their own: every member (and spares), and the producer."""
        count = self.consumer_group.members + (self.cluster.spare_lanes if spares else 0)
        return tuple(f"member-{n}" for n in range(1, count + 1)) + ("producer-1",)

    def facts(self) -> ScenarioFacts:
        """What a fault entry is checked against before anything starts."""
        return ScenarioFacts(brokers=self.cluster.brokers,
                             members=tuple(f"member-{n}" for n in range(1, self.consumer_group.members + 1)),
                             topics={self.topic.name: self.topic.partitions}, lanes=self.client_lanes(),
                             group=self.consumer_group.effective().model_dump())

    def to_yaml(self) -> str:
        data = self.model_copy(update={"consumer_group": self.consumer_group.effective()}).model_dump(mode="json")
        return yaml.safe_dump(data, sort_keys=False)


def _check_fault(fault: FaultEntry, facts: ScenarioFacts, where: str) -> None:
    try:
        check_target = TARGET_CHECKS.get(fault.fault_class.target_kind)
        if check_target:
            check_target(fault.target, facts)
        fault.params.check(facts, fault.target)
    except ValueError as exc:
        raise ValueError(f"{where}.{exc}") from None


def _path(item) -> str:
    """Where a pydantic error is, as a scenario path (`faults[0].target`), without the union's tag."""
    loc = item["loc"]
    loc = [p for i, p in enumerate(loc) if not (p in FAULT_KINDS and (i == 0 or isinstance(loc[i - 1], int)))]
    if item["type"] in ("union_tag_invalid", "union_tag_not_found"):
        loc.append("kind")
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc)


def _message(item) -> str:
    kinds = ", ".join(FAULT_KINDS)
    if item["type"] == "union_tag_invalid":
        return f"unknown fault kind {item['input'].get('kind')!r}; kinds: {kinds}"
    if item["type"] == "union_tag_not_found":
        return f"required; kinds: {kinds}"
    if item["type"] == "extra_forbidden":
        return "unknown field"
    return item["msg"].removeprefix("Value error, ")


def _describe(error: ValidationError, source: str) -> str:
    lines = []
    for item in error.errors():
        where, message = _path(item).lstrip(".") or "scenario", _message(item)
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
