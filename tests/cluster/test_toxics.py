"""Each Toxiproxy toxic changes what a client measures, on one client's own lane and on a broker's lanes.

Probes are raw Kafka requests on fresh connections (kafkanet.probe): no client library retries or caches
in between. Each test prints how long after inject() the effect was seen and how long after heal() the
first request succeeded again.
"""
import random
import socket
import struct
import time

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from faults.context import FaultContext
from faults.kinds import fault_kinds
from faults.timeline import FaultTimeline
from kafkanet.clock import now_ms
from kafkanet.probe import api_versions_request, api_versions_roundtrip
from kafkanet.waiting import wait_until

pytestmark = pytest.mark.cluster
LANE, OTHER_LANE = "member-8", "member-7"  # spare lanes of the session cluster: no chaos_run member uses them
SLOW_S = 1.0  # latencies and delays in these tests are a second, far above a round trip on a busy machine


def toxic(cluster, kind, target, group_id="g", **params):
    cls = fault_kinds()[kind]
    ctx = FaultContext(cluster, {}, FaultTimeline(None), random.Random(0), group_id, "kafka-chaos-ready")
    return cls.build(ctx, target, cls.Params(**params), requested_target=target)


def roundtrip(broker, lane=LANE, timeout_s=3.0):
    return api_versions_roundtrip(broker.lane_addresses[lane], timeout_s=timeout_s)


def seconds_until(condition, since_ms: int, timeout_s: float = 30) -> float | None:
    """Seconds from `since_ms` (wall clock) to the start of the first probe for which the condition held:
    a stall is only known a time-out later, but it had taken hold when that probe started."""
    probe_started_ms = since_ms

    def holds() -> bool:
        nonlocal probe_started_ms
        probe_started_ms = now_ms()
        return condition()

    if not wait_until(holds, timeout_s, interval_s=0.05):
        return None
    return max(0.0, (probe_started_ms - since_ms) / 1000)


def measured(fault, effect, healthy) -> tuple[float, float]:
    """Inject, wait for the effect, heal, wait for a healthy request: seconds after inject and after heal."""
    with fault:
        took_hold = seconds_until(effect, fault.record["injected_at_ms"])
        assert took_hold is not None, f"{fault!r}: no effect"
    recovered = seconds_until(healthy, fault.record["healed_at_ms"])
    assert recovered is not None, f"{fault!r}: not healthy after the heal"
    print(f"\n{fault.kind} {fault.params['stream']} on {fault.target}: effect {took_hold:.2f} s after inject, "
          f"first good request {recovered:.2f} s after heal")
    return took_hold, recovered


def toxics_on(cluster) -> dict[str, list[str]]:
    return {name: sorted(t["name"] for t in proxy["toxics"]) for name, proxy in cluster.toxiproxy.proxies().items()
            if proxy["toxics"]}


def bytes_until_closed(address: str, request: bytes, timeout_s: float = 5) -> tuple[int, float]:
    """Send a request, read until the other side closes: bytes received and seconds until the close."""
    host, port = address.rsplit(":", 1)
    started, received = time.monotonic(), 0
    with socket.create_connection((host, int(port)), timeout=timeout_s) as conn:
        conn.settimeout(timeout_s)
        conn.sendall(request)
        while chunk := conn.recv(65536):
            received += len(chunk)
    return received, time.monotonic() - started


def test_latency_delays_responses_downstream_and_requests_upstream_on_that_lane_only(kafka_cluster):
    broker = kafka_cluster.brokers[0]
    for stream in ("downstream", "upstream"):
        fault = toxic(kafka_cluster, "latency", LANE, latency_ms=int(SLOW_S * 1000), stream=stream)
        with fault:
            took = roundtrip(broker)
            assert took is not None and took >= SLOW_S, took
            assert roundtrip(broker, OTHER_LANE) < SLOW_S / 2, "another client's lane is slowed too"
        measured(toxic(kafka_cluster, "latency", LANE, latency_ms=int(SLOW_S * 1000), stream=stream),
                 lambda: (roundtrip(broker) or 0) >= SLOW_S, lambda: (roundtrip(broker) or 9) < SLOW_S / 2)


@pytest.mark.parametrize("stream", ["downstream", "upstream"])
def test_reset_peer_fails_requests_at_once(kafka_cluster, stream):
    broker = kafka_cluster.brokers[1]
    fault = toxic(kafka_cluster, "reset_peer", broker.name, lane=LANE, timeout_ms=0, stream=stream)
    with fault:
        started = time.monotonic()
        assert roundtrip(broker) is None and time.monotonic() - started < SLOW_S, "a reset fails at once"
        assert roundtrip(broker, OTHER_LANE) is not None
    measured(toxic(kafka_cluster, "reset_peer", broker.name, lane=LANE, timeout_ms=0, stream=stream),
             lambda: roundtrip(broker) is None, lambda: roundtrip(broker) is not None)


@pytest.mark.parametrize("stream", ["downstream", "upstream"])
def test_timeout_zero_is_a_blackhole_that_stalls_requests(kafka_cluster, stream):
    broker = kafka_cluster.brokers[1]
    fault = toxic(kafka_cluster, "timeout", broker.name, lane=LANE, timeout_ms=0, stream=stream)
    with fault:
        started = time.monotonic()
        assert roundtrip(broker, timeout_s=2) is None
        assert time.monotonic() - started >= 2, "a blackhole stalls until the client gives up"
    measured(toxic(kafka_cluster, "timeout", broker.name, lane=LANE, timeout_ms=0, stream=stream),
             lambda: roundtrip(broker, timeout_s=1) is None, lambda: roundtrip(broker) is not None)


def test_timeout_closes_the_connection_after_its_time(kafka_cluster):
    broker = kafka_cluster.brokers[2]
    with toxic(kafka_cluster, "timeout", broker.name, lane=LANE, timeout_ms=int(SLOW_S * 1000)):
        received, took = bytes_until_closed(broker.lane_addresses[LANE], api_versions_request(7))
    assert received == 0 and SLOW_S <= took < SLOW_S + 2, (received, took)


def test_toxicity_decides_how_many_connections_get_the_toxic(kafka_cluster):
    broker = kafka_cluster.brokers[2]
    with toxic(kafka_cluster, "reset_peer", LANE, timeout_ms=0, toxicity=0.5):
        answered = sum(roundtrip(broker) is not None for _ in range(30))
    assert 0 < answered < 30, f"{answered} of 30 connections answered with toxicity 0.5"


def test_slicer_delivers_the_answer_in_delayed_slices(kafka_cluster):
    broker = kafka_cluster.brokers[2]
    full = answer_size(broker)
    fault = toxic(kafka_cluster, "slicer", LANE, average_size=50, delay_us=200_000)
    with fault:
        took = roundtrip(broker, timeout_s=10)
        assert took is not None, "a sliced answer must still arrive whole"
        assert took >= (full // 50 - 1) * 0.2, (full, took)  # the ApiVersions answer is a few hundred bytes
    measured(toxic(kafka_cluster, "slicer", LANE, average_size=50, delay_us=200_000),
             lambda: (roundtrip(broker, timeout_s=10) or 0) >= SLOW_S, lambda: (roundtrip(broker) or 9) < SLOW_S / 2)


def answer_size(broker) -> int:
    """Bytes of the ApiVersions answer on a healthy lane, its length prefix included."""
    host, port = broker.lane_addresses[LANE].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as conn:
        conn.sendall(api_versions_request(7))
        return struct.unpack(">i", conn.recv(4, socket.MSG_WAITALL))[0] + 4


@pytest.mark.parametrize("stream", ["downstream", "upstream"])
def test_limit_data_closes_the_connection_after_that_many_bytes(kafka_cluster, stream):
    broker = kafka_cluster.brokers[0]
    with toxic(kafka_cluster, "limit_data", LANE, bytes=20, stream=stream):
        received, _ = bytes_until_closed(broker.lane_addresses[LANE], api_versions_request(7))
    # downstream: the client gets exactly 20 bytes of the answer; upstream: the broker gets 20 bytes of
    # a longer request, never answers, and the connection is closed
    assert received == (20 if stream == "downstream" else 0), received
    measured(toxic(kafka_cluster, "limit_data", LANE, bytes=20, stream=stream),
             lambda: roundtrip(broker) is None, lambda: roundtrip(broker) is not None)


def test_slow_close_delays_the_close_the_broker_started(kafka_cluster):
    broker = kafka_cluster.brokers[0]
    garbage = struct.pack(">i", 2**31 - 1)  # a request size far above socket.request.max.bytes: the broker hangs up
    _, prompt = bytes_until_closed(broker.lane_addresses[LANE], garbage)
    with toxic(kafka_cluster, "slow_close", LANE, delay_ms=int(SLOW_S * 1000)):
        _, delayed = bytes_until_closed(broker.lane_addresses[LANE], garbage)
    assert prompt < SLOW_S / 2 and delayed >= SLOW_S, (prompt, delayed)


def test_two_faults_on_one_proxy_keep_their_own_toxics(kafka_cluster):
    proxy = kafka_cluster.brokers[0].proxy(LANE)
    slow = toxic(kafka_cluster, "latency", LANE, latency_ms=100, stream="both").inject()
    capped = toxic(kafka_cluster, "bandwidth", kafka_cluster.brokers[0].name, lane=LANE, rate_kb_s=1000).inject()
    try:
        names = toxics_on(kafka_cluster)[proxy]
        assert len(names) == 3 and len(set(names)) == 3, names  # latency both ways, bandwidth downstream
        slow.heal()
        assert toxics_on(kafka_cluster) == {proxy: capped.record["toxics"]}
        slow.heal()  # idempotent
    finally:
        slow.heal()
        capped.heal()
    assert toxics_on(kafka_cluster) == {}


def test_a_broker_target_puts_the_toxic_on_the_lane_it_names(kafka_cluster):
    broker = kafka_cluster.brokers[1]
    with toxic(kafka_cluster, "latency", broker.name, latency_ms=10):
        assert sorted(toxics_on(kafka_cluster)) == sorted(broker.client_proxies())
        assert broker.proxy("control") not in broker.client_proxies()
    with toxic(kafka_cluster, "latency", broker.name, lane="internal", latency_ms=10):
        assert list(toxics_on(kafka_cluster)) == [broker.proxy("internal")]
    with toxic(kafka_cluster, "latency", LANE, broker=broker.name, latency_ms=10):
        assert list(toxics_on(kafka_cluster)) == [broker.proxy(LANE)]
    with toxic(kafka_cluster, "latency", LANE, latency_ms=10):
        assert sorted(toxics_on(kafka_cluster)) == sorted(b.proxy(LANE) for b in kafka_cluster.brokers)
    assert toxics_on(kafka_cluster) == {}


def test_a_toxic_aimed_at_the_coordinator_records_it(kafka_cluster):
    group = f"toxic-coordinator-{random.randrange(16**6):06x}"
    consumer = Consumer({"bootstrap.servers": kafka_cluster.control_bootstrap_servers, "group.id": group})
    committed = seconds_until(lambda: committed_once(consumer), now_ms())  # the group exists
    consumer.close()
    assert committed is not None, "the group never committed"
    with toxic(kafka_cluster, "latency", "coordinator", group_id=group, latency_ms=10) as fault:
        assert fault.record["coordinator_before"] == fault.broker.node_id and fault.target == fault.broker.name
        assert sorted(toxics_on(kafka_cluster)) == sorted(fault.broker.client_proxies())


def committed_once(consumer) -> bool:
    """False while the group's coordinator is still loading (a fresh __consumer_offsets answers NOT_COORDINATOR)."""
    try:
        consumer.commit(offsets=[TopicPartition("kafka-chaos-ready", 0, 0)], asynchronous=False)
        return True
    except KafkaException:
        return False


@pytest.fixture(scope="module")
def filled_topic(kafka_cluster):
    topic = f"toxic-bw-{random.randrange(16**6):06x}"
    kafka_cluster.create_topic(topic, 1, 3)
    producer = Producer({"bootstrap.servers": kafka_cluster.control_bootstrap_servers})
    for _ in range(800):
        producer.produce(topic, b"x" * 1000)
    assert producer.flush(30) == 0
    return topic


def fetch_seconds(cluster, topic: str) -> float:
    consumer = Consumer({"bootstrap.servers": cluster.lane_bootstrap_servers(LANE), "group.id": "unused",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])  # no group join: only the fetches are timed
    started, got = time.monotonic(), 0
    while got < 800 and time.monotonic() - started < 60:
        got += sum(1 for m in consumer.consume(100, 0.5) if not m.error())
    consumer.close()
    assert got == 800
    return time.monotonic() - started


def produce_seconds(cluster, topic: str) -> float:
    producer = Producer({"bootstrap.servers": cluster.lane_bootstrap_servers(LANE), "linger.ms": 5})
    producer.list_topics(topic, timeout=10)  # connected before the clock starts
    started = time.monotonic()
    for _ in range(800):
        producer.produce(topic, b"y" * 1000)
    assert producer.flush(60) == 0
    return time.monotonic() - started


@pytest.mark.slow  # make test's 30 minutes: the bandwidth family runs there in test_fault_families.py
@pytest.mark.parametrize("stream, transfer", [("downstream", fetch_seconds), ("upstream", produce_seconds)])
def test_bandwidth_caps_what_a_client_fetches_or_produces(kafka_cluster, filled_topic, stream, transfer):
    free = transfer(kafka_cluster, filled_topic)
    with toxic(kafka_cluster, "bandwidth", LANE, rate_kb_s=100, stream=stream):
        capped = transfer(kafka_cluster, filled_topic)
    assert capped >= 800 / 100 * 0.8 and capped > 2 * free, (free, capped)  # 800 KB at 100 KB/s
    print(f"\nbandwidth {stream} 100 KB/s: 800 KB in {capped:.1f} s (free: {free:.1f} s)")
