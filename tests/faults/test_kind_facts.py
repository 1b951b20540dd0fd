"""Issue 24: every fault row carries what the analysis needs (label, ends_process, effect_from, group_change), declared by its kind,
so that the analysis names no kind; and a kind writes what the analysis reads into an older row of that kind."""
import json

import pytest

from analysis.api import history
from faults.base import Fault
from faults.kinds import fault_kinds
from faults.rpc import RpcFault, RpcParams
from faults.timeline import FaultTimeline


class Kill(Fault):
    """A made-up kind that ends its target's process (no `kind`: it does not register)."""
    ends_process = True

    def _inject(self):
        pass

    def _heal(self):
        pass


def test_the_row_writer_writes_the_facts_of_the_kind(tmp_path):
    timeline = FaultTimeline(tmp_path / "faults.jsonl")
    with Kill("member-2", timeline=timeline, requested_target="random-member"):
        pass
    [row] = [json.loads(line) for line in (tmp_path / "faults.jsonl").read_text().splitlines()]
    assert (row["label"], row["ends_process"], row["effect_from"]) == ("fault", True, "inject")
    assert row["params"] == {"requested_target": "random-member"} and row["healed_at_ms"] is not None


def rule(**params) -> RpcFault:
    return RpcFault("group", None, RpcParams(**params), None, seed=1, duration_s=5)


def test_an_rpc_rule_is_labelled_by_what_it_does_and_its_window_opens_at_its_first_hit():
    assert rule(api="Heartbeat", action="error", error="REBALANCE_IN_PROGRESS").facts() == \
        {"label": "rpc Heartbeat error REBALANCE_IN_PROGRESS", "ends_process": False, "effect_from": "first_hit",
         "group_change": None}
    assert rule(api="SyncGroup", action="delay", delay_ms=8_000).facts()["label"] == "rpc SyncGroup delay 8000 ms"
    assert rule(api="JoinGroup", action="observe").facts()["effect_from"] == "never"


def test_only_the_kinds_that_kill_a_process_say_so():
    kinds = fault_kinds()
    assert {k for k, cls in kinds.items() if cls.ends_process} == {"member_crash", "broker_crash"}
    assert {k for k, cls in kinds.items() if cls.effect_from != "inject"} == {"rpc"}


def test_the_kinds_that_change_the_groups_members_or_partitions_say_how():
    changes = {k: cls.group_change for k, cls in fault_kinds().items() if cls.group_change}
    assert changes == {"member_join": "member_starts", "member_crash": "member_ends", "member_leave": "member_ends",
                       "member_bounce": "member_returns", "partitions_add": "partitions_added",
                       "topic_create": "partitions_added"}


@pytest.mark.parametrize("kind", sorted(fault_kinds()))
def test_a_kind_writes_what_the_analysis_reads_into_an_older_row_of_it(kind):
    """An older run and a new one mean the same: the analysis's table for rows without facts (fault_facts) agrees
    with what each kind declares today."""
    if kind == "rpc":
        for params in ({"api": "Heartbeat", "action": "error", "error": "FENCED_INSTANCE_ID"},
                       {"api": "OffsetCommit", "action": "delay", "delay_ms": 500}, {"api": "LeaveGroup", "action": "drop_connection"},
                       {"api": "JoinGroup", "action": "observe"}, {"api": "Heartbeat", "action": "hold"}):
            fault = rule(**params)
            assert fault.facts() == history.fault_facts({"kind": kind, "params": fault.params}), params
        return
    cls = fault_kinds()[kind]
    declared = cls.__new__(cls).facts()  # the kind's own facts(); no target needed to tell them
    assert declared == history.fault_facts({"kind": kind, "params": {}})
