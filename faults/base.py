"""What every fault is: inject(), heal() (idempotent), a context manager, recorded in the timeline.

A fault kind is one subclass. It declares its `kind`, what it aims at (`target_kind`, see
faults/targets.py) and its parameters (`Params`, a pydantic model); declaring `kind` registers it,
so the scenario's fault entries and the nemesis find it by name with nothing else to edit.
"""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING, ClassVar, TypedDict, TypeVar, Unpack

from pydantic import BaseModel, ConfigDict

from faults.timeline import FaultTimeline

if TYPE_CHECKING:
    from faults.context import FaultContext, ScenarioFacts


REQUIREMENTS = {
    "processes": "only the run's own workload processes and topics",
    "toxiproxy": "a Toxiproxy in front of the brokers' client listeners",
    "lanes": "a Toxiproxy proxy per workload client, or between the brokers: the harness's own topology",
    "containers": "control of the brokers' containers",
}


class StepRecord(TypedDict, total=False):
    """What the nemesis adds to a fault's params in faults.jsonl when its step fires."""
    duration_s: float
    requested_target: str  # the scenario's target, before a role (coordinator, random) resolved


class FaultParams(BaseModel):
    """A fault kind's own parameters; they stand flat in the scenario's fault entry."""
    model_config = ConfigDict(extra="forbid", frozen=True)

    def check(self, facts: "ScenarioFacts", target: str) -> None:
        """Cross-checks against the scenario; raise ValueError('field: why')."""

    def warnings(self, facts: "ScenarioFacts", target: str) -> list[str]:
        """What the scenario allows but a user should know before it runs ('field: what to expect')."""
        return []


P = TypeVar("P", bound=FaultParams)


def params_as(model: type[P], params: FaultParams) -> P:
    """A kind's own parameters, typed as its Params model (which the harness built them from)."""
    if not isinstance(params, model):
        raise TypeError(f"params: {model.__name__} expected, got {type(params).__name__}")
    return params


class Fault:
    kind: ClassVar[str] = "fault"
    target_kind: ClassVar[str] = "broker"
    Params: ClassVar[type[FaultParams]] = FaultParams
    # What the fault needs of the cluster (see REQUIREMENTS); a cluster the harness did not start
    # (harness/cluster/external.py) has only some of it.
    needs: ClassVar[str] = "containers"
    # What the analysis needs to know of the kind, written in each of its rows of faults.jsonl (facts()), so
    # that the analysis names no kind (docs/DESIGN.md, faults.jsonl).
    ends_process: ClassVar[bool] = False  # it kills its target's process, with no clean shutdown: a crash
    effect_from: ClassVar[str] = "inject"  # where its window of effect opens: "inject", "first_hit" (or "never")
    # what it changes of the group's members or partitions (analysis/contract.GROUP_CHANGES), for the cost figures
    # of a rebalance (analysis/figures/rebalance_cost.py): member_starts, member_ends, member_returns, partitions_added
    group_change: ClassVar[str | None] = None
    registry: ClassVar[dict[str, type["Fault"]]] = {}

    def __init_subclass__(cls, **kw: object) -> None:
        super().__init_subclass__(**kw)
        if "kind" in cls.__dict__:
            Fault.registry[cls.kind] = cls

    def __init__(self, target: str, timeline: FaultTimeline | None = None, **params: object) -> None:
        self.target = target
        self.params = params
        self.timeline = timeline or FaultTimeline(None)
        self.record: dict | None = None
        self._lock = threading.Lock()

    @classmethod
    def build(cls, ctx: "FaultContext", target: str, params: FaultParams, **record: Unpack[StepRecord]) -> "Fault":
        """Make the fault when its step fires (so a role such as `coordinator` resolves then).
        `record` goes into faults.jsonl's params (e.g. the requested target, the duration)."""
        raise NotImplementedError(f"{cls.__name__}.build")

    @classmethod
    def requirement(cls, target: str, params: FaultParams) -> str:
        """What this entry needs of the cluster: one key of REQUIREMENTS."""
        return cls.needs

    @property
    def active(self) -> bool:
        return self.record is not None and self.record["healed_at_ms"] is None

    def inject(self) -> "Fault":
        """Recorded as active *before* it runs: an inject that fails half-way (a pause that timed out
        after the freeze took hold) is still in the timeline, and still healed."""
        with self._lock:
            if not self.active:
                self.record = self.timeline.injected(self.kind, self.target, self.params, self.facts())
                try:
                    self._inject()
                except BaseException as exc:
                    self.timeline.update(self.record, inject_error=str(exc) or type(exc).__name__)
                    raise
                self.timeline.update(self.record, inject_done_ms=self.timeline.now_ms())
        return self

    def heal(self) -> bool:
        """Heal if active; True if this call healed it. A heal that raises leaves the fault active."""
        with self._lock:
            record = self.record
            if record is None or not self.active:
                return False
            self._heal()
            self.timeline.healed(record)
            return True

    def label(self) -> str:
        """What this fault does, for people (the report's fault table)."""
        return self.kind

    def facts(self) -> dict:
        """The fields of its row the analysis reads instead of the kind."""
        return {"label": self.label(), "ends_process": self.ends_process, "effect_from": self.effect_from,
                "group_change": self.group_change}

    def row(self) -> dict:
        """Its row in faults.jsonl, written when its inject starts."""
        if self.record is None:
            raise RuntimeError(f"{self!r} has no row in faults.jsonl before its inject")
        return self.record

    def note(self, **facts: object) -> None:
        """Add observed facts to this fault's row in faults.jsonl (e.g. the coordinator after a failover)."""
        if self.record is not None:
            self.timeline.update(self.record, **facts)

    def __enter__(self) -> "Fault":
        return self.inject()

    def __exit__(self, *exc: object) -> None:
        self.heal()

    def _inject(self) -> None:
        raise NotImplementedError

    def _heal(self) -> None:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{self.kind}({self.target})"
