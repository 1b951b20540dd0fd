"""Partition faults are checked before anything starts: one error naming the field."""
import pytest

from faults.partition import minority_size
from harness.scenario import ScenarioError, parse_scenario


def scenario(fault: dict, brokers: int = 3) -> dict:
    return {"cluster": {"brokers": brokers}, "topic": {"replication_factor": 1},
            "faults": [{"at_s": 1, "duration_s": 5, **fault}]}


@pytest.mark.parametrize("fault, brokers", [
    ({"kind": "isolate_broker", "target": "coordinator"}, 3),
    ({"kind": "isolate_broker", "target": "leader:chaos:2", "clients": True}, 3),
    ({"kind": "split", "target": "kafka-3"}, 3),
    ({"kind": "split", "target": "kafka-1", "side": ["kafka-1"]}, 3),
    ({"kind": "split", "target": "kafka-1", "side": ["kafka-1", "kafka-2"]}, 3),
    ({"kind": "split", "target": "kafka-5", "side": ["kafka-4", "kafka-5"]}, 5),
    ({"kind": "partition_pair", "target": "cluster", "a": "kafka-1", "b": "kafka-2"}, 3),
    ({"kind": "partition_pair", "target": "cluster", "a": "coordinator", "b": "random"}, 3),
])
def test_valid_partitions(fault, brokers):
    assert parse_scenario(scenario(fault, brokers)).faults[0].kind == fault["kind"]


@pytest.mark.parametrize("fault, brokers, error", [
    ({"kind": "split", "target": "kafka-1", "side": ["kafka-1", "kafka-2"]}, 4,
     "faults[0].side: a 2/2 split leaves no majority side"),
    ({"kind": "split", "target": "kafka-1", "side": ["kafka-1", "kafka-2", "kafka-3"]}, 3,
     "faults[0].side: puts all 3 brokers on one side"),
    ({"kind": "split", "target": "kafka-1"}, 2, "faults[0].side: a split of 2 brokers cannot leave a majority side"),
    ({"kind": "split", "target": "kafka-1", "side": ["kafka-1", "kafka-7"]}, 5, "faults[0].side[1]: 'kafka-7' is not one of"),
    ({"kind": "split", "target": "kafka-1", "side": ["kafka-1", "kafka-1"]}, 5, "faults[0].side: lists a broker twice"),
    ({"kind": "split", "target": "kafka-3", "side": ["kafka-1"]}, 3, "faults[0].side: must include the target ('kafka-3'"),
    ({"kind": "split", "target": "coordinator", "side": ["kafka-1"]}, 3, "faults[0].side: must include the target ('coordinator'"),
    ({"kind": "split", "target": "kafka-4"}, 3, "faults[0].target: 'kafka-4' is not one of"),
    ({"kind": "isolate_broker", "target": "member-1"}, 3, "faults[0].target: 'member-1' is not one of"),
    ({"kind": "isolate_broker", "target": "kafka-1", "clients": "everything"}, 3, "faults[0].clients:"),
    ({"kind": "partition_pair", "target": "cluster", "a": "kafka-2", "b": "kafka-2"}, 3, "faults[0].b: must differ from a"),
    ({"kind": "partition_pair", "target": "cluster", "a": "kafka-1", "b": "kafka-9"}, 3, "faults[0].b: 'kafka-9' is not one of"),
    ({"kind": "partition_pair", "target": "cluster", "a": "nobody", "b": "kafka-1"}, 3, "faults[0].a: 'nobody' is not one of"),
    ({"kind": "partition_pair", "target": "cluster", "a": "kafka-1"}, 3, "faults[0].b: Field required"),
    ({"kind": "partition_pair", "target": "kafka-1", "a": "kafka-1", "b": "kafka-2"}, 3,
     "faults[0].target: 'kafka-1': this fault aims at the whole cluster"),
])
def test_bad_partitions_name_the_field(fault, brokers, error):
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(scenario(fault, brokers))
    assert error in str(caught.value), str(caught.value)


def test_a_split_in_a_random_menu_is_checked_like_a_listed_one():
    with pytest.raises(ScenarioError, match=r"random_faults\.faults\[0\]\.side: a 2/2 split leaves no majority side"):
        parse_scenario({"cluster": {"brokers": 4}, "random_faults": {"faults": [
            {"kind": "split", "target": "kafka-1", "side": ["kafka-1", "kafka-2"]}]}})


@pytest.mark.parametrize("brokers, size", [(1, 0), (2, 0), (3, 1), (4, 1), (5, 2)])
def test_the_default_split_is_the_largest_minority(brokers, size):
    assert minority_size(brokers) == size
