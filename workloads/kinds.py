"""The member kinds: every kind of consumer-group member the harness can run (a scenario's consumer_group.client),
each declared once with what it is and what it supports.

Validation, the plan, hosting, the sweep, the faults and the services read a kind's declaration here; none of them
spells a kind's name. A new kind is one `register(MemberKind(...))` (and the process it names in `workloads/`).
"""
from __future__ import annotations

import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Literal

COMMIT_MODES = ("sync", "async", "auto", "before_process")
# the events a member writes (analysis/rundir/contract.py EVENT_KINDS, less the admin probe's admin_call)
MEMBER_EVENTS = frozenset({"started", "assigned", "revoked", "lost", "commit_sent", "committed", "commit_failed",
                           "fenced", "stopped", "crashed", "error", "join_overdue", "restore_start", "restore_end",
                           "rewound"})
STATE_EVENTS = frozenset({"restore_start", "restore_end"})  # a stateful member's (keeps_state) only
# a Kafka Streams member's: its tasks opened and closed (assigned, revoked), restores, standby updates; no commit
STREAMS_EVENTS = frozenset({"started", "assigned", "revoked", "stopped", "crashed", "error", "restore_start",
                            "restore_end", "standby_start", "standby_end"})


@dataclass(frozen=True)
class MemberKind:
    name: str                    # what consumer_group.client says
    title: str                   # how an error names it: "the <title> ..."
    about: str                   # one line for the scenario reference
    library: Literal["librdkafka", "kafka-clients", "any"]  # the client library: how a release of it is resolved
    module: str | None           # the process one member of its own runs (python -m <module>); None: its command
    command: bool = False        # a program of the user's, started from its consumer_group command (no release)
    host_module: str | None = None  # the member host (many members, one process); None: one member a process
    member_as_host: bool = False    # a member of its own runs as a host of one (module takes a host's config)
    stacks_signal: int | None = None  # makes the host write every thread's stack into its log
    hosted_settings: dict = field(default_factory=dict)  # client settings a hosted member changes
    fds_per_member: int = 0      # a hosted member's open files and resident memory, bounded (the note above KINDS)
    mb_per_member: int = 0
    state_fds_per_member: int = 0  # what keeping state adds to them (its changelog producer and restore consumer)
    state_mb_per_member: int = 0
    sweep_name: str | None = None   # the sweep file's name for this client (a hosting kind's cells run hosted)
    sweep_clients: dict[str, dict] = field(default_factory=dict)  # more sweep client names, each the group settings
    #                                 it stands for (Kafka Streams: its two protocols; one process a member)
    pins_version: bool = True    # consumer_group.version may pin another release
    unpinned: Literal["harness", "brokers"] = "harness"  # the release an unpinned member runs
    options_by_release: bool = False  # its command line gained options by release: checked against what is asked
    commit_modes: tuple[str, ...] = COMMIT_MODES
    processing_delay: bool = True   # consumer_group.processing (and the slow_processing fault)
    pattern: bool = True          # subscribes by pattern
    topic_choice: bool = True     # subscribes to several topics, or some of them by name
    eager_sticky: bool = False    # has the eager 'sticky' assignor
    admin_probe: bool = True      # the admin probe runs beside it (the probe runs confluent-kafka)
    security: bool = True         # takes the KAFKA_CHAOS_CLIENT_* security settings
    join_watch: bool = False      # writes its client's group debug log when not assigned in time
    keeps_state: bool = False     # a stateful member (the scenario's `state` block: workloads/state.py)
    transaction_version: int | None = None  # the highest transaction.version (KIP-890) its producer speaks; None:
    #                                         no transactional producer, or one we cannot know (a command member's)
    protocols: tuple[str, ...] = ("classic", "consumer")  # the group protocols it speaks (consumer_group.protocol)
    own_assignor: str | None = None  # assigns with an assignor of its own (consumer_group.assignor is not its)
    streams_block: bool = False   # takes consumer_group.streams: a Kafka Streams member (harness/streams.py)
    own_output: str | None = None  # output-topic mode with its own events: its program writes <group id>-<own_output>
    state_store: str | None = None  # keeps state in a store of its own, whose changelog it creates and names
    #                                 <group id>-<store>-changelog (Kafka Streams'); None: the harness's changelog
    events: frozenset[str] = MEMBER_EVENTS
    refused_faults: dict[str, str] = field(default_factory=dict)  # fault kind -> why it cannot take it
    after_stop: Callable[[Path, str, str | None], object] | None = None  # (run_dir, member, instance_id)

    @property
    def hosts(self) -> bool:
        return self.host_module is not None


def _final_java_conversion(run_dir: Path, member: str, instance_id: str | None) -> None:
    """The launcher converts while it runs; once more here only if it was killed before it had converted the
    whole raw file."""
    from workloads.java_member import raw_events_path
    from workloads.verifiable import convert, fully_converted
    raw = raw_events_path(run_dir, member)
    if not fully_converted(raw):
        convert(raw, run_dir, member, instance_id)


# Hosted members' bounds, from what was measured on this machine (docs/benchmarks-history.md, "Member hosts",
# benchmarks/member_hosts.py: 20 members in one host, 3 brokers, 1,000 records/s): a hosted librdkafka member held 16.1
# descriptors (sockets and the wake-up pipes of its broker threads) and 2.9 MB resident, a hosted Java member 12.6 and
# 10.5 MB. The bounds add headroom: a member's pre-fetch queue may fill up to its 2 MB bound, a JVM's heap grows to its
# limit. A stateful member (the scenario's `state` block) runs two clients more, measured with
# `benchmarks/member_hosts.py --members 50 --per-host 50 --hosted-only --state 1000` (benchmarks/results/
# member-hosts-50-state-*.json, 2026-11-30): librdkafka 42 descriptors and 5.5 MB a member against 16 and 2.1 stateless,
# Java 25.9 and 8.3 against 11 and 6.0; the state's bounds add headroom for the tables (5,000 keys a partition).

KINDS: dict[str, MemberKind] = {}
DEFAULT = "librdkafka"


def register(kind: MemberKind) -> MemberKind:
    """Add a kind (a test may add one and remove it with `unregister`)."""
    if kind.name in KINDS:
        raise ValueError(f"member kind {kind.name!r} is registered already")
    KINDS[kind.name] = kind
    return kind


def unregister(name: str) -> None:
    KINDS.pop(name, None)


def member_kind(name: str) -> MemberKind:
    """The kind named `name`; ValueError (naming consumer_group.client's choices) for one the harness lacks."""
    try:
        return KINDS[name]
    except KeyError:
        raise ValueError(f"{name!r} is not a member kind; kinds: {', '.join(KINDS)}") from None


def kinds_that(can: Callable[[MemberKind], bool], near: MemberKind | None = None) -> list[str]:
    """The names of the kinds that can do a thing, those of `near`'s library first (what an error suggests)."""
    able = [k for k in KINDS.values() if can(k) and k is not near]
    return [k.name for k in sorted(able, key=lambda k: near is not None and k.library != near.library)]


def suggest(can: Callable[[MemberKind], bool], near: MemberKind | None = None, lead: str = "; use") -> str:
    """'<lead> client: a or b', the kinds that can; '' when none can."""
    names = kinds_that(can, near)
    return f"{lead} client: {' or '.join(names)}" if names else ""


def sweep_clients() -> dict[str, tuple[str, dict]]:
    """A sweep file's client names -> (the kind each runs, the group settings it stands for): a hosting kind's
    sweep_name, and every kind's sweep_clients."""
    out = {k.sweep_name: (k.name, {}) for k in KINDS.values() if k.sweep_name and k.hosts}
    for k in KINDS.values():
        out.update({name: (k.name, dict(settings)) for name, settings in k.sweep_clients.items()})
    return out


register(MemberKind(
    name="librdkafka", title="librdkafka member", library="librdkafka",
    about="confluent-kafka (librdkafka): workloads/member.py, or many members a process (workloads/member_host.py)",
    module="workloads.member", host_module="workloads.member_host", stacks_signal=signal.SIGUSR1,
    # At the defaults each consumer may pre-fetch up to 64 MB (queued.max.messages.kbytes) and 100,000 messages per
    # partition (queued.min.messages): 500 members could queue 32 GB. These bound the pre-fetch queue, not what a poll
    # returns, so they move no figure while a member keeps up; a member that falls far behind refetches sooner.
    # Recorded in each member's `started` facts (hosted_settings).
    hosted_settings={"queued.max.messages.kbytes": 2048, "queued.min.messages": 2000},
    fds_per_member=24, mb_per_member=6, state_fds_per_member=40, state_mb_per_member=8, sweep_name="librdkafka",
    join_watch=True, keeps_state=True, commit_modes=(*COMMIT_MODES, "transaction"),
    transaction_version=1))  # librdkafka speaks transaction version 1 only (librdkafka#5423)

register(MemberKind(
    name="java", title="Java member (VerifiableConsumer)", library="kafka-clients",
    about="Apache Kafka's VerifiableConsumer, its reference member: one member a JVM",
    module="workloads.java_member", unpinned="brokers", options_by_release=True, commit_modes=("sync", "auto"),
    processing_delay=False, pattern=False, topic_choice=False, eager_sticky=True, admin_probe=False, security=False,
    events=MEMBER_EVENTS - {"lost", "join_overdue"} - STATE_EVENTS,
    refused_faults={"slow_processing": "it has no processing delay to slow down"},
    after_stop=_final_java_conversion))

register(MemberKind(
    name="java-member", title="Java member program", library="kafka-clients",
    about="our own Java member program (workloads/java), which can host many members",
    module="workloads.java_host", host_module="workloads.java_host", member_as_host=True,
    # The Java client pre-fetches per fetch session, bounded by fetch.max.bytes (50 MB) and max.partition.fetch.bytes
    # (1 MB) a partition; the JVM's one heap bounds them all together.
    stacks_signal=signal.SIGQUIT, hosted_settings={"fetch.max.bytes": 4 << 20}, fds_per_member=16, mb_per_member=16,
    state_fds_per_member=24, state_mb_per_member=8,
    sweep_name="java", pins_version=False, unpinned="brokers", eager_sticky=True, admin_probe=False, security=False,
    events=MEMBER_EVENTS - {"join_overdue"}, keeps_state=True, commit_modes=(*COMMIT_MODES, "transaction"),
    transaction_version=2))

register(MemberKind(
    name="command", title="command member", library="any",
    about="a program of yours, from the member spec's command (workloads/app.py writes the run directory's contract)",
    # A Kafka Streams program of yours (the contract library's ChaosStreams) speaks the streams protocol too, takes
    # the `streams` block and writes Streams' events.
    module=None, command=True, pins_version=False, unpinned="harness", processing_delay=False, eager_sticky=True,
    admin_probe=False, events=(MEMBER_EVENTS - STATE_EVENTS) | STREAMS_EVENTS,
    protocols=("classic", "consumer", "streams"), streams_block=True,
    refused_faults={"slow_processing": "the harness cannot slow a program of yours down"}))

register(MemberKind(
    name="streams", title="Kafka Streams member", library="kafka-clients",
    about="our own Kafka Streams program (workloads/streams): a count and a sum per key in a persistent store",
    module="workloads.streams_member", pins_version=False, unpinned="brokers", commit_modes=("interval",),
    processing_delay=False, pattern=False, topic_choice=False, admin_probe=False, security=False, keeps_state=True,
    protocols=("classic", "streams"), own_assignor="streams", streams_block=True, own_output="output",
    state_store="totals",
    sweep_clients={"streams-classic": {"protocol": "classic"}, "streams-kip1071": {"protocol": "streams"}},
    events=STREAMS_EVENTS, stacks_signal=signal.SIGQUIT, transaction_version=2,
    refused_faults={"slow_processing": "it has no processing delay to slow down"}))
