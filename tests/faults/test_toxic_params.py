"""Lane faults (member_cut and every toxic) are checked before anything starts: one error naming the field."""
import pytest

from harness.scenario import ScenarioError, parse_scenario


def scenario(fault: dict, members: int = 3, spare_lanes: int = 2) -> dict:
    return {"cluster": {"spare_lanes": spare_lanes}, "consumer_group": {"members": members},
            "faults": [{"at_s": 1, "duration_s": 5, **fault}]}


@pytest.mark.parametrize("fault", [
    {"kind": "member_cut", "target": "member-2"},
    {"kind": "member_cut", "target": "random-member"},
    {"kind": "member_cut", "target": "producer-1"},
    {"kind": "member_cut", "target": "member-5"},  # a spare lane: 3 members + 2 spares
    {"kind": "latency", "target": "coordinator", "latency_ms": 300, "jitter_ms": 50},
    {"kind": "latency", "target": "member-1", "latency_ms": 300, "stream": "upstream"},
    {"kind": "bandwidth", "target": "kafka-2", "lane": "internal", "rate_kb_s": 100},
    {"kind": "bandwidth", "target": "producer-1", "rate_kb_s": 0, "stream": "both"},
    {"kind": "slicer", "target": "leader", "lane": "member-3", "average_size": 64, "size_variation": 32, "delay_us": 10},
    {"kind": "reset_peer", "target": "random-member", "timeout_ms": 500, "toxicity": 0.5},
    {"kind": "timeout", "target": "kafka-1", "lane": "controller", "timeout_ms": 0},
    {"kind": "limit_data", "target": "member-2", "broker": "coordinator", "bytes": 1000},
    {"kind": "slow_close", "target": "kafka-3", "delay_ms": 2000},
])
def test_valid_lane_faults(fault):
    entry = parse_scenario(scenario(fault)).faults[0]
    assert entry.kind == fault["kind"] and entry.target == fault["target"]


def test_toxic_defaults_are_the_client_lane_downstream_always():
    params = parse_scenario(scenario({"kind": "bandwidth", "target": "kafka-1", "rate_kb_s": 10})).faults[0].params
    assert (params.lane, params.stream, params.toxicity, params.broker) == ("client", "downstream", 1.0, None)
    assert params.attributes() == {"rate": 10}


@pytest.mark.parametrize("fault, error", [
    ({"kind": "member_cut", "target": "member-9"}, "faults[0].target: 'member-9' is not one of"),
    ({"kind": "member_cut", "target": "kafka-1"}, "faults[0].target: 'kafka-1' is not one of"),
    ({"kind": "latency", "target": "member-9", "latency_ms": 10}, "faults[0].target: 'member-9' is not one of"),
    ({"kind": "latency", "target": "kafka-1", "lane": "member-9", "latency_ms": 10}, "faults[0].lane: 'member-9' is not one of"),
    ({"kind": "latency", "target": "kafka-1", "lane": "control", "latency_ms": 10}, "faults[0].lane: 'control' is not one of"),
    ({"kind": "latency", "target": "member-1", "lane": "internal", "latency_ms": 10}, "faults[0].lane: goes with a broker target"),
    ({"kind": "latency", "target": "kafka-1", "broker": "kafka-2", "latency_ms": 10}, "faults[0].broker: goes with a client target"),
    ({"kind": "latency", "target": "member-1", "broker": "kafka-7", "latency_ms": 10}, "faults[0].broker: 'kafka-7' is not one of"),
    ({"kind": "latency", "target": "kafka-1", "latency_ms": 10, "jitter_ms": 20}, "faults[0].jitter_ms: must not exceed latency_ms"),
    ({"kind": "latency", "target": "kafka-1", "latency_ms": 0}, "faults[0].latency_ms:"),
    ({"kind": "latency", "target": "kafka-1", "latency_ms": 10, "stream": "sideways"}, "faults[0].stream:"),
    ({"kind": "latency", "target": "kafka-1", "latency_ms": 10, "toxicity": 0}, "faults[0].toxicity:"),
    ({"kind": "latency", "target": "kafka-1", "latency_ms": 10, "toxicity": 1.5}, "faults[0].toxicity:"),
    ({"kind": "bandwidth", "target": "kafka-1", "rate_kb_s": -1}, "faults[0].rate_kb_s:"),
    ({"kind": "bandwidth", "target": "kafka-1"}, "faults[0].rate_kb_s:"),
    ({"kind": "bandwidth", "target": "kafka-1", "rate_kb_s": 5, "latency_ms": 3}, "faults[0].latency_ms: unknown field"),
    ({"kind": "slicer", "target": "kafka-1", "average_size": 10, "size_variation": 10}, "faults[0].size_variation: must be below"),
    ({"kind": "slicer", "target": "kafka-1", "average_size": 0}, "faults[0].average_size:"),
    ({"kind": "reset_peer", "target": "kafka-1", "timeout_ms": -5}, "faults[0].timeout_ms:"),
    ({"kind": "timeout", "target": "kafka-1", "timeout_ms": -1}, "faults[0].timeout_ms:"),
    ({"kind": "limit_data", "target": "kafka-1", "bytes": 0}, "faults[0].bytes:"),
    ({"kind": "slow_close", "target": "kafka-1", "delay_ms": 0}, "faults[0].delay_ms:"),
])
def test_bad_lane_faults_name_the_field(fault, error):
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(scenario(fault))
    assert error in str(caught.value)


def test_spare_lanes_decide_which_members_can_be_targeted():
    parse_scenario(scenario({"kind": "member_cut", "target": "member-4"}, spare_lanes=1))
    with pytest.raises(ScenarioError, match=r"faults\[0\]\.target: 'member-4' is not one of"):
        parse_scenario(scenario({"kind": "member_cut", "target": "member-4"}, spare_lanes=0))


def test_the_scenario_lists_a_lane_per_member_spares_and_the_producer():
    parsed = parse_scenario(scenario({"kind": "member_cut", "target": "member-1"}, members=2, spare_lanes=1))
    assert parsed.client_lanes() == ("member-1", "member-2", "member-3", "producer-1")
    assert parsed.client_lanes(spares=False) == ("member-1", "member-2", "producer-1")


def test_lane_faults_can_be_drawn_by_the_random_nemesis():
    parsed = parse_scenario({"random_faults": {"seed": 7, "until_s": 120, "interval_s": [1, 2], "duration_s": [1, 2], "faults": [
        {"kind": "member_cut", "target": "random-member"},
        {"kind": "bandwidth", "target": "random", "lane": "internal", "rate_kb_s": 50},
        {"kind": "latency", "target": "random-member", "latency_ms": 200, "broker": "coordinator", "stream": "both"}]}})
    drawn = parsed.schedule()
    assert {f.kind for f in drawn} == {"member_cut", "bandwidth", "latency"}
    assert all(f.target in {"member-1", "member-2", "member-3", "kafka-1", "kafka-2", "kafka-3"} for f in drawn)
