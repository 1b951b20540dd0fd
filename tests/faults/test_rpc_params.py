"""rpc faults (faults/rpc.py) are checked before anything starts: one error naming the field; every error the
per-API table allows is one Kafka knows (that the proxy can answer each is in test_rpc_proxy.py)."""
import pytest

from faults.rpc import ERRORS_BY_API
from harness.scenario import ScenarioError, parse_scenario
from kafkanet.rpc_proxy import RULE_APIS


def scenario(fault: dict, **group) -> dict:
    return {"consumer_group": {"members": 3, **group}, "faults": [{"kind": "rpc", "at_s": 1, "duration_s": 5, **fault}]}


@pytest.mark.parametrize("fault, group", [
    ({"target": "member-2", "api": "Heartbeat", "action": "error", "error": "REBALANCE_IN_PROGRESS", "count": 1}, {}),
    ({"target": "group", "api": "OffsetCommit", "action": "error", "error": "ILLEGAL_GENERATION", "probability": 0.3}, {}),
    ({"target": "random-member", "api": "SyncGroup", "action": "delay", "delay_ms": 15000}, {}),
    ({"target": "member-5", "api": "JoinGroup", "action": "drop_connection"}, {}),  # a spare lane: a member that joins later
    ({"target": "member-1", "api": "Heartbeat", "action": "hold"}, {}),
    ({"target": "group", "api": "FindCoordinator", "action": "observe"}, {}),
    ({"target": "member-1", "api": "ConsumerGroupHeartbeat", "action": "error", "error": "FENCED_MEMBER_EPOCH"},
     {"protocol": "consumer", "assignor": None, "session_timeout_ms": None, "heartbeat_interval_ms": None}),
])
def test_valid_rpc_faults_route_the_member_lanes_through_the_proxy(fault, group):
    parsed = parse_scenario(scenario(fault, **group))
    assert parsed.faults[0].kind == "rpc" and parsed.proxies_member_lanes


@pytest.mark.parametrize("fault, error", [
    ({"target": "member-9", "api": "Heartbeat", "action": "hold"}, "faults[0].target: 'member-9' is not a member"),
    ({"target": "producer-1", "api": "Heartbeat", "action": "hold"}, "faults[0].target: 'producer-1' is not a member"),
    ({"target": "group", "api": "Fetch", "action": "hold"}, "faults[0].api: Input should be"),
    ({"target": "group", "api": "Heartbeat", "action": "swallow"}, "faults[0].action: Input should be"),
    ({"target": "group", "api": "Heartbeat", "action": "error", "error": "REBALANCE_IN_PROGRES"},
     "faults[0].error: 'REBALANCE_IN_PROGRES' is not a Kafka error name"),
    ({"target": "group", "api": "Heartbeat", "action": "error", "error": "FENCED_MEMBER_EPOCH"},
     "faults[0].error: 'FENCED_MEMBER_EPOCH' is not an error Heartbeat can return"),
    ({"target": "group", "api": "LeaveGroup", "action": "error"}, "faults[0].error: required with action: error"),
    ({"target": "group", "api": "LeaveGroup", "action": "hold", "error": "UNKNOWN_MEMBER_ID"}, "faults[0].error: required with action: error, and only"),
    ({"target": "group", "api": "SyncGroup", "action": "delay"}, "faults[0].delay_ms: required with action: delay"),
    ({"target": "group", "api": "SyncGroup", "action": "delay", "delay_ms": 0}, "faults[0].delay_ms: Input should be greater"),
    ({"target": "group", "api": "SyncGroup", "action": "hold", "count": 0}, "faults[0].count: Input should be greater"),
    ({"target": "group", "api": "SyncGroup", "action": "hold", "probability": 1.5}, "faults[0].probability: Input should be less"),
    ({"target": "group", "api": "ConsumerGroupHeartbeat", "action": "hold"},
     "faults[0].api: a group with protocol: classic never sends ConsumerGroupHeartbeat"),
    ({"target": "group", "api": "StreamsGroupHeartbeat", "action": "hold"},
     "faults[0].api: a group with protocol: classic never sends StreamsGroupHeartbeat"),
])
def test_bad_rpc_faults_are_one_error_naming_the_field(fault, error):
    with pytest.raises(ScenarioError) as raised:
        parse_scenario(scenario(fault))
    assert error in str(raised.value), str(raised.value)


def test_a_classic_api_in_a_kip_848_group_is_refused():
    group = {"protocol": "consumer", "assignor": None, "session_timeout_ms": None, "heartbeat_interval_ms": None}
    with pytest.raises(ScenarioError, match=r"faults\[0\].api: a group with protocol: consumer never sends JoinGroup"):
        parse_scenario(scenario({"target": "group", "api": "JoinGroup", "action": "hold"}, **group))


def test_turning_the_proxy_off_beside_an_rpc_fault_is_refused():
    data = {**scenario({"target": "group", "api": "Heartbeat", "action": "hold"}), "run": {"rpc_proxy": False}}
    with pytest.raises(ScenarioError, match="run.rpc_proxy: false, but an rpc fault"):
        parse_scenario(data)


def test_the_proxy_is_used_only_when_asked_or_needed():
    assert not parse_scenario({}).proxies_member_lanes
    assert parse_scenario({"run": {"rpc_proxy": True}}).proxies_member_lanes


EOS_STREAMS = {"consumer_group": {"client": "streams", "members": 3, "streams": {"guarantee": "exactly_once_v2"}}}
COMMAND = {"consumer_group": {"members": [{"count": 3, "command": ["{python}", "-m", "workloads.app"]}]}}


def producer_fault(base: dict, api: str, cluster: dict | None = None, **params) -> dict:
    fault = {"kind": "rpc", "at_s": 1, "duration_s": 5, "target": "group", "api": api, "action": "observe", **params}
    return {**base, "faults": [fault], **({"cluster": cluster} if cluster else {})}


@pytest.mark.parametrize("base, api", [
    (EOS_STREAMS, "InitProducerId"), (EOS_STREAMS, "EndTxn"), (EOS_STREAMS, "TxnOffsetCommit"),
    (EOS_STREAMS, "Produce"), (COMMAND, "AddPartitionsToTxn"), (COMMAND, "EndTxn"),
    ({"consumer_group": {"members": 3}, "state": {}}, "Produce"),  # a stateful member's changelog producer
    # librdkafka speaks only transaction version 1; the Java client speaks it where the brokers hold 1
    ({"consumer_group": {"members": 2, "commit": "transaction"}}, "AddPartitionsToTxn"),
    ({"consumer_group": {"members": 2, "commit": "transaction"}, "cluster": {"transaction_version": 1}}, "AddOffsetsToTxn"),
    ({"consumer_group": {"client": "java-member", "members": 2, "commit": "transaction"},
      "cluster": {"transaction_version": 1}}, "AddPartitionsToTxn"),
])
def test_a_producer_request_rule_is_taken_where_a_member_sends_it(base, api):
    parsed = parse_scenario(producer_fault(base, api))
    assert parsed.faults[0].params.api == api and parsed.proxies_member_lanes


@pytest.mark.parametrize("base, api, cluster, error", [
    ({"consumer_group": {"members": 3}}, "EndTxn", None,
     "faults[0].api: only a transactional producer sends EndTxn, and no member of this group runs one"),
    ({"consumer_group": {"client": "streams", "members": 3}}, "InitProducerId", None,
     "faults[0].api: only a transactional producer sends InitProducerId"),  # at_least_once: not transactional
    ({"consumer_group": {"members": 3}}, "Produce", None, "faults[0].api: Produce: no member of this group produces"),
    (EOS_STREAMS, "AddPartitionsToTxn", None,
     "faults[0].api: AddPartitionsToTxn is sent only on transaction version 1 (KIP-890: on 2 the brokers add partitions "
     "to the transaction themselves); these members' clients speak 2 with these brokers"),
    (EOS_STREAMS, "AddOffsetsToTxn", {"kafka_version": "4.1.1"}, "AddOffsetsToTxn is sent only on transaction version 1"),
    ({"consumer_group": {"client": "java-member", "members": 2, "commit": "transaction"}}, "AddOffsetsToTxn",
     {"transaction_version": 2}, "cluster.transaction_version: 1 makes them send it"),
])
def test_a_producer_request_rule_no_member_sends_is_refused(base, api, cluster, error):
    with pytest.raises(ScenarioError) as raised:
        parse_scenario(producer_fault(base, api, cluster))
    assert error in str(raised.value), str(raised.value)


def test_a_transaction_error_must_be_one_the_api_returns():
    with pytest.raises(ScenarioError, match="faults\\[0\\].error: 'REBALANCE_IN_PROGRESS' is not an error EndTxn can return"):
        parse_scenario(producer_fault(EOS_STREAMS, "EndTxn", action="error", error="REBALANCE_IN_PROGRESS"))
    parsed = parse_scenario(producer_fault(EOS_STREAMS, "EndTxn", action="error", error="CONCURRENT_TRANSACTIONS"))
    assert parsed.faults[0].params.error == "CONCURRENT_TRANSACTIONS"


def test_the_error_table_covers_every_group_api_with_errors_kafka_knows():
    from kio.schema.errors import ErrorCode
    known = {code.name.upper() for code in ErrorCode}
    assert set(ERRORS_BY_API) == set(RULE_APIS)
    for api, errors in ERRORS_BY_API.items():
        assert set(errors) <= known, (api, set(errors) - known)
        assert len(set(errors)) == len(errors), api
