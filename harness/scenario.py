"""The scenario file: what cluster, which workload, which faults, when.

Every field is validated before anything starts; a bad value gives one error that names the field
(`consumer_group.heartbeat_interval_ms: must be below session_timeout_ms (10000)`).
"""
from __future__ import annotations

import re
from collections.abc import Hashable
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, create_model, model_validator

from faults.base import Fault, FaultParams
from faults.context import ScenarioFacts
from faults.kinds import fault_kinds
from faults.schedule import ScheduleTooLong, random_schedule
from faults.targets import TARGET_CHECKS
from faults.triggers import MAX_REPLICAS_PER_BROKER, MAX_TOPIC_PARTITIONS
from harness.hosting import MAX_HOSTED_MEMBERS, MAX_PROCESS_MEMBERS, check_hosting, host_of
from harness.releases.client_versions import version_tuple
from harness.releases.kafka_release import KIP_848_GA, KafkaVersionError, check_kafka_version
from harness.zoo.spec import Contrast, ZooSpec


class ScenarioError(ValueError):
    """A scenario that cannot run; the message names the field."""


MAX_SCHEDULE_S = 7 * 24 * 3600  # no fault starts later than a week into the run (a run that would never end)
MAX_ERRORS_SHOWN = 5
MAX_FILE_BYTES = 16 << 20  # a scenario or a schedule file
ADMIN_PROBE = "admin-probe-1"  # the admin probe's name: its lane, its events file
PRODUCER = "producer-1"  # the producer's name: its lane, its log
HOSTED_CUTS = ("member_cut",)  # a fault that cuts one hosted member off: the request-aware proxy does it by client.id


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ClusterSpec(Strict):
    brokers: int = Field(3, ge=1, le=5)
    broker_config: dict[str, str | int | bool] = Field(default_factory=dict, description="extra server.properties entries")
    heap: str = Field("512m", pattern=r"^\d+[mg]$")
    startup_timeout_s: float = Field(120, gt=0)
    spare_lanes: int = Field(2, ge=0, le=16, description="per-client lanes beyond the scenario's members, for members that join later")
    kafka_version: str | None = Field(None, pattern=r"^\d+\.\d+\.\d+$",
                                      description="brokers of this Apache Kafka release (KRaft, 3.7 or later), built "
                                                  "locally on first use; default: the release versions.env pins")
    log_disk_mb: int | None = Field(None, ge=32, le=65536,
                                    description="each broker's log directory on a disk of its own of this many MB (a "
                                                "loop-mounted ext4 image on the host, needs root), which disk_full fills; "
                                                "default: the container's own layer")

    @model_validator(mode="after")
    def _a_kraft_release_we_run(self):
        if self.kafka_version is not None:
            try:
                check_kafka_version(self.kafka_version)
            except KafkaVersionError as exc:
                raise ValueError(f"kafka_version: {exc}") from None
        return self


class TopicSpec(Strict):
    name: str = Field("chaos", pattern=r"^[A-Za-z0-9._-]{1,200}$")
    partitions: int = Field(6, ge=1, le=MAX_TOPIC_PARTITIONS)
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


VERSION = r"^\d+(\.\d+){1,3}$"
CLIENTS = Literal["librdkafka", "java", "java-member"]
ASSIGNORS = Literal["range", "roundrobin", "sticky", "cooperative-sticky"]
COMMIT_MODES = Literal["sync", "async", "auto", "before_process"]


class MemberSpec(Strict):
    """Some members of a mixed group (consumer_group.members as a list); a field left out is the group's."""
    count: int = Field(1, ge=1, le=MAX_HOSTED_MEMBERS)
    client: CLIENTS | None = None
    version: str | None = Field(None, pattern=VERSION)
    assignor: ASSIGNORS | None = None
    static_membership: bool | None = None
    commit: COMMIT_MODES | None = None
    topics: list[str] | None = Field(None, min_length=1, description="subscribe to only these of the run's topics "
                                     "(librdkafka)")


class AdminProbeSpec(Strict):
    """A process beside the group that makes one admin call about it in a loop, on a client lane of its own
    (workloads/admin_probe.py): what a monitoring tool does while faults hit the group's coordinator."""
    call: Literal["describe", "offsets"] = Field(description="describe: DescribeConsumerGroups; offsets: "
                                                 "ListConsumerGroupOffsets")
    every_ms: int = Field(1000, ge=100, le=600_000, description="from the start of one call to the next (at once "
                          "when a call took longer)")
    request_timeout_ms: int = Field(3000, ge=100, le=600_000, description="each call's request_timeout")


class ConsumerGroupSpec(Strict):
    group_id: str = "chaos-group"
    members: int | list[MemberSpec] = Field(
        3, description="how many members, or a list of member specs (count, client, version, assignor, "
                       "static_membership, commit, topics) for a mixed group")
    client: CLIENTS = Field("librdkafka", description="java: Apache Kafka's VerifiableConsumer, its reference member; "
                            "java-member: our own Java member program (workloads/java), which can host many members")
    members_per_host: int | None = Field(None, ge=1, le=MAX_HOSTED_MEMBERS, description=(
        "run this many members in one process (a member host: each member a thread with its own consumer; "
        "librdkafka or java-member); default: one process a member, for a group of up to "
        f"{MAX_PROCESS_MEMBERS}"))
    version: str | None = Field(None, pattern=VERSION, description="the client release: confluent-kafka for librdkafka "
                                "(installed from the package registry into a cached venv on first use), Apache Kafka "
                                "for java (kafka-clients and VerifiableConsumer from Maven Central); default: the "
                                "release the harness ships")
    protocol: Literal["classic", "consumer"] = "classic"
    assignor: ASSIGNORS | None = "range"
    remote_assignor: Literal["uniform", "range"] | None = None
    static_membership: bool = False
    commit: COMMIT_MODES = Field(
        "sync", description="sync/async: log then commit (at least once); auto: enable.auto.commit, offsets stored as "
                            "consume() returns them; before_process: commit then log (at most once, on purpose)")
    auto_commit_interval_ms: int = Field(5000, ge=1, le=3_600_000, description="with commit: auto")
    processing: ProcessingSpec = Field(default_factory=ProcessingSpec)
    session_timeout_ms: int | None = Field(10_000, ge=1000)
    heartbeat_interval_ms: int | None = Field(1_000, ge=100)
    max_poll_interval_ms: int = Field(300_000, ge=1000)
    batch_size: int = Field(500, ge=1, le=100_000)
    pattern: str | None = Field(None, description="subscribe by regular expression instead of by the run's topic names; "
                                                  "every topic of the run must match it")
    topics: list[str] | None = Field(None, min_length=1, description="subscribe to only these of the run's topics "
                                     "(librdkafka; a member spec's own `topics` for part of a mixed group); default: all")
    metadata_refresh_ms: int | None = Field(None, ge=100, description="how often members refresh metadata "
                                            "(librdkafka topic.metadata.refresh.interval.ms, Java metadata.max.age.ms): "
                                            "what bounds when a classic member sees added partitions or a new matching "
                                            "topic; default: the client's (5 minutes)")
    config: dict[str, str | int | bool] = Field(default_factory=dict, description="extra librdkafka consumer settings")
    admin_probe: AdminProbeSpec | None = Field(None, description="an admin client asking about the group in a loop, "
                                               "beside the members (librdkafka: the group's confluent-kafka release)")

    @model_validator(mode="after")
    def _member_count(self):
        total = self.member_count
        if self.members_per_host is None and not 1 <= total <= MAX_PROCESS_MEMBERS:
            raise ValueError(f"members: a group of 1 to {MAX_PROCESS_MEMBERS} members, one process each, got {total}; "
                             "set members_per_host to run a larger group in member hosts")
        if not 1 <= total <= MAX_HOSTED_MEMBERS:
            raise ValueError(f"members: a group of 1 to {MAX_HOSTED_MEMBERS} members, got {total}")
        if self.members_per_host is not None:
            specs = [] if isinstance(self.members, int) else self.members
            check_hosting({self.client, *(m.client for m in specs if m.client)}, any(m.version for m in specs),
                          total, self.members_per_host)
        return self

    @property
    def member_count(self) -> int:
        return self.members if isinstance(self.members, int) else sum(m.count for m in self.members)

    def member_specs(self) -> list["ConsumerGroupSpec"]:
        """Each member's own settings (a one-member group spec), in member-1..N order; a list entry's fields
        override the group's. Every rule of the group applies to each, and a classic group's members must
        share one assignor (each offers one, and the coordinator refuses a member with none in common)."""
        if isinstance(self.members, int):
            return [self.model_copy(update={"members": 1})] * self.members
        specs, base = [], self.model_dump(exclude={"members", "admin_probe"}, exclude_unset=True)  # the probe is the group's
        for i, m in enumerate(self.members):
            own = {k: v for k, v in m.model_dump(exclude={"count"}).items() if v is not None}
            try:
                spec = ConsumerGroupSpec.model_validate({**base, **own, "members": 1})
            except ValidationError as exc:
                raise ValueError(located(exc.errors()[0], f"members[{i}]")) from None
            specs += [spec] * m.count
        if self.protocol == "classic":
            assignors = {s.assignor for s in specs}
            if len(assignors) > 1:
                raise ValueError(f"members: one classic group cannot mix assignors {sorted(assignors)}: each member "
                                 "offers one, and Kafka refuses a member with none in common (INCONSISTENT_GROUP_PROTOCOL)")
        return specs

    def entry_spec(self, entry: int) -> "ConsumerGroupSpec":
        """The settings of the members of consumer_group.members[entry] (a list)."""
        return self.member_specs()[sum(m.count for m in self.members[:entry])]

    @model_validator(mode="after")
    def _every_member_is_valid(self):
        if not isinstance(self.members, int):
            self.member_specs()
        return self

    @model_validator(mode="after")
    def _client_rules(self):
        if self.client == "librdkafka" and self.assignor == "sticky":
            raise ValueError("assignor: librdkafka has no eager 'sticky' assignor; use cooperative-sticky, or client: java")
        if self.client == "java" and self.commit not in ("sync", "auto"):
            raise ValueError(f"commit: the Java member (VerifiableConsumer) commits sync or auto only, not {self.commit}")
        if self.client == "java" and self.processing != ProcessingSpec():
            raise ValueError("processing: the Java member (VerifiableConsumer) has no processing delay; use client: librdkafka")
        if self.client == "java" and self.pattern is not None:
            raise ValueError("pattern: the Java member (VerifiableConsumer) subscribes to one topic by name; use client: librdkafka")
        if self.client == "java-member" and self.version is not None:
            raise ValueError("version: the Java member program runs the kafka-clients of the brokers' release; pin "
                             "another release with client: java (VerifiableConsumer)")
        if self.client == "java-member" and self.admin_probe is not None:
            raise ValueError("admin_probe: the probe runs the group's confluent-kafka AdminClient; use client: librdkafka")
        if self.client == "java" and self.admin_probe is not None:
            raise ValueError("admin_probe: the probe runs the group's confluent-kafka AdminClient; use client: librdkafka")
        if self.client == "java" and self.topics is not None:
            raise ValueError("topics: the Java member (VerifiableConsumer) subscribes to the run's one topic; use client: librdkafka")
        if self.pattern is not None and self.topics is not None:
            raise ValueError("topics: a member subscribes by pattern or by topic names, not both")
        if self.pattern is not None:
            try:
                re.compile(self.pattern)
            except re.error as exc:
                raise ValueError(f"pattern: not a regular expression: {exc}") from None
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
    at_s: float = Field(ge=0, le=MAX_SCHEDULE_S, description="seconds after the workload starts")
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


def _range(lo_min: float, hi_max: float):
    def check(value: tuple[float, float]) -> tuple[float, float]:
        lo, hi = value
        if not lo_min <= lo <= hi <= hi_max:  # also refuses NaN
            raise ValueError(f"must be [low, high] with {lo_min:g} <= low <= high <= {hi_max:g}, got [{lo:g}, {hi:g}]")
        return value
    return check


class RandomFaultsSpec(Strict):
    """A seeded random schedule drawn from a menu of faults (faults/schedule.py)."""
    faults: list[dict[str, Any]] = Field(min_length=1, description="the menu: fault entries without at_s and duration_s")
    seed: int | None = Field(None, description="default: run.seed")
    start_s: float = Field(5, ge=0, le=MAX_SCHEDULE_S, description="when the first fault may start")
    until_s: float | None = Field(None, gt=0, le=MAX_SCHEDULE_S,
                                  description="no fault starts after this; default: the producer's planned time")
    interval_s: Annotated[tuple[float, float], AfterValidator(_range(0, 3600))] = Field((5, 15), description="quiet gap after each heal")
    duration_s: Annotated[tuple[float, float], AfterValidator(_range(0.1, 3600))] = Field((3, 10), description="each fault's length")

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
    stable_timeout_s: float | None = Field(
        None, gt=0, le=7200, description="how long the group may take to become stable once its members have started; "
        "default: 60 s + 0.5 s a member. Longer is a finding (the `unsettled` check), not a harness failure")
    workload_timeout_s: float | None = Field(
        None, gt=0, le=86400, description="how long the producer and the fault schedule may take before the run gives "
        "up on them (a harness failure, exit 3); default: the producer's planned time or the last fault's end, "
        "whichever is later, + 300 s")
    drain_timeout_s: float = Field(180, gt=0, description="after the producer and all faults end, how long to wait for "
                                   "the group to catch up; longer is a finding (the `unsettled` check)")
    seed: int = 0
    log_format: Literal["parquet", "jsonl"] = Field(
        "parquet", description="what produced/ and consumed/ are left in: members append JSONL while they run; "
                               "with parquet the logs are rewritten once the workload has stopped (kafka-chaos compact)")
    rpc_proxy: bool | None = Field(
        None, description="route every member's lane through the request-aware proxy (kafkanet/rpc_proxy.py) that rpc "
                          "faults act in; default: when the scenario has an rpc fault")
    group_sample_ms: int = Field(
        500, ge=50, le=60_000, description="how often the harness asks the group's coordinator for the group's state "
        "(state, members, KIP-848 epochs) for the whole run: group-states.jsonl, the report's state band. A state "
        "shorter than this may go unseen (the band infers CompletingRebalance from the members' events)")
    join_watch: bool = Field(
        True, description="librdkafka members keep their client's recent group debug lines (debug=cgrp) in memory and "
        "write them to logs/<member>.cgrp.log if not assigned within stable_timeout_s (workloads/client_debug.py); "
        "false: no debug lines at all")


class AnalysisSpec(Strict):
    enabled: bool = True
    grace_ms: int = Field(30_000, ge=0)
    stall_ms: int | None = Field(None, ge=100, le=3_600_000, description=(
        "the `stall` check's threshold: a partition with acked records waiting, an owner that is alive and no "
        "rebalance under way, and no delivery for longer than this; default: five heartbeat intervals (at least 5 s)"))
    expected_fatal: list[Annotated[str, Field(pattern=r"^(any|member-\d+(-dup)?)$")]] = Field(
        default_factory=list, max_length=64, description=(
            "members the scenario expects to end on a fatal client error (e.g. fenced by a duplicate_instance "
            "trigger), or `any`: the member_fatal check lists them instead of reporting them"))

    @model_validator(mode="before")
    @classmethod
    def _one_name(cls, data):
        """`expected_fatal: any` (or one member) is the one-name form of the list."""
        if isinstance(data, dict) and isinstance(data.get("expected_fatal"), str):
            data = {**data, "expected_fatal": [data["expected_fatal"]]}
        return data

    def options(self) -> dict:
        """The keyword arguments of analysis.analyze this section sets."""
        return {"grace_ms": self.grace_ms, "stall_ms": self.stall_ms, "expected_fatal": list(self.expected_fatal)}


class Scenario(Strict):
    name: str = Field("default", pattern=r"^[A-Za-z0-9._-]{1,80}$")
    description: str = Field("", max_length=200, description="one line: what the scenario shows (`kafka-chaos scenarios`)")
    cluster: ClusterSpec = Field(default_factory=ClusterSpec)
    topics: list[TopicSpec] = Field(default_factory=lambda: [TopicSpec()], min_length=1, max_length=50,
                                    description="the run's topics (`topic:` for one): the producer writes to each in "
                                                "turn, the group subscribes to all of them (or by consumer_group.pattern)")
    producer: ProducerSpec = Field(default_factory=ProducerSpec)
    consumer_group: ConsumerGroupSpec = Field(default_factory=ConsumerGroupSpec)
    faults: list[FaultSpec] = Field(default_factory=list)
    random_faults: RandomFaultsSpec | None = Field(None, description="a seeded random schedule, added to faults")
    run: RunSpec = Field(default_factory=RunSpec)
    analysis: AnalysisSpec = Field(default_factory=AnalysisSpec)
    zoo: ZooSpec | None = Field(None, description="the known bug this scenario reproduces (scenarios/zoo/)")

    @model_validator(mode="before")
    @classmethod
    def _one_topic(cls, data):
        """`topic: {...}` is the one-topic form of `topics: [{...}]`."""
        if isinstance(data, dict) and "topic" in data:
            if "topics" in data:
                raise ValueError("topic: give topic (one) or topics (a list), not both")
            data = {**{k: v for k, v in data.items() if k != "topic"}, "topics": [data["topic"] or {}]}
        return data

    @property
    def topic(self) -> TopicSpec:
        """The first topic: what the `leader` role and a `topic` target mean."""
        return self.topics[0]

    @model_validator(mode="after")
    def _cross_checks(self):
        names = [t.name for t in self.topics]
        for i, t in enumerate(self.topics):
            where = "topic" if len(self.topics) == 1 else f"topics[{i}]"
            if t.replication_factor > self.cluster.brokers:
                raise ValueError(f"{where}.replication_factor: {t.replication_factor} is more than cluster.brokers ({self.cluster.brokers})")
            if t.name in names[:i]:
                raise ValueError(f"{where}.name: {t.name!r} is listed twice")
            if self.consumer_group.pattern is not None and not re.fullmatch(self.consumer_group.pattern, t.name):
                raise ValueError(f"consumer_group.pattern: {where} {t.name!r} does not match it, so its records "
                                 "would never be consumed")
        release = self.cluster.kafka_version
        if self.consumer_group.protocol == "consumer" and release and version_tuple(release)[:2] < KIP_848_GA:
            raise ValueError(f"consumer_group.protocol: the consumer protocol (KIP-848) is generally available from "
                             f"Kafka 4.0; cluster.kafka_version {release} has it only as an early-access preview")
        if self.consumer_group.client == "java" and len(self.topics) > 1:
            raise ValueError("topics: the Java member (VerifiableConsumer) subscribes to one topic; use client: librdkafka")
        _check_subscriptions(self.consumer_group, names)
        _check_replicas(self)
        facts = self.facts()
        for i, fault in enumerate(self.faults):
            _check_fault(fault, facts, f"faults[{i}]")
        for i, fault in enumerate(self.random_faults.menu() if self.random_faults else []):
            _check_fault(fault, facts, f"random_faults.faults[{i}]")
        self._random_entries()  # a random schedule that would not end is refused here
        if self.zoo is not None:
            _check_zoo(self.zoo, self)
        if self.run.rpc_proxy is False and self.has_rpc_faults:
            raise ValueError("run.rpc_proxy: false, but an rpc fault acts in that proxy; remove the rpc faults or the setting")
        if self.run.rpc_proxy is False and self.cuts_hosted_members:
            raise ValueError("run.rpc_proxy: false, but a member_cut of a hosted member cuts it off in that proxy, by "
                             "its client.id (it shares its host's lane); remove the setting")
        return self

    def warnings(self) -> list[str]:
        """What the scenario allows but its user should know before it runs, each naming the fault entry."""
        facts = self.facts()
        return [f"faults[{i}].{text}" for i, fault in enumerate(self.faults)
                for text in fault.params.warnings(facts, fault.target)]

    @property
    def has_rpc_faults(self) -> bool:
        return any(f.kind == "rpc" for f in self._all_faults())

    @property
    def cuts_hosted_members(self) -> bool:
        """A hosted group with a member_cut: the request-aware proxy cuts the member by client.id, since it shares
        its host's lane. (A hosted crash needs no proxy: the host destroys the member's consumer without a close,
        which sends no leave; with the proxy on, its leaves are kept from the brokers too.)"""
        return self.consumer_group.members_per_host is not None and any(
            f.kind in HOSTED_CUTS for f in self._all_faults())

    def _all_faults(self) -> list[FaultEntry]:
        return [*self.faults, *(self.random_faults.menu() if self.random_faults else [])]

    @property
    def proxies_member_lanes(self) -> bool:
        """Whether the run sends its members' lanes through the request-aware proxy."""
        return self.has_rpc_faults or self.cuts_hosted_members if self.run.rpc_proxy is None else self.run.rpc_proxy

    def schedule(self) -> list[FaultEntry]:
        """Every fault of the run in time order: the listed ones and the seeded random ones."""
        drawn = [FAULT_ENTRY.validate_python(entry) for entry in self._random_entries()]
        return sorted([*self.faults, *drawn], key=lambda f: f.at_s)

    def _random_entries(self) -> list[dict]:
        """The seeded random faults, drawn; a schedule of more than MAX_FAULTS is refused, naming what sets its end."""
        if not self.random_faults:
            return []
        spec, facts = self.random_faults, self.facts()
        planned_s = self.producer.records / self.producer.rate if self.producer.rate else 60
        try:
            return random_schedule(
                spec.faults, seed=self.run.seed if spec.seed is None else spec.seed, start_s=spec.start_s,
                until_s=spec.until_s or planned_s, interval_s=spec.interval_s, duration_s=spec.duration_s,
                brokers=list(facts.broker_names), members=list(facts.members))
        except ScheduleTooLong as exc:
            if spec.until_s:
                raise ValueError(f"random_faults.until_s: {exc}; set a nearer until_s or a longer interval_s") from None
            raise ValueError(f"producer.records: the random schedule runs for the producer's planned time "
                             f"({planned_s:g} s), and {exc}; set random_faults.until_s") from None

    def with_schedule(self, entries: list[dict], source: str) -> "Scenario":
        """This scenario with exactly these faults (a schedule file being replayed), checked like a scenario."""
        data = self.model_dump(mode="json")
        data.update(faults=entries, random_faults=None)
        return parse_scenario(data, source)

    def client_lanes(self, spares: bool = True) -> tuple[str, ...]:
        """The workload clients that get a lane of their own: every member (and spares), the producer, and the
        admin probe when the group has one."""
        group = self.consumer_group
        first_spare, probe = group.member_count + 1, (ADMIN_PROBE,) if group.admin_probe else ()
        spare_lanes = tuple(f"member-{n}" for n in range(first_spare, first_spare + self.cluster.spare_lanes)) if spares else ()
        return self.member_lanes() + spare_lanes + (PRODUCER,) + probe

    def member_lanes(self) -> tuple[str, ...]:
        """The lanes the group's members start on: one a member, or one a member host (host-1, ...), shared by
        the members it runs."""
        group = self.consumer_group
        if group.members_per_host is None:
            return tuple(f"member-{n}" for n in range(1, group.member_count + 1))
        return tuple(dict.fromkeys(host_of(n, group.members_per_host) for n in range(1, group.member_count + 1)))

    def facts(self) -> ScenarioFacts:
        """What a fault entry is checked against before anything starts."""
        return ScenarioFacts(brokers=self.cluster.brokers,
                             members=tuple(f"member-{n}" for n in range(1, self.consumer_group.member_count + 1)),
                             topics={t.name: t.partitions for t in self.topics}, lanes=self.client_lanes(),
                             group=self.consumer_group.effective().model_dump(),
                             log_disk_mb=self.cluster.log_disk_mb)

    def settings(self) -> dict:
        """The scenario as run, every default filled in (what `kafka-chaos validate` prints)."""
        return self.model_copy(update={"consumer_group": self.consumer_group.effective()}).model_dump(mode="json")

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.settings(), sort_keys=False)


def _check_zoo(zoo: ZooSpec, scenario: "Scenario") -> None:
    from analysis.checks import REGISTRY
    from analysis.contract import EVENT_KINDS
    group = scenario.consumer_group
    for i, p in enumerate(zoo.signature):
        if p.anomaly is not None and p.anomaly not in REGISTRY:
            raise ValueError(f"zoo.signature[{i}].anomaly: {p.anomaly!r} is not a check; checks: {', '.join(REGISTRY)}")
        kinds = [(f"zoo.signature[{i}].event", p.event)] + ([(f"zoo.signature[{i}].after.event", p.after.event)] if p.after else []) \
            + [(f"zoo.signature[{i}].never_after", k) for k in p.never_after]
        for where, kind in kinds:
            if kind is not None and kind not in EVENT_KINDS:
                raise ValueError(f"{where}: {kind!r} is not an event kind; kinds: {', '.join(EVENT_KINDS)}")
    if zoo.contrast is not None:
        _check_contrast(zoo.contrast, group)
    if zoo.swap in ("client", "client_kind"):
        if not isinstance(group.members, int) and any(m.version for m in group.members):
            raise ValueError("zoo: the zoo swaps the group's one client release; give consumer_group.version, not per-member versions")
        pinned, field = group.version, "consumer_group.version"
    else:
        pinned, field = scenario.cluster.kafka_version, "cluster.kafka_version"
    if pinned != zoo.affected:
        raise ValueError(f"zoo.affected: the file must pin the affected release: {field} is {pinned!r}, "
                         f"zoo.affected {zoo.affected!r}")
    if zoo.fixed and version_tuple(zoo.fixed) <= version_tuple(zoo.affected):
        raise ValueError(f"zoo.fixed: {zoo.fixed} is not later than zoo.affected {zoo.affected}")
    zoo.resolved(scenario.settings())  # every threshold names a setting of this scenario


def _check_contrast(contrast: Contrast, group: ConsumerGroupSpec) -> None:
    """The contrast swaps the group's one client kind for another the harness has."""
    kinds = get_args(CLIENTS)
    if contrast.client not in kinds:
        raise ValueError(f"zoo.contrast.client: {contrast.client!r} is not a client kind; kinds: {', '.join(kinds)}")
    if contrast.client == group.client:
        raise ValueError(f"zoo.contrast.client: {contrast.client} is the group's own client (consumer_group.client); "
                         f"the contrast runs another client kind")
    if not isinstance(group.members, int) and any(m.client for m in group.members):
        raise ValueError("zoo.contrast: the contrast swaps the group's one client kind; give consumer_group.client, "
                         "not per-member clients")


def _subscribed_topics(group: ConsumerGroupSpec) -> list[tuple[str, list[str] | None]]:
    """(the field, the topic names it subscribes to, None: all of the run's) for the group and each member spec."""
    fields = [("consumer_group.topics", group.topics)]
    if not isinstance(group.members, int):
        fields += [(f"consumer_group.members[{i}].topics", m.topics) for i, m in enumerate(group.members)]
    return fields


def _check_subscriptions(group: ConsumerGroupSpec, run_topics: list[str]) -> None:
    """Each subscribed name is one of the run's topics, and every topic has a member at the start to consume it."""
    for where, topics in _subscribed_topics(group):
        for name in topics or []:
            if name not in run_topics:
                raise ValueError(f"{where}: {name!r} is not a topic of the run ({', '.join(run_topics)})")
    subscribed = [spec.topics for spec in group.member_specs()]
    if group.pattern is None and None not in subscribed:
        unread = [name for name in run_topics if not any(name in topics for topics in subscribed)]
        if unread:
            where = "consumer_group.topics" if isinstance(group.members, int) else "consumer_group.members"
            raise ValueError(f"{where}: no member subscribes to topic {unread[0]!r}, so its records would never be consumed")


def _check_replicas(scenario: "Scenario") -> None:
    """The replicas a broker holds at the most, every topic at its largest (created at the start or by topic_create,
    grown by partitions_add), against what one broker of this harness was measured to hold."""
    entries = list(scenario.faults) + (scenario.random_faults.menu() if scenario.random_faults else [])
    sizes = {t.name: (t.partitions, t.replication_factor) for t in scenario.topics}
    for f in entries:
        if f.kind == "topic_create":
            sizes[f.target] = (f.params.partitions, f.params.replication_factor)
    for f in entries:
        if f.kind == "partitions_add":
            name = scenario.topic.name if f.target == "topic" else f.target
            partitions, rf = sizes.get(name, (0, 1))
            sizes[name] = (max(partitions, f.params.partitions), rf)
    brokers = scenario.cluster.brokers
    per_broker = -(-sum(p * rf for p, rf in sizes.values()) // brokers)
    if per_broker > MAX_REPLICAS_PER_BROKER:
        where = "topic" if len(scenario.topics) == 1 else "topics"
        raise ValueError(f"{where}: {per_broker} partition replicas a broker ({sum(p for p, _ in sizes.values())} "
                         f"partitions at their replication factors on {brokers} brokers, every topic at its largest), "
                         f"above the {MAX_REPLICAS_PER_BROKER} one broker was measured to hold (BENCHMARKS.md); use "
                         "fewer partitions, a lower replication_factor or more cluster.brokers")


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


UNION_BRANCHES = {"int": int, "list[MemberSpec]": list}  # consumer_group.members: a count or member specs


def _other_branch(item) -> bool:
    """An error from the branch of `int | list[...]` the input was not meant for (pydantic reports both)."""
    loc = item["loc"]
    if not loc or loc[-1] not in UNION_BRANCHES:
        return False
    return isinstance(item["input"], list) != (UNION_BRANCHES[loc[-1]] is list)


def located(item, where: str = "") -> str:
    """`path: message` for one pydantic error; a model-level check that names its own field is attached to the path."""
    loc = [p for p in item["loc"] if p not in UNION_BRANCHES]
    path = where + _path({**item, "loc": tuple(loc)})
    path, message = path.lstrip(".") or "scenario", _message(item)
    named = re.match(r"^([\w\[\].]+): (.*)$", message)
    if named:
        path = named.group(1) if path == "scenario" else f"{path}.{named.group(1)}"
        message = named.group(2)
    return f"{path}: {message}"


def _describe(error: ValidationError, source: str, data: dict) -> str:
    """One line: the file, then each wrong field with what is wrong with it."""
    lines = [located(item) for item in error.errors() if not _other_branch(item)]
    if "topic" in data and "topics" not in data:  # name the field the way the file wrote it
        lines = [re.sub(r"^topics\[0\]([.:])", r"topic\1", line) for line in lines]
    more = f"; and {len(lines) - MAX_ERRORS_SHOWN} more" if len(lines) > MAX_ERRORS_SHOWN else ""
    return f"{source}: " + "; ".join(lines[:MAX_ERRORS_SHOWN]) + more


def validated(model, data: object, source: str, shape: str):
    """`data` as `model` (one of our pydantic models), or one ScenarioError naming the source and the first field:
    `shape` says what the file must be ("a plan is a JSON object")."""
    if not isinstance(data, dict):
        raise ScenarioError(f"{source}: {shape}, got {type(data).__name__}")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        item = exc.errors()[0]
        raise ScenarioError(f"{source}: {located(item) if item['loc'] else item['msg']}") from None


def parse_scenario(data: object, source: str = "scenario") -> Scenario:
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ScenarioError(f"{source}: a scenario is a YAML mapping, got {type(data).__name__}")
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        raise ScenarioError(_describe(exc, source, data)) from None


class UniqueKeyLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # libyaml's safe loader: 100 times faster
    """The safe loader, refusing a key given twice in one mapping (YAML would keep the last one silently)."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *base`: its keys may be overridden
                continue
            key = self.construct_object(key_node, deep=True)
            if not isinstance(key, Hashable):
                continue  # the safe constructor refuses it, saying where
            if key in seen:
                raise yaml.constructor.ConstructorError(None, None, f"the key {key!r} is given twice", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep)


def read_text(path: Path, what: str) -> str:
    """A file's UTF-8 text; ScenarioError (one line, naming the file) when it cannot be read or is not text."""
    try:
        with path.open("rb") as file:
            data = file.read(MAX_FILE_BYTES + 1)  # /dev/zero is a file too
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read the {what}: {exc.strerror or exc}") from None
    if len(data) > MAX_FILE_BYTES:
        raise ScenarioError(f"{path}: the {what} is larger than {MAX_FILE_BYTES >> 20} MB; is it the right file?")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ScenarioError(f"{path}: the {what} is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset "
                            f"{exc.start})") from None


def read_yaml(path: Path, what: str) -> object:
    """A YAML file's content; ScenarioError (one line, naming the file and where the YAML breaks) when it is not."""
    text = read_text(path, what)
    try:
        data = yaml.load(text, Loader=UniqueKeyLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ScenarioError(f"{path}: the {what} is not valid YAML{where}: {problem}") from None
    except RecursionError:
        raise ScenarioError(f"{path}: the {what} nests too deeply") from None
    if data is None:
        raise ScenarioError(f"{path}: the {what} is empty")
    return data


def load_scenario(path: str | Path) -> Scenario:
    path = Path(path)
    return parse_scenario(read_yaml(path, "scenario"), str(path))


def parse_with_unique_names(data: object, suffix: str, source: str) -> Scenario:
    """The scenario checked as its author wrote it (an error names their own names), then with unique names."""
    parse_scenario(data, source)
    return parse_scenario(unique_names(data, suffix), source)


def unique_names(scenario: dict, suffix: str) -> dict:
    """The scenario with `-suffix` after its group id, its topic names and the topics topic_create makes, so
    runs on one cluster never share them; a consumer_group.pattern then matches the names before the suffix."""
    named = lambda spec, default: {**(spec or {}), "name": f"{(spec or {}).get('name', default)}-{suffix}"}  # noqa: E731
    group = scenario.get("consumer_group", {})
    out = {**scenario, "consumer_group": {**group, "group_id": f"{group.get('group_id', 'chaos-group')}-{suffix}"}}
    if group.get("pattern"):  # matches this run's topics only, not those of earlier runs on the cluster
        out["consumer_group"]["pattern"] = f"({group['pattern']})-{suffix}"
    suffixed = lambda names: None if names is None else [f"{n}-{suffix}" for n in names]  # noqa: E731
    if group.get("topics") is not None:
        out["consumer_group"]["topics"] = suffixed(group["topics"])
    if isinstance(group.get("members"), list):
        out["consumer_group"]["members"] = [{**m, "topics": suffixed(m["topics"])} if m.get("topics") else m
                                            for m in group["members"]]
    if "topics" in scenario:
        out["topics"] = [named(t, "chaos") for t in scenario["topics"]]
    else:
        out["topic"] = named(scenario.get("topic"), "chaos")
    out["faults"] = [{**f, "target": f"{f['target']}-{suffix}"} if f.get("kind") == "topic_create" else f
                     for f in scenario.get("faults", [])]
    return out


def catalog(folder: Path) -> list[tuple[Path, Scenario]]:
    """Every scenario file of a folder (the project's scenarios/), by file name; each one valid."""
    return [(path, load_scenario(path)) for path in sorted(Path(folder).glob("*.yaml"))]
