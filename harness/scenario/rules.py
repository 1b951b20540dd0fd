"""The scenario's rules across fields: what a member kind supports, the group's size, the protocol's timings, topics
and subscriptions, the replicas a broker holds, each fault against the scenario, and the zoo block.

The schema's models (harness/scenario/schema.py) call these as they validate; each rule raises ValueError naming
its field, which the schema turns into one ScenarioError. A `group` here is a schema ConsumerGroupSpec, a `scenario`
a Scenario, a `fault` a FaultEntry (not imported: the schema imports this module).
"""
from __future__ import annotations

import re
from pathlib import Path

from faults.context import ScenarioFacts
from faults.targets import TARGET_CHECKS
from faults.triggers import MAX_REPLICAS_PER_BROKER
from harness.hosting import MAX_HOSTED_MEMBERS, MAX_PROCESS_MEMBERS, check_hosting
from harness.releases.client_versions import version_tuple
from harness.releases.kafka_release import KIP_848_GA, KIP_1071_GA, STREAMS_STATIC_AND_WARMUP
from kafkanet.features import TRANSACTION_VERSION_FROM
from harness.releases.versions import kafka_version
from workloads.command import check_command
from workloads.kinds import KINDS, member_kind, suggest

from harness.zoo.spec import Contrast, ZooSpec

DEFAULT_ASSIGNOR = "range"  # consumer_group.assignor's default
DEFAULT_GROUP_ID = "chaos-group"  # consumer_group.group_id's
STREAMS_MAX_STANDBYS = 2  # group.streams.max.standby.replicas, the brokers' default (harness/cluster/broker_config.py)


def check_group(group) -> None:
    """Every rule of a consumer_group (each member's own settings too, as a list entry overrides them)."""
    if member_kind(group.client).command:
        _command_rules(group)
    _group_size(group)
    if not isinstance(group.members, int):
        group.member_specs()  # each member's settings by every rule, its own kind's
    if _some_member_is_of(group):
        _client_rules(group)
        _protocol_rules(group)
        _streams_rules(group)
    _transaction_rules(group)
    check_output_mode(group)


TXN_OUTPUT = "txn-out"  # commit: transaction's output topic: <group id>-txn-out
TXN_MAX_TIMEOUT_MS = 900_000  # the brokers' transaction.max.timeout.ms by default


def _transaction_rules(group) -> None:
    """commit: transaction is the group's (its output topic is), with its `transaction` block only then."""
    if group.transaction is not None and group.commit != "transaction":
        raise ValueError(f"transaction: only with commit: transaction (the group commits {group.commit})")
    if not isinstance(group.members, int):
        for i, m in enumerate(group.members):
            if (m.commit == "transaction") != (group.commit == "transaction") and m.commit is not None:
                raise ValueError(f"members[{i}].commit: commit: transaction is the whole group's (its members write "
                                 "one output topic, read back as the group's deliveries); set consumer_group.commit")


def check_transaction_timeout(scenario) -> None:
    """transaction.timeout.ms above the brokers' transaction.max.timeout.ms: InitProducerId would fail."""
    group = scenario.consumer_group
    if group.commit != "transaction":
        return
    limit = int(scenario.cluster.broker_config.get("transaction.max.timeout.ms", TXN_MAX_TIMEOUT_MS))
    timeout = group.transaction.timeout_ms  # the block's defaults are filled in (_transaction_output)
    if timeout > limit:
        raise ValueError(f"consumer_group.transaction.timeout_ms: {timeout} is above the brokers' "
                         f"transaction.max.timeout.ms ({limit}); InitProducerId would refuse it")
    if scenario.state is not None:
        raise ValueError("state: a stateful member commits with its changelog flushed first; commit: transaction "
                         "keeps no state")


def _some_member_is_of(group) -> bool:
    """Whether a member runs the group's own `client` (a list entry that names its own client or command does not:
    three command members running a Streams program make no librdkafka group speaking the streams protocol)."""
    return isinstance(group.members, int) or any(m.client is None for m in group.members)


def own_output_defaults(data):
    """A kind that writes its own output topic (kinds.own_output: Kafka Streams) and commits on its own: the group's
    output and commit are the kind's; ValueError where the user set another. Before the schema validates `data` (a
    file's, or a scenario's own dump validated again: the kind's values pass)."""
    if isinstance(data, dict) and data.get("commit") == "transaction":
        return _transaction_output(data)
    if not isinstance(data, dict) or data.get("client") not in KINDS or KINDS[data["client"]].own_output is None:
        return data
    kind = KINDS[data["client"]]
    output, topic = data.get("output"), own_output_topic(data.get("group_id") or DEFAULT_GROUP_ID, kind)
    if output is not None and (not isinstance(output, dict) or output.get("topic") != topic):
        raise ValueError(f"output: the {kind.title} writes its own output topic ({topic}); leave output out")
    if data.get("commit") not in (None, *kind.commit_modes):
        raise ValueError(f"commit: the {kind.title} commits on its own ({', '.join(kind.commit_modes)}); leave commit "
                         "out")
    if data.get("assignor") not in (None, DEFAULT_ASSIGNOR) and kind.own_assignor:
        raise ValueError(f"assignor: the {kind.title} assigns with its own assignor ({kind.own_assignor}); leave "
                         "assignor out")
    return {**data, "commit": kind.commit_modes[0],
            "output": output or {"topic": topic, "source": "headers", "isolation": "read_committed"}}


def _transaction_output(data: dict) -> dict:
    """commit: transaction: the members write <group id>-txn-out, read back read_committed."""
    output, topic = data.get("output"), f"{data.get('group_id') or DEFAULT_GROUP_ID}-{TXN_OUTPUT}"
    if output is not None and (not isinstance(output, dict) or output.get("topic") != topic):
        raise ValueError(f"output: a transactional member writes its own output topic ({topic}); leave output out")
    return {**data, "output": output or {"topic": topic, "source": "headers", "isolation": "read_committed"},
            "transaction": data.get("transaction") or {}}


def derived_output_topics(group_id: str) -> set[str]:
    """The output topics the harness names after the group (a transactional member's, a kind's own): a scenario
    given a new group id derives them again."""
    return {f"{group_id}-{TXN_OUTPUT}"} | {own_output_topic(group_id, k) for k in KINDS.values() if k.own_output}


def own_output_topic(group_id: str, kind) -> str:
    """A kind's own output topic: the group's, so that two runs on one cluster never share it."""
    return f"{group_id}-{kind.own_output}"


def _streams_rules(group) -> None:
    """The streams block belongs to a Streams group; what the streams protocol (KIP-1071) takes from the broker."""
    kind = member_kind(group.client)
    if group.streams is not None and not kind.streams_block:
        raise ValueError(f"streams: only for client: streams or a command member (your Streams program); the "
                         f"{kind.title} is no Kafka Streams member")
    if group.protocol != "streams" or group.streams is None:
        return
    if group.streams.standby_replicas > STREAMS_MAX_STANDBYS:
        raise ValueError(f"streams.standby_replicas: at most {STREAMS_MAX_STANDBYS} under protocol: streams (the "
                         f"brokers' group.streams.max.standby.replicas), got {group.streams.standby_replicas}")


def _group_size(group) -> None:
    """A group of a size the harness runs: one process a member, or in member hosts this machine can hold."""
    total = group.member_count
    if group.members_per_host is None and not 1 <= total <= MAX_PROCESS_MEMBERS:
        raise ValueError(f"members: a group of 1 to {MAX_PROCESS_MEMBERS} members, one process each, got {total}; "
                         "set members_per_host to run a larger group in member hosts")
    if not 1 <= total <= MAX_HOSTED_MEMBERS:
        raise ValueError(f"members: a group of 1 to {MAX_HOSTED_MEMBERS} members, got {total}")
    if group.members_per_host is not None:
        _check_hosting(group)
    elif group.start_spacing_ms is not None:
        raise ValueError("start_spacing_ms: only hosted members (members_per_host) start spaced; a member of its own "
                         "process starts with its process")


def _check_hosting(group, stateful: bool = False) -> None:
    """A hosted group against the machine (harness/hosting.py): its kinds, its releases, its members a host."""
    specs = [] if isinstance(group.members, int) else group.members
    check_hosting({group.client, *(m.client for m in specs if m.client)}, any(m.version for m in specs),
                  group.member_count, group.members_per_host, stateful=stateful)


def _command_rules(group) -> None:
    """A command member: a command that can start, and none of the settings only the harness's own members take."""
    if group.command is None:
        raise ValueError("command: a command member needs the program to run (an argv list, or a string for sh -c)")
    try:
        check_command(group.command, Path(group.workdir or "."))
    except ValueError as exc:
        raise ValueError(f"command: {exc}") from None
    refused = [("version", group.version is not None, "pins no client release: your program brings its own client"),
               ("members_per_host", group.members_per_host is not None,
                "is never hosted: each runs as a program of its own, on a lane of its own"),
               ("processing", group.has_processing_delay, "does its own work: the harness has no delay to add")]
    for field, wrong, why in refused:
        if wrong:
            raise ValueError(f"{field}: a command member {why}")


def check_output_mode(group) -> None:
    """Output-topic mode is the group's: every member a command member (a group mixing modes cannot be judged)."""
    if group.output is None:
        return
    for i, spec in enumerate(group.member_specs()):
        if not (member_kind(spec.client).command or member_kind(spec.client).own_output or spec.commit == "transaction"):
            raise ValueError(f"output: every member of an output-topic group is a command member; member-{i + 1} is "
                             f"the {member_kind(spec.client).title} (a group mixing modes cannot be judged)")


def _client_rules(group) -> None:
    """What the group's member kind supports (workloads/kinds.py), and a subscription that can work."""
    kind = member_kind(group.client)
    if group.assignor == "sticky" and not kind.eager_sticky:
        raise ValueError(f"assignor: the {kind.title} has no eager 'sticky' assignor; use cooperative-sticky"
                         + suggest(lambda k: k.eager_sticky, kind, lead=", or"))
    refused = [("commit", group.commit not in kind.commit_modes,
                f"commits {' or '.join(kind.commit_modes)} only, not {group.commit}", lambda k: group.commit in k.commit_modes),
               ("processing", group.has_processing_delay and not kind.processing_delay,
                "has no processing delay", lambda k: k.processing_delay),
               ("pattern", group.pattern is not None and not kind.pattern,
                "subscribes to topics by name, not by pattern", lambda k: k.pattern),
               ("topics", group.topics is not None and not kind.topic_choice,
                "subscribes to the run's one topic", lambda k: k.topic_choice),
               ("version", group.version is not None and not kind.pins_version,
                f"runs the {kind.library} of the {kind.unpinned}' release, no other", lambda k: k.pins_version),
               ("admin_probe", group.admin_probe is not None and not kind.admin_probe,
                "has no confluent-kafka AdminClient for the probe to run", lambda k: k.admin_probe)]
    for field, wrong, what, can in refused:
        if wrong:
            raise ValueError(f"{field}: the {kind.title} {what}" + suggest(can, kind))
    if group.pattern is not None and group.topics is not None:
        raise ValueError("topics: a member subscribes by pattern or by topic names, not both")
    if group.pattern is not None:
        try:
            re.compile(group.pattern)
        except re.error as exc:
            raise ValueError(f"pattern: not a regular expression: {exc}") from None


def _protocol_rules(group) -> None:
    """A protocol the kind speaks; the classic protocol's timings and assignor, or none of them under KIP-848's and
    KIP-1071's."""
    kind = member_kind(group.client)
    if group.protocol not in kind.protocols:
        raise ValueError(f"protocol: the {kind.title} speaks {' or '.join(kind.protocols)}, not {group.protocol}"
                         + suggest(lambda k: group.protocol in k.protocols, kind))
    if group.protocol in ("consumer", "streams"):
        # KIP-848 and KIP-1071: the broker owns timing and assignment; librdkafka rejects these at construction.
        use = "; use remote_assignor" if group.protocol == "consumer" else ""
        for field in ("session_timeout_ms", "heartbeat_interval_ms", "assignor"):
            if getattr(group, field) is not None and field in group.model_fields_set:
                raise ValueError(f"{field}: not allowed with protocol: {group.protocol} (the broker sets it{use})")
    else:
        if group.remote_assignor is not None:
            raise ValueError("remote_assignor: only with protocol: consumer")
        if group.session_timeout_ms is None or group.heartbeat_interval_ms is None or (
                group.assignor is None and kind.own_assignor is None):
            raise ValueError("session_timeout_ms, heartbeat_interval_ms and assignor are required with protocol: classic")
        if group.max_poll_interval_ms < group.session_timeout_ms:
            raise ValueError(f"max_poll_interval_ms: must be at least session_timeout_ms ({group.session_timeout_ms}), "
                             f"got {group.max_poll_interval_ms} (both clients refuse it)")
        if group.heartbeat_interval_ms >= group.session_timeout_ms:
            raise ValueError(
                f"heartbeat_interval_ms: must be below session_timeout_ms ({group.session_timeout_ms}), "
                f"got {group.heartbeat_interval_ms}")


def check_scenario(scenario) -> None:
    """The scenario's fields against each other: topics, releases, subscriptions, replicas, every fault, the zoo block."""
    names = [t.name for t in scenario.topics]
    for i, t in enumerate(scenario.topics):
        where = "topic" if len(scenario.topics) == 1 else f"topics[{i}]"
        if t.replication_factor > scenario.cluster.brokers:
            raise ValueError(f"{where}.replication_factor: {t.replication_factor} is more than cluster.brokers ({scenario.cluster.brokers})")
        if t.name in names[:i]:
            raise ValueError(f"{where}.name: {t.name!r} is listed twice")
        if scenario.consumer_group.pattern is not None and not re.fullmatch(scenario.consumer_group.pattern, t.name):
            raise ValueError(f"consumer_group.pattern: {where} {t.name!r} does not match it, so its records "
                             "would never be consumed")
    release = scenario.cluster.kafka_version
    if scenario.consumer_group.protocol == "consumer" and release and version_tuple(release)[:2] < KIP_848_GA:
        raise ValueError(f"consumer_group.protocol: the consumer protocol (KIP-848) is generally available from "
                         f"Kafka 4.0; cluster.kafka_version {release} has it only as an early-access preview")
    if scenario.consumer_group.protocol == "streams":
        _streams_protocol_rules(scenario.consumer_group, kafka_version(release))
    if scenario.cluster.transaction_version is not None and version_tuple(kafka_version(release))[:2] < TRANSACTION_VERSION_FROM:
        raise ValueError(f"cluster.transaction_version: transaction.version is a feature level from Kafka 4.0 "
                         f"(KIP-890); the brokers run {kafka_version(release)} (cluster.kafka_version)")
    for kind in map(member_kind, sorted({spec.client for spec in scenario.consumer_group.member_specs()})):
        if len(scenario.topics) > 1 and not kind.topic_choice:
            raise ValueError(f"topics: the {kind.title} subscribes to one topic" + suggest(lambda k: k.topic_choice, kind))
    output = scenario.consumer_group.output
    if output is not None and output.topic in names:
        raise ValueError(f"consumer_group.output.topic: {output.topic!r} is one of the run's topics; the output "
                         "topic is the program's own")
    if output is not None and output.replication_factor > scenario.cluster.brokers:
        raise ValueError(f"consumer_group.output.replication_factor: {output.replication_factor} is more than "
                         f"cluster.brokers ({scenario.cluster.brokers})")
    _check_subscriptions(scenario.consumer_group, names)
    if scenario.state is not None:
        _state_rules(scenario)
    check_transaction_timeout(scenario)
    _check_replicas(scenario)
    facts = scenario.facts()
    for i, fault in enumerate(scenario.faults):
        _check_fault(fault, facts, f"faults[{i}]")
    for i, fault in enumerate(scenario.random_faults.menu() if scenario.random_faults else []):
        _check_fault(fault, facts, f"random_faults.faults[{i}]")
    scenario.random_entries()  # a random schedule that would not end is refused here
    if scenario.zoo is not None:
        _check_zoo(scenario.zoo, scenario)
    if scenario.run.rpc_proxy is False and scenario.has_rpc_faults:
        raise ValueError("run.rpc_proxy: false, but an rpc fault acts in that proxy; remove the rpc faults or the setting")
    if scenario.run.rpc_proxy is False and scenario.aims_at_txn_coordinators:
        raise ValueError("run.rpc_proxy: false, but a txn-coordinator target is found from the transactional ids the "
                         "members send through that proxy; remove the setting or aim at a broker by name")
    if scenario.run.rpc_proxy is False and scenario.cuts_hosted_members:
        raise ValueError("run.rpc_proxy: false, but a member_cut of a hosted member cuts it off in that proxy, by "
                         "its client.id (it shares its host's lane); remove the setting")


def _streams_protocol_rules(group, release: str) -> None:
    """What the brokers' release has of the streams protocol (KIP-1071): the protocol from 4.2, static membership and
    warm-up tasks from 4.4."""
    version, field = version_tuple(release)[:2], "cluster.kafka_version"
    if version < KIP_1071_GA:
        raise ValueError(f"consumer_group.protocol: the streams protocol (KIP-1071) is on by default from Kafka "
                         f"{'.'.join(map(str, KIP_1071_GA))}; the brokers run {release} ({field})")
    for name, asked in (("static_membership", group.static_membership),
                        ("streams.warmup", group.streams is not None and group.streams.warmup is not None)):
        if asked and version < STREAMS_STATIC_AND_WARMUP:
            raise ValueError(f"consumer_group.{name}: the streams protocol has it from Kafka "
                             f"{'.'.join(map(str, STREAMS_STATIC_AND_WARMUP))}; the brokers run {release} ({field})")


def _check_zoo(zoo: ZooSpec, scenario) -> None:
    from analysis.api import EVENT_KINDS, REGISTRY
    group = scenario.consumer_group
    for i, p in enumerate(zoo.signature):
        if p.anomaly is not None and p.anomaly not in REGISTRY:
            raise ValueError(f"zoo.signature[{i}].anomaly: {p.anomaly!r} is not a check; checks: {', '.join(REGISTRY)}")
        kinds = [(f"zoo.signature[{i}].event", p.event)] + ([(f"zoo.signature[{i}].after.event", p.after.event)] if p.after else []) \
            + [(f"zoo.signature[{i}].never_after", k) for k in p.never_after]
        for where, kind in kinds:
            if kind is not None and kind not in EVENT_KINDS:
                raise ValueError(f"{where}: {kind!r} is not an event kind; kinds: {', '.join(EVENT_KINDS)}")
        for where, kind in kinds[:2 if p.after else 1]:  # an event the signature waits for: some member writes it
            if kind is not None and kind not in _events_written(scenario):
                raise ValueError(f"{where}: no member of this group writes {kind!r} events (consumer_group.client)")
    if zoo.contrast is not None:
        _check_contrast(zoo.contrast, group)
    if zoo.swap in ("client", "client_kind"):
        if not isinstance(group.members, int) and any(m.version for m in group.members):
            raise ValueError("zoo: the zoo swaps the group's one client release; give consumer_group.version, not per-member versions")
        pinned, field = group.version, "consumer_group.version"
    else:
        pinned, field = scenario.cluster.kafka_version, "cluster.kafka_version"
    if pinned != zoo.affected:
        raise ValueError(f"zoo.affected: the file must pin the affected release: {field} is {pinned!r}, "
                         f"zoo.affected {zoo.affected!r}")
    if zoo.fixed and version_tuple(zoo.fixed) <= version_tuple(zoo.affected):
        raise ValueError(f"zoo.fixed: {zoo.fixed} is not later than zoo.affected {zoo.affected}")
    zoo.resolved(scenario.settings())  # every threshold names a setting of this scenario


def _events_written(scenario) -> set[str]:
    """The event kinds the run's members (their kinds declare them) and its admin probe write."""
    written = set().union(*(member_kind(spec.client).events for spec in scenario.consumer_group.member_specs()))
    return written | ({"admin_call"} if scenario.consumer_group.admin_probe else set())


def _check_contrast(contrast: Contrast, group) -> None:
    """The contrast swaps the group's one client kind for another the harness has."""
    if contrast.client not in KINDS:
        raise ValueError(f"zoo.contrast.client: {contrast.client!r} is not a client kind; kinds: {', '.join(KINDS)}")
    if contrast.client == group.client:
        raise ValueError(f"zoo.contrast.client: {contrast.client} is the group's own client (consumer_group.client); "
                         f"the contrast runs another client kind")
    if not isinstance(group.members, int) and any(m.client for m in group.members):
        raise ValueError("zoo.contrast: the contrast swaps the group's one client kind; give consumer_group.client, "
                         "not per-member clients")


def _subscribed_topics(group) -> list[tuple[str, list[str] | None]]:
    """(the field, the topic names it subscribes to, None: all of the run's) for the group and each member spec."""
    fields = [("consumer_group.topics", group.topics)]
    if not isinstance(group.members, int):
        fields += [(f"consumer_group.members[{i}].topics", m.topics) for i, m in enumerate(group.members)]
    return fields


def _check_subscriptions(group, run_topics: list[str]) -> None:
    """Each subscribed name is one of the run's topics, and every topic has a member at the start to consume it."""
    for where, topics in _subscribed_topics(group):
        for name in topics or []:
            if name not in run_topics:
                raise ValueError(f"{where}: {name!r} is not a topic of the run ({', '.join(run_topics)})")
    subscribed = [spec.topics for spec in group.member_specs()]
    if group.pattern is None and None not in subscribed:
        unread = [name for name in run_topics if not any(name in topics for topics in subscribed)]
        if unread:
            where = "consumer_group.topics" if isinstance(group.members, int) else "consumer_group.members"
            raise ValueError(f"{where}: no member subscribes to topic {unread[0]!r}, so its records would never be consumed")


def _state_rules(scenario) -> None:
    """What a stateful run refuses: anything that moves a key to another partition or needs a second changelog
    (several topics, a pattern, a subscription list, added partitions or topics), a commit mode with no commit to
    flush the changelog before, and a member kind that keeps no state."""
    group = scenario.consumer_group
    if len(scenario.topics) > 1:
        raise ValueError("topics: with state, a run has one input topic (each topic would need a changelog of its own)")
    if group.pattern is not None:
        raise ValueError("consumer_group.pattern: with state, the members subscribe to the one topic by name")
    for i, spec in _group_and_entries(group):
        where = "consumer_group" if i is None else f"consumer_group.members[{i}]"
        if spec.topics is not None:
            raise ValueError(f"{where}.topics: with state, the members subscribe to the one topic")
        kind = member_kind(spec.client)
        if not kind.keeps_state:
            raise ValueError(f"{where}.client: the {kind.title} keeps no state" + suggest(lambda k: k.keeps_state, kind))
        if kind.state_store is None and spec.commit in ("auto", "before_process"):
            raise ValueError(f"{where}.commit: {spec.commit} has no commit point to flush the changelog before; "
                             "with state, use sync or async")
        if kind.state_store is not None and scenario.state.keep_on_revoke:
            raise ValueError(f"state.keep_on_revoke: the {kind.title} keeps its state in its own store, whose "
                             "changelog it creates and restores as Kafka Streams does; leave it out")
    for where, fault in _fault_entries(scenario):
        if fault.fault_class.group_change == "partitions_added":
            raise ValueError(f"{where}.kind: {fault.kind} cannot run with state: added partitions move keys to "
                             "other partitions, and the changelog keeps the partitions it was created with")
    if group.members_per_host is not None:  # three clients a member: the machine's bounds again, stateful
        try:
            _check_hosting(group, stateful=True)
        except ValueError as exc:
            raise ValueError(f"consumer_group.{exc}") from None
    output = group.output
    if output is not None and output.topic == scenario.changelog.name:
        raise ValueError(f"consumer_group.output.topic: {output.topic!r} is the state's changelog topic")


def _group_and_entries(group):
    """The group's own settings (None), then each member list entry's (its index), as the members run them."""
    yield None, group
    if not isinstance(group.members, int):
        for i in range(len(group.members)):
            yield i, group.entry_spec(i)


def _fault_entries(scenario):
    yield from ((f"faults[{i}]", f) for i, f in enumerate(scenario.faults))
    menu = scenario.random_faults.menu() if scenario.random_faults else []
    yield from ((f"random_faults.faults[{i}]", f) for i, f in enumerate(menu))


def _check_replicas(scenario) -> None:
    """The replicas a broker holds at the most, every topic at its largest (created at the start or by topic_create,
    grown by partitions_add), against what one broker of this harness was measured to hold."""
    entries = list(scenario.faults) + (scenario.random_faults.menu() if scenario.random_faults else [])
    sizes = {t.name: (t.partitions, t.replication_factor) for t in scenario.created_topics()}
    for f in entries:
        if f.kind == "topic_create":
            sizes[f.target] = (f.params.partitions, f.params.replication_factor)
    for f in entries:
        if f.kind == "partitions_add":
            name = scenario.topic.name if f.target == "topic" else f.target
            partitions, rf = sizes.get(name, (0, 1))
            sizes[name] = (max(partitions, f.params.partitions), rf)
    brokers = scenario.cluster.brokers
    per_broker = -(-sum(p * rf for p, rf in sizes.values()) // brokers)
    if per_broker > MAX_REPLICAS_PER_BROKER:
        where = "topic" if len(scenario.topics) == 1 else "topics"
        raise ValueError(f"{where}: {per_broker} partition replicas a broker ({sum(p for p, _ in sizes.values())} "
                         f"partitions at their replication factors on {brokers} brokers, every topic at its largest), "
                         f"above the {MAX_REPLICAS_PER_BROKER} one broker was measured to hold (BENCHMARKS.md); use "
                         "fewer partitions, a lower replication_factor or more cluster.brokers")


def _check_fault(fault, facts: ScenarioFacts, where: str) -> None:
    try:
        check_target = TARGET_CHECKS.get(fault.fault_class.target_kind)
        if check_target:
            check_target(fault.target, facts)
        _check_member_kinds_take(fault, facts)
        fault.params.check(facts, fault.target)
    except ValueError as exc:
        raise ValueError(f"{where}.{exc}") from None


def _check_member_kinds_take(fault, facts: ScenarioFacts) -> None:
    """A fault on a member (a named one, or any of the group's) that the member's kind cannot take."""
    if fault.fault_class.target_kind != "member":
        return
    names = [facts.member_kinds[fault.target]] if fault.target in facts.member_kinds else set(facts.member_kinds.values())
    for kind in map(member_kind, sorted(names)):
        why = kind.refused_faults.get(fault.kind)
        if why:
            raise ValueError(f"kind: the {kind.title} cannot take {fault.kind}: {why}"
                             + suggest(lambda k: fault.kind not in k.refused_faults, kind))


