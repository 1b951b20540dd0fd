"""Network faults, all through Toxiproxy (this kernel has no netem)."""
from __future__ import annotations

from typing import Unpack

from faults.base import Fault, FaultParams, StepRecord
from faults.broker import BrokerFault
from faults.context import FaultContext
from faults.targets import MEMBER_ROLES, TargetError, resolve_member, toxiproxy_of
from faults.timeline import FaultTimeline
from kafkanet.toxiproxy import Toxiproxy


class ProxyCut(BrokerFault):
    """Disable every client-facing proxy of a broker (its CLIENT lane and each workload client's lane):
    open connections are closed, new ones refused. The harness's own CONTROL lane stays."""
    kind = "proxy_cut"
    needs = "toxiproxy"

    def _inject(self) -> None:
        self._proxies = self.broker.client_proxies()
        for proxy in self._proxies:
            self.toxiproxy.set_enabled(proxy, False)

    def _heal(self) -> None:
        for proxy in self._proxies:
            self.toxiproxy.set_enabled(proxy, True)


class MemberCut(Fault):
    """One workload client (a member, or the producer) loses the whole cluster: every proxy of its
    lane is disabled while its process runs on. The heal enables them again."""
    kind = "member_cut"
    target_kind = "client"
    needs = "lanes"

    def __init__(self, lane: str, proxies: list[str], toxiproxy: Toxiproxy, *, timeline: FaultTimeline | None = None,
                 **kw: object) -> None:
        super().__init__(lane, timeline, proxies=proxies, **kw)
        self._proxies, self.toxiproxy = proxies, toxiproxy

    @classmethod
    def build(cls, ctx: FaultContext, target: str, params: FaultParams, **record: Unpack[StepRecord]) -> Fault:
        lane = client_lane(ctx, target)
        return cls(lane, [b.proxy(lane) for b in ctx.cluster.brokers], toxiproxy_of(ctx.cluster),
                   timeline=ctx.timeline, **record)

    def _inject(self) -> None:
        for proxy in self._proxies:
            self.toxiproxy.set_enabled(proxy, False)

    def _heal(self) -> None:
        for proxy in self._proxies:
            self.toxiproxy.set_enabled(proxy, True)


def client_lane(ctx: FaultContext, target: str) -> str:
    """The lane a client target names: member-N, producer-1, or random-member (a member of the run, on
    its own lane unless it was started on another one)."""
    lane = target
    if target in MEMBER_ROLES:
        member = resolve_member(ctx.members, target, ctx.rng)
        lane = member.lane or member.name
    if lane not in ctx.cluster.client_lanes:
        raise TargetError(f"this cluster has no lane for {lane!r}; its lanes: {', '.join(ctx.cluster.client_lanes) or 'none'}")
    return lane
