"""An operator's routine moves during the workload: a reassignment of a topic's replicas, and a preferred
leader election. They move replicas and leaders, never group membership: a member whose fetch meets
NOT_LEADER_OR_FOLLOWER refreshes its metadata and fetches from the new leader; no rebalance is expected.

Target: `topic` (the scenario's first topic), a topic's name, or an internal topic (`__transaction_state`:
every transaction coordinator moves away and, at the heal, comes back; KAFKA-16352's zoo entry). A
reassignment places each partition's replicas one step round (the second replica first: a new preferred
leader), and where the cluster has a broker outside a partition's replicas, the last replica moves there
(its data is copied first). The heal
puts the replicas back as they were. Both go through Kafka's admin API (AlterPartitionReassignments,
kafkanet/reassign.py; ElectLeaders, the admin client) on the harness's own lane, so the backend offers
nothing new for them.
"""
from __future__ import annotations

from typing import Unpack

from pydantic import Field

from faults.backend import ClusterHandle
from faults.base import Fault, FaultParams, StepRecord
from faults.context import FaultContext
from faults.timeline import FaultTimeline
from kafkanet.reassign import reassign

SETTLE_TIMEOUT_S = 120

Assignment = dict[tuple[str, int], list[int]]


class TopicMove(Fault):
    target_kind = "topic"
    needs = "processes"  # the run's own topic, through the admin API

    def __init__(self, topic: str, cluster: ClusterHandle, params: FaultParams, *, timeline: FaultTimeline | None = None,
                 **kw: object) -> None:
        self.spec, self.cluster = params, cluster
        super().__init__(topic, timeline, **{**params.model_dump(), **kw})

    @classmethod
    def build(cls, ctx: FaultContext, target: str, params: FaultParams, **record: Unpack[StepRecord]) -> Fault:
        return cls(ctx.topic if target == "topic" else target, ctx.cluster, params, timeline=ctx.timeline, **record)

    def assignment(self) -> Assignment:
        return {(p.topic, p.partition): list(p.replicas) for p in self.cluster.view().partitions if p.topic == self.target}

    def leaders(self) -> dict[str, int]:
        return {f"{p.topic}:{p.partition}": p.leader for p in self.cluster.view().partitions if p.topic == self.target}


def moved(assignment: Assignment, brokers: list[int]) -> Assignment:
    """Each partition's replicas one step round; the last one onto a broker outside them, where there is one
    (taken in turn, so the moves spread)."""
    out, turn = {}, 0
    for key, replicas in sorted(assignment.items()):
        new = replicas[1:] + replicas[:1]
        outside = [b for b in brokers if b not in replicas]
        if outside:
            new[-1] = outside[turn % len(outside)]
            turn += 1
        out[key] = new
    return out


class ReassignParams(FaultParams):
    elect: bool = Field(True, description="then a preferred leader election, so the leaders move to the new first replicas")


class ReassignPartitions(TopicMove):
    """The topic's replicas moved (and, with `elect`, its leaders); the heal moves them back."""
    kind = "reassign_partitions"
    Params = ReassignParams
    spec: ReassignParams

    def _inject(self) -> None:
        self.before = self.assignment()
        after = moved(self.before, sorted(b.node_id for b in self.cluster.brokers))
        self.note(replicas_before=_named(self.before), replicas_after=_named(after), leaders_before=self.leaders())
        self._place(after)
        self.note(leaders_after=self.leaders())

    def _heal(self) -> None:
        if getattr(self, "before", None):
            self._place(self.before)

    def _place(self, assignment: Assignment) -> None:
        """Reassign, asked of the first broker that answers; wait until every replica is in place and in sync."""
        last: Exception | None = None
        for broker in self.cluster.brokers:
            try:
                reassign(broker.control_address, assignment)
                break
            except OSError as exc:
                last = exc
        else:
            raise RuntimeError(f"no broker took the reassignment ({last})")
        self.cluster.wait_until(lambda: all(list(p.replicas) == assignment[(p.topic, p.partition)] and set(p.isr) == set(p.replicas)
                                            for p in self.cluster.view().partitions if (p.topic, p.partition) in assignment),
                                SETTLE_TIMEOUT_S, f"{self.target}'s replicas not in place and in sync")
        if self.spec.elect:
            self.cluster.elect_preferred_leaders(sorted(assignment))


class PreferredLeaderElection(TopicMove):
    """A preferred leader election on the topic: each leader moves back to its partition's first replica (after
    a broker's restart left leaders elsewhere). Nothing to heal."""
    kind = "preferred_leader_election"

    def _inject(self) -> None:
        self.note(leaders_before=self.leaders())
        self.cluster.elect_preferred_leaders(sorted(self.assignment()))
        self.note(leaders_after=self.leaders())

    def _heal(self) -> None:
        """An election is not undone."""


def _named(assignment: Assignment) -> dict[str, list[int]]:
    return {f"{topic}:{partition}": replicas for (topic, partition), replicas in sorted(assignment.items())}
