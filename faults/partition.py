"""Network partitions between brokers: replication (INTERNAL lane) and the KRaft quorum (CONTROLLER
lane) cut pair by pair, both ways, with iptables in each broker's network namespace (kafkanet/netns.py,
run through BrokerHandle.run_in_netns).

Broker A reaches broker B only through Toxiproxy, at B's own internal and controller proxy ports
(`Broker.peer_ports`). To cut A from B: in A's namespace drop packets to Toxiproxy on B's ports, in
B's namespace drop packets to Toxiproxy on A's ports. A broker's traffic to its own proxies is never
dropped, and clients (CLIENT lanes, host -> Toxiproxy -> broker) are untouched unless
`isolate_broker` is given `clients: true`.
"""
from __future__ import annotations

import secrets
from collections.abc import Sequence
from typing import Unpack

from pydantic import Field

from faults.backend import BrokerHandle, ClusterHandle
from faults.base import Fault, FaultParams, StepRecord, params_as
from faults.broker import BrokerFault
from faults.context import FaultContext, ScenarioFacts
from faults.targets import broker_in, check_broker_target
from faults.timeline import FaultTimeline
from kafkanet import netns

Pair = tuple[BrokerHandle, BrokerHandle]


class BrokerPartition(BrokerFault):
    """Cuts every pair of `self.pairs` both ways; the heal removes exactly those rules."""

    def __init__(self, broker: BrokerHandle, params: FaultParams, pairs: list[Pair], *, cluster: ClusterHandle,
                 timeline: FaultTimeline, group_id: str | None = None, target: str | None = None,
                 **record: Unpack[StepRecord]) -> None:
        super().__init__(broker, params, target=target, cluster=cluster, group_id=group_id, timeline=timeline, **record)
        self.pairs = pairs
        self._toxiproxy_ip = self.cluster.toxiproxy_ip
        self._tag = f"kafka-chaos-{secrets.token_hex(4)}"  # marks this fault's rules, and only them

    def _inject(self) -> None:
        self.note(cut=[sorted([a.name, b.name]) for a, b in self.pairs], rule_tag=self._tag)
        down: set[str] = set()
        for a, b in self.pairs:
            for sender, receiver in ((a, b), (b, a)):
                if not netns.drop(sender.run_in_netns, self._toxiproxy_ip, list(receiver.peer_ports), self._tag):
                    down.add(sender.name)
        if down:  # a broker that is down gets no rules; once restarted it is not cut (a fresh namespace)
            self.note(down_when_cut=sorted(down))

    def _heal(self) -> None:
        """Deletes the rules, then waits until every broker the cut fenced is registered again, so that
        the next fault (or test) starts from a whole cluster, as after a crash's heal."""
        for a, b in self.pairs:
            netns.undrop(a.run_in_netns, self._toxiproxy_ip, list(b.peer_ports), self._tag)
            netns.undrop(b.run_in_netns, self._toxiproxy_ip, list(a.peer_ports), self._tag)
        self.cluster.wait_rejoined(list({b.name: b for pair in self.pairs for b in pair}.values()))


def _cut_between(side: Sequence[BrokerHandle], brokers: Sequence[BrokerHandle]) -> list[Pair]:
    """Every (inside, outside) pair: what separates `side` from the rest of the cluster."""
    names = {b.name for b in side}
    return [(a, b) for a in side for b in brokers if b.name not in names]


def minority_size(brokers: int) -> int:
    """The largest side that still leaves the others a majority of the voters (every broker votes)."""
    return (brokers - 1) // 2


# -- isolate_broker ------------------------------------------------------------------------------

class IsolateParams(FaultParams):
    clients: bool = Field(False, description="also disable the broker's client-facing proxies: it loses everything")


class IsolateBroker(BrokerPartition):
    """The broker loses every other broker (replication and quorum) while its clients still reach it
    (a zombie leader); with `clients: true` its client-facing proxies (the CLIENT lane and every
    workload client's lane; never the harness's CONTROL lane) are disabled too, so it loses everything.
    The peer lanes stay enabled: iptables already stalls them, and a disabled proxy would reset them.
    Heals by deleting its iptables rules (and enabling those proxies), then waits until it is registered again."""
    kind = "isolate_broker"
    Params = IsolateParams
    spec: IsolateParams

    @classmethod
    def build(cls, ctx: FaultContext, target: str, params: FaultParams, **record: Unpack[StepRecord]) -> Fault:
        broker = broker_in(ctx, target)
        return cls(broker, params, _cut_between([broker], ctx.cluster.brokers), cluster=ctx.cluster,
                   group_id=ctx.group_id, timeline=ctx.timeline, **record)

    def _inject(self) -> None:
        super()._inject()
        if self.spec.clients:
            self.note(disabled_proxies=self.broker.client_proxies())
            for proxy in self.broker.client_proxies():
                self.toxiproxy.set_enabled(proxy, False)

    def _heal(self) -> None:
        if self.spec.clients:
            for proxy in self.broker.client_proxies():
                self.toxiproxy.set_enabled(proxy, True)
        super()._heal()


# -- split ---------------------------------------------------------------------------------------

class SplitParams(FaultParams):
    side: list[str] | None = Field(None, description="the brokers cut off from the rest, the target among them "
                                                     "(default: the largest minority: the target and random others, "
                                                     "chosen when it fires)")

    def check(self, facts: ScenarioFacts, target: str) -> None:
        if self.side is None:
            if minority_size(facts.brokers) < 1:
                raise ValueError(f"side: a split of {facts.brokers} brokers cannot leave a majority side (it needs 3 or more)")
            return
        for i, name in enumerate(self.side):
            if name not in facts.broker_names:
                raise ValueError(f"side[{i}]: {name!r} is not one of {list(facts.broker_names)}")
        if target not in self.side:
            raise ValueError(f"side: must include the target ({target!r}: with an explicit side, name one of its "
                             f"brokers), got {self.side}")
        if len(set(self.side)) != len(self.side):
            raise ValueError(f"side: lists a broker twice: {self.side}")
        inside, outside = len(self.side), facts.brokers - len(self.side)
        if outside == 0:
            raise ValueError(f"side: puts all {facts.brokers} brokers on one side; nothing is split")
        if max(inside, outside) * 2 <= facts.brokers:
            raise ValueError(f"side: a {inside}/{outside} split leaves no majority side "
                             f"(a side needs more than half of the {facts.brokers} voters)")


class Split(BrokerPartition):
    """A set of brokers cut off from the rest, both ways (replication and quorum); clients still reach
    every broker. By default the largest minority: the target and random others (1 of 3, 2 of 5).
    Heals by deleting its iptables rules, then waits until the fenced side is registered again."""
    kind = "split"
    Params = SplitParams

    @classmethod
    def build(cls, ctx: FaultContext, target: str, params: FaultParams, **record: Unpack[StepRecord]) -> Fault:
        broker, chosen = broker_in(ctx, target), params_as(SplitParams, params).side
        if chosen is not None:
            side = [ctx.cluster.broker(name) for name in chosen]
        else:
            others = sorted((b for b in ctx.cluster.brokers if b.name != broker.name), key=lambda b: b.name)
            side = [broker, *ctx.rng.sample(others, minority_size(len(ctx.cluster.brokers)) - 1)]
        return cls(broker, params, _cut_between(side, ctx.cluster.brokers), cluster=ctx.cluster,
                   group_id=ctx.group_id, timeline=ctx.timeline, **record)

    def _inject(self) -> None:
        self.note(side=sorted({inside.name for inside, _ in self.pairs}))
        super()._inject()


# -- partition_pair ------------------------------------------------------------------------------

class PairParams(FaultParams):
    a: str = Field(description="one broker (any broker target, resolved when the fault fires)")
    b: str = Field(description="the other broker; only the link between a and b is cut")

    def check(self, facts: ScenarioFacts, target: str) -> None:
        if facts.brokers < 2:
            raise ValueError("a: a pair partition needs two brokers")
        for field in ("a", "b"):
            try:
                check_broker_target(getattr(self, field), facts)
            except ValueError as exc:
                raise ValueError(f"{field}:{str(exc).removeprefix('target:')}") from None
        if self.a == self.b and self.a != "random":
            raise ValueError(f"b: must differ from a ({self.a!r})")


class PartitionPair(BrokerPartition):
    """Broker a cut from broker b only, both ways; every other link stays (target: cluster). A `random`
    end is drawn among the brokers other than the other end. Heals by deleting its iptables rules."""
    kind = "partition_pair"
    target_kind = "cluster"
    Params = PairParams

    @classmethod
    def build(cls, ctx: FaultContext, target: str, params: FaultParams, **record: Unpack[StepRecord]) -> Fault:
        ends = params_as(PairParams, params)
        a = None if ends.a == "random" else broker_in(ctx, ends.a)
        b = None if ends.b == "random" else broker_in(ctx, ends.b)
        a = a or ctx.rng.choice([x for x in ctx.cluster.brokers if b is None or x.name != b.name])
        b = b or ctx.rng.choice([x for x in ctx.cluster.brokers if x.name != a.name])
        if a.name == b.name:
            raise ValueError(f"partition_pair: a ({ends.a}) and b ({ends.b}) are both {a.name} now")
        return cls(a, params, [(a, b)], target=f"{a.name}<->{b.name}", cluster=ctx.cluster, timeline=ctx.timeline,
                   **record)
