"""Group events and the fault timeline: read in Python (they are small), and turned into ownership.

Ownership is rebuilt offline from each member's own events, the way Kafka's system tests track a
consumer (``ConsumerEventHandler``): ``assigned`` adds partitions, ``revoked`` and ``lost`` remove the
listed ones (all of them when the list is absent), ``started``/``stopped``/``crashed``/``fenced`` end
everything. Under the eager protocol an ``assigned`` event carries the full new assignment, so anything
owned but not listed ends there too ("replaced"); under the cooperative protocols (cooperative-sticky,
KIP-848) ``assigned`` and ``revoked`` are deltas and unlisted partitions stay owned across the rebalance.
"""
from __future__ import annotations

import bisect
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from analysis.rundir import contract

from analysis.rundir import coordinator_log
from analysis.rundir import state as state_files
from analysis.rundir import transactions as transaction_files
from kafkanet.client_ids import member_of
from analysis.errors import InputError
from analysis.rundir.inputs import jsonl_objects, rel
from analysis.engine.kernels import EpochRange

OPEN = 2**62  # "still owned at the end of the history"
ENDS = ("stopped", "crashed", "fenced")  # the events that end a member (its process, or its membership)
STARTED_FACTS = ("client", "protocol", "assignor", "instance_id", "commit", "heartbeat_interval_ms", "client_version",
                 "librdkafka_version", "guarantee")  # guarantee: a Kafka Streams member's processing.guarantee
COMMIT_FACTS = ("requested_at_ms", "commit_id", "aborted")  # of a commit's events: when it was sent, which commit it
# is, and (commit_failed) whether its transaction was aborted: then its offsets were certainly not applied
COMMIT_KINDS = ("commit_sent", "committed", "commit_failed")
END_FACTS = ("error", "fatal", "request", "signal", "exit_code")  # of a `fenced` or `error` event: the error, as the
# member logged it; of a `crashed` event the harness logged: the signal the process died of, one the harness did not
# send, or the exit code of a command member's program that exited on its own
OVERDUE_FACTS = ("debug_log", "waited_ms")  # of `join_overdue`: the member's client debug log, and the wait it passed
RESTORE_KINDS = ("restore_start", "restore_end")  # a stateful member's restore of one partition (workloads/state.py)
RESTORE_FACTS = ("from_offset", "to_offset", "records", "elapsed_ms", "aborted")


@dataclass
class Period:
    """One member's uninterrupted ownership of one partition."""
    id: int
    member: str
    topic: str
    partition: int
    start: int
    end: int = OPEN
    generation: int | None = None
    end_kind: str | None = None     # revoked lost replaced stopped crashed fenced restarted superseded rewound; None = open
    logged_end: int = OPEN          # the end the member itself logged (differs when superseded)

    @property
    def open(self) -> bool:
        return self.end == OPEN


@dataclass
class Commit:
    ts: int
    member: str
    topic: str
    partition: int
    offset: int
    ok: bool
    generation: int | None
    line: int
    eff_ts: int = 0                 # the latest it can have taken effect at the broker (see effective_commit_times)
    sent_ts: int | None = None      # the earliest: when it was sent (or a lower bound); None: not logged (old runs)
    info: bool = False              # indeterminate: it took effect at some time from sent_ts on, or never
    failed: bool = False            # answered with an error: indeterminate too (info), see commits_of

    @property
    def earliest(self) -> int:
        """When it can have taken effect at the earliest (Jepsen's invocation): sent_ts; without it (an older run),
        the one time the old reading gives it, eff_ts."""
        if self.sent_ts is None:
            return min(self.ts, self.eff_ts or self.ts)
        return min(self.sent_ts, self.ts)


@dataclass
class Fault:
    id: str
    kind: str
    target: str
    injected_at_ms: int
    healed_at_ms: int | None
    params: dict = field(default_factory=dict)
    hits: list[dict] = field(default_factory=list)  # an rpc fault's: the requests its rule acted on
    expected_fatal: list[str] = field(default_factory=list)  # members the fault means to end on a fatal error
    # the facts its row declares (old rows: fault_facts); the analysis reads these, never the kind
    ends_process: bool = False      # it killed its target's process: a crash at inject
    effect_from: str = "inject"     # inject, first_hit or never (see cause_window)
    label: str = ""                 # what it did, for people
    group_change: str | None = None  # what it changed of the group's members or partitions (contract.GROUP_CHANGES)
    stopped_at_ms: int | None = None  # ends_process: when its target really stopped (None: not recorded)

    @property
    def stop_ms(self) -> int:
        """When the process this fault ends stopped: as recorded, else its injection (a run before the field)."""
        return self.injected_at_ms if self.stopped_at_ms is None else self.stopped_at_ms

    def cause_window(self, open_end: int) -> tuple[int, int] | None:
        """From when to when this fault can have caused what follows (before any grace): inject to heal, or from
        its first hit (one never hit changed nothing), or never (an observation)."""
        end = self.healed_at_ms if self.healed_at_ms is not None else open_end
        if self.effect_from == "inject":
            return self.injected_at_ms, end
        if self.effect_from == "never" or self.first_hit_ms is None:
            return None
        return self.first_hit_ms, end

    def blame_window(self, grace_ms: int, open_end: int, stop_ms: int = OPEN) -> tuple[int, int] | None:
        """From when to when what happens is blamed on this fault: its cause window plus the grace, cut at the
        workload's stop (:func:`workload_stop`): the members' leaving and what their revocations re-deliver are the
        stop's doing, no fault's."""
        window = self.cause_window(open_end)
        if window is None or window[0] >= stop_ms:
            return None
        return window[0], min(window[1] + grace_ms, stop_ms - 1)

    @property
    def counts_hits(self) -> bool:
        """Its window follows the requests it acted on (or it only observed them): the summary counts its hits."""
        return self.effect_from != "inject"

    @property
    def first_hit_ms(self) -> int | None:
        return min((h["at_ms"] for h in self.hits), default=None)


@dataclass
class Event:
    ts: int
    member: str
    kind: str
    generation: int | None
    partitions: list[tuple[str, int]] | None
    offsets: dict[tuple[str, int], int] | None
    detail: str | None
    order: int
    # started: STARTED_FACTS (as text); fenced, error: END_FACTS; join_overdue: OVERDUE_FACTS
    facts: dict = field(default_factory=dict)
    role: str = contract.MEMBER_ROLE  # who logged it: a group member, or a process beside the group (admin_probe)


def group_protocol(e: Event) -> str | None:
    """A ``started`` event's group protocol ("classic" / "consumer"): the typed field, or, in run directories
    written before it existed, from the detail text (``protocol=consumer``)."""
    if e.facts.get("protocol"):
        return str(e.facts["protocol"]).lower()
    m = re.search(r"protocol\s*[=:]\s*(\w+)", (e.detail or "").lower())
    return m.group(1) if m else None


def commit_mode(e: Event) -> str | None:
    """A ``started`` event's commit mode (sync, async, auto, before_process): the typed field, else the detail text."""
    if e.facts.get("commit"):
        return str(e.facts["commit"]).lower()
    m = re.search(r"commit\s*[=:]\s*(\w+)", (e.detail or "").lower())
    return m.group(1) if m else None


def rebalance_protocol(e: Event) -> str | None:
    """eager / cooperative from a ``started`` event (typed fields first, else the old detail text). Kafka Streams is
    cooperative on either protocol: its classic assignor hands tasks over incrementally, like the streams protocol."""
    assignor = str(e.facts.get("assignor") or "").lower() or (e.detail or "").lower()
    if group_protocol(e) in ("consumer", "streams") or "cooperative" in assignor or assignor.startswith("streams"):
        return "cooperative"
    if re.search(r"\b(range|roundrobin|round-robin|sticky|rangeassignor|roundrobinassignor|stickyassignor)\b", assignor):
        return "eager"
    return None


UNLOGGED_COMMITS = ("interval",)  # commit modes whose commits the member never logs (Kafka Streams commits itself)


@dataclass
class History:
    events: list[Event] = field(default_factory=list)
    periods: list[Period] = field(default_factory=list)
    commits: list[Commit] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    has_events: bool = False
    has_faults: bool = False
    protocols: dict[str, str] = field(default_factory=dict)   # member -> eager / cooperative
    warnings: list[str] = field(default_factory=list)
    beside: list[Event] = field(default_factory=list)  # events of processes that are no group member (admin probes)
    group: list[dict] | None = None  # group.jsonl: what the harness saw of the group (None: not written)
    group_states: list[dict] | None = None  # group-states.jsonl: the coordinator's view, sampled (None: not written)
    coordinator: list[tuple[int, str]] | None = None  # coordinator.log: (ts, sentence) its coordinator logged (None: none)
    output: dict | None = None  # output.json: output-topic mode's read-back, with the group's final commits (None: none)
    state: object | None = None  # state/: a stateful run's state rows and final values (rundir/state.py; None: none)
    transactions: object | None = None  # transactions/ and verified/ (rundir/transactions.py; None: no transactions/)

    @property
    def members_with_events(self) -> list[str]:
        return sorted({e.member for e in self.events})

    @property
    def logs_commits(self) -> bool:
        """Whether the members log their commits (commit windows): every member with events but those whose commit
        mode commits unseen (UNLOGGED_COMMITS: a Kafka Streams member)."""
        modes = [commit_mode(e) for e in self.events if e.kind == "started"]
        return self.has_events and not (modes and all(m in UNLOGGED_COMMITS for m in modes))

    @property
    def exactly_once(self) -> bool:
        """Whether the members promise exactly once and the deliveries are what they committed: a transactional member
        (commit: transaction) or a Kafka Streams member under exactly_once_v2, its output read back read_committed."""
        promised = any(e.kind == "started" and (commit_mode(e) == "transaction"
                                                 or e.facts.get("guarantee") == "exactly_once_v2") for e in self.events)
        return promised and self.output is not None and self.output.get("isolation", "read_committed") == "read_committed"

    @property
    def held_inputs(self) -> dict[tuple[str, int], set[int]]:
        """Input offsets whose output lies behind a transaction left open (TransactionFiles.held_inputs; none without
        transactions/): unseen, never lost, skipped or stalled on."""
        return self.transactions.held_inputs if self.transactions is not None else {}

    @property
    def verified(self) -> bool:
        """Whether a read_committed verified reader read the transactional members' output (verified/)."""
        return self.exactly_once and self.transactions is not None and "read_committed" in self.transactions.readers

    def blame_windows(self, grace_ms: int, open_end: int) -> dict[str, tuple[int, int]]:
        """fault id -> the window in which what happens is blamed on it (Fault.blame_window): THE attribution rule,
        for rebalance rounds and anomalies alike. A fault that can have caused nothing has none."""
        stop = workload_stop(self)
        return {f.id: w for f in self.faults if (w := f.blame_window(grace_ms, open_end, stop)) is not None}


CLOSE_MS = 10_000  # a member's close (revocation, LeaveGroup) takes milliseconds; a revocation longer before is not its


def workload_stop(h: History) -> int:
    """When the workload began to stop (OPEN: it did not, as far as the history shows). The harness heals every fault,
    drains, then stops the members: the stop is the earliest close of a member whose last event is a ``stopped``
    after every fault's heal (one inside a fault's window, e.g. a member_leave, is that fault's doing). A close starts
    at the revocations the member logged right before ``stopped`` (librdkafka and the Java client revoke on close)."""
    healed = max((OPEN if f.healed_at_ms is None else f.healed_at_ms for f in h.faults), default=-OPEN)
    by_member: dict[str, list[Event]] = {}
    for e in h.events:
        by_member.setdefault(e.member, []).append(e)
    starts = []
    for evs in by_member.values():
        stopped = evs[-1]
        if stopped.kind != "stopped" or stopped.ts <= healed:
            continue
        start = stopped.ts
        for e in reversed(evs[:-1]):
            if e.kind not in ("revoked", "lost") or e.ts <= healed or stopped.ts - e.ts > CLOSE_MS:
                break
            start = e.ts
        starts.append(start)
    return min(starts, default=OPEN)


# ------------------------------------------------------------------------------------------------ reading
def parse_tp(text, where, column) -> tuple[str, int]:
    if isinstance(text, str):
        topic, sep, part = text.rpartition(":")
        if sep and topic and part.lstrip("-").isdigit():
            return topic, int(part)
    if isinstance(text, dict) and "topic" in text and "partition" in text:  # tolerated: {"topic":..,"partition":..}
        return str(text["topic"]), int(text["partition"])
    raise InputError(f"{where}: column '{column}' has {json.dumps(text)[:40]}, expected \"topic:partition\"")


def read_events(run_dir: Path, warnings: list[str]) -> list[Event] | None:
    folder = run_dir / "events"
    if not folder.is_dir():
        return None
    files = sorted(p for p in folder.rglob("*.jsonl") if p.is_file())
    if not files:
        return None
    events: list[Event] = []
    order = 0
    unknown: dict[str, int] = {}
    for path in files:
        name = rel(run_dir, path)
        for number, obj in jsonl_objects(run_dir, path, warnings):
            where = f"{name}:{number}"
            contract.check_object("events", obj, where)
            ts, member, kind, generation = obj["ts_ms"], str(obj["member"]), str(obj["kind"]), obj.get("generation")
            parts = obj.get("partitions")
            if parts is not None:
                parts = [parse_tp(p, where, "partitions") for p in parts]
            offsets = obj.get("offsets")
            if offsets is not None:
                parsed = {}
                for k, v in offsets.items():
                    if isinstance(v, bool) or not isinstance(v, int):
                        raise InputError(f"{where}: column 'offsets' has {json.dumps(v)[:40]} for {k}, expected an integer offset")
                    parsed[parse_tp(k, where, "offsets")] = v
                offsets = parsed
            detail = obj.get("detail")
            if kind not in contract.EVENT_KINDS:
                unknown[kind] = unknown.get(kind, 0) + 1
                continue
            facts = {k: str(obj[k]) for k in STARTED_FACTS if obj.get(k) is not None} if kind == "started" else \
                {k: obj[k] for k in COMMIT_FACTS if obj.get(k) is not None} if kind in COMMIT_KINDS else \
                {k: obj[k] for k in OVERDUE_FACTS if obj.get(k) is not None} if kind == "join_overdue" else \
                {k: obj[k] for k in RESTORE_FACTS if obj.get(k) is not None} if kind in RESTORE_KINDS else \
                {k: obj[k] for k in END_FACTS if obj.get(k) is not None}
            events.append(Event(ts, member, kind, generation, parts, offsets,
                                None if detail is None else str(detail), order, facts,
                                str(obj.get("role") or contract.MEMBER_ROLE)))
            order += 1
    for kind, n in sorted(unknown.items()):
        warnings.append(f"events/: {n} event(s) of unknown kind '{kind}' ignored")
    events.sort(key=lambda e: (e.ts, e.order))
    return events


FAULT_FACTS = ("ends_process", "effect_from", "label", "group_change")


def _rpc_rule_facts(params: dict) -> dict:
    """An rpc rule's row before the facts: blamed from its first hit (an observe rule never), labelled as
    RpcFault.label labels it today (the analysis cannot import faults/)."""
    what = " ".join(str(x) for x in ("rpc", params.get("api"), params.get("action"), params.get("error"),
                                     f"{params['delay_ms']} ms" if params.get("delay_ms") else None) if x)
    return {"effect_from": "never" if params.get("action") == "observe" else "first_hit", "label": what}


# What a row written before faults declared their facts means, by its kind: the only fault kinds the analysis names.
OLD_KIND_FACTS = {
    "member_crash": lambda params: {"ends_process": True, "group_change": "member_ends"},
    "member_leave": lambda params: {"group_change": "member_ends"},
    "member_join": lambda params: {"group_change": "member_starts"},
    "member_bounce": lambda params: {"group_change": "member_returns"},
    "partitions_add": lambda params: {"group_change": "partitions_added"},
    "topic_create": lambda params: {"group_change": "partitions_added"},
    "broker_crash": lambda params: {"ends_process": True},
    "rpc": _rpc_rule_facts,
}


def fault_facts(obj: dict) -> dict:
    """ends_process, effect_from, label and group_change of a faults.jsonl row: as the row declares them; a row without them (an
    older run, a user's own run directory) is read with the meaning its kind had then (OLD_KIND_FACTS)."""
    kind, params = str(obj["kind"]), obj.get("params") or {}
    old = {"ends_process": False, "effect_from": "inject", "label": kind, "group_change": None,
           **OLD_KIND_FACTS.get(kind, lambda _: {})(params)}
    return {k: obj[k] if obj.get(k) is not None else old[k] for k in FAULT_FACTS}


def read_faults(run_dir: Path, warnings: list[str]) -> list[Fault] | None:
    path = run_dir / "faults.jsonl"
    if not path.is_file():
        return None
    name = rel(run_dir, path)
    merged: dict[str, Fault] = {}
    for number, obj in jsonl_objects(run_dir, path, warnings):
        where = f"{name}:{number}"
        if isinstance(obj.get("target"), (dict, list)):  # tolerated: a structured target, kept as its JSON
            obj = {**obj, "target": json.dumps(obj["target"])}
        contract.check_object("faults", obj, where)
        fid, kind, target = str(obj["id"]), str(obj["kind"]), str(obj["target"])
        injected, healed, params = obj["injected_at_ms"], obj.get("healed_at_ms"), obj.get("params") or {}
        if fid in merged:  # the same fault written again (e.g. once at inject, once at heal): merge
            f = merged[fid]
            f.injected_at_ms = min(f.injected_at_ms, injected)
            if healed is not None:
                f.healed_at_ms = healed if f.healed_at_ms is None else max(f.healed_at_ms, healed)
            f.params.update(params)
            f.hits = obj.get("hits") or f.hits
            f.expected_fatal = [str(m) for m in obj.get("expected_fatal") or []] or f.expected_fatal
            f.stopped_at_ms = obj.get("stopped_at_ms", f.stopped_at_ms)
            for k in FAULT_FACTS:
                if obj.get(k) is not None:
                    setattr(f, k, obj[k])
        else:
            merged[fid] = Fault(fid, kind, target, injected, healed, dict(params), list(obj.get("hits") or []),
                                [str(m) for m in obj.get("expected_fatal") or []], **fault_facts(obj),
                                stopped_at_ms=obj.get("stopped_at_ms"))
    return sorted(merged.values(), key=lambda f: (f.injected_at_ms, f.id))


# ------------------------------------------------------------------------------------------- ownership
def _member_protocol(events: list[Event], default: str) -> str:
    if default in ("eager", "cooperative"):
        return default
    for e in events:
        if e.kind == "started" and (proto := rebalance_protocol(e)):
            return proto
    return "cooperative"  # add/remove semantics: the same as eager whenever revocations are logged


def read_group(run_dir: Path, warnings: list[str], file: str = "group.jsonl", table: str = "group") -> list[dict] | None:
    """A harness-written file's rows in time order (the contract's columns of `table` checked), or None when the run
    has none: group.jsonl, or group-states.jsonl (table group_states)."""
    path = run_dir / file
    if not path.is_file():
        return None
    name = rel(run_dir, path)
    rows = []
    for number, obj in jsonl_objects(run_dir, path, warnings):
        contract.check_object(table, obj, f"{name}:{number}")
        rows.append(obj)
    return sorted(rows, key=lambda r: r["ts_ms"])


def read_output(run_dir: Path) -> dict | None:
    """output.json (output-topic mode: the harness read the members' output topic back into consumed/), or None.
    Its `commits` ("topic:partition" -> offset) are the group's final commits: they count in the read frontier."""
    path = run_dir / contract.OUTPUT_FILE
    if not path.is_file():
        return None
    try:
        output = json.loads(path.read_text())
        commits = {parse_tp(tp, contract.OUTPUT_FILE, "commits"): int(o) for tp, o in (output.get("commits") or {}).items()}
    except (ValueError, TypeError, AttributeError) as exc:
        raise InputError(f"{contract.OUTPUT_FILE}: not what output-topic mode writes ({exc})") from None
    return {**output, "commits": commits}


def build(run_dir: Path, protocol: str = "auto") -> History:
    warnings: list[str] = []
    events = read_events(run_dir, warnings)
    faults = read_faults(run_dir, warnings)
    members = [e for e in events or [] if e.role == contract.MEMBER_ROLE]  # no check judges a process beside the group
    h = History(events=members, faults=faults or [], has_events=events is not None, has_faults=faults is not None,
                warnings=warnings, beside=[e for e in events or [] if e.role != contract.MEMBER_ROLE],
                group=read_group(run_dir, warnings), group_states=read_group(run_dir, warnings, "group-states.jsonl", "group_states"),
                coordinator=coordinator_log.read(run_dir), output=read_output(run_dir), state=state_files.read(run_dir),
                transactions=transaction_files.read(run_dir))
    if members:
        rebuild_ownership(h, protocol)
    if h.group_states:
        by_member_name(h.group_states, {e.member for e in members if e.kind == "started"})
    return h


BY_CLIENT = ("assignments", "standby_tasks", "warmup_tasks")  # group-states fields keyed by client.id: lists


def by_member_name(rows: list[dict], members: set[str]) -> None:
    """group-states.jsonl's client.ids as the members' names (kafkanet.client_ids.same_client: a Kafka Streams
    instance's consumer is `member-2-StreamThread-1-consumer`), in place; several clients of one member (stream
    threads) have their tasks merged and the lowest member epoch."""
    for row in rows:
        for name in BY_CLIENT:
            if row.get(name):
                merged: dict[str, list] = {}
                for client, items in row[name].items():
                    merged.setdefault(member_of(client, members) or client, []).extend(items)
                row[name] = {m: sorted(items) for m, items in merged.items()}
        if row.get("member_epochs"):
            epochs: dict[str, int] = {}
            for client, epoch in row["member_epochs"].items():
                m = member_of(client, members) or client
                epochs[m] = min(epoch, epochs.get(m, epoch))
            row["member_epochs"] = epochs
        if row.get("member_ids"):
            row["member_ids"] = {mid: member_of(str(c), members) or c for mid, c in row["member_ids"].items()}


def rebuild_ownership(h: History, protocol: str = "auto") -> None:
    by_member: dict[str, list[Event]] = {}
    for e in h.events:
        by_member.setdefault(e.member, []).append(e)
    periods: list[Period] = []
    for member in sorted(by_member):
        evs = by_member[member]
        proto = _member_protocol(evs, protocol)
        h.protocols[member] = proto
        owned: dict[tuple[str, int], Period] = {}
        sent: dict[int, Event] = {}  # commit_id -> its commit_sent event, until its answer

        def close(keys, ts, kind):
            for key in list(keys):
                p = owned.pop(key, None)
                if p is not None:
                    p.end, p.end_kind = ts, kind

        for e in evs:
            if e.kind == "assigned":
                parts = e.partitions or []
                if proto == "eager":
                    close([k for k in owned if k not in set(parts)], e.ts, "replaced")
                for key in parts:
                    if key not in owned:
                        p = Period(len(periods), member, key[0], key[1], e.ts,
                                   generation=e.generation if e.generation is not None and e.generation >= 0 else None)
                        periods.append(p)
                        owned[key] = p
            elif e.kind in ("revoked", "lost"):
                close(owned.keys() if e.partitions is None else e.partitions, e.ts, e.kind)
            elif e.kind == "rewound":  # an aborted transaction's records consumed again: a new ownership each
                for key in [k for k in (e.offsets or {}) if k in owned]:
                    generation = owned[key].generation
                    close([key], e.ts, "rewound")
                    owned[key] = Period(len(periods), member, key[0], key[1], e.ts, generation=generation)
                    periods.append(owned[key])
            elif e.kind in ENDS:
                close(owned.keys(), e.ts, e.kind)
            elif e.kind == "started":
                close(owned.keys(), e.ts, "restarted")
                h.commits += unanswered(sent, member)  # a new process: its commit ids start again
            elif e.kind == "commit_sent" and e.facts.get("commit_id") is not None:
                sent[e.facts["commit_id"]] = e
            elif e.kind in ("committed", "commit_failed") and e.offsets:
                request = sent.pop(e.facts.get("commit_id"), None)
                sent_ts = e.facts.get("requested_at_ms", request.ts if request is not None else None)
                if not e.facts.get("aborted"):  # an aborted transaction's offsets: never applied, no commit at all
                    h.commits += commits_of(e, member, e.kind == "committed", sent_ts)
        h.commits += unanswered(sent, member)
    for p in periods:
        p.logged_end = p.end
    supersede(periods, h.commits)
    h.periods = periods
    effective_commit_times(h.commits, periods)
    h.commits.sort(key=lambda c: (c.ts, c.line))


def unanswered(sent: dict[int, Event], member: str) -> list[Commit]:
    """The commits of the ``commit_sent`` events never answered (the process died or stopped with them in flight),
    as info commits; ``sent`` is emptied."""
    out = [c for e in sent.values() for c in commits_of(e, member, False, e.ts, info=True)]
    sent.clear()
    return out


def commits_of(e: Event, member: str, ok: bool, sent_ts: int | None, info: bool = False) -> list[Commit]:
    """One Commit a partition of a commit event; librdkafka reports -1001 for "no offset": none.

    A commit answered with an error (``commit_failed``) is indeterminate, not undone: both clients retry a commit
    request themselves (librdkafka on a transport error, a time-out or a coordinator error, rdkafka_request.c
    rd_kafka_handle_OffsetCommit; the Java client's commitSync on any retriable error until its time-out), so the
    error can answer a retry whose first attempt the coordinator applied. Seen on a 500-member run: a commit sent at
    t, answered UNKNOWN_MEMBER_ID 12 s later, and the partition's next owner started from its offset."""
    failed = e.kind == "commit_failed"
    return [Commit(e.ts, member, topic, part, off, ok, e.generation, e.order, sent_ts=sent_ts, info=info or failed,
                   failed=failed)
            for (topic, part), off in (e.offsets or {}).items() if off is not None and off >= 0]


def supersede(periods: list[Period], commits: list[Commit]) -> None:
    """The group's view of ownership: a member's ownership of a partition ends, at the latest, when the
    partition is assigned to another member. A member that was frozen or cut off only logs its revocation
    when it comes back; until then its own log says it still owns the partition.

    Unless the older owner went on after the newer owner's ownership ended (:func:`went_on_after`): then it was
    never superseded, and both owned the partition while the newer one held it (a KIP-848 Java member that the
    group gave a partition another member kept: issue 51)."""
    by_tp: dict[tuple[str, int], list[Period]] = {}
    for p in periods:
        by_tp.setdefault((p.topic, p.partition), []).append(p)
    accepted = accepted_commit_times(commits)
    for ps in by_tp.values():
        ps.sort(key=lambda p: p.start)
        for i, p in enumerate(ps):
            for q in ps[i + 1:]:
                if q.member == p.member or q.start <= p.start:
                    continue
                if q.start >= p.end:
                    break
                if not went_on_after(p, q.logged_end, accepted):
                    p.end, p.end_kind = q.start, f"superseded by {q.member}"
                    break


def accepted_commit_times(commits: list[Commit]) -> dict[tuple[str, str, int], list[int]]:
    """(member, topic, partition) -> when each of its commits the coordinator accepted was sent, in order: answered
    ``committed``, with its sending logged (an auto-commit's is not)."""
    out: dict[tuple[str, str, int], list[int]] = {}
    for c in commits:
        if c.ok and not c.info and c.sent_ts is not None:
            out.setdefault((c.member, c.topic, c.partition), []).append(c.sent_ts)
    for v in out.values():
        v.sort()
    return out


def went_on_after(p: Period, ts: int, accepted: dict[tuple[str, str, int], list[int]]) -> bool:
    """The member of ``p`` still acted as the partition's owner after ``ts``, inside ``p``: it sent a commit of the
    partition after ``ts`` that the coordinator accepted. Only a live member of the group gets a commit accepted; a
    frozen member that comes back is fenced, and the late answer of a commit it sent before its freeze was sent
    before ``ts``. (Records consumed after ``ts`` are no such proof: a frozen Java member hands the application one
    poll of partitions already reassigned when it comes back, docs/DESIGN.md.)"""
    sent = accepted.get((p.member, p.topic, p.partition), [])
    i = bisect.bisect_right(sent, ts)
    return i < len(sent) and sent[i] <= p.logged_end


def effective_commit_times(commits: list[Commit], periods: list[Period]) -> None:
    """The latest time each commit can have taken effect (``eff_ts``). An answered one: when its answer was logged,
    or, logged after the member's ownership was superseded, the hand-over (the coordinator fences the old
    generation: it was in flight). An indeterminate one (``info``): the first hand-over of the partition to another
    member after it was sent, else any time (OPEN); one answered with an error, by that answer at the latest. An
    ownership another member began while the committing member kept its own (:func:`supersede`) hands nothing over."""
    by_key = periods_by_key(periods)
    handovers = {}
    for p in periods:
        handovers.setdefault((p.topic, p.partition), []).append((p.start, p.member))
    for v in handovers.values():
        v.sort()
    for c in commits:
        if c.info:
            own = by_key.get((c.member, c.topic, c.partition), [])
            c.eff_ts = next((t for t, m in handovers.get((c.topic, c.partition), ())
                             if t > c.earliest and m != c.member and not any(p.start < t < p.end for p in own)), OPEN)
            if c.failed:
                c.eff_ts = min(c.eff_ts, c.ts)
            continue
        c.eff_ts = c.ts
        for p in reversed(by_key.get((c.member, c.topic, c.partition), [])):
            if p.start <= c.ts:
                sent_before = c.sent_ts is None or c.sent_ts <= p.end  # (sent after it: accepted then, not fenced)
                if c.ts > p.end and sent_before and (p.end_kind or "").startswith("superseded"):
                    c.eff_ts = p.end
                break


def periods_by_key(periods: list[Period]) -> dict[tuple[str, str, int], list[Period]]:
    out: dict[tuple[str, str, int], list[Period]] = {}
    for p in periods:
        out.setdefault((p.member, p.topic, p.partition), []).append(p)
    for v in out.values():
        v.sort(key=lambda p: p.start)
    return out


def boundaries(periods: list[Period]) -> list[int]:
    """Every time at which some member's ownership of some partition starts, or ends (end + 1)."""
    return sorted({p.start for p in periods} | {p.end + 1 for p in periods if p.end < OPEN})


class Ownership:
    """THE period rule: a record of (member, topic, partition) at ts belongs to the period k of that key with
    start_k <= ts < next start and ts <= end_k; outside every period it is OUTSIDE (-1), or NO_EVENTS (-2)
    for a member that logged no events. Applied through epochs: ``epoch`` = how many of ``bounds`` are <= ts
    (spark_plan.with_epoch, in Spark); inside one epoch no key's ownership changes, so (key, epoch) names one
    period (``periods``, looked up by :meth:`period_of`)."""

    def __init__(self, h: "History"):
        self.bounds = boundaries(h.periods)
        self.with_events = set(h.members_with_events) if h.has_events else set()
        self.periods: dict[tuple, list[EpochRange]] = {}
        for key, ps in periods_by_key(h.periods).items():
            for i, p in enumerate(ps):
                last = min(p.end, (ps[i + 1].start if i + 1 < len(ps) else OPEN) - 1)
                if last >= p.start:
                    self.periods.setdefault(key, []).append(
                        EpochRange(bisect.bisect_right(self.bounds, p.start), bisect.bisect_right(self.bounds, last), p.id))

    def period_of(self, member, topic, partition, epoch) -> int:
        for r in self.periods.get((member, topic, partition), ()):
            if r.first <= epoch <= r.last:
                return r.period
        return -1 if member in self.with_events else -2
