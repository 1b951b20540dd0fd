"""Each workload client has its own lane: its traffic stays there, and one member can lose the cluster alone."""
import random

import pytest
from confluent_kafka.admin import AdminClient

from faults.context import FaultContext
from faults.network import MemberCut, ProxyCut
from faults.targets import TargetError
from harness.scenario import ScenarioError
from faults.timeline import FaultTimeline
from kafkanet.probe import api_versions_roundtrip
from run_logs import rows
from scenario_files import catalog

pytestmark = pytest.mark.cluster


def test_metadata_answered_on_a_lane_advertises_that_lanes_proxies(kafka_cluster):
    for lane in ("member-1", "producer-1"):
        admin = AdminClient({"bootstrap.servers": kafka_cluster.lane_bootstrap_servers(lane)})
        advertised = {f"{b.host}:{b.port}" for b in admin.list_topics(timeout=10).brokers.values()}
        assert advertised == {b.lane_addresses[lane] for b in kafka_cluster.brokers}


def test_cluster_json_lists_each_lane_and_its_proxy_on_every_broker(kafka_cluster):
    described = kafka_cluster.describe()
    assert described["client_lanes"] == list(kafka_cluster.client_lanes) and "producer-1" in described["client_lanes"]
    for broker in described["brokers"]:
        assert list(broker["lanes"]) == described["client_lanes"]
        assert {lane["proxy"] for lane in broker["lanes"].values()} <= set(described["proxies"])


def test_a_member_cut_from_the_cluster_loses_its_partitions_to_the_others_and_rejoins(chaos_run):
    """Cut for 20 s against the 8 s session: the coordinator evicts member-1 and the others take its
    partitions and consume them while it is still cut off; after the heal it rejoins and consumes again."""
    # 40 s of records: after the heal (at 22 s) member-1 waits out librdkafka's reconnect back-off (up to
    # 10 s by default) and a rebalance before it is assigned again; the run must not end first
    outcome = chaos_run(catalog("member-cut"))
    assert outcome.errors == [] and outcome.drained, outcome.errors
    [fault] = rows(outcome.run_dir, "faults")
    assert fault["params"]["proxies"] == [f"kafka-{n}-member-1" for n in (1, 2, 3)], fault
    cut_from, cut_until = fault["inject_done_ms"], fault["healed_at_ms"]
    events, consumed = rows(outcome.run_dir / "events"), rows(outcome.run_dir / "consumed")
    owned = {p for e in events if e["member"] == "member-1" and e["kind"] == "assigned" and e["ts_ms"] < cut_from
             for p in e["partitions"]}
    taken_at = {p: min((e["ts_ms"] for e in events if e["member"] != "member-1" and e["kind"] == "assigned"
                        and cut_from < e["ts_ms"] < cut_until and p in e["partitions"]), default=None) for p in owned}
    assert owned and None not in taken_at.values(), f"member-1's partitions not taken over during the cut: {taken_at}"
    moved_at = max(taken_at.values())
    consumed_by_others = {f"{r['topic']}:{r['partition']}" for r in consumed
                          if r["member"] != "member-1" and moved_at < r["consumed_at_ms"] < cut_until}
    assert owned <= consumed_by_others, f"the others did not consume member-1's partitions during the cut: {consumed_by_others}"
    assert not any(r["member"] == "member-1" and cut_from + 1_000 < r["consumed_at_ms"] < cut_until for r in consumed)
    assert any(e["member"] == "member-1" and e["kind"] == "assigned" and e["partitions"] and e["ts_ms"] > cut_until
               for e in events), "member-1 never rejoined"
    consuming_again = min(r["consumed_at_ms"] for r in consumed if r["member"] == "member-1" and r["consumed_at_ms"] > cut_until)
    assert outcome.summary["lost_records"] == 0, outcome.summary
    print(f"\nmember_cut member-1 (8 s session): its partitions all with others {(moved_at - cut_from) / 1000:.1f} s "
          f"after inject; member-1 consuming again {(consuming_again - cut_until) / 1000:.1f} s after heal")


def test_a_proxy_cut_closes_every_client_facing_lane_of_the_broker_and_no_other(kafka_cluster):
    broker, other = kafka_cluster.brokers[0], kafka_cluster.brokers[1]
    ctx = FaultContext(kafka_cluster, {}, FaultTimeline(None), random.Random(0), "g", "kafka-chaos-ready")
    with ProxyCut.build(ctx, broker.name, ProxyCut.Params()):
        for address in [broker.client_address, *broker.lane_addresses.values()]:
            assert api_versions_roundtrip(address) is None, f"{address} still answers"
        assert api_versions_roundtrip(broker.control_address) is not None, "the harness's own lane is never cut"
        assert api_versions_roundtrip(other.lane_addresses["member-1"]) is not None, "another broker was cut too"
    assert all(api_versions_roundtrip(a) is not None for a in broker.lane_addresses.values())


def test_a_lane_the_cluster_does_not_have_is_refused_with_its_lanes(kafka_cluster):
    ctx = FaultContext(kafka_cluster, {}, FaultTimeline(None), random.Random(0), "g", "kafka-chaos-ready")
    with pytest.raises(TargetError, match=r"no lane for 'member-12'; its lanes: member-1, .*producer-1"):
        MemberCut.build(ctx, "member-12", MemberCut.Params())


def test_a_scenario_with_more_members_than_the_cluster_has_lanes_is_refused_before_it_starts(chaos_run, kafka_cluster):
    members = sum(lane.startswith("member-") for lane in kafka_cluster.client_lanes) + 1
    with pytest.raises(ScenarioError, match=rf"consumer_group.members: this cluster has no lane for member-{members}\b"):
        chaos_run({"consumer_group": {"members": members}})
