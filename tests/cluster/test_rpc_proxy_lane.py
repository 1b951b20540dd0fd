"""The request-aware proxy on a real client's lane (issue 11, first increment): put behind Toxiproxy's proxies
of one lane (their upstreams pointed at it), it carries a librdkafka consumer's whole traffic, and one
Heartbeat answered REBALANCE_IN_PROGRESS makes the member rejoin."""
import secrets
import threading
import time

import pytest
from confluent_kafka import Consumer

from faults.rpc_proxy import Rule, RpcProxy

pytestmark = pytest.mark.cluster
LANE = "member-8"  # the session cluster's last member lane: no chaos_run uses it with 3-member scenarios


@pytest.fixture
def proxied_lane(kafka_cluster):
    hits = []
    gateway = kafka_cluster.gateway_ip
    proxy = RpcProxy(kafka_cluster.lane_upstreams(LANE), host=gateway,
                     on_hit=lambda rule, h: hits.append((h.api_key, h.client_id))).start()
    kafka_cluster.point_lane(LANE, {name: f"{gateway}:{port}" for name, port in proxy.ports.items()})
    try:
        yield proxy, hits
    finally:
        kafka_cluster.point_lane(LANE, None)
        proxy.stop()


def test_a_heartbeat_answered_rebalance_in_progress_makes_the_member_rejoin(kafka_cluster, proxied_lane):
    proxy, hits = proxied_lane
    topic = f"rpc-{secrets.token_hex(3)}"
    kafka_cluster.create_topic(topic, 3, 3)
    assignments, stop = [], threading.Event()
    consumer = Consumer({"bootstrap.servers": kafka_cluster.lane_bootstrap_servers(LANE), "group.id": f"rpc-{topic}",
                         "client.id": LANE, "session.timeout.ms": 10_000, "heartbeat.interval.ms": 500})
    consumer.subscribe([topic], on_assign=lambda c, ps: assignments.append(time.monotonic()))

    def poll():
        while not stop.is_set():
            consumer.poll(0.2)
    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 60
        while not assignments and time.monotonic() < deadline:
            time.sleep(0.2)
        assert assignments, "the member never joined through the proxy"
        proxy.add_rule(Rule(api="Heartbeat", action="error", error="REBALANCE_IN_PROGRESS", client_id=LANE, count=1))
        deadline = time.monotonic() + 30
        while len(assignments) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert hits == [(12, LANE)], hits
        assert len(assignments) >= 2, "one Heartbeat answered REBALANCE_IN_PROGRESS did not make the member rejoin"
    finally:
        stop.set()
        thread.join(timeout=10)
        consumer.close()
