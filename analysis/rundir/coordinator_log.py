"""The group's rebalance rounds as its coordinator logged them (coordinator.log, written by harness/coordinator_log.py).

The members' events say when each member was assigned; only the coordinator says how a round went. Its INFO lines
(Kafka 3.x's and 4.x's group coordinators write the same sentences) give, for a classic round:

- its start and reason: ``Preparing to rebalance group G in state PreparingRebalance with old generation N
  (reason: ...)``;
- the new members admitted while it waited for every member's JoinGroup (``Pending dynamic member with id M joins
  group G in PreparingRebalance state``), and the members it removed for not rejoining in time (``Group G removed
  dynamic members who haven't joined: [...]``);
- the end of the JoinGroup phase: ``Stabilized group G generation N+1 with K members``;
- the leader and the end of the SyncGroup phase: ``Assignment received from leader M for group G for generation
  N+1``. From Stabilized to it is the leader's assignment: the cost that grows with the group (librdkafka#4629);
- or, when no member was left to wait for, its end in an empty group: ``Group G with generation N+1 is now empty``.

A new member admitted while a round was completing (after its JoinGroup phase, ``... joins group G in
CompletingRebalance state``) missed it: it is the round's ``late``, and starts the next one. For KIP-848 (and a
KIP-1071 streams group: ``Bumped streams group epoch to N``) there are no rounds: each ``Bumped group epoch to N`` has a cause
(a member joined, left, or was fenced; the subscribed topics changed) and, when the coordinator computed a new
target assignment for it, that computation's milliseconds and assignor.

The log's times are the brokers' (log4j, to the millisecond, UTC in the project's images).
"""
from __future__ import annotations

import re
from pathlib import Path

from analysis.rundir.broker_logs import STAMP as LOG4J_STAMP
from analysis.rundir.broker_logs import log4j_ms

FILE = "coordinator.log"
STAMP = re.compile(LOG4J_STAMP.pattern + r"\w+ \[GroupCoordinator[^\]]*\]:? ")  # a broker line, of the group coordinator
# a transaction coordinator's line (coordinator.log keeps those of the run's transactional ids; nothing reads them yet)
TXN_STAMP = re.compile(LOG4J_STAMP.pattern + r"\w+ \[TransactionCoordinator[^\]]*\]:? ")
UUID_TAIL = re.compile(r"-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
LOGGER = re.compile(r"\s*\((?:org\.apache\.)?kafka\.[\w.$]+\)\s*$")  # log4j's " (the.logging.Class)" at a line's end
PARTITION = r"(?: \(__consumer_offsets-\d+\))?"  # Kafka 3.x names the offsets partition in the sentence

PREPARE = re.compile(rf"Preparing to rebalance group \S+ in state \w+ with old generation (\d+){PARTITION} "
                     r"\(reason: (.*)\)\.?\s*$")
STABLE = re.compile(rf"Stabilized group \S+ generation (\d+){PARTITION} with (\d+) members")
ASSIGNED = re.compile(r"Assignment received from leader (?:client )?(\S+) for group \S+ for generation (\d+)\. "
                      r"The group has (\d+) members, (\d+) of which are static")
ADMITTED = re.compile(r"Pending dynamic member with id (\S+) joins group \S+ in (\w+) state")
EMPTIED = re.compile(r"Group \S+ with generation \d+ is now empty")
NOT_REJOINED = re.compile(r"Group \S+ removed dynamic members who haven't joined: \[(.*)\]")
FAILED = re.compile(r"Member (\S+) in group \S+ has failed")
LEFT = re.compile(r"Member (\S+) has left group through explicit")
# KIP-848's sentences, and KIP-1071's streams group's (Kafka 4.3.1: "Bumped streams group epoch to N with metadata
# hash H ...", "[MemberId M] Member joins the streams group.", "Member M left the streams group.", "Streams member M
# fenced from the group because ..."; recorded in tests/analysis/data/coordinator-streams-4.3.1.log)
EPOCH = re.compile(r"Bumped (?:streams )?group epoch to (\d+)")
TARGET = re.compile(r"Computed a new target assignment for epoch (\d+) with '([^']+)' assignor in (\d+) ?ms")
MEMBER_JOINS = re.compile(r"Member (\S+) joins the consumer group|\[MemberId (\S+)\] Member joins the streams group")
MEMBER_LEFT = re.compile(r"Member (\S+) left the (?:consumer|streams) group")
MEMBER_FENCED = re.compile(r"(?:Streams )?[Mm]ember (\S+) fenced from the group because (.*?)\.?\s*$")


def read(run_dir: Path) -> list[tuple[int, str]] | None:
    """(ts_ms, the sentence) of every line of coordinator.log; None when the run has none."""
    path = run_dir / FILE
    if not path.is_file():
        return None
    out = []
    for line in path.read_text(errors="replace").splitlines():
        m = STAMP.match(line)
        if m:
            out.append((log4j_ms(m.group(1)), LOGGER.sub("", line[m.end():])))
    return out


def member_name(member_id: str, names: dict[str, str]) -> str:
    """The harness's name for a member id: as ``names`` has it (member id or group.instance.id -> member), else the
    id without its UUID (a classic member id is its client.id, or its group.instance.id when static, and a UUID)."""
    if member_id in names:
        return names[member_id]
    prefix = UUID_TAIL.sub("", member_id)
    return names.get(prefix, prefix)


def rounds(lines: list[tuple[int, str]], names: dict[str, str] | None = None) -> list[dict]:
    """The classic rounds, in order (see the module's doc; ``names``: see member_name). A round still open at the
    log's end has no ``stable_ms`` (or no ``assigned_ms``); one superseded before its leader's assignment, no
    ``assigned_ms``; one that ended with no member left, ``emptied_ms`` and no ``stable_ms``."""
    names = names or {}
    name = lambda member_id: member_name(member_id, names)  # noqa: E731
    out: list[dict] = []
    current: dict | None = None
    for ts, text in lines:
        if m := PREPARE.search(text):
            current = {"began_ms": ts, "reason": _reason(m.group(2), name), "old_generation": int(m.group(1)),
                       "generation": None, "stable_ms": None, "members": None, "leader": None, "assigned_ms": None,
                       "static": None, "joined": [], "not_rejoined": [], "late": [], "join_ms": None, "sync_ms": None,
                       "emptied_ms": None}
            out.append(current)
        elif current is None:
            continue
        elif m := STABLE.search(text):
            current.update(generation=int(m.group(1)), stable_ms=ts, members=int(m.group(2)),
                           join_ms=ts - current["began_ms"])
        elif (m := ASSIGNED.search(text)) and int(m.group(2)) == current["generation"]:
            current.update(leader=name(m.group(1)), assigned_ms=ts, static=int(m.group(4)),
                           sync_ms=ts - current["stable_ms"])
        elif EMPTIED.search(text) and current["stable_ms"] is None:
            current["emptied_ms"] = ts
        elif m := ADMITTED.search(text):
            if m.group(2) == "PreparingRebalance" and current["stable_ms"] is None:
                current["joined"].append(name(m.group(1)))
            elif m.group(2) == "CompletingRebalance":  # after its JoinGroup phase: it missed the round
                current["late"].append(name(m.group(1)))
        elif m := NOT_REJOINED.search(text):
            current["not_rejoined"] += [name(i.strip()) for i in m.group(1).split(",") if i.strip()]
    return out


def _reason(reason: str, name) -> str:
    """The coordinator's reason, its member ids named as the harness names them."""
    return re.sub(r"[\w.-]+?-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", lambda m: name(m.group(0)), reason)


def epochs(lines: list[tuple[int, str]], ids: dict[str, str] | None = None) -> list[dict]:
    """KIP-848: every group epoch the coordinator bumped to, with its cause (the line before it about a member, named
    by ``ids``: member id -> client.id, from group-states.jsonl) and the target assignment it computed for it
    (``assign_ms``, ``assignor``), in order."""
    ids = ids or {}
    out: list[dict] = []
    cause: str | None = None
    for ts, text in lines:
        if m := MEMBER_JOINS.search(text):
            member = m.group(1) or m.group(2)
            cause = f"{ids.get(member, member)} joined"
        elif m := MEMBER_LEFT.search(text):
            cause = f"{ids.get(m.group(1), m.group(1))} left"
        elif m := MEMBER_FENCED.search(text):
            cause = f"{ids.get(m.group(1), m.group(1))} fenced: {m.group(2)}"
        elif m := EPOCH.search(text):
            out.append({"epoch": int(m.group(1)), "at_ms": ts, "cause": cause or "metadata", "assign_ms": None,
                        "assignor": None})
            cause = None
        elif (m := TARGET.search(text)) and out and out[-1]["epoch"] == int(m.group(1)):
            out[-1].update(assign_ms=int(m.group(3)), assignor=m.group(2))
    return out


def expired(lines: list[tuple[int, str]], names: dict[str, str] | None = None) -> list[dict]:
    """The members the coordinator removed because their session expired (no heartbeat within session.timeout.ms):
    classic ``Member M in group G has failed, removing it from the group``, KIP-848 ``Member M fenced from the group
    because the member session expired``. Each: at_ms, member (named as member_name names it)."""
    names = names or {}
    out = []
    for ts, text in lines:
        if (m := FAILED.search(text)) or ((m := MEMBER_FENCED.search(text)) and "session expired" in m.group(2)):
            out.append({"at_ms": ts, "member": member_name(m.group(1), names)})
    return out


def member_names(h) -> dict[str, str]:
    """member id or group.instance.id -> the harness's member name: every member id the sampler saw
    (group-states.jsonl's member_ids give client.ids, which are the members' names), and the members' ``started``
    events' group.instance.ids (a static member's id begins with it)."""
    names = {mid: str(client) for row in h.group_states or [] for mid, client in (row.get("member_ids") or {}).items()}
    names.update({str(e.facts["instance_id"]): e.member for e in h.events
                  if e.kind == "started" and e.facts.get("instance_id")})
    return names


def summary(h) -> dict | None:
    """The summary's ``coordinator_rounds``: the classic rounds and the KIP-848 epochs of coordinator.log (None:
    the run has no coordinator.log, e.g. on an external cluster)."""
    if h.coordinator is None:
        return None
    names = member_names(h)
    return {"rounds": rounds(h.coordinator, names), "epochs": epochs(h.coordinator, names),
            "expired": expired(h.coordinator, names), "lines": len(h.coordinator)}


def in_window(found: dict | None, t0: int, t1: int) -> dict:
    """What the rounds and epochs begun in [t0, t1) cost: ``join_phase_ms`` (classic: waiting for every member's
    JoinGroup), ``assignment_ms`` (computing the assignment: classic, from the JoinGroup phase's end to the leader's
    SyncGroup; KIP-848, the coordinator's target computations), and how many rounds or epochs. None where the run
    has no coordinator.log."""
    if found is None:
        return {"coordinator_rounds": None, "join_phase_ms": None, "assignment_ms": None}
    rs = [r for r in found["rounds"] if t0 <= r["began_ms"] < t1]
    es = [e for e in found["epochs"] if t0 <= e["at_ms"] < t1]
    join = [r["join_ms"] for r in rs if r["join_ms"] is not None]
    assign = [r["sync_ms"] for r in rs if r["sync_ms"] is not None] + [e["assign_ms"] for e in es if e["assign_ms"] is not None]
    return {"coordinator_rounds": len(rs) + len(es), "join_phase_ms": sum(join) if rs else None,
            "assignment_ms": sum(assign) if rs or es else None}


def expired_between(found: dict | None, t0: int, t1: int) -> int | None:
    """How many members' sessions expired in [t0, t1) (a crash's own member's, and any a starved machine let lapse);
    None where the run has no coordinator.log."""
    return None if found is None else sum(1 for e in found["expired"] if t0 <= e["at_ms"] < t1)
