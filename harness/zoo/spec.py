"""The `zoo:` block of a bug-zoo scenario (scenarios/zoo/): which bug, what its two runs swap (the client's release,
the brokers', or, for an open bug, the client kind: its contrast), what the bug's own signature is, and what the
nightly expects of it (status and rate). Its thresholds are written as the
scenario's own settings (``"0.8 * consumer_group.session_timeout_ms"``), never as numbers tuned to one run;
:meth:`ZooSpec.resolved` turns them into numbers for analysis/checks/signature.py."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

UNREPORTED = "unreported:"
ZOO_BUG = r"^(KAFKA-\d+|librdkafka#\d+|unreported:[a-z0-9]+(-[a-z0-9]+)*)$"
ROOT = Path(__file__).resolve().parents[2]
REPORTS = "docs/upstream"   # an unreported bug's report, ready to file, in the project
VERSION = r"^\d+(\.\d+){1,3}$"
STATUSES = ("reproduced", "intermittent", "not_reproduced", "open")
EXPRESSION = re.compile(r"^\s*(?:(\d+(?:\.\d+)?)\s*\*\s*)?([a-z_][a-z0-9_]*(?:\.[a-z0-9_]+)*)\s*$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class After(_Strict):
    event: str = Field(description="an event kind the same member logged before the matched one")
    where: dict[str, Any] = Field(default_factory=dict)
    within_ms: int | str = Field(description="at most this long before it: a scenario setting, e.g. "
                                             "'consumer_group.heartbeat_interval_ms'")


class Predicate(_Strict):
    """One row that must exist: an anomaly of a check (report/anomalies.jsonl), a member's event (events/), or an
    operation of a member's transactional producer (transactions/)."""
    anomaly: str | None = Field(None, description="a check's name (its anomaly type)")
    event: str | None = Field(None, description="an event kind")
    transaction: str | None = Field(None, description="an operation of transactions/<member>.jsonl (init, begin, "
                                    "send, ack, send_offsets, commit, abort)")
    where: dict[str, Any] = Field(default_factory=dict, description="field: value, or field: {in|gt|ge|lt|le|"
                                                                     "contains|startswith|present: value}")
    after: After | None = Field(None, description="(events) an earlier event of the same member")
    never_after: list[str] = Field(default_factory=list, description="(events) kinds the member never logs after it")

    @model_validator(mode="after")
    def _one_source(self):
        if sum(x is not None for x in (self.anomaly, self.event, self.transaction)) != 1:
            raise ValueError("give anomaly (a check's name), event (an event kind) or transaction (an operation of "
                             "transactions/), one of them")
        if self.event is None and (self.after or self.never_after):
            raise ValueError("after and never_after apply to event predicates only")
        return self


class Contrast(_Strict):
    """Another client kind, without the bug, run beside the affected one while no release fixes it: the same
    scenario with the group's client swapped, and the client settings it needs to meet the same faults."""
    client: str = Field(description="the group's client on the contrast's runs: another member kind (workloads/kinds.py)")
    config: dict[str, Any] = Field(default_factory=dict, description="client settings laid over "
                                   "consumer_group.config on the contrast's runs (e.g. a request time-out that makes "
                                   "its requests time out as the affected client's do)")


class ZooSpec(_Strict):
    """A known consumer-group bug this scenario reproduces: `kafka-chaos zoo` runs it on the affected and on the
    fixed release and counts the runs that show the bug's signature."""
    bug: str = Field(pattern=ZOO_BUG, description="KAFKA-NNNN, librdkafka#NNNN, or unreported:NAME for a bug not "
                                                  "reported upstream yet, whose report is docs/upstream/NAME.md")
    upstream: str = Field(description="the issue's address; for an unreported bug its report, docs/upstream/NAME.md")
    fix: str | None = Field(None, description="the fix: its pull request or commit address (none while open)")
    swap: Literal["client", "brokers", "client_kind"] = Field(
        "client", description="what differs between the two runs: the group's client release "
        "(consumer_group.version), the brokers' (cluster.kafka_version), or, for an open bug, the client kind (the "
        "affected client against zoo.contrast's)")
    affected: str = Field(pattern=VERSION, description="a release with the bug (the file pins it)")
    fixed: str | None = Field(None, pattern=VERSION, description="the first release with the fix; none while open")
    contrast: Contrast | None = Field(None, description="with swap client_kind: the client kind run beside the "
                                      "affected one, which must never show the signature")
    status: Literal[STATUSES] = Field(description="what the nightly expects: reproduced, intermittent, "
                                                  "not_reproduced, or open (no fix upstream)")
    rate: float = Field(ge=0, lt=1, description="the share of runs on the affected release expected to show the "
                                                "signature (the nightly's binomial test); below 1, or a single "
                                                "miss would turn the nightly red")
    why: str = Field(min_length=40, description="two sentences: why the signature is the bug's mechanism")
    signature: list[Predicate] = Field(min_length=1, description="every predicate must match a row of the run")

    @model_validator(mode="after")
    def _consistent(self):
        if self.bug.startswith(UNREPORTED):
            _check_report(self)
        if (self.swap == "client_kind") != (self.contrast is not None):
            raise ValueError("contrast: swap client_kind runs the affected client against zoo.contrast's client kind; "
                             "give both or neither")
        if self.swap == "client_kind" and self.status != "open":
            raise ValueError(f"status: a client-kind contrast stands in for a fixed release, so the bug is open, "
                             f"not {self.status}; with a fix, swap the client's release")
        if self.status == "open" and (self.fixed or self.fix):
            raise ValueError("status: open means no fix upstream; remove fixed and fix")
        if self.status != "open" and not (self.fixed and self.fix):
            raise ValueError(f"fixed: status {self.status} needs the fixed release and the fix's address")
        if (self.status == "not_reproduced") != (self.rate == 0):
            raise ValueError(f"rate: {self.rate} does not fit status {self.status} (0 exactly when not_reproduced)")
        return self

    @property
    def releases(self) -> tuple[tuple[str, str], ...]:
        """(side, release) of each side the zoo runs: the affected release; then the fixed one, or the contrast's
        client kind; nothing more for an open bug without a contrast."""
        if self.contrast is not None:
            return ("affected", self.affected), ("contrast", self.contrast.client)
        return (("affected", self.affected),) + ((("fixed", self.fixed),) if self.fixed else ())

    def resolved(self, settings: dict) -> list[dict]:
        """The signature as plain dicts with every time threshold a number, from the scenario's settings (the
        scenario as run, every default filled in)."""
        return [_resolve_predicate(p.model_dump(exclude_none=True), settings, f"zoo.signature[{i}]")
                for i, p in enumerate(self.signature)]


def _check_report(zoo: ZooSpec) -> None:
    """An unreported bug has no fix, and points at its own report in the project."""
    report = f"{REPORTS}/{zoo.bug[len(UNREPORTED):]}.md"
    if zoo.upstream != report:
        raise ValueError(f"upstream: an unreported bug points at its report, {report!r}, not {zoo.upstream!r}")
    if not (ROOT / report).is_file():
        raise ValueError(f"upstream: {report} does not exist; write the report before the zoo entry")
    if zoo.status != "open":
        raise ValueError(f"status: an unreported bug has no fix upstream, so it is open, not {zoo.status}")


def _resolve_predicate(pred: dict, settings: dict, where: str) -> dict:
    pred["where"] = _resolve_where(pred.get("where") or {}, settings, f"{where}.where")
    if "after" in pred:
        after = pred["after"]
        after["where"] = _resolve_where(after.get("where") or {}, settings, f"{where}.after.where")
        after["within_ms"] = threshold(after["within_ms"], settings, f"{where}.after.within_ms")
    return pred


def _resolve_where(conditions: dict, settings: dict, where: str) -> dict:
    out = {}
    for name, cond in conditions.items():
        if isinstance(cond, dict) and len(cond) == 1 and next(iter(cond)) in ("gt", "ge", "lt", "le"):
            (op, value), = cond.items()
            out[name] = {op: threshold(value, settings, f"{where}.{name}.{op}") if name.endswith("_ms")
                         else _number(value, f"{where}.{name}.{op}")}
        else:
            out[name] = cond
    return out


def _number(value, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{where}: {value!r} is not a number")
    return value


def threshold(value, settings: dict, where: str) -> float:
    """A time threshold: 0, or '[factor *] a.dotted.setting' of the scenario, resolved to milliseconds."""
    if value == 0 and not isinstance(value, bool):
        return 0
    if not isinstance(value, str):
        raise ValueError(f"{where}: {value!r}: a time threshold must come from the scenario's own settings, e.g. "
                         f"'0.8 * consumer_group.session_timeout_ms', never a number tuned to one run")
    m = EXPRESSION.match(value)
    if not m:
        raise ValueError(f"{where}: {value!r} is not '[factor *] a.dotted.setting'")
    factor, path = float(m.group(1) or 1), m.group(2)
    node = settings
    for part in path.split("."):
        if isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            raise ValueError(f"{where}: the scenario has no setting {path!r}")
    if isinstance(node, bool) or not isinstance(node, (int, float)):
        raise ValueError(f"{where}: {path} is {node!r}, not a number")
    return factor * node
