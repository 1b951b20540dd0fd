"""A Kafka Streams group, from the harness's side (consumer_group.client: streams, or command members running a
Streams program of yours; the members' side is workloads/streams and the contract library's ChaosStreams): each
member's Streams settings, and under the streams protocol (KIP-1071) the group's own config, which the brokers hold
and the harness sets before the members start.
"""
from __future__ import annotations

from harness.scenario.schema import StreamsSpec
from workloads.config import StreamsSettings, WarmupSettings
from workloads.kinds import member_kind

STANDBYS_GROUP_CONFIG = "streams.num.standby.replicas"  # a streams group's config (KIP-1071), set by an admin


def streams_settings(group, client: str) -> StreamsSettings | None:
    """A member's Streams settings: the group's `streams` block, its defaults when none; None for another kind, and
    for a command member outside a Streams group (neither a `streams` block nor protocol: streams)."""
    kind = member_kind(client)
    if not kind.streams_block or (kind.command and group.streams is None and group.protocol != "streams"):
        return None  # a program of yours is a Streams program when the group says so
    spec = group.streams or StreamsSpec()
    warmup = None if spec.warmup is None else WarmupSettings(**spec.warmup.model_dump())
    return StreamsSettings(guarantee=spec.guarantee, standby_replicas=spec.standby_replicas, threads=spec.threads,
                           warmup=warmup)


def group_configs(group) -> dict[str, str]:
    """The configs a streams-protocol group gets before its members start (its standbys); {} for any other group."""
    if group.protocol != "streams":
        return {}
    return {STANDBYS_GROUP_CONFIG: str((group.streams or StreamsSpec()).standby_replicas)}


def group_members(plan) -> int:
    """How many members the group has when every member runs: a Streams instance is a member a stream thread."""
    group = plan.scenario.consumer_group
    return sum(s.threads if (s := streams_settings(group, m.settings.client)) else 1 for m in plan.members)


def set_group_configs(admin, group_id: str, configs: dict[str, str]) -> None:
    """The group's configs, set on the brokers before any member joins (incremental: the group's others stay)."""
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType
    resource = ConfigResource(ResourceType.GROUP, group_id, incremental_configs=[
        ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET) for name, value in configs.items()])
    for future in admin.incremental_alter_configs([resource], request_timeout=30).values():
        future.result(timeout=60)
