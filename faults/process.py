"""Faults on a consumer-group member's process."""
from __future__ import annotations

from typing import Unpack

from faults.backend import MemberHandle
from faults.base import Fault, FaultParams, StepRecord
from faults.context import FaultContext
from faults.network import is_hosted
from faults.targets import resolve_member
from faults.timeline import FaultTimeline


class MemberFault(Fault):
    target_kind = "member"
    needs = "processes"

    def __init__(self, process: MemberHandle, params: FaultParams | None = None, *,
                 timeline: FaultTimeline | None = None, **kw: object) -> None:
        self.spec = params or self.Params()
        super().__init__(process.name, timeline, **{**self.spec.model_dump(), **kw})
        self._process = process

    @classmethod
    def build(cls, ctx: FaultContext, target: str, params: FaultParams, **record: Unpack[StepRecord]) -> Fault:
        return cls(resolve_member(ctx.members, target, ctx.rng), params, timeline=ctx.timeline, **record)


class MemberFreeze(MemberFault):
    """SIGSTOP, like a stop-the-world GC pause: no poll, no heartbeat, sockets stay open. A hosted member's
    freeze is its host's: a GC pause stops every thread of a process, so every member in it (the row's `host`
    and `frozen`)."""
    kind = "member_freeze"

    def _inject(self) -> None:
        if is_hosted(self._process):
            self.note(host=self._process.lane, frozen=self._process.host_members)
        self._process.freeze()

    def _heal(self) -> None:
        self._process.resume()


class MemberCrash(MemberFault):
    """SIGKILL: no LeaveGroup, nothing flushed that was not already; healing restarts the member
    under the same name (and the same group.instance.id, if static). A hosted member is crashed alone, as a
    killed process would be: its client.id cut in the request-aware proxy (when the run has one), then its
    consumer destroyed without a close by its host; the row says what the cut swallowed (`swallowed`: the
    requests it still sent, e.g. a LeaveGroup, none of which reached a broker)."""
    kind = "member_crash"
    ends_process = True

    def _inject(self) -> None:
        if is_hosted(self._process):
            self.note(host=self._process.lane, cut_in="rpc_proxy" if self._process.cut_in_proxy else None)
        self._process.kill()

    def _heal(self) -> None:
        if not self._process.alive():
            self._process.start()
        if is_hosted(self._process):
            self.note(swallowed=self._process.swallowed)
