"""Issue 22: the facts a member writes about itself are right, read back from real runs: the full release of the
library that ran, and a member killed by its own client logged so that the analysis can tell (member_fatal)."""
import confluent_kafka
import pytest

from harness.releases.versions import kafka_version
from run_logs import rows
from scenario_files import catalog

pytestmark = pytest.mark.cluster


def started(outcome) -> dict[str, dict]:
    return {e["member"]: e for e in rows(outcome.run_dir / "events") if e["kind"] == "started"}


def test_started_events_name_the_full_release_of_each_client(chaos_run):
    """An unpinned librdkafka member: confluent-kafka's release (not its first character) and the librdkafka it
    bundles; an unpinned Java member: the kafka-clients release on its classpath, the brokers' own."""
    outcome = chaos_run({"producer": {"records": 2000, "rate": 2000},
                         "consumer_group": {"assignor": "range", "members": [{"count": 1, "client": "librdkafka"},
                                                                             {"count": 1, "client": "java"}]}},
                        analyze=False)
    assert outcome.errors == [] and outcome.drained, outcome.errors
    facts = started(outcome)
    assert facts["member-1"]["client_version"] == confluent_kafka.__version__
    assert facts["member-1"]["librdkafka_version"] == confluent_kafka.libversion()[0]
    assert facts["member-2"]["client"] == "java" and facts["member-2"]["client_version"] == kafka_version()


@pytest.mark.slow  # 39 s; duplicate_instance runs in make test through tests/cluster/test_triggers.py
def test_a_java_member_fenced_by_a_duplicated_instance_id_logs_its_fatal_end(chaos_run):
    """VerifiableConsumer ends its loop on FencedInstanceIdException and exits 0, as after a requested stop: the
    launcher reads the exception from its log. The scenario expects that end, so member_fatal lists it and
    reports nothing; the trigger's faults.jsonl row says the same. A JVM can take 10 s to start on a busy machine:
    the duplicate runs for 30 s, and the producer as long."""
    scenario = catalog("duplicate-instance-id", client="java")
    scenario["producer"] = {"records": 60_000, "rate": 2000}
    scenario["faults"] = [{**scenario["faults"][0], "duration_s": 30}]
    outcome = chaos_run(scenario)
    assert outcome.errors == [] and outcome.drained, outcome.errors
    [fenced] = [e for e in rows(outcome.run_dir / "events") if e["kind"] == "fenced"]
    assert (fenced["member"], fenced["error"], fenced["fatal"]) == ("member-1", "FENCED_INSTANCE_ID", True), fenced
    assert fenced["request"] in ("Heartbeat", "OffsetCommit"), fenced  # whichever came back first (both seen)
    [trigger] = [f for f in rows(outcome.run_dir, "faults") if f["kind"] == "duplicate_instance"]
    assert trigger["expected_fatal"] == ["member-1"]
    check = outcome.summary["checks"]["member_fatal"]
    assert outcome.summary["anomaly_counts"]["member_fatal"] == 0 and check["status"] == "ran"
    assert [(e["member"], e["error"]) for e in check["expected"]] == [("member-1", "FENCED_INSTANCE_ID")]
