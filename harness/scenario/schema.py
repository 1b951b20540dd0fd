"""The scenario file's schema: what cluster, which workload, which faults, when.

Every field is validated before anything starts; a bad value gives one error that names the field
(`consumer_group.heartbeat_interval_ms: must be below session_timeout_ms (10000)`). A model checks its own fields;
the rules across fields are in harness/scenario/rules.py.
"""
from __future__ import annotations

from typing import Annotated, Any, Literal, Union

import yaml
from pydantic import AfterValidator, Field, TypeAdapter, ValidationError, create_model, field_validator, model_validator

from faults.base import Fault, FaultParams
from faults.context import ScenarioFacts
from faults.schedule import ScheduleTooLong, random_schedule
from faults.targets import is_txn_coordinator_target
from faults.triggers import MAX_TOPIC_PARTITIONS
from harness.hosting import MAX_HOSTED_MEMBERS, MAX_PROCESS_MEMBERS, START_SPACING_MS, host_of
from harness.bad_input import ScenarioError
from harness.input_file import FAULT_KINDS, Strict, described, error_message, field_path, located
from harness.releases.kafka_release import KafkaVersionError, check_kafka_version
from harness.scenario import rules
from harness.zoo.spec import ZooSpec
from workloads.kinds import DEFAULT as DEFAULT_KIND, KINDS, member_kind

MAX_SCHEDULE_S = 7 * 24 * 3600  # no fault starts later than a week into the run (a run that would never end)
ADMIN_PROBE = "admin-probe-1"  # the admin probe's name: its lane, its events file
PRODUCER = "producer-1"  # the producer's name: its lane, its log
HOSTED_CUTS = ("member_cut",)
CHANGELOG_SUFFIX = "-changelog"
# compacted, its segments rolled often so that the cleaner may run during the run: nothing may depend on whether it did
CHANGELOG_CONFIGS = {"cleanup.policy": "compact", "segment.ms": "10000"}  # a fault that cuts one hosted member off: the request-aware proxy does it by client.id


class ClusterSpec(Strict):
    brokers: int = Field(3, ge=1, le=5)
    broker_config: dict[str, str | int | bool] = Field(default_factory=dict, description="extra server.properties entries")
    heap: str = Field("512m", pattern=r"^\d+[mg]$")
    startup_timeout_s: float = Field(120, gt=0)
    spare_lanes: int = Field(2, ge=0, le=16, description="per-client lanes beyond the scenario's members, for members that join later")
    kafka_version: str | None = Field(None, pattern=r"^\d+\.\d+\.\d+$",
                                      description="brokers of this Apache Kafka release (KRaft, 3.7 or later), built "
                                                  "locally on first use; default: the release versions.env pins")
    transaction_version: Literal[1, 2] | None = Field(
        None, description="transaction.version (KIP-890), set after start-up and read back into cluster.json: 1, the "
                          "epoch kept across a producer's transactions; 2, bumped every transaction (default of a "
                          "fresh 4.x cluster); unset: what the brokers hold. Kafka 4.0 or later")
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
Client = Annotated[str, AfterValidator(lambda name: member_kind(name).name)]  # a registered member kind
ASSIGNORS = Literal["range", "roundrobin", "sticky", "cooperative-sticky"]
COMMIT_MODES = Literal["sync", "async", "auto", "before_process", "interval", "transaction"]


Command = Annotated[Union[list[Annotated[str, Field(min_length=1)]], Annotated[str, Field(min_length=1)]], Field(
    description="run a program of yours as the member (a command member): an argv list, or a string run by sh -c, "
                "from the scenario file's folder; {bootstrap_servers}, {group_id}, {topics}, {member}, {instance_id}, "
                "{output_topic} and {python} are filled in (and set as KAFKA_CHAOS_* variables); the program makes "
                "its consumer through workloads/app.py, which writes the run directory")]
START_TIMEOUT = Field(None, ge=1, le=3600, description="a command member must log `started` within this many seconds "
                      "of its start (default: 60)")


class OutputFields(Strict):
    """Where an output record says which input record it came from: header names, or keys of its JSON value."""
    topic: str = "in-topic"
    partition: str = "in-partition"
    offset: str = "in-offset"
    member: str = Field("in-member", description="the member that processed it (optional in a record; absent: "
                        "`output`)")
    producer_id: str = Field("in-producer-id", description="the input record's producer id, the part of its value "
                             "before the last ':' (optional in a record; with it and seq the checks that follow a "
                             "record across copies run)")
    seq: str = Field("in-seq", description="the input record's seq, the number its value ends with (optional)")
    processed_at: str = Field("in-processed-at", description="when the member processed it, epoch ms (optional; "
                              "with it a member's rows are in processing order, else in the output topic's, which "
                              "is not the input's where the output partitions differ)")


class OutputSpec(Strict):
    """Output-topic mode: a consume-transform-produce program that cannot be changed tells what it consumed by what
    it writes. The harness creates the topic (with the run's suffix), reads it to its end once the members stopped,
    and writes consumed/<member>.jsonl and output.json from it."""
    topic: str = Field(pattern=r"^[A-Za-z0-9._-]{1,200}$", description="the topic the program writes to ({output_topic})")
    source: Literal["headers", "json"] = Field("headers", description="headers: the fields are record headers; json: "
                                               "keys of the record's JSON value")
    fields: OutputFields = Field(default_factory=OutputFields)
    isolation: Literal["read_committed", "read_uncommitted"] = Field(
        "read_committed", description="how the harness reads the topic (read_committed: a transactional program's "
                                      "aborted writes are not counted)")
    partitions: int = Field(6, ge=1, le=MAX_TOPIC_PARTITIONS)
    replication_factor: int = Field(3, ge=1)


class WarmupSpec(Strict):
    """Classic Streams' warm-up tasks (KIP-441): a task moves to a caught-up instance at once, and to one that is not
    through a warm-up replica it restores on, with a probing rebalance to hand it over."""
    max_warmup_replicas: int = Field(2, ge=1, le=100, description="warm-up replicas at once (max.warmup.replicas)")
    acceptable_recovery_lag: int = Field(10_000, ge=0, description="an instance this close to a task's changelog end "
                                         "counts as caught up (acceptable.recovery.lag)")
    probing_rebalance_interval_ms: int = Field(600_000, ge=60_000, description="how often a group with warm-ups "
                                               "rebalances to see whether they caught up")


class StreamsSpec(Strict):
    """A Kafka Streams group (client: streams, workloads/streams): each member one instance of the project's Streams
    program, which keeps each key's count and sum in a persistent store with a changelog."""
    guarantee: Literal["at_least_once", "exactly_once_v2"] = Field("at_least_once", description="processing.guarantee")
    standby_replicas: int = Field(0, ge=0, le=10, description="standby replicas of each task (classic: "
                                  "num.standby.replicas; streams: the group's streams.num.standby.replicas)")
    threads: int = Field(1, ge=1, le=16, description="stream threads an instance (num.stream.threads)")
    warmup: WarmupSpec | None = Field(None, description="classic only; without it acceptable.recovery.lag is at its "
                                      "maximum: every instance counts as caught up and tasks move at once")


class TransactionSpec(Strict):
    """commit: transaction (workloads/transactions.py): consume, transform and produce in a transaction that also
    commits the input offsets; the output topic (<group id>-txn-out) is read back read_committed."""
    interval_ms: int = Field(200, ge=10, le=600_000, description="a transaction is committed this long after it began "
                             "(and before a revocation, and at the stop)")
    timeout_ms: int = Field(60_000, ge=1000, le=3_600_000, description="transaction.timeout.ms: at most the brokers' "
                            "transaction.max.timeout.ms (cluster.broker_config; 900,000 by default)")
    abort_every: int = Field(0, ge=0, le=1_000_000, description="abort every Nth transaction on purpose (its records "
                             "consumed again after a rewind); 0: none")
    call_timeout_ms: int = Field(30_000, ge=1000, le=600_000, description="each transactional call's time-out "
                                 "(init, send_offsets, commit, abort): librdkafka's timeout argument, the Java "
                                 "producer's max.block.ms; a call that times out is called again")
    request_timeout_ms: int | None = Field(
        None, ge=1000, le=110_000, description="the transactional producer's request time-out (librdkafka "
        "socket.timeout.ms, Java request.timeout.ms): a request unanswered this long is given up, its connection "
        "closed and the request sent again (an EndTxn delayed past it: KAFKA-17754); below Java's delivery.timeout.ms "
        "(120 s); unset: the client's (60 s, 30 s)")
    transactional_id: Literal["member", "partition"] = Field(
        "member", description="member: one transactional.id a member (<group id>-<member>; its restart fences its "
        "own zombie, KIP-447's group metadata fences the rest); partition: one an input partition (<group id>-<topic>-"
        "<partition>, a producer a partition the member owns: the pattern before KIP-447, the partition's next owner "
        "fencing the last one's zombie by the id)")
    readers: list[Literal["read_committed", "read_uncommitted"]] = Field(
        ["read_committed"], min_length=1, max_length=2, description="the verified readers: one an isolation level, "
        "each reading every output partition while the run goes on into verified/<isolation>.jsonl (the "
        "exactly-once checks read them); read_committed always, read_uncommitted on request")

    @field_validator("readers")
    @classmethod
    def _one_reader_an_isolation(cls, readers):
        if len(set(readers)) != len(readers):
            raise ValueError("one reader an isolation level: each of read_committed, read_uncommitted at most once")
        if "read_committed" not in readers:
            raise ValueError("the read_committed reader is the one the exactly-once checks read: keep it, and add "
                             "read_uncommitted beside it")
        return readers


def _command_names_the_kind(data):
    """A spec that names a command is a command member: it takes no `client`."""
    if isinstance(data, dict) and data.get("command") is not None:
        if data.get("client") not in (None, "command"):
            raise ValueError(f"client: a command member runs your program, not the {member_kind(data['client']).title}"
                             "; give client or command, not both")
        data = {**data, "client": "command"}
    return data


class MemberSpec(Strict):
    """Some members of a mixed group (consumer_group.members as a list); a field left out is the group's."""
    count: int = Field(1, ge=1, le=MAX_HOSTED_MEMBERS)
    client: Client | None = None
    command: Command | None = None
    start_timeout_s: int | None = START_TIMEOUT
    version: str | None = Field(None, pattern=VERSION)
    assignor: ASSIGNORS | None = None
    static_membership: bool | None = None
    commit: COMMIT_MODES | None = None
    topics: list[str] | None = Field(None, min_length=1, description="subscribe to only these of the run's topics "
                                     "(librdkafka)")

    @model_validator(mode="before")
    @classmethod
    def _a_command_member(cls, data):
        return _command_names_the_kind(data)


class AdminProbeSpec(Strict):
    """A process beside the group that makes one admin call about it in a loop, on a client lane of its own
    (workloads/admin_probe.py): what a monitoring tool does while faults hit the group's coordinator."""
    call: Literal["describe", "offsets"] = Field(description="describe: DescribeConsumerGroups; offsets: "
                                                 "ListConsumerGroupOffsets")
    every_ms: int = Field(1000, ge=100, le=600_000, description="from the start of one call to the next (at once "
                          "when a call took longer)")
    request_timeout_ms: int = Field(3000, ge=100, le=600_000, description="each call's request_timeout")


class ConsumerGroupSpec(Strict):
    group_id: str = rules.DEFAULT_GROUP_ID
    members: int | list[MemberSpec] = Field(
        3, description="how many members, or a list of member specs (count, client or command, version, assignor, "
                       "static_membership, commit, topics, start_timeout_s) for a mixed group")
    client: Client = Field(DEFAULT_KIND, description="the member kind: " + "; ".join(
        f"{k.name}: {k.about}" for k in KINDS.values()))
    members_per_host: int | None = Field(None, ge=1, le=MAX_HOSTED_MEMBERS, description=(
        "run this many members in one process (a member host: each member a thread with its own consumer; "
        "librdkafka or java-member); default: one process a member, for a group of up to "
        f"{MAX_PROCESS_MEMBERS}"))
    start_spacing_ms: int | None = Field(None, ge=0, le=10_000, description=(
        "with members_per_host: how far apart the group's hosted members start, one after another across its hosts; "
        f"0 starts them all at once (a start storm: their first requests can time out by the thousand); default "
        f"{START_SPACING_MS}"))
    version: str | None = Field(None, pattern=VERSION, description="the client release: confluent-kafka for librdkafka "
                                "(installed from the package registry into a cached venv on first use), Apache Kafka "
                                "for java (kafka-clients and VerifiableConsumer from Maven Central); default: the "
                                "release the harness ships")
    protocol: Literal["classic", "consumer", "streams"] = Field("classic", description=(
        "classic; consumer (KIP-848); streams (KIP-1071, client: streams only)"))
    assignor: ASSIGNORS | None = rules.DEFAULT_ASSIGNOR
    remote_assignor: Literal["uniform", "range"] | None = None
    static_membership: bool = False
    commit: COMMIT_MODES = Field(
        "sync", description="sync/async: log then commit (at least once); auto: enable.auto.commit, offsets stored as "
                            "consume() returns them; before_process: commit then log (at most once, on purpose); "
                            "interval: what was processed, every commit.interval.ms (Kafka Streams' own, its only); "
                            "transaction: the offsets in the transaction that writes the output (exactly once, "
                            "librdkafka; the `transaction` block)")
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
    command: Command | None = None
    output: OutputSpec | None = Field(None, description="output-topic mode for command members that write what they "
                                      "consumed to a topic instead of through workloads/app.py")
    workdir: str | None = Field(None, description="the folder a command member starts in, relative to the scenario "
                                "file's (default: the scenario file's own folder)")
    start_timeout_s: int | None = START_TIMEOUT
    streams: StreamsSpec | None = Field(None, description="client: streams: the guarantee, standby replicas, threads "
                                        "and warm-up settings (default: at_least_once, no standbys, one thread)")
    transaction: TransactionSpec | None = Field(None, description="commit: transaction's settings (default: a "
                                                "transaction every 200 ms, a 60 s transaction.timeout.ms, no aborts)")

    @model_validator(mode="before")
    @classmethod
    def _a_command_member(cls, data):
        return _command_names_the_kind(data)

    @model_validator(mode="before")
    @classmethod
    def _a_kind_with_its_own_output(cls, data):
        return rules.own_output_defaults(data)

    @model_validator(mode="after")
    def _rules(self):
        rules.check_group(self)
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

    @property
    def has_processing_delay(self) -> bool:
        return self.processing != ProcessingSpec()

    def effective(self) -> "ConsumerGroupSpec":
        """Drop the classic-only defaults when the KIP-848 or the Streams protocol is chosen; a hosted group's start
        spacing filled in."""
        if self.members_per_host is not None and self.start_spacing_ms is None:
            return self.model_copy(update={"start_spacing_ms": START_SPACING_MS}).effective()
        if self.protocol in ("consumer", "streams"):
            return self.model_copy(update={"session_timeout_ms": None, "heartbeat_interval_ms": None, "assignor": None})
        if member_kind(self.client).own_assignor is not None:
            return self.model_copy(update={"assignor": None})
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
                raise ValueError(f"faults[{i}]{field_path(item)}: {error_message(item)}") from None
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


class StateSpec(Strict):
    """Stateful members (workloads/state.py): record seq's key is k<seq mod (keys_per_partition x partitions)>; each
    member keeps per key a count, a sum of seq and the last input offset, writes every change to the changelog topic
    <topic>-changelog and restores a partition from it before it processes the partition."""
    keys_per_partition: int = Field(1000, ge=1, le=100_000, description="keys in each partition")
    prefill: bool = Field(True, description="the harness writes every key's zero value to the changelog before the "
                          "members start, so a restore reads every key (its own changelog only: a Streams member's "
                          "store is its own)")
    keep_on_revoke: bool = Field(False, description="a member keeps a revoked partition's state; if the partition "
                                 "comes back, it reads only the changelog written since")


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
    state: StateSpec | None = Field(None, description="stateful members and the exact state check (keys, a "
                                    "changelog topic, restores)")

    @model_validator(mode="before")
    @classmethod
    def _one_topic(cls, data):
        """`topic: {...}` is the one-topic form of `topics: [{...}]`."""
        if isinstance(data, dict) and "topic" in data:
            if "topics" in data:
                raise ValueError("topic: give topic (one) or topics (a list), not both")
            data = {**{k: v for k, v in data.items() if k != "topic"}, "topics": [data["topic"] or {}]}
        return data

    @model_validator(mode="before")
    @classmethod
    def _a_store_keeps_state(cls, data):
        """A kind that keeps state in a store of its own (Kafka Streams) always keeps state: the `state` block's
        defaults (its keys) when the file gives none."""
        if isinstance(data, dict) and "state" not in data and isinstance(group := data.get("consumer_group"), dict):
            kind = KINDS.get(group.get("client"))
            if kind is not None and kind.state_store is not None:
                data = {**data, "state": {}}
        return data

    @property
    def topic(self) -> TopicSpec:
        """The first topic: what the `leader` role and a `topic` target mean."""
        return self.topics[0]

    @model_validator(mode="after")
    def _rules(self):
        rules.check_scenario(self)
        return self

    @property
    def changelog(self) -> TopicSpec | None:
        """A stateful run's changelog topic: the input topic's partitions and replication factor; the harness's
        (<topic>-changelog), or the store's of a kind that keeps its own (<group id>-<store>-changelog: Streams')."""
        if self.state is None:
            return None
        store = member_kind(self.consumer_group.client).state_store
        name = f"{self.topic.name}{CHANGELOG_SUFFIX}" if store is None else \
            f"{self.consumer_group.group_id}-{store}{CHANGELOG_SUFFIX}"
        return self.topic.model_copy(update={"name": name})

    @property
    def created_changelog(self) -> TopicSpec | None:
        """The changelog the harness creates (and prefills) before the members start; None: none, or the members'
        own (a Streams application creates its internal topics)."""
        return self.changelog if member_kind(self.consumer_group.client).state_store is None else None

    def created_topics(self) -> list[TopicSpec]:
        """Every topic the run creates before its members start (a changelog's configs: CHANGELOG_CONFIGS)."""
        return [*self.topics, *([changelog] if (changelog := self.created_changelog) is not None else [])]

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
    def transactional(self) -> bool:
        """Whether the members run transactional producers: commit: transaction, or Kafka Streams under
        exactly_once_v2 (the run samples transaction-states.jsonl)."""
        group = self.consumer_group
        return group.commit == "transaction" or (group.streams is not None and group.streams.guarantee == "exactly_once_v2")

    @property
    def aims_at_txn_coordinators(self) -> bool:
        """A fault on txn-coordinator[:member-N]: the request-aware proxy learns each member's transactional ids from
        its InitProducerIds."""
        return any(is_txn_coordinator_target(f.target) for f in self._all_faults())

    @property
    def proxies_member_lanes(self) -> bool:
        """Whether the run sends its members' lanes through the request-aware proxy."""
        needed = self.has_rpc_faults or self.cuts_hosted_members or self.aims_at_txn_coordinators
        return needed if self.run.rpc_proxy is None else self.run.rpc_proxy

    def schedule(self) -> list[FaultEntry]:
        """Every fault of the run in time order: the listed ones and the seeded random ones."""
        drawn = [FAULT_ENTRY.validate_python(entry) for entry in self.random_entries()]
        return sorted([*self.faults, *drawn], key=lambda f: f.at_s)

    def random_entries(self) -> list[dict]:
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
                             member_kinds={f"member-{n}": spec.client
                                           for n, spec in enumerate(self.consumer_group.member_specs(), 1)},
                             log_disk_mb=self.cluster.log_disk_mb,
                             producing=self.state is not None or self.consumer_group.output is not None,
                             kafka_version=self.cluster.kafka_version,
                             transaction_version=self.cluster.transaction_version)

    def settings(self) -> dict:
        """The scenario as run, every default filled in (what `kafka-chaos validate` prints)."""
        return self.model_copy(update={"consumer_group": self.consumer_group.effective()}).model_dump(mode="json")

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.settings(), sort_keys=False)


def parse_scenario(data: object, source: str = "scenario") -> Scenario:
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ScenarioError(f"{source}: a scenario is a YAML mapping, got {type(data).__name__}")
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        raise ScenarioError(described(exc, source, data)) from None


