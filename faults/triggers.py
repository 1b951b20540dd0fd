"""Group triggers, scheduled like faults and recorded in the same timeline, so the analysis attributes
what follows to them: every way a consumer group is made to rebalance that is not a failure.

Each acts on the run's members through the harness's member pool (ctx.pool) or on the topic
through the admin client; `duration_s` is when the trigger ends (a bounced member starts again, a
slow member speeds up again), or, for triggers with nothing to undo, when the nemesis moves on.
"""
from __future__ import annotations

import re
from typing import Literal, Unpack

from confluent_kafka.admin import NewPartitions
from pydantic import Field

from faults.backend import PoolHandle, TopicsHandle
from faults.base import Fault, FaultParams, StepRecord
from faults.context import FaultContext, ScenarioFacts
from faults.targets import TargetError, resolve_member
from workloads.config import MemberConfig

# A topic's partitions, at its creation or grown by partitions_add: 500 members x 10 partitions each, with room. Not
# 10,000: Kafka's controller refuses one operation of more than 10,000 records (POLICY_VIOLATION, "Unable to perform
# excessively large batch operation"), and a topic's creation writes its TopicRecord and one PartitionRecord a
# partition (measured on 4.3.1: benchmarks/broker_replicas.py).
MAX_TOPIC_PARTITIONS = 9_999
# Partition replicas one broker of the harness's cluster holds at the most, every topic at its largest. Measured
# (docs/benchmarks-history.md, "Member hosts, second round"; benchmarks/broker_replicas.py): at the default 512 MB heap
# a broker opened the logs of 10,000 replicas in 54-156 s, with no OutOfMemoryError; 15,000 were not held.
MAX_REPLICAS_PER_BROKER = 10_000
from workloads.control import control_path, write_atomically


class Trigger(Fault):
    target_kind = "member"
    needs = "processes"

    def __init__(self, target: str, ctx: FaultContext, params: FaultParams, **kw: object) -> None:
        self.spec, self.ctx = params, ctx
        super().__init__(target, ctx.timeline, **{**params.model_dump(), **kw})

    @classmethod
    def build(cls, ctx: FaultContext, target: str, params: FaultParams, **record: Unpack[StepRecord]) -> Fault:
        return cls(target, ctx, params, **record)

    @property
    def pool(self) -> PoolHandle:
        if self.ctx.pool is None:
            raise TargetError(f"{self.kind}: this run starts no members during the run (no member pool)")
        return self.ctx.pool

    @property
    def topics(self) -> TopicsHandle:
        if self.ctx.topics is None:
            raise TargetError(f"{self.kind}: this run adds no topics (no run topics)")
        return self.ctx.topics

    def _heal(self) -> None:
        """Most triggers have nothing to undo."""


class JoinParams(FaultParams):
    count: int = Field(1, ge=1, le=16, description="how many new members start")
    like: int | None = Field(None, ge=0, description="i: the new members have the settings of consumer_group.members[i] "
                                                     "(client, version, assignor, ...); default: the group's own")

    def check(self, facts: ScenarioFacts, target: str) -> None:
        spare = len([lane for lane in facts.lanes if lane.startswith("member-") and lane not in facts.members])
        if self.count > spare:
            raise ValueError(f"count: {self.count} new members need spare lanes; the cluster has {spare} "
                             "(cluster.spare_lanes)")
        entries = facts.group.get("members")
        if self.like is not None and not (isinstance(entries, list) and self.like < len(entries)):
            have = f"{len(entries)} entries" if isinstance(entries, list) else "a number, not a list of member specs"
            raise ValueError(f"like: consumer_group.members has no entry [{self.like}] (it has {have})")


class MemberJoin(Trigger):
    """N new members start and join the running group (each on a spare lane), with the group's settings
    or those of one entry of a mixed group (`like`): a newer client joining a fleet during an upgrade."""
    kind = "member_join"
    target_kind = "group"
    group_change = "member_starts"
    Params = JoinParams
    spec: JoinParams

    def _inject(self) -> None:
        names = self.pool.next_names(self.spec.count)
        self.note(members=names)
        for name in names:
            self.pool.start(name, like=self.spec.like)


class MemberLeave(Trigger):
    """A graceful close: a dynamic member sends LeaveGroup (a rebalance at once); a static member
    does not (KIP-345), so nothing moves until its session times out. It stays gone."""
    kind = "member_leave"
    group_change = "member_ends"

    def _inject(self) -> None:
        process = resolve_member(self.ctx.members, self.target, self.ctx.rng)
        self.note(member=process.name)
        process.stop()


class MemberBounce(Trigger):
    """A graceful close, and a restart after duration_s under the same name (and the same
    group.instance.id when static)."""
    kind = "member_bounce"
    group_change = "member_returns"

    def _inject(self) -> None:
        self.process = resolve_member(self.ctx.members, self.target, self.ctx.rng)
        self.note(member=self.process.name)
        self.process.stop()

    def _heal(self) -> None:
        if not self.process.alive():
            self.process.start()


class SlowParams(FaultParams):
    per_batch_ms: int = Field(0, ge=0, le=3_600_000, description="the member takes this long on every batch while it lasts")
    per_record_ms: float = Field(0, ge=0, le=60_000, description="and this long per record of the batch")
    distribution: Literal["fixed", "exponential"] = Field("fixed", description="exponential: the mean is the fixed value")
    seed: int = 0

    def check(self, facts: ScenarioFacts, target: str) -> None:
        group = facts.group
        longest = self.per_batch_ms + self.per_record_ms * group.get("batch_size", 0)
        if self.distribution == "fixed" and longest <= group.get("max_poll_interval_ms", 0):
            raise ValueError(f"per_batch_ms: even a full batch ({group.get('batch_size')} records) takes {longest:g} ms, "
                             f"within consumer_group.max_poll_interval_ms ({group.get('max_poll_interval_ms')}): "
                             "the member would never miss a poll")


class SlowProcessing(Trigger):
    """Member M's processing takes per_batch_ms (+ per_record_ms a record), fixed or exponentially
    distributed, for duration_s: its processing thread stalls past max.poll.interval.ms while its
    heartbeats go on, so the group removes it."""
    kind = "slow_processing"
    Params = SlowParams
    spec: SlowParams

    def _inject(self) -> None:
        process = resolve_member(self.ctx.members, self.target, self.ctx.rng)
        self.path = control_path(process.run_dir, process.name)
        self.note(member=process.name)
        write_atomically(self.path, {"processing": self.spec.model_dump()})

    def _heal(self) -> None:
        self.path.unlink(missing_ok=True)


REFRESH_LIMIT_MS = 60_000
CLIENT_REFRESH_DEFAULT_MS = 300_000


def metadata_wait(facts: ScenarioFacts, kind: str, what: str) -> list[str]:
    """Classic members see new partitions and topics only when they refresh metadata, every 5 minutes by default:
    longer than the default drain. Allowed (the published 10-member experiment keeps the default), with a warning:
    a group that has not caught up within its limits is the `unsettled` finding. (Under KIP-848 the coordinator
    notices and assigns them itself.)"""
    group = facts.group
    if group.get("protocol") == "consumer":
        return []
    config = group.get("config") or {}
    refresh = int(group.get("metadata_refresh_ms") or config.get("topic.metadata.refresh.interval.ms")
                  or config.get("metadata.max.age.ms") or CLIENT_REFRESH_DEFAULT_MS)
    if refresh <= REFRESH_LIMIT_MS:
        return []
    return [f"kind: {kind}: classic members see {what} only on their next metadata refresh, every {refresh} ms; "
            f"give run.drain_timeout_s room for it (or set consumer_group.metadata_refresh_ms, e.g. 2000): a group "
            "not caught up within it is the `unsettled` finding"]


class PartitionsParams(FaultParams):
    partitions: int = Field(ge=2, le=MAX_TOPIC_PARTITIONS, description="the topic's new partition count")

    def check(self, facts: ScenarioFacts, target: str) -> None:
        have = facts.topics.get(target) if target != "topic" else next(iter(facts.topics.values()), None)
        if have is not None and self.partitions <= have:
            raise ValueError(f"partitions: {target} already has {have}; a topic only grows")

    def warnings(self, facts: ScenarioFacts, target: str) -> list[str]:
        return metadata_wait(facts, "partitions_add", "added partitions")


class PartitionsAdd(Trigger):
    """The topic grows to N partitions: the group rebalances to assign the new ones. Target: `topic`
    (the scenario's topic) or a topic's name."""
    kind = "partitions_add"
    target_kind = "topic"
    group_change = "partitions_added"
    Params = PartitionsParams
    spec: PartitionsParams

    def _inject(self) -> None:
        topic = self.ctx.topic if self.target == "topic" else self.target
        self.note(topic=topic)
        self.ctx.cluster.admin().create_partitions([NewPartitions(topic, self.spec.partitions)])[topic].result(30)


class TopicParams(FaultParams):
    partitions: int = Field(3, ge=1, le=MAX_TOPIC_PARTITIONS)
    replication_factor: int = Field(3, ge=1)

    def check(self, facts: ScenarioFacts, target: str) -> None:
        pattern = facts.group.get("pattern")
        if pattern is None:
            raise ValueError("target: topic_create needs consumer_group.pattern: a group subscribed by name never "
                             "sees a new topic, and the producer would write records nobody consumes")
        if not re.fullmatch(pattern, target):
            raise ValueError(f"target: {target!r} does not match consumer_group.pattern ({pattern!r})")
        if self.replication_factor > facts.brokers:
            raise ValueError(f"replication_factor: {self.replication_factor} is more than cluster.brokers ({facts.brokers})")

    def warnings(self, facts: ScenarioFacts, target: str) -> list[str]:
        return metadata_wait(facts, "topic_create", "a new matching topic")


class TopicCreate(Trigger):
    """A new topic that matches the members' pattern subscription (target: its name) is created, and the
    producer writes to it from then on (its records in turn with the other topics')."""
    kind = "topic_create"
    target_kind = "new_topic"
    group_change = "partitions_added"
    Params = TopicParams
    spec: TopicParams

    def _inject(self) -> None:
        self.ctx.cluster.create_topic(self.target, self.spec.partitions, self.spec.replication_factor)
        self.topics.add(self.target)


class DuplicateInstance(Trigger):
    """A second process starts with member M's group.instance.id (on M's lane): one of the two is
    fenced and exits as Kafka intends: the classic protocol fences the old one (FENCED_INSTANCE_ID, KIP-345),
    KIP-848 refuses the new one while the id is held (UNRELEASED_INSTANCE_ID). The row in faults.jsonl names
    that member (`expected_fatal`), so the analysis does not report its end. The duplicate is stopped at the
    heal if it is still running."""
    kind = "duplicate_instance"

    class Params(FaultParams):
        def check(self, facts: ScenarioFacts, target: str) -> None:
            if not facts.group.get("static_membership"):
                raise ValueError("target: duplicate_instance needs consumer_group.static_membership: true")

    def _inject(self) -> None:
        original = resolve_member(self.ctx.members, self.target, self.ctx.rng)
        if not isinstance(original.config, MemberConfig):
            raise TargetError(f"{original.name} is no member of the group")
        name = f"{original.name}-dup"
        fenced = original.name if original.config.protocol == "classic" else name
        self.note(member=original.name, duplicate=name, expected_fatal=[fenced])
        self.duplicate = self.pool.start(name, lane=original.lane or original.name,
                                         instance=int(original.name.rsplit("-", 1)[1]))

    def _heal(self) -> None:
        self.duplicate.stop()
