"""Member hosts on a real cluster (issue 39): many members in one process (librdkafka, and our own Java member
program), each with its own consumer and its own logs, tell the analysis nothing different from members in processes of their own; and each member fault
keeps its meaning for a hosted member: a crash of one member looks to the group like a killed process (no leave
reaches a broker, its partitions move only once its session expires), a freeze is the whole host's GC pause, and a
cut takes one member off the cluster while the others in its process consume on."""
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from analysis.api import checks_needing
from kafkanet.rpc_proxy import GROUP_APIS
from run_logs import handed_over

pytestmark = pytest.mark.cluster

SESSION_MS = 10_000


def scenario(*faults, members_per_host=None, records=6000, protocol="classic", **group) -> dict:
    settings = {"members": 4, "protocol": protocol, **group}
    if protocol == "classic":
        settings["session_timeout_ms"] = SESSION_MS
    if members_per_host:
        settings["members_per_host"] = members_per_host
    return {"producer": {"records": records, "rate": 1000}, "consumer_group": settings, "faults": list(faults)}


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def clean(run) -> dict:
    assert run.errors == [] and run.drained and run.unsettled == [], (run.errors, run.unsettled)
    assert run.summary["lost_records"] == 0 and run.summary["valid"] is True, run.summary["anomaly_counts"]
    return run.summary


HOSTING_FACTS = ("host", "hosted_settings")  # what a hosted member's `started` adds
MEMBERS = {"member-1", "member-2", "member-3", "member-4"}


def event_fields(run) -> set[tuple[str, str, str]]:
    """(member, event kind, field) for every field some event of that kind carries, but HOSTING_FACTS."""
    return {(path.stem, e["kind"], name) for path in (run.run_dir / "events").glob("member-*.jsonl")
            for e in jsonl(path) for name in e if name not in HOSTING_FACTS}


def consumed_columns(run) -> set[tuple[str, str]]:
    """(member, "column: type") for every column its consumed file fills (the run's compaction to Parquet gives
    every file the contract's columns, so a column the member did not write is there, all null)."""
    out = set()
    for path in (run.run_dir / "consumed").glob("member-*.parquet"):
        table = pq.read_table(path)
        out |= {(path.stem, f"{field.name}: {field.type}") for field, column in zip(table.schema, table.columns)
                if column.null_count < len(column)}
    return out


def check_statuses(summary: dict) -> dict[str, str]:
    return {name: check["status"] for name, check in summary["checks"].items()}


def other_than(expected, one: dict, many: dict) -> dict:
    """Each key whose value is not ``expected`` in one mapping or the other (or is missing), with both values."""
    return {key: (one.get(key), many.get(key)) for key in one.keys() | many.keys()
            if one.get(key) != expected or many.get(key) != expected}


def fault_row(run, kind: str) -> dict:
    return next(r for r in jsonl(run.run_dir / "faults.jsonl") if r["kind"] == kind)


@pytest.mark.slow  # make test's 30 minutes: a hosted crash runs there (below)
def test_hosted_and_one_process_members_give_the_same_rows_and_checks(chaos_run):
    """The same scenario twice, 4 members in 4 processes and in 2 hosts of 2: both valid, with the same members,
    consumed columns (and types), event kinds and fields, every check run and every anomaly count 0; the hosted
    members' `started` facts say where they ran. Fails if a hosted member writes a column, an event kind or a field
    that a member of its own process does not (or the other way round), or if a check does not run on one of them."""
    alone, hosted = chaos_run(scenario()), chaos_run(scenario(members_per_host=2))
    a, h = clean(alone), clean(hosted)
    for facts in (consumed_columns, event_fields):
        one, many = facts(alone), facts(hosted)
        assert one == many and {row[0] for row in many} == MEMBERS, (facts.__name__, one - many, many - one)
    # not run: no state/ (issue 54), no exactly-once promised (issue 56)
    stateless = checks_needing("state", "eos", "verified")
    assert set(other_than("ran", check_statuses(a), check_statuses(h))) == stateless
    assert set(other_than(0, a["anomaly_counts"], h["anomaly_counts"])) == stateless
    assert a["produced_records"] == h["produced_records"] and h["duplicate_extra_deliveries"] == 0
    started = [e for e in jsonl(hosted.run_dir / "events" / "member-3.jsonl") if e["kind"] == "started"][0]
    assert started["host"] == "host-2" and started["hosted_settings"]["queued.max.messages.kbytes"] > 0
    assert "host" not in [e for e in jsonl(alone.run_dir / "events" / "member-3.jsonl") if e["kind"] == "started"][0]


def owned(events: list[dict]) -> set[str]:
    """The partitions a member's events say it owns at their end: an `assigned` adds (under KIP-848 and cooperative
    rebalancing it names only the partitions added), a `revoked` or `lost` takes away."""
    partitions: set[str] = set()
    for e in events:
        if e["kind"] == "assigned":
            partitions |= set(e["partitions"])
        elif e["kind"] in ("revoked", "lost"):
            partitions -= set(e["partitions"])
    return partitions


def removed_for(run, member_id: str) -> list[str]:
    """The coordinator's log lines on why a member left the group: a leave it sent, or its session's expiry."""
    lines = [line for path in sorted((run.run_dir / "logs").glob("kafka-*.log")) for line in path.read_text().splitlines()]
    return [line for line in lines if member_id in line and ("LeaveGroup" in line or "has failed" in line
                                                               or "left the consumer group" in line or "fenced" in line)]


# make test: librdkafka on the classic protocol; the Java member program's hosted crash is in make test through
# test_java_host_cluster.py (both protocols), so its variant here and librdkafka on the consumer protocol are nightly
@pytest.mark.parametrize("client, protocol", [("librdkafka", "classic"),
                                              pytest.param("java-member", "consumer", marks=pytest.mark.slow),
                                              pytest.param("librdkafka", "consumer", marks=pytest.mark.slow)])
def test_a_hosted_crash_looks_like_a_killed_process(chaos_run, client, protocol):
    """member-2 (host-1, with member-1) crashed for 16 s, the lanes through the request-aware proxy (which a hosted
    crash does not need; here it records what the member sends): once its host says it is down it sends nothing (no
    heartbeat, no commit, no leave); the coordinator removes it on its session's expiry, not on a leave, so its
    partitions move only then; member-1, in the same process, consumes on."""
    crash = {"kind": "member_crash", "target": "member-2", "at_s": 4, "duration_s": 16}
    run = chaos_run({**scenario(crash, members_per_host=2, records=24000, protocol=protocol, client=client),
                     "run": {"rpc_proxy": True}})
    clean(run)
    row = fault_row(run, "member_crash")
    assert row["host"] == "host-1" and row["leave_guard"] is True, row
    # issue 51: the row says when member-2 really stopped (its host finished its batch, then destroyed its consumer)
    assert row["injected_at_ms"] <= row["stopped_at_ms"] <= row["inject_done_ms"], row
    group_requests = [r for r in row["sent_after_crash"] if r["api"] in GROUP_APIS]  # heartbeats, commits, leaves
    assert row["swallowed"] == [] and group_requests == [], row
    events = [e for e in jsonl(run.run_dir / "events" / "member-2.jsonl") if e["ts_ms"] < row["injected_at_ms"]]
    moved = handed_over(run.run_dir, "member-2", owned(events), row["injected_at_ms"])
    assert moved is not None and moved - row["injected_at_ms"] >= SESSION_MS - 2000, (moved, row)
    why = removed_for(run, [e for e in events if e["kind"] == "assigned"][-1]["member_id"])
    assert why and not any("LeaveGroup" in line for line in why), why  # the broker's side: expired, not left
    member_1 = [e["ts_ms"] for e in jsonl(run.run_dir / "events" / "member-1.jsonl") if e["kind"] == "stopped"]
    assert member_1 and member_1[0] > row["healed_at_ms"]  # its host-mate ran on to the end


def consumed_between(run, member: str, start_ms: int, end_ms: int) -> int:
    return sum(1 for r in jsonl(run.run_dir / "consumed" / f"{member}.jsonl") if start_ms <= r["consumed_at_ms"] <= end_ms)


# nightly, both clients (make test's 30 minutes): make test cuts a member in test_lanes.py, freezes one in
# test_triggers.py, and crashes a hosted one above and in test_java_host_cluster.py
@pytest.mark.slow
@pytest.mark.parametrize("client", ["librdkafka", "java-member"])
def test_a_hosted_cut_is_one_members_and_a_hosted_freeze_is_its_whole_hosts(chaos_run, client):
    """member-2 (host-1) cut for 14 s, longer than its session, then member-4 (host-2) frozen for 6 s: the cut takes
    member-2 alone off the cluster while member-1, in the same process, consumes on; the freeze stops every member of
    host-2 (a GC pause stops a whole process), and the row says which. (A freeze longer than the session is a finding
    of its own: once resumed, librdkafka hands the application records it had fetched of partitions the group has
    since given to another member, before it learns it was removed.)"""
    cut = {"kind": "member_cut", "target": "member-2", "at_s": 3, "duration_s": 14}
    freeze = {"kind": "member_freeze", "target": "member-4", "at_s": 24, "duration_s": 6}
    run = chaos_run({**scenario(cut, freeze, members_per_host=2, records=45000, client=client), "run": {"log_format": "jsonl"}})
    clean(run)
    cut_row, freeze_row = fault_row(run, "member_cut"), fault_row(run, "member_freeze")
    assert cut_row["target"] == "member-2" and cut_row["host"] == "host-1" and cut_row["swallowed"] > 0
    window = (cut_row["inject_done_ms"] + 1000, cut_row["healed_at_ms"])
    assert consumed_between(run, "member-1", *window) > 0 and consumed_between(run, "member-2", *window) == 0
    assert freeze_row["host"] == "host-2" and freeze_row["frozen"] == ["member-3", "member-4"]
    window = (freeze_row["inject_done_ms"] + 1000, freeze_row["healed_at_ms"] - 500)  # healed_at: after the SIGCONT
    assert consumed_between(run, "member-3", *window) == 0 and consumed_between(run, "member-4", *window) == 0
    assert consumed_between(run, "member-1", *window) > 0
