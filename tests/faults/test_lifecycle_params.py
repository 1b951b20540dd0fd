"""Broker process faults (broker_crash, broker_restart, rolling_restart) are checked before anything starts."""
import pytest

from faults.kinds import fault_kinds
from harness.scenario import ScenarioError, parse_scenario


def scenario(fault: dict, brokers: int = 3) -> dict:
    return {"cluster": {"brokers": brokers}, "faults": [{"at_s": 1, "duration_s": 5, **fault}]}


def test_the_lifecycle_kinds_are_registered_with_their_target_kinds():
    kinds = fault_kinds()
    assert kinds["broker_crash"].target_kind == "broker"
    assert kinds["broker_restart"].target_kind == "broker"
    assert kinds["rolling_restart"].target_kind == "cluster"


@pytest.mark.parametrize("kind", ["broker_crash", "broker_restart"])
@pytest.mark.parametrize("target", ["kafka-1", "kafka-3", "coordinator", "controller", "leader", "random",
                                    "leader:chaos:0", "leader:__consumer_offsets:7"])
def test_a_broker_process_fault_takes_a_broker_or_a_role(kind, target):
    assert parse_scenario(scenario({"kind": kind, "target": target})).faults[0].target == target


@pytest.mark.parametrize("fault, brokers, error", [
    ({"kind": "broker_crash", "target": "kafka-4"}, 3, "faults[0].target: 'kafka-4' is not one of"),
    ({"kind": "broker_crash", "target": "member-1"}, 3, "faults[0].target: 'member-1' is not one of"),
    ({"kind": "broker_restart", "target": "cluster"}, 3, "faults[0].target: 'cluster' is not one of"),
    ({"kind": "broker_restart", "target": "leader:other:0"}, 3, "faults[0].target: 'leader:other:0': no topic 'other'"),
    ({"kind": "broker_crash", "target": "kafka-1", "order": ["kafka-1"]}, 3, "faults[0].order: unknown field"),
    ({"kind": "rolling_restart", "target": "kafka-1"}, 3, "faults[0].target: 'kafka-1': this fault aims at the whole cluster"),
    ({"kind": "rolling_restart", "target": "coordinator"}, 3, "faults[0].target: 'coordinator': this fault aims at the whole cluster"),
    ({"kind": "rolling_restart", "target": "cluster", "order": ["kafka-2", "kafka-4"]}, 3,
     "faults[0].order[1]: 'kafka-4' is not one of ['kafka-1', 'kafka-2', 'kafka-3']"),
    ({"kind": "rolling_restart", "target": "cluster", "order": ["kafka-2", "kafka-2"]}, 3,
     "faults[0].order: lists a broker twice"),
    ({"kind": "rolling_restart", "target": "cluster", "order": []}, 3, "faults[0].order: "),
    ({"kind": "rolling_restart", "target": "cluster", "order": ["coordinator"]}, 3, "faults[0].order[0]: 'coordinator'"),
    ({"kind": "rolling_restart", "target": "cluster", "settle_s": -1}, 3, "faults[0].settle_s: "),
    ({"kind": "rolling_restart", "target": "cluster", "replicated_timeout_s": 0}, 3, "faults[0].replicated_timeout_s: "),
])
def test_a_bad_lifecycle_fault_gets_one_error_naming_the_field(fault, brokers, error):
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(scenario(fault, brokers))
    assert error in str(caught.value), str(caught.value)


def test_a_rolling_restart_takes_an_order_of_some_or_all_brokers():
    default = parse_scenario(scenario({"kind": "rolling_restart", "target": "cluster"})).faults[0]
    assert default.params.order is None and default.params.settle_s == 0
    partial = parse_scenario(scenario({"kind": "rolling_restart", "target": "cluster", "order": ["kafka-5", "kafka-1"]},
                                      brokers=5)).faults[0]
    assert partial.params.order == ["kafka-5", "kafka-1"]
