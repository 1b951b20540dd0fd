"""Network faults, all through Toxiproxy (this kernel has no netem)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, TypeGuard, Unpack

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


@dataclass
class LaneCut:
    """A client on a lane of its own: every proxy of the lane disabled (open connections closed, new ones refused)."""
    toxiproxy: Toxiproxy
    proxies: list[str]
    facts: ClassVar[dict] = {}

    def cut(self) -> None:
        for proxy in self.proxies:
            self.toxiproxy.set_enabled(proxy, False)

    def restore(self) -> dict:
        for proxy in self.proxies:
            self.toxiproxy.set_enabled(proxy, True)
        return {}


@dataclass
class ClientIdCut:
    """A member that shares its host's lane: the request-aware proxy closes its connections and refuses its
    requests by client.id, while its host-mates go on."""
    rpc_proxy: RpcProxy
    client_id: str
    host: str

    @property
    def facts(self) -> dict:
        return {"host": self.host, "cut_in": "rpc_proxy"}

    def cut(self) -> None:
        self.rpc_proxy.cut(self.client_id)

    def restore(self) -> dict:
        return {"swallowed": len(self.rpc_proxy.uncut(self.client_id))}  # every request it sent while cut


class MemberCut(Fault):
    """One workload client (a member, or the producer) loses the whole cluster while its process runs on, through
    its lane (LaneCut) or, for a hosted member, by its client.id (ClientIdCut). The heal lets it through again."""
    kind = "member_cut"
    target_kind = "client"
    needs = "lanes"

    def __init__(self, target: str, how: LaneCut | ClientIdCut, *, timeline: FaultTimeline | None = None,
                 **kw: object) -> None:
        super().__init__(target, timeline, **({"proxies": how.proxies} if isinstance(how, LaneCut) else {}), **kw)
        self.how = how

    @classmethod
    def build(cls, ctx: FaultContext, target: str, params: FaultParams, **record: Unpack[StepRecord]) -> Fault:
        if target in MEMBER_ROLES or target in ctx.members:
            member = resolve_member(ctx.members, target, ctx.rng)
            if is_hosted(member):
                if ctx.rpc_proxy is None:
                    raise TargetError(f"{member.name} shares its host's lane; cutting it alone needs the request-aware "
                                      "proxy (run.rpc_proxy)")
                by_id = ClientIdCut(ctx.rpc_proxy, client_id=member.name, host=member.lane)  # its lane is its host's
                return cls(member.name, by_id, timeline=ctx.timeline, **record)
            target = member.name
        lane = client_lane(ctx, target)
        how = LaneCut(toxiproxy_of(ctx.cluster), [b.proxy(lane) for b in ctx.cluster.brokers])
        return cls(lane, how, timeline=ctx.timeline, **record)

    def _inject(self) -> None:
        self.note(**self.how.facts)
        self.how.cut()

    def _heal(self) -> None:
        self.note(**self.how.restore())


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
