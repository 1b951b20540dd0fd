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
    killed process would be: its host destroys its consumer without a close (measured: confluent-kafka 2.16's
    destroy sends no LeaveGroup and no leave heartbeat). In a run whose lanes cross the request-aware proxy, its
    leaves are kept from the brokers from just before the crash to the restart, and the row says what it sent:
    `swallowed` (leaves kept, which a killed process could not have sent) and `sent_after_crash` (any request once
    its host said it was down: no heartbeat, no commit, is what a killed process sends). The row's `stopped_at_ms` is
    when the member really stopped: its process dead, or a hosted member's consumer destroyed as its host says (the
    host first finishes the member's batch; at 500 members a destroy took over 30 s)."""
    kind = "member_crash"
    ends_process = True
    group_change = "member_ends"  # for the window it is down: its restart at the heal is a new start

    def _inject(self) -> None:
        process = self._process
        if is_hosted(process):
            self.note(host=process.lane, leave_guard=process.leave_guard)
            process.kill()
            self.note(stopped_at_ms=process.down_at_ms)
        else:
            process.kill()
            self.note(stopped_at_ms=self.timeline.now_ms())

    def _heal(self) -> None:
        if not self._process.alive():
            self._process.start()
        if is_hosted(self._process) and self._process.leave_guard:
            sent, down = self._process.sent_while_down, self._process.down_at_ms or 0
            self.note(swallowed=[r for r in sent if not r["forwarded"]],
                      sent_after_crash=[r for r in sent if r["at_ms"] > down])
