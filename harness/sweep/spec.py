"""A sweep file: a grid of group sizes, rebalance styles, triggers and clients, each cell one run.

Every cell is compiled into an ordinary scenario (:meth:`SweepSpec.cell_scenario`) and checked by the scenario's own
rules before anything starts: a cell the harness cannot run is one error naming the cell and the field.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from itertools import product
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from harness.bad_input import ScenarioError
from harness.input_file import Strict, read_yaml, validated
from harness.scenario import ClusterSpec, StateSpec, parse_scenario
from harness.sweep.triggers import TRIGGERS
from workloads.kinds import member_kind, sweep_clients

# How each style sets the group (the classic protocol's client-side assignor, or KIP-848's server-side one).
STYLES: dict[str, dict] = {
    "eager-range": {"protocol": "classic", "assignor": "range"},
    "cooperative-sticky": {"protocol": "classic", "assignor": "cooperative-sticky"},
    "static-cooperative-sticky": {"protocol": "classic", "assignor": "cooperative-sticky", "static_membership": True},
    "consumer-uniform": {"protocol": "consumer", "assignor": None, "remote_assignor": "uniform"},
    "consumer-range": {"protocol": "consumer", "assignor": None, "remote_assignor": "range"},
    # Kafka Streams (STREAMS_STYLES; the protocol is the client's: streams-classic, streams-kip1071): standbys, or
    # warm-up tasks
    "standby-0": {"streams": {"standby_replicas": 0}},
    "standby-1": {"streams": {"standby_replicas": 1}},
    "warm-up": {"streams": {"standby_replicas": 0, "warmup": {"max_warmup_replicas": 2, "acceptable_recovery_lag": 10_000,
                                                               "probing_rebalance_interval_ms": 60_000}}},
}
STREAMS_STYLES = ("standby-0", "standby-1", "warm-up")  # a Kafka Streams client's; the others a consumer's
Style = Literal[tuple(STYLES)]


class Grid(Strict):
    members: list[int] = Field(min_length=1, description="group sizes, e.g. [10, 50, 100, 200, 500]")
    partitions_per_member: list[int] = Field([4], min_length=1, description="partitions of the topic per member")
    styles: list[Style] = Field(min_length=1, description=f"rebalance styles: {', '.join(STYLES)}")
    triggers: list[str] = Field(min_length=1, description=", ".join(f"{t.name} ({t.about})" for t in TRIGGERS.values()))
    clients: list[str] = Field(["librdkafka"], min_length=1, description="the clients (a hosting kind's cells hosted): "
                               + ", ".join(f"{name} ({kind})" for name, (kind, _) in sweep_clients().items()))
    repeats: int = Field(3, ge=1, le=100)

    @model_validator(mode="after")
    def _known_triggers(self):
        unknown = [t for t in self.triggers if t not in TRIGGERS]
        if unknown:
            raise ValueError(f"triggers: {unknown[0]!r} is not a trigger; triggers: {', '.join(TRIGGERS)}")
        return self

    @model_validator(mode="after")
    def _known_clients(self):
        unknown = [c for c in self.clients if c not in sweep_clients()]
        if unknown:
            raise ValueError(f"clients: {unknown[0]!r} is not a client a sweep runs; clients: {', '.join(sweep_clients())}")
        return self

    @model_validator(mode="after")
    def _no_repeated_values(self):
        for name in ("members", "partitions_per_member", "styles", "triggers", "clients"):
            values = getattr(self, name)
            if len(set(values)) != len(values):
                raise ValueError(f"{name}: a value is given twice: {values}")
        return self


class CellSettings(Strict):
    """How every cell runs; recorded beside the results (they move the figures)."""
    members_per_host: int = Field(50, ge=1, le=500, description="members per host process (every cell of a hosting "
                                  "client is hosted, so that sizes compare on one way of running)")
    rate: int = Field(500, ge=1, le=20_000, description="records per second the producer writes")
    warmup_s: float = Field(20, ge=5, le=600, description="workload seconds before the trigger: the steady state "
                            "the latency is compared with")
    observe_s: float = Field(60, ge=10, le=3600, description="seconds after the trigger the figures cover (a crashed "
                             "member restarts at its end)")
    bounce_s: float = Field(3, gt=0, le=60, description="how long a bounced member is down")
    session_timeout_ms: int = Field(10_000, ge=1000, description="classic members' session.timeout.ms")
    heartbeat_interval_ms: int = Field(1_000, ge=100, description="classic members' heartbeat.interval.ms")
    metadata_refresh_ms: int = Field(2_000, ge=100, description="classic members' metadata refresh in "
                                     "partitions_add cells (the client's default is 5 minutes)")
    replication_factor: int = Field(1, ge=1, le=3)
    stable_timeout_s: float | None = Field(None, gt=0, le=7200, description="a cell's group not stable within it "
                                           "is the cell's result (default: the scenario's rule, 60 s + 0.5 s a member)")
    drain_timeout_s: float = Field(180, gt=0, le=7200)
    join_watch: bool | None = Field(None, description="librdkafka members' group debug log for an overdue join "
                                    "(the scenario's run.join_watch; default: on)")

    @model_validator(mode="after")
    def _heartbeat_below_session(self):
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise ValueError("heartbeat_interval_ms: must be below session_timeout_ms "
                             f"({self.heartbeat_interval_ms} >= {self.session_timeout_ms})")
        return self


@dataclass(frozen=True)
class Cell:
    client: str
    members: int
    partitions_per_member: int
    style: str
    trigger: str
    repeat: int

    @property
    def id(self) -> str:
        return (f"{self.client}-{self.members}m-{self.partitions_per_member}ppm-{self.style}-{self.trigger}"
                f"-r{self.repeat}")

    @property
    def partitions(self) -> int:
        return self.members * self.partitions_per_member

    def to_json(self) -> dict:
        return {"cell": self.id, "client": self.client, "members": self.members,
                "partitions_per_member": self.partitions_per_member, "partitions": self.partitions,
                "style": self.style, "trigger": self.trigger, "repeat": self.repeat}


class SweepSpec(Strict):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]{0,62}$")
    description: str = ""
    grid: Grid
    cell: CellSettings = Field(default_factory=CellSettings)
    cluster: ClusterSpec = Field(default_factory=ClusterSpec)
    state: StateSpec | None = Field(None, description="stateful members in every cell (the scenario's state block): "
                                    "the cells measure the rebuilt state too (restores, records replayed)")

    def cells(self) -> list[Cell]:
        """Every cell, smallest group first, repeats innermost-but-one: a sweep cut short has whole sizes."""
        g = self.grid
        return [Cell(client, members, ppm, style, trigger, repeat)
                for client, members, ppm, repeat, style, trigger in
                product(g.clients, sorted(g.members), sorted(g.partitions_per_member), range(1, g.repeats + 1),
                        g.styles, g.triggers)]

    def cell_name(self, cell: Cell) -> str:
        """The cell's scenario name (its run directory's): a scenario name is at most 80 characters, so the sweep's
        name is left out when it would make it longer (the cell's id is unique in its sweep)."""
        name = f"sweep-{self.name}-{cell.id}"
        return name if len(name) <= 80 else f"sweep-{cell.id}"

    def cell_scenario(self, cell: Cell) -> dict:
        """The scenario one cell runs (names made unique by the runner)."""
        s = self.cell
        kind, client_settings = sweep_clients()[cell.client]
        style = {**client_settings, **STYLES[cell.style]}
        classic = style.get("protocol", "classic") == "classic"
        hosted = {"members_per_host": min(s.members_per_host, cell.members)} if member_kind(kind).hosts else {}
        group = {"members": cell.members, **hosted, "client": kind, **style,
                 "session_timeout_ms": s.session_timeout_ms if classic else None,
                 "heartbeat_interval_ms": s.heartbeat_interval_ms if classic else None}
        if classic:
            group |= TRIGGERS[cell.trigger].classic_group(s)
        records = round(s.rate * (s.warmup_s + s.observe_s))
        return {
            "name": self.cell_name(cell),
            "description": f"sweep {self.name}: {cell.id}",
            "cluster": self.cluster.model_dump(mode="json", exclude_unset=True),
            "topic": {"partitions": cell.partitions, "replication_factor": s.replication_factor},
            "producer": {"records": records, "rate": s.rate},
            "consumer_group": group,
            "faults": [{**TRIGGERS[cell.trigger].fault(cell, s), "at_s": s.warmup_s}],
            "run": {"seed": cell.repeat, "drain_timeout_s": s.drain_timeout_s,
                    **({"stable_timeout_s": s.stable_timeout_s} if s.stable_timeout_s else {}),
                    **({"join_watch": s.join_watch} if s.join_watch is not None else {})},
            **({"state": self.state.model_dump(mode="json")} if self.state is not None else {}),
        }

    def fingerprint(self) -> str:
        """What a resumed sweep must still be: the whole file, as its settings (not its comments or layout)."""
        settings = self.model_dump(mode="json")
        for *within, name in ADDED_SINCE:  # unset, a field added later leaves the fingerprints of earlier sweeps alone
            holder = settings
            for key in within:
                holder = holder.get(key) or {}
            if name in holder and holder[name] is None:
                del holder[name]
        return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:16]


# the settings a sweep file gained after sweeps were recorded (a path in its settings): left out of the fingerprint
# while unset, so a sweep begun before them resumes
ADDED_SINCE = (("state",), ("cluster", "transaction_version"), ("cell", "join_watch"))


def parse_sweep(data: object, source: str) -> SweepSpec:
    spec = validated(SweepSpec, data, source, "a sweep file is a YAML mapping")
    for cell in spec.cells():  # each cell by the scenario's own rules, before anything starts
        try:
            parse_scenario(spec.cell_scenario(cell), f"cell {cell.id}")
        except ScenarioError as exc:
            raise ScenarioError(f"{source}: grid: {exc}") from None
    return spec


def load_sweep(path: Path) -> SweepSpec:
    path = Path(path)
    return parse_sweep(read_yaml(path, "sweep file"), str(path))
