"""Each workload client has its own lane: its traffic stays there, and one member can lose the cluster alone."""
import pytest
from confluent_kafka.admin import AdminClient

from run_logs import rows

pytestmark = pytest.mark.cluster


def test_metadata_answered_on_a_lane_advertises_that_lanes_proxies(kafka_cluster):
    for lane in ("member-1", "producer-1"):
        admin = AdminClient({"bootstrap.servers": kafka_cluster.lane_bootstrap_servers(lane)})
        advertised = {f"{b.host}:{b.port}" for b in admin.list_topics(timeout=10).brokers.values()}
        assert advertised == {b.lane_addresses[lane] for b in kafka_cluster.brokers}


def test_a_member_cut_from_the_cluster_loses_its_partitions_to_the_others_and_rejoins(chaos_run):
    outcome = chaos_run({"producer": {"records": 70_000, "rate": 2000},  # 35 s: time to rejoin after the heal
                         "faults": [{"kind": "member_cut", "target": "member-1", "at_s": 3, "duration_s": 18}]})
    assert outcome.errors == [] and outcome.drained, outcome.errors
    [fault] = rows(outcome.run_dir, "faults")
    cut_from, cut_until = fault["inject_done_ms"], fault["healed_at_ms"]
    events = rows(outcome.run_dir / "events")
    first_owned = {p for e in events if e["member"] == "member-1" and e["kind"] == "assigned" and e["ts_ms"] < cut_from
                   for p in e["partitions"]}
    taken_over = {p for e in events if e["member"] != "member-1" and e["kind"] == "assigned"
                  and cut_from < e["ts_ms"] < cut_until for p in e["partitions"]}
    assert first_owned and first_owned <= taken_over, (first_owned, taken_over)
    consumed = rows(outcome.run_dir / "consumed")
    assert any(r["member"] != "member-1" and cut_from + 12_000 < r["consumed_at_ms"] < cut_until for r in consumed), \
        "the other members stopped consuming"
    assert not any(r["member"] == "member-1" and cut_from + 1_000 < r["consumed_at_ms"] < cut_until for r in consumed)
    assert any(e["member"] == "member-1" and e["kind"] == "assigned" and e["ts_ms"] > cut_until for e in events), \
        "member-1 never rejoined"
    assert outcome.summary["lost_records"] == 0, outcome.summary
