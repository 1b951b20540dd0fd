"""Faults on a consumer-group member's process."""
from __future__ import annotations

from typing import Unpack

from faults.backend import MemberHandle
from faults.base import Fault, FaultParams, StepRecord
from faults.context import FaultContext
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
    """SIGSTOP, like a stop-the-world GC pause: no poll, no heartbeat, sockets stay open."""
    kind = "member_freeze"

    def _inject(self) -> None:
        self._process.freeze()

    def _heal(self) -> None:
        self._process.resume()


class MemberCrash(MemberFault):
    """SIGKILL: no LeaveGroup, nothing flushed that was not already; healing restarts the member
    under the same name (and the same group.instance.id, if static)."""
    kind = "member_crash"
    ends_process = True

    def _inject(self) -> None:
        self._process.kill()

    def _heal(self) -> None:
        if not self._process.alive():
            self._process.start()
