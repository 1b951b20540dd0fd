"""Every client, assignor and group protocol runs end to end on the real cluster and loses nothing."""
import json

import pytest

from harness.releases.client_versions import librdkafka_client
from run_logs import rows

pytestmark = pytest.mark.cluster


@pytest.mark.parametrize("group", [
    {"client": "librdkafka", "assignor": "roundrobin"},
    {"client": "librdkafka", "assignor": "cooperative-sticky", "static_membership": True},
    {"client": "librdkafka", "protocol": "consumer", "remote_assignor": "uniform"},
    {"client": "librdkafka", "assignor": "range", "commit": "async"},
    pytest.param({"client": "java", "assignor": "sticky"}, marks=pytest.mark.slow),  # make test's 30 minutes
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


def test_a_mixed_java_and_librdkafka_range_group_consumes_every_record_once(chaos_run):
    outcome = chaos_run({"producer": {"records": 10_000, "rate": 2500},
                         "consumer_group": {"assignor": "range", "members": [{"count": 2, "client": "librdkafka"},
                                                                             {"count": 1, "client": "java"}]}})
    assert outcome.errors == [] and outcome.drained, outcome.errors
    consumed = rows(outcome.run_dir / "consumed")
    assert {r["member"]: r["client"] for r in consumed} == {"member-1": "librdkafka", "member-2": "librdkafka",
                                                            "member-3": "java"}
    summary = outcome.summary
    assert summary["lost_records"] == 0 and summary["duplicated_offsets"] == 0 and summary["valid"] is True


@pytest.mark.slow  # make test's 30 minutes: a pinned release's venv is tested in tests/harness/test_client_versions.py
def test_a_member_pinned_to_an_older_confluent_kafka_consumes_a_run_and_names_its_librdkafka(chaos_run):
    """confluent-kafka 2.9.0 (from the package registry into a cached venv) beside the harness's own release,
    in one group, and a third member that joins later `like` the pinned one. Its wheel bundles librdkafka
    2.8.0, not 2.9.0: the event names what the member really runs."""
    outcome = chaos_run({"producer": {"records": 6000, "rate": 2000},
                         "consumer_group": {"members": [{"count": 1, "version": "2.9.0"}, {"count": 1}]},
                         "faults": [{"kind": "member_join", "target": "group", "like": 0, "at_s": 1, "duration_s": 1}]})
    assert outcome.errors == [] and outcome.drained, outcome.errors
    started = {e["member"]: e for e in rows(outcome.run_dir / "events") if e["kind"] == "started"}
    assert started["member-1"]["client_version"] == started["member-3"]["client_version"] == "2.9.0"
    assert started["member-1"]["librdkafka_version"] == librdkafka_client("2.9.0").librdkafka_version == "2.8.0"
    assert started["member-2"]["client_version"] != "2.9.0"
    assert {r["member"] for r in rows(outcome.run_dir / "consumed")} >= {"member-1", "member-2"}
    cluster = json.loads((outcome.run_dir / "cluster.json").read_text())
    assert {"client": "librdkafka", "version": "2.9.0", "librdkafka_version": started["member-1"]["librdkafka_version"]} \
        in cluster["clients"]
    assert outcome.summary["lost_records"] == 0 and outcome.summary["valid"] is True
