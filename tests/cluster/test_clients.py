"""Every client, assignor and group protocol runs end to end on the real cluster and loses nothing."""
import pytest

from run_logs import rows

pytestmark = pytest.mark.cluster


@pytest.mark.parametrize("group", [
    {"client": "librdkafka", "assignor": "roundrobin"},
    {"client": "librdkafka", "assignor": "cooperative-sticky", "static_membership": True},
    {"client": "librdkafka", "protocol": "consumer", "remote_assignor": "uniform"},
    {"client": "librdkafka", "assignor": "range", "commit": "async"},
    {"client": "java", "assignor": "sticky"},
    {"client": "java", "protocol": "consumer", "remote_assignor": "range"},
], ids=lambda g: "-".join(str(v) for v in g.values()))
def test_group_consumes_every_record(chaos_run, group):
    outcome = chaos_run({"producer": {"records": 6000, "rate": 3000}, "consumer_group": {**group, "members": 2}},
                        analyze=False)
    assert outcome.errors == [] and outcome.drained
    acked = {(r["partition"], r["offset"]) for r in rows(outcome.run_dir / "produced") if r["status"] == "ok"}
    consumed = rows(outcome.run_dir / "consumed")
    assert len(acked) == 6000
    assert acked <= {(r["partition"], r["offset"]) for r in consumed}
    assert {r["client"] for r in consumed} == {group["client"]}
    assert {r["member"] for r in consumed} == {"member-1", "member-2"}
    events = rows(outcome.run_dir / "events")
    assert {e["kind"] for e in events} >= {"started", "assigned", "stopped"}
    if group.get("static_membership"):
        assert {r["instance_id"] for r in consumed} == {"instance-1", "instance-2"}
    if group["client"] == "librdkafka":
        assert all(r["generation"] >= 1 for r in consumed), "librdkafka rows carry the group generation"
