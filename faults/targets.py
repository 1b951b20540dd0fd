"""What a fault aims at: checked against the scenario before the run, resolved when the fault fires.

Target kinds:
  broker   kafka-N, or a role looked up when the fault fires: coordinator (the leader of the group's
           __consumer_offsets partition), controller (the active KRaft controller), leader (of the
           scenario topic's partition 0), leader:TOPIC:PARTITION (__consumer_offsets and __transaction_state
           too), txn-coordinator[:member-N] (the leader of the __transaction_state partition of a member's
           transactional id, as the request-aware proxy saw it in its InitProducerId; bare: the broker that
           coordinates the most members' transactions), random
  member   member-N, random-member
  cluster  the whole cluster (a rolling restart)
  client   a workload client with a lane of its own: member-N (spare lanes included), producer-1, random-member
  topic    `topic` (the scenario's first topic), a topic's name, __consumer_offsets or __transaction_state
  new_topic  the name of a topic that does not exist yet (topic_create)
  rpc      `group` (every member's requests) or one member: member-N (spares included), random-member
  lane     a broker target (one of its lanes) or a client target (that client's lane to every broker)
"""
from __future__ import annotations

import random
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from faults.backend import BrokerHandle, ClusterHandle, MemberHandle
from kafkanet.broker_view import BrokerView
from kafkanet.toxiproxy import Toxiproxy

if TYPE_CHECKING:
    from faults.context import FaultContext, ScenarioFacts

OFFSETS_TOPIC = "__consumer_offsets"
TXN_STATE_TOPIC = "__transaction_state"
INTERNAL_TOPICS = (OFFSETS_TOPIC, TXN_STATE_TOPIC)
TXN_COORDINATOR = "txn-coordinator"
TXN_COORDINATOR_OF = re.compile(r"^txn-coordinator:(?P<member>member-\d+)$")
BROKER_ROLES = ("coordinator", "controller", "leader", TXN_COORDINATOR, "random")
MEMBER_ROLES = ("random-member",)
GROUP_TARGET = "group"
LEADER_OF = re.compile(r"^leader:(?P<topic>[A-Za-z0-9._-]+):(?P<partition>\d+)$")
CLIENT_LANE = re.compile(r"^(member|producer|host)-\d+$")


class TargetError(RuntimeError):
    pass


def java_string_hash(text: str) -> int:
    """Java's String.hashCode, as Kafka uses it to place a group on a __consumer_offsets partition."""
    data, h = text.encode("utf-16-be"), 0
    for i in range(0, len(data), 2):  # Java strings are UTF-16 code units
        h = (31 * h + int.from_bytes(data[i:i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def offsets_partition(group_id: str, partitions: int) -> int:
    """Kafka's partitionFor(groupId) (and for a transactional id, the transaction coordinator's):
    Utils.abs(hashCode) % partitions, where Utils.abs(MIN_VALUE) is 0."""
    h = java_string_hash(group_id)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


def partition_leader(view: BrokerView, topic: str, partition: int) -> int:
    """The leader of topic:partition in a BrokerView (kafkanet/broker_view.py)."""
    found = [p for p in view.partitions if p.topic == topic and p.partition == partition]
    if not found:
        raise TargetError(f"no metadata for {topic}:{partition}")
    if found[0].leader < 0:
        raise TargetError(f"{topic}:{partition} has no leader")
    return found[0].leader


def coordinator_id(view: BrokerView, group_id: str) -> int:
    """The group coordinator is the leader of the group's __consumer_offsets partition.

    Computed from metadata rather than asked with DescribeConsumerGroups: that admin call can abort
    the process when the coordinator is unreachable (librdkafka issue 4605), which is what faults do.
    """
    return _leader_for(view, OFFSETS_TOPIC, group_id, "no group has a coordinator")


def transaction_coordinator_id(view: BrokerView, transactional_id: str) -> int:
    """The transaction coordinator of a transactional id: the leader of its __transaction_state partition."""
    return _leader_for(view, TXN_STATE_TOPIC, transactional_id, "no producer has begun a transaction")


def _leader_for(view: BrokerView, topic: str, key: str, why_none: str) -> int:
    """The leader of the internal topic's partition for a key (a group id, a transactional id), the topic's
    partition count read from metadata (offsets.topic.num.partitions, transaction.state.log.num.partitions: never
    assumed 50)."""
    partitions = sum(1 for p in view.partitions if p.topic == topic)
    if not partitions:
        raise TargetError(f"{topic} does not exist yet: {why_none}")
    return partition_leader(view, topic, offsets_partition(key, partitions))


def txn_coordinator(view: BrokerView, transactional_ids: Mapping[str, set[str]], member: str | None) -> int:
    """The broker `txn-coordinator[:member-N]` names: the coordinator of member-N's transactional id (a Streams
    member has one a thread, a member with transaction.transactional_id: partition one an input partition: the
    coordinator of most of them, the lowest id on a tie), or, bare, the broker that coordinates the most members' ids
    (a member counted once a broker). `transactional_ids`: member -> the ids its producers sent."""
    chosen = {member: transactional_ids.get(member, set())} if member else dict(transactional_ids)
    if not any(chosen.values()):
        raise TargetError(f"{member or 'no member'} has sent no InitProducerId yet: no transaction coordinator to aim at")
    votes: dict[int, int] = {}
    for ids in chosen.values():
        coordinators = [transaction_coordinator_id(view, i) for i in sorted(ids)]
        for broker in coordinators if member else set(coordinators):  # one member's ids each; members once a broker
            votes[broker] = votes.get(broker, 0) + 1
    return min(votes, key=lambda b: (-votes[b], b))


def is_txn_coordinator_target(target: str) -> bool:
    return target == TXN_COORDINATOR or TXN_COORDINATOR_OF.match(target) is not None


# -- checked before the run -------------------------------------------------------------------

def check_broker_target(target: str, facts: ScenarioFacts) -> None:
    """Raise ValueError naming the target when it cannot exist in this scenario."""
    if is_txn_coordinator_target(target):
        return check_txn_coordinator_target(target, facts)
    if target in BROKER_ROLES or target in facts.broker_names:
        return
    match = LEADER_OF.match(target)
    if match:
        topic, partition = match["topic"], int(match["partition"])
        if topic not in INTERNAL_TOPICS and topic in facts.topics and partition >= facts.topics[topic]:
            raise ValueError(f"target: {target!r}: {topic} has {facts.topics[topic]} partitions")
        if topic not in INTERNAL_TOPICS and topic not in facts.topics:
            raise ValueError(f"target: {target!r}: no topic {topic!r} in this scenario (topics: {sorted(facts.topics)})")
        return
    raise ValueError(f"target: {target!r} is not one of {list(facts.broker_names) + list(BROKER_ROLES)}, "
                     "txn-coordinator:member-N or leader:TOPIC:PARTITION")


def check_txn_coordinator_target(target: str, facts: ScenarioFacts) -> None:
    """A transaction coordinator needs a transactional member (the one named, if any): a Kafka Streams member with
    exactly_once_v2, or a command member of yours, which may be one."""
    match = TXN_COORDINATOR_OF.match(target)
    if match and match["member"] not in facts.members:
        raise ValueError(f"target: {target!r}: {match['member']} is not a member of this scenario ({list(facts.members)})")
    if not transactional(kinds_of(facts, match["member"] if match else None), facts):
        raise ValueError(f"target: {target!r}: no member of this group runs a transactional producer (a Kafka Streams "
                         "group with guarantee exactly_once_v2, or a command member of yours)")


def kinds_of(facts: ScenarioFacts, member: str | None) -> set:
    """The member kinds a target reaches: the named member's, or (None, or a target that names no member) every
    member's."""
    return {facts.member_kinds[member]} if member in facts.member_kinds else set(facts.member_kinds.values())


def transactional(kinds: set, facts: ScenarioFacts) -> bool:
    """Whether members of these kinds run a transactional producer: a Kafka Streams member with exactly_once_v2, a
    member whose commit is a transaction, or a command member of yours (which may)."""
    eos_streams = "streams" in kinds and (facts.group.get("streams") or {}).get("guarantee") == "exactly_once_v2"
    return eos_streams or facts.group.get("commit") == "transaction" or "command" in kinds


def is_role(target: str) -> bool:
    """A target that names no broker or member but a role, resolved only when the fault fires (coordinator,
    controller, leader, leader:TOPIC:PARTITION, txn-coordinator[:member-N], random, random-member); any other target
    is concrete."""
    return target in BROKER_ROLES or target in MEMBER_ROLES or LEADER_OF.match(target) is not None \
        or is_txn_coordinator_target(target)


def check_member_target(target: str, facts: ScenarioFacts) -> None:
    if target not in facts.members and target not in MEMBER_ROLES:
        raise ValueError(f"target: {target!r} is not one of {list(facts.members) + list(MEMBER_ROLES)}")


def is_client_target(target: str) -> bool:
    """A target that names a workload client's lane (member-N, producer-N, random-member), not a broker;
    whether that lane exists is checked against the scenario (facts.lanes) and the cluster."""
    return CLIENT_LANE.match(target) is not None or target in MEMBER_ROLES


def check_client_target(target: str, facts: ScenarioFacts) -> None:
    """A workload client with a lane of its own: member-N (spares included), producer-1, host-N (a member host's
    members), random-member; or a hosted member, which the request-aware proxy tells apart by its client.id."""
    if target not in facts.lanes and target not in MEMBER_ROLES and target not in hosted_members(facts):
        raise ValueError(f"target: {target!r} is not one of {list(facts.lanes) + list(MEMBER_ROLES)}")


def hosted_members(facts: ScenarioFacts) -> tuple[str, ...]:
    """The members that run in member hosts (consumer_group.members_per_host): none of them has a lane of its own."""
    return facts.members if facts.group.get("members_per_host") else ()


def check_lane_target(target: str, facts: ScenarioFacts) -> None:
    """A broker target (its lanes) or a workload client (its lane to every broker)."""
    if target in hosted_members(facts) or target in MEMBER_ROLES and hosted_members(facts):
        raise ValueError(f"target: {target!r} runs in a member host and shares its lane with the host's other members "
                         "(consumer_group.members_per_host); target the host (host-N) to hit all of them, or use "
                         "member_cut or an rpc fault, which act on one member by its client.id")
    if is_client_target(target):
        return check_client_target(target, facts)
    try:
        check_broker_target(target, facts)
    except ValueError as exc:
        raise ValueError(f"{exc}, or a client with a lane: {list(facts.lanes) + list(MEMBER_ROLES)}") from None


def check_rpc_target(target: str, facts: ScenarioFacts) -> None:
    """Every member (`group`), or one that has a lane (spares included) or a role."""
    members = [lane for lane in facts.lanes if lane.startswith("member-")] + list(hosted_members(facts))
    if target != GROUP_TARGET and target not in members and target not in MEMBER_ROLES:
        raise ValueError(f"target: {target!r} is not a member of this scenario; one of {[GROUP_TARGET, *members, *MEMBER_ROLES]}")


def check_cluster_target(target: str, facts: ScenarioFacts) -> None:
    if target != "cluster":
        raise ValueError(f"target: {target!r}: this fault aims at the whole cluster; write target: cluster")


def check_group_target(target: str, facts: ScenarioFacts) -> None:
    if target != GROUP_TARGET:
        raise ValueError(f"target: {target!r}: this trigger acts on the whole group; write target: group")


def check_new_topic_target(target: str, facts: ScenarioFacts) -> None:
    if not re.fullmatch(r"[A-Za-z0-9._-]{1,249}", target):
        raise ValueError(f"target: {target!r} is not a valid topic name (letters, digits, '.', '_', '-')")
    if target in facts.topics:
        raise ValueError(f"target: {target!r} is already a topic of this scenario")


def check_topic_target(target: str, facts: ScenarioFacts) -> None:
    if target != "topic" and target not in facts.topics and target not in INTERNAL_TOPICS:
        raise ValueError(f"target: {target!r} is not a topic of this scenario ({sorted(facts.topics)}) "
                         f"or an internal one ({', '.join(INTERNAL_TOPICS)})")


TARGET_CHECKS = {"group": check_group_target, "topic": check_topic_target, "new_topic": check_new_topic_target, "broker": check_broker_target, "member": check_member_target, "cluster": check_cluster_target,
                 "client": check_client_target, "lane": check_lane_target, "rpc": check_rpc_target}


# -- resolved when the fault fires -------------------------------------------------------------

def resolve_broker(cluster: ClusterHandle, target: str, *, group_id: str, topic: str, rng: random.Random,
                   transactional_ids: Mapping[str, set[str]] | None = None) -> BrokerHandle:
    """The broker a target names now: kafka-N, or whoever holds the role at this moment. `transactional_ids`
    (member -> the ids its producers sent, as the request-aware proxy saw them) for a txn-coordinator target."""
    if target == "coordinator":
        return cluster.broker_by_id(coordinator_id(cluster.view(), group_id))
    if is_txn_coordinator_target(target):
        match = TXN_COORDINATOR_OF.match(target)
        return cluster.broker_by_id(txn_coordinator(cluster.view(), transactional_ids or {},
                                                    match["member"] if match else None))
    if target == "controller":
        return cluster.broker_by_id(cluster.active_controller())
    if target == "leader":
        return cluster.broker_by_id(partition_leader(cluster.view(), topic, 0))
    match = LEADER_OF.match(target)
    if match:
        return cluster.broker_by_id(partition_leader(cluster.view(), match["topic"], int(match["partition"])))
    if target == "random":
        return rng.choice(cluster.brokers)
    return cluster.broker(target)


def resolve_member(members: Mapping[str, MemberHandle], target: str, rng: random.Random) -> MemberHandle:
    if target == "random-member":
        return members[rng.choice(sorted(members))]
    return members[target]


def broker_in(ctx: FaultContext, target: str) -> BrokerHandle:
    ids = ctx.rpc_proxy.transactional_ids_by_member(tuple(ctx.members)) if ctx.rpc_proxy is not None else None
    return resolve_broker(ctx.cluster, target, group_id=ctx.group_id, topic=ctx.topic, rng=ctx.rng,
                          transactional_ids=ids)


def toxiproxy_of(cluster: ClusterHandle) -> Toxiproxy:
    """The cluster's Toxiproxy; a fault built by hand on a cluster without one is refused here."""
    if cluster.toxiproxy is None:
        raise TargetError("this cluster has no Toxiproxy in front of its brokers (a fault that needs: toxiproxy)")
    return cluster.toxiproxy
