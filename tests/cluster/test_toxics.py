"""Each Toxiproxy toxic changes what a client measures, on a broker's lanes and on one client's own lane."""
import random
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from faults.context import FaultContext
from faults.kinds import fault_kinds
from faults.timeline import FaultTimeline
from harness.probe import api_versions_roundtrip

pytestmark = pytest.mark.cluster
LANE = "member-8"  # a spare lane of the session cluster: no other test's member uses it


def toxic(cluster, kind, target, **params):
    cls = fault_kinds()[kind]
    ctx = FaultContext(cluster, {}, FaultTimeline(None), random.Random(0), "g", "kafka-chaos-ready")
    return cls.build(ctx, target, cls.Params(**params))


def roundtrip(broker, lane=LANE):
    return api_versions_roundtrip(broker.lane_addresses[lane], timeout_s=3)


def test_latency_delays_responses_downstream_and_requests_upstream(kafka_cluster):
    broker = kafka_cluster.brokers[0]
    assert roundtrip(broker) < 0.2
    for stream in ("downstream", "upstream"):
        with toxic(kafka_cluster, "latency", LANE, latency_ms=400, stream=stream):
            assert roundtrip(broker) >= 0.4
            assert roundtrip(broker, "member-7") < 0.2, "another client's lane is untouched"
    assert roundtrip(broker) < 0.2


def test_reset_peer_fails_requests_and_timeout_stalls_them(kafka_cluster):
    broker = kafka_cluster.brokers[1]
    with toxic(kafka_cluster, "reset_peer", broker.name, lane=LANE, timeout_ms=0):
        started = time.monotonic()
        assert roundtrip(broker) is None and time.monotonic() - started < 1, "a reset fails at once"
    with toxic(kafka_cluster, "timeout", broker.name, lane=LANE, timeout_ms=0):
        started = time.monotonic()
        assert roundtrip(broker) is None and time.monotonic() - started >= 2.9, "a blackhole stalls until the client gives up"
    assert roundtrip(broker) is not None


def test_slicer_delays_and_limit_data_cuts_the_connection(kafka_cluster):
    broker = kafka_cluster.brokers[2]
    with toxic(kafka_cluster, "slicer", LANE, average_size=40, delay_us=100_000):
        took = roundtrip(broker)
        assert took is not None and took >= 0.3, took  # the ApiVersions answer is a few hundred bytes
    with toxic(kafka_cluster, "limit_data", LANE, bytes=20):
        assert roundtrip(broker) is None
    assert roundtrip(broker) is not None


def test_bandwidth_caps_what_a_consumer_fetches(kafka_cluster):
    topic = f"toxic-bw-{random.randrange(16**6):06x}"
    kafka_cluster.create_topic(topic, 1, 3)
    producer = Producer({"bootstrap.servers": kafka_cluster.control_bootstrap_servers})
    for _ in range(800):
        producer.produce(topic, b"x" * 1000)
    producer.flush(30)

    def fetch_seconds() -> float:
        consumer = Consumer({"bootstrap.servers": kafka_cluster.lane_bootstrap_servers(LANE), "group.id": "unused",
                             "enable.auto.commit": False})
        consumer.assign([TopicPartition(topic, 0, 0)])  # no group join: only the fetches are timed
        started, got = time.monotonic(), 0
        while got < 800 and time.monotonic() - started < 60:
            got += sum(1 for m in consumer.consume(100, 0.5) if not m.error())
        consumer.close()
        assert got == 800
        return time.monotonic() - started

    free = fetch_seconds()
    with toxic(kafka_cluster, "bandwidth", LANE, rate_kb_s=100):
        capped = fetch_seconds()
    assert capped >= 8 * 0.8 and capped > 2 * free, (free, capped)  # 800 KB at 100 KB/s
