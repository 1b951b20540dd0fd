"""A run's plan: the scenario compiled, before anything starts, into everything the run will do.

The harness runs the plan, not the scenario: the client releases resolved, every member with its lane,
settings and group.instance.id (and those a member_join may start on a spare lane), the admin probe, the
producer, the topics, and the fault schedule expanded (the seeded random faults drawn). A target that
names a role (the coordinator, a partition's leader, a random broker or member) stays that role,
`target_resolved_at: fire`: who holds it is looked up when the fault fires. Written as plan.json in the
run directory; `kafka-chaos validate --plan` prints it and `kafka-chaos run --plan plan.json` runs it again.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError, field_serializer, model_validator

from faults.targets import is_role
from harness.hosting import host_of
from harness.bad_input import ScenarioError
from harness.input_file import Strict, located, read_text, validated
from harness.progress import say
from harness.releases.client_jars import java_client
from harness.releases.client_versions import ClientVersionError, member_client
from harness.releases.versions import kafka_image
from harness.scenario import (ADMIN_PROBE, FAULT_ENTRY, PRODUCER, AdminProbeSpec, ConsumerGroupSpec, FaultEntry,
                              ProcessingSpec, ProducerSpec, Scenario, TopicSpec, parse_scenario)
from workloads.config import ClientRelease
from workloads.kinds import member_kind, suggest
from workloads.security import security_config

PLAN_FILE = "plan.json"
FORMAT = 1


class MemberSettings(Strict):
    """One member's consumer settings: the scenario's consumer_group (or its members[i] entry), as it runs."""
    client: str  # a member kind (workloads/kinds.py)
    version: str | None  # the client release asked for (None: the harness's own); its key in Plan.clients
    protocol: Literal["classic", "consumer", "streams"]
    assignor: str | None
    remote_assignor: str | None
    session_timeout_ms: int | None
    heartbeat_interval_ms: int | None
    max_poll_interval_ms: int
    commit: str
    auto_commit_interval_ms: int
    processing: ProcessingSpec
    batch_size: int
    pattern: str | None
    topics: tuple[str, ...] | None  # subscribed to only these of the run's topics; None: all of them
    metadata_refresh_ms: int | None
    static_membership: bool
    config: dict[str, str | int | bool]
    command: list[str] | str | None = None  # a command member's program (workloads/command.py)
    workdir: str | None = None  # the folder it starts in (absolute)
    start_timeout_s: int | None = None  # it logs `started` within this (None: 60 s)

    @classmethod
    def of(cls, spec: ConsumerGroupSpec) -> "MemberSettings":
        group = spec.effective()
        return cls(**{name: getattr(group, name) for name in cls.model_fields})


class PlannedMember(Strict):
    name: str
    lane: str
    settings: MemberSettings
    instance_id: str | None  # group.instance.id: static members only
    host: str | None = None  # the member host it runs in (consumer_group.members_per_host); None: its own process


def instance_id(index: int, settings: MemberSettings) -> str | None:
    """member-<index>'s group.instance.id (a duplicate of it takes the same one)."""
    return f"instance-{index}" if settings.static_membership else None


def planned_member(index: int, settings: MemberSettings, members_per_host: int | None = None) -> PlannedMember:
    """member-<index> on its own lane, so a fault can hit one member's traffic; a hosted one on its host's lane
    (a fault on one of them acts through the request-aware proxy, by client.id)."""
    name = f"member-{index}"
    host = host_of(index, members_per_host) if members_per_host else None
    return PlannedMember(name=name, lane=host or name, settings=settings, instance_id=instance_id(index, settings),
                         host=host)


class PlannedClient(Strict):
    """A client release the members use: resolved (how it runs on this machine), or `pending`, saying what
    resolving it needs (a download, the Kafka image), when the plan was compiled offline."""
    client: str  # a member kind (workloads/kinds.py)
    version: str | None
    release: ClientRelease | None
    pending: str | None = None


class PlannedProbe(Strict):
    name: str
    lane: str
    client: Literal["librdkafka"]
    version: str | None
    settings: AdminProbeSpec


class PlannedProducer(Strict):
    name: str
    lane: str
    settings: ProducerSpec


class PlannedFault(Strict):
    """One fault of the schedule: the kind's own parameters apart, every one filled in."""
    kind: str
    target: str
    target_resolved_at: Literal["plan", "fire"]  # fire: a role, looked up when the fault fires
    at_s: float
    duration_s: float
    params: dict[str, Any]

    @classmethod
    def of(cls, entry: FaultEntry) -> "PlannedFault":
        return cls(kind=entry.kind, target=entry.target, target_resolved_at=_resolved_at(entry.target),
                   at_s=entry.at_s, duration_s=entry.duration_s, params=entry.params.model_dump(mode="json"))

    @model_validator(mode="after")
    def _a_fault_entry(self):
        try:
            self.entry()
        except ValidationError as exc:
            raise ValueError(located(exc.errors()[0])) from None
        if self.target_resolved_at != _resolved_at(self.target):
            raise ValueError(f"target_resolved_at: {self.target!r} is resolved at {_resolved_at(self.target)}")
        return self

    def entry(self) -> FaultEntry:
        """As a scenario's fault entry (what the fault kind builds from; schedule.json's form)."""
        return FAULT_ENTRY.validate_python({"kind": self.kind, "target": self.target, "at_s": self.at_s,
                                            "duration_s": self.duration_s, **self.params})


def _resolved_at(target: str) -> Literal["plan", "fire"]:
    return "fire" if is_role(target) else "plan"


class Plan(Strict):
    format: Literal[1] = FORMAT
    scenario: Scenario  # what it was compiled from, every default filled in (the run's scenario.yaml)
    group_id: str
    clients: tuple[PlannedClient, ...]
    members: tuple[PlannedMember, ...]  # started with the run
    spares: tuple[PlannedMember, ...]   # on the spare lanes: what a member_join starts (the group's settings)
    entries: tuple[MemberSettings, ...]  # consumer_group.members[i] of a mixed group: a member_join `like: i`
    admin_probe: PlannedProbe | None
    producer: PlannedProducer
    topics: tuple[TopicSpec, ...]
    rpc_proxy: bool  # every member lane through the request-aware proxy that rpc faults act in
    schedule: tuple[PlannedFault, ...]

    @field_serializer("scenario")
    def _as_run(self, scenario: Scenario) -> dict:
        return scenario.settings()

    @property
    def lanes(self) -> tuple[str, ...]:
        """Every workload client's lane the cluster is to have: members, spares, producer, admin probe."""
        return self.member_lanes + tuple(m.lane for m in self.spares) + self.starting_lanes[len(self.member_lanes):]

    @property
    def starting_lanes(self) -> tuple[str, ...]:
        """The lanes of the clients that start with the run (no spares)."""
        probe = (self.admin_probe.lane,) if self.admin_probe else ()
        return self.member_lanes + (self.producer.lane,) + probe

    @property
    def member_lanes(self) -> tuple[str, ...]:
        """The lanes the members start on, each once (a host's members share its lane)."""
        return tuple(dict.fromkeys(m.lane for m in self.members))

    @property
    def hosts(self) -> dict[str, tuple[PlannedMember, ...]]:
        """Each member host and the members it runs, in order (empty: one process a member)."""
        hosts: dict[str, list[PlannedMember]] = {}
        for member in self.members:
            if member.host is not None:
                hosts.setdefault(member.host, []).append(member)
        return {host: tuple(members) for host, members in hosts.items()}

    def member_field(self, name: str) -> str:
        """The scenario field that declares member `name`: consumer_group.members[i] of a mixed group, else
        consumer_group (a spare's, a duplicate's)."""
        group = self.scenario.consumer_group
        index = int(name.rsplit("-", 1)[1]) if name.count("-") == 1 and name.rsplit("-", 1)[1].isdigit() else 0
        if isinstance(group.members, list) and 1 <= index <= group.member_count:
            first = 0
            for i, entry in enumerate(group.members):
                first += entry.count
                if index <= first:
                    return f"consumer_group.members[{i}]"
        return "consumer_group"

    def release(self, client: str, version: str | None) -> ClientRelease:
        found = [c for c in self.clients if (c.client, c.version) == (client, version)]
        if not found or found[0].release is None:
            raise ScenarioError(f"clients: {client} {version or '(the harness release)'} is not resolved"
                                f"{': ' + found[0].pending if found else ''}")
        return found[0].release

    def to_json(self) -> dict:
        return self.model_dump(mode="json")


def compile_plan(scenario: Scenario, offline: bool = False) -> Plan:
    """The whole run, before anything starts; `offline`: resolve no client release that would need a download
    or the Kafka image (it stays pending)."""
    scenario = parse_scenario(scenario.settings(), "scenario")  # as plan.json will read it back
    for warning in scenario.warnings():
        say(f"warning: {warning}")
    group = scenario.consumer_group
    first_spare = group.member_count + 1
    entries = () if isinstance(group.members, int) else tuple(
        MemberSettings.of(group.entry_spec(i)) for i in range(len(group.members)))
    probe = group.admin_probe and PlannedProbe(name=ADMIN_PROBE, lane=ADMIN_PROBE, client=group.client,
                                               version=group.version, settings=group.admin_probe)
    return Plan(
        scenario=scenario, group_id=group.group_id, clients=resolve_clients(scenario, offline),
        members=tuple(planned_member(i, MemberSettings.of(spec), group.members_per_host)
                      for i, spec in enumerate(group.member_specs(), 1)),
        spares=tuple(planned_member(i, MemberSettings.of(group))
                     for i in range(first_spare, first_spare + scenario.cluster.spare_lanes)),
        entries=entries, admin_probe=probe, producer=PlannedProducer(name=PRODUCER, lane=PRODUCER, settings=scenario.producer),
        topics=tuple(scenario.topics), rpc_proxy=scenario.proxies_member_lanes,
        schedule=tuple(PlannedFault.of(entry) for entry in scenario.schedule()))


def resolve_clients(scenario: Scenario, offline: bool = False) -> tuple[PlannedClient, ...]:
    """Every (client, version) the group's members use, installed or resolved on first use (cached), and
    checked against what the scenario asks of it; an error names the scenario's field."""
    group, out = scenario.consumer_group, {}
    for where, spec in _version_fields(group):
        kind = member_kind(spec.client)
        if not kind.security and security_config():
            raise ScenarioError(f"consumer_group.client: the {kind.title} does not take the KAFKA_CHAOS_CLIENT_* "
                                "security settings" + suggest(lambda k: k.security, kind))
        if (spec.client, spec.version) not in out:
            out[(spec.client, spec.version)] = _resolved(where, spec.client, spec.version, scenario.cluster.kafka_version,
                                                         kip_848=spec.protocol == "consumer",
                                                         static=spec.static_membership, offline=offline)
    return tuple(out.values())


def _version_fields(group: ConsumerGroupSpec) -> list[tuple[str, ConsumerGroupSpec]]:
    """(the scenario field that names the release, the settings of the members it applies to)."""
    fields = [("consumer_group.version", group)]  # also the members that join later
    if isinstance(group.members, list):
        specs, first = group.member_specs(), 0
        for i, entry in enumerate(group.members):
            fields.append((f"consumer_group.members[{i}].version", specs[first]))
            first += entry.count
    return fields


def _resolved(where: str, client: str, asked: str | None, kafka_version: str | None, *, kip_848: bool, static: bool,
              offline: bool) -> PlannedClient:
    """One release, resolved (or pending, offline) and checked against what its members ask of it: the KIP-848
    protocol, static membership."""
    # an unpinned member whose options vary by release (VerifiableConsumer) is resolved as the brokers' release by
    # its number, so that its options are read: another cluster.kafka_version's from Maven
    kind = member_kind(client)
    version = asked or (kafka_version if kind.options_by_release else None)
    try:
        release = member_client(client, version, lambda: java_client(kafka_image()), log=say, offline=offline)
    except ClientVersionError as exc:
        raise ScenarioError(f"{where}: {exc}") from None
    if release is not None and kind.options_by_release:
        if kip_848 and not release.group_protocol_option:
            raise ScenarioError(f"{where}: VerifiableConsumer {asked} has no --group-protocol (KIP-848's "
                                "consumer protocol came to it in 3.7)")
        if static and not release.group_instance_id_option:
            raise ScenarioError(f"{where.rsplit('.', 1)[0]}.static_membership: VerifiableConsumer {asked} has "
                                "no --group-instance-id (static membership, KIP-345, came to it in 2.3)")
    return PlannedClient(client=client, version=asked, release=release,
                         pending=None if release else _pending(client, version))


def _pending(client: str, version: str | None) -> str:
    if member_kind(client).library == "librdkafka":
        return f"confluent-kafka {version}: installed from the package registry when the run starts (not cached)"
    if version is None:
        return "the brokers' own Java client: read from the Kafka image when the run starts"
    return f"kafka-clients {version}: resolved from Maven Central when the run starts (not cached)"


def resolve_again(plan: Plan, source: str) -> Plan:
    """A plan from a file, with its client releases resolved on this machine (interpreters and classpaths are
    local; a plan compiled offline has some pending): the release each member asked for, checked as it runs."""
    settings = [*(m.settings for m in (*plan.members, *plan.spares)), *plan.entries]
    kafka_version = plan.scenario.cluster.kafka_version
    clients = []
    for i, client in enumerate(plan.clients):
        users = [s for s in settings if (s.client, s.version) == (client.client, client.version)]
        clients.append(_resolved(f"{source}: clients[{i}].version", client.client, client.version, kafka_version,
                                 kip_848=any(s.protocol == "consumer" for s in users),
                                 static=any(s.static_membership for s in users), offline=False))
    return plan.model_copy(update={"clients": tuple(clients)})


def load_plan(path: Path) -> Plan:
    """A plan.json a run wrote (or `validate --plan` printed); ScenarioError, one line naming the field, when not."""
    text = read_text(path, "plan")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ScenarioError(f"{path}: the plan is not JSON: {exc}") from None
    plan = validated(Plan, data, str(path), f"a plan is a JSON object (a run's {PLAN_FILE})")
    _check_schedule(plan, path)
    return plan


def _check_schedule(plan: Plan, path: Path) -> None:
    """Each fault's target and parameters checked against the scenario, as a replayed schedule.json is."""
    try:
        plan.scenario.with_schedule([f.entry().model_dump(mode="json") for f in plan.schedule], "plan")
    except ScenarioError as exc:
        raise ScenarioError(f"{path}: {str(exc).removeprefix('plan: ').replace('faults[', 'schedule[', 1)}") from None
