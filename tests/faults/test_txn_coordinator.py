"""txn-coordinator[:member-N] (faults/targets.py): the leader of the __transaction_state partition of a member's
transactional id, as the request-aware proxy saw it in an InitProducerId, with the topic's partition count read from
metadata (planted here: 7 partitions, not the default 50); bare, the broker coordinating the most members."""
import random

import pytest

from faults.context import ScenarioFacts
from faults.targets import (TargetError, TXN_STATE_TOPIC, check_broker_target, is_role, offsets_partition,
                            resolve_broker, transaction_coordinator_id, txn_coordinator)
from harness.scenario import ScenarioError, parse_scenario
from kafkanet.broker_view import BrokerView, PartitionView

PARTITIONS = 7
LEADERS = (1, 2, 3, 1, 2, 3, 2)  # __transaction_state partition -> its leader


def view(partitions: int = PARTITIONS) -> BrokerView:
    txn = [PartitionView(TXN_STATE_TOPIC, p, LEADERS[p], (1, 2, 3), (1, 2, 3)) for p in range(partitions)]
    return BrokerView(frozenset({1, 2, 3}), tuple(txn))


def leader_of(transactional_id: str) -> int:
    return LEADERS[offsets_partition(transactional_id, PARTITIONS)]


def test_a_transactional_id_is_coordinated_by_the_leader_of_its_partition_in_the_topics_real_count():
    for tid in ("chaos-group-member-1", "app-0f3c-1", "x"):
        assert transaction_coordinator_id(view(), tid) == leader_of(tid)
    with pytest.raises(TargetError, match="__transaction_state does not exist yet"):
        transaction_coordinator_id(BrokerView(frozenset({1}), ()), "x")


def ids_on(broker: int, count: int, prefix: str) -> list[str]:
    """`count` transactional ids whose coordinator is `broker` in the planted view."""
    out, i = [], 0
    while len(out) < count:
        if leader_of(f"{prefix}-{i}") == broker:
            out.append(f"{prefix}-{i}")
        i += 1
    return out


def test_a_member_names_its_own_coordinator_and_bare_names_the_busiest():
    ids = {"member-1": set(ids_on(3, 1, "a")), "member-2": set(ids_on(2, 1, "b")), "member-3": set(ids_on(2, 1, "c"))}
    assert txn_coordinator(view(), ids, "member-1") == 3
    assert txn_coordinator(view(), ids, "member-2") == 2
    assert txn_coordinator(view(), ids, None) == 2  # two members' transactions on broker 2, one on broker 3


def test_a_member_with_many_transactional_ids_names_the_coordinator_of_most_and_counts_once_when_bare():
    ids = {"member-1": set(ids_on(1, 2, "t")) | set(ids_on(3, 1, "u")), "member-2": set(ids_on(3, 1, "v"))}
    assert txn_coordinator(view(), ids, "member-1") == 1  # two of its three threads' ids
    assert txn_coordinator(view(), ids, None) == 3  # both members have a transaction there
    ids = {"member-1": set(ids_on(3, 2, "p")) | set(ids_on(1, 1, "q"))}  # most on 3, though 1 is the lower id
    assert txn_coordinator(view(), ids, "member-1") == 3


def test_a_member_that_sent_no_init_producer_id_has_no_coordinator_yet():
    with pytest.raises(TargetError, match="member-2 has sent no InitProducerId yet"):
        txn_coordinator(view(), {"member-1": {"a"}, "member-2": set()}, "member-2")


class Cluster:
    def __init__(self):
        self.brokers = ["kafka-1", "kafka-2", "kafka-3"]

    def view(self):
        return view()

    def broker_by_id(self, broker_id):
        return f"kafka-{broker_id}"


def test_resolve_broker_takes_the_proxys_ids_and_leader_of_the_transaction_state_topic():
    ids = {"member-1": {"a-0"}}
    assert resolve_broker(Cluster(), "txn-coordinator:member-1", group_id="g", topic="t", rng=random.Random(1),
                          transactional_ids=ids) == f"kafka-{leader_of('a-0')}"
    assert resolve_broker(Cluster(), f"leader:{TXN_STATE_TOPIC}:4", group_id="g", topic="t",
                          rng=random.Random(1)) == "kafka-2"
    assert is_role("txn-coordinator") and is_role("txn-coordinator:member-3")


EOS = {"client": "streams", "members": 3, "streams": {"guarantee": "exactly_once_v2"}}


def freeze(target: str, group: dict, **scenario) -> dict:
    return {"consumer_group": group, "faults": [{"kind": "broker_freeze", "target": target, "at_s": 10,
                                                 "duration_s": 12}], **scenario}


def test_a_txn_coordinator_fault_turns_the_request_aware_proxy_on():
    parsed = parse_scenario(freeze("txn-coordinator:member-2", EOS))
    assert parsed.aims_at_txn_coordinators and parsed.proxies_member_lanes
    assert parse_scenario(freeze(f"leader:{TXN_STATE_TOPIC}:3", EOS)).faults[0].target == f"leader:{TXN_STATE_TOPIC}:3"


@pytest.mark.parametrize("target, group, scenario, error", [
    ("txn-coordinator", {"members": 3}, {}, "faults[0].target: 'txn-coordinator': no member of this group runs a "
                                            "transactional producer"),
    ("txn-coordinator:member-9", EOS, {}, "'txn-coordinator:member-9': member-9 is not a member of this scenario"),
    ("txn-coordinator:member-1", {**EOS, "streams": {"guarantee": "at_least_once"}}, {},
     "no member of this group runs a transactional producer"),
    ("txn-coordinator", EOS, {"run": {"rpc_proxy": False}}, "run.rpc_proxy: false, but a txn-coordinator target"),
    ("txn-coordinator:member", EOS, {}, "is not one of"),
])
def test_a_txn_coordinator_target_that_cannot_exist_is_refused(target, group, scenario, error):
    with pytest.raises(ScenarioError) as raised:
        parse_scenario(freeze(target, group, **scenario))
    assert error in str(raised.value), str(raised.value)


def test_the_broker_target_check_takes_the_transaction_state_topic_at_any_partition():
    facts = ScenarioFacts(brokers=3, members=("member-1",), topics={"chaos": 6})
    check_broker_target(f"leader:{TXN_STATE_TOPIC}:49", facts)  # its count is the cluster's, known only then


@pytest.mark.parametrize("target", [TXN_STATE_TOPIC, "__consumer_offsets", "chaos", "topic"])
def test_a_reassignment_takes_an_internal_topic_as_its_target(target):
    """KAFKA-16352's zoo entry moves every __transaction_state leader away and back (scenarios/zoo/kafka-16352.yaml)."""
    parsed = parse_scenario({"faults": [{"kind": "reassign_partitions", "target": target, "at_s": 5, "duration_s": 2}]})
    assert parsed.faults[0].target == target


def test_a_reassignment_of_a_topic_the_run_does_not_have_is_refused_naming_both_kinds():
    with pytest.raises(ScenarioError) as raised:
        parse_scenario({"faults": [{"kind": "reassign_partitions", "target": "nope", "at_s": 5, "duration_s": 2}]})
    assert "faults[0].target: 'nope' is not a topic of this scenario (['chaos']) or an internal one" in str(raised.value)
