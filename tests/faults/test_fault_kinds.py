"""Fault kinds declare themselves: the scenario's fault entries and the nemesis find them by name."""
import json

import pytest

from faults.base import Fault
from faults.kinds import fault_kinds
from faults.timeline import FaultTimeline
from harness.scenario import ScenarioError, parse_scenario


def test_every_kind_declares_its_target_kind_and_params():
    kinds = fault_kinds()
    assert {"broker_freeze", "proxy_cut", "latency", "member_freeze", "member_crash"} <= set(kinds)
    for name, cls in kinds.items():
        assert cls.kind == name and cls.target_kind and cls.Params is not None, name


def test_unknown_kind_lists_the_kinds():
    with pytest.raises(ScenarioError) as caught:
        parse_scenario({"faults": [{"kind": "meteor", "target": "kafka-1", "at_s": 1, "duration_s": 1}]})
    message = str(caught.value)
    assert "faults[0].kind: unknown fault kind 'meteor'" in message and "broker_freeze" in message


def test_a_kinds_params_are_flat_in_the_entry_and_checked():
    entry = parse_scenario({"faults": [{"kind": "latency", "target": "kafka-2", "at_s": 1, "duration_s": 2,
                                        "latency_ms": 300, "jitter_ms": 50}]}).faults[0]
    assert entry.params.latency_ms == 300 and entry.params.jitter_ms == 50
    with pytest.raises(ScenarioError, match=r"faults\[0\].latency_ms: unknown field"):
        parse_scenario({"faults": [{"kind": "proxy_cut", "target": "kafka-1", "at_s": 1, "duration_s": 1, "latency_ms": 3}]})


@pytest.mark.parametrize("target, ok", [("kafka-3", True), ("kafka-4", False), ("coordinator", True),
                                        ("leader:chaos:5", True), ("leader:chaos:6", False),
                                        ("leader:other:0", False), ("member-1", False)])
def test_broker_targets_are_checked_against_the_scenario(target, ok):
    data = {"faults": [{"kind": "broker_freeze", "target": target, "at_s": 1, "duration_s": 1}]}
    if ok:
        assert parse_scenario(data).faults[0].target == target
    else:
        with pytest.raises(ScenarioError, match=r"faults\[0\].target: "):
            parse_scenario(data)


class Flaky(Fault):
    """Fails half-way through its inject, like a `docker pause` that timed out after the freeze took hold."""
    def __init__(self, timeline):
        super().__init__("thing", timeline=timeline)
        self.healed = 0

    def _inject(self):
        raise TimeoutError("pause timed out")

    def _heal(self):
        self.healed += 1


def test_a_fault_is_recorded_before_its_inject_and_healed_after_a_failed_inject(tmp_path):
    fault = Flaky(FaultTimeline(tmp_path / "faults.jsonl"))
    with pytest.raises(TimeoutError):
        fault.inject()
    [row] = [json.loads(line) for line in (tmp_path / "faults.jsonl").read_text().splitlines()]
    assert row["healed_at_ms"] is None and row["inject_error"] == "pause timed out"
    assert fault.active and fault.heal() and fault.healed == 1
    [row] = [json.loads(line) for line in (tmp_path / "faults.jsonl").read_text().splitlines()]
    assert row["healed_at_ms"] >= row["injected_at_ms"]
