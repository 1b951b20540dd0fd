"""Network faults, all through Toxiproxy (this kernel has no netem)."""
from __future__ import annotations

from typing import TypeGuard, Unpack

from faults.backend import HostedMemberHandle, MemberHandle
from faults.base import Fault, FaultParams, StepRecord
from faults.broker import BrokerFault
from faults.context import FaultContext
from faults.targets import MEMBER_ROLES, TargetError, resolve_member, toxiproxy_of
from faults.timeline import FaultTimeline
from kafkanet.rpc_proxy import RpcProxy
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
    """One workload client (a member, or the producer) loses the whole cluster while its process runs on: every
    proxy of its lane is disabled, or, for a member that shares its host's lane, the request-aware proxy closes
    its connections and refuses its requests by client.id. The heal lets it through again."""
    kind = "member_cut"
    target_kind = "client"
    needs = "lanes"

    def __init__(self, lane: str, proxies: list[str], toxiproxy: Toxiproxy | None, *, timeline: FaultTimeline | None = None,
                 rpc_proxy: RpcProxy | None = None, client_id: str | None = None, **kw: object) -> None:
        super().__init__(client_id or lane, timeline, **({"proxies": proxies} if client_id is None else {}), **kw)
        self.lane = lane
        self._proxies, self.toxiproxy, self.rpc_proxy, self.client_id = proxies, toxiproxy, rpc_proxy, client_id

    @classmethod
    def build(cls, ctx: FaultContext, target: str, params: FaultParams, **record: Unpack[StepRecord]) -> Fault:
        if target in MEMBER_ROLES or target in ctx.members:
            member = resolve_member(ctx.members, target, ctx.rng)
            if is_hosted(member):
                if ctx.rpc_proxy is None:
                    raise TargetError(f"{member.name} shares its host's lane; cutting it alone needs the request-aware "
                                      "proxy (run.rpc_proxy)")
                return cls(member.lane, [], None, timeline=ctx.timeline, rpc_proxy=ctx.rpc_proxy, client_id=member.name,
                           **record)  # a hosted member's lane is its host's
            target = member.name
        lane = client_lane(ctx, target)
        return cls(lane, [b.proxy(lane) for b in ctx.cluster.brokers], toxiproxy_of(ctx.cluster),
                   timeline=ctx.timeline, **record)

    def _inject(self) -> None:
        if self.rpc_proxy is not None and self.client_id is not None:
            self.note(host=self.lane, cut_in="rpc_proxy")
            self.rpc_proxy.cut(self.client_id)
        elif self.toxiproxy is not None:
            for proxy in self._proxies:
                self.toxiproxy.set_enabled(proxy, False)

    def _heal(self) -> None:
        if self.rpc_proxy is not None and self.client_id is not None:
            self.note(swallowed=len(self.rpc_proxy.uncut(self.client_id)))  # every request it sent while cut
        elif self.toxiproxy is not None:
            for proxy in self._proxies:
                self.toxiproxy.set_enabled(proxy, True)


def is_hosted(member: MemberHandle) -> TypeGuard[HostedMemberHandle]:
    """A member that runs in a member host: it shares its host's lane."""
    return isinstance(member, HostedMemberHandle)


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
