"""A run on brokers of another Kafka release (cluster.kafka_version), on its own cluster."""
import json

import pytest

from harness.run import run_scenario
from harness.scenario import parse_scenario
from run_logs import rows

# nightly: it starts a cluster of its own (and on a new machine builds that release's image); the zoo and the
# nightly's matrix run other releases too
pytestmark = [pytest.mark.cluster, pytest.mark.slow]
RELEASE = "3.9.1"  # the last 3.x release: KRaft with ZooKeeper still in the jars, log4j 1 configs, no KIP-848 GA


def test_a_mixed_group_on_kafka_3_9_brokers_consumes_every_record_once(tmp_path):
    """The image is built on first use (that release's jars from Maven Central); an unpinned Java member runs
    the brokers' own release, so the whole fleet is 3.9.1 but the librdkafka members."""
    scenario = parse_scenario({
        "name": "kafka-3-9", "cluster": {"kafka_version": RELEASE, "spare_lanes": 0},
        "producer": {"records": 6000, "rate": 2000},
        "consumer_group": {"assignor": "range", "members": [{"count": 2}, {"count": 1, "client": "java"}]}})
    outcome = run_scenario(scenario, tmp_path / "runs")
    assert outcome.errors == [] and outcome.drained, outcome.errors
    cluster = json.loads((outcome.run_dir / "cluster.json").read_text())
    assert cluster["kafka_version"] == RELEASE and cluster["images"]["kafka"] == f"kafka-chaos/kafka:{RELEASE}"
    broker_log = (outcome.run_dir / "logs" / "kafka-1.log").read_text(errors="replace")
    assert f"Kafka version: {RELEASE}" in broker_log, "the broker does not say it runs that release"
    started = {e["member"]: e for e in rows(outcome.run_dir / "events") if e["kind"] == "started"}
    assert started["member-3"]["client"] == "java" and started["member-3"]["client_version"] == RELEASE
    acked = {(r["partition"], r["offset"]) for r in rows(outcome.run_dir / "produced") if r["status"] == "ok"}
    deliveries = [(r["partition"], r["offset"]) for r in rows(outcome.run_dir / "consumed")]
    assert len(acked) == 6000 and set(deliveries) == acked and len(deliveries) == len(acked), "not every record once"
