"""Lanes through the request-aware proxy on the real cluster: `proxied_lanes` points a lane's Toxiproxy proxies at
the proxy and back; a lane a failed test left re-pointed is restored by `reset_faults`, so the next run's members
reach their brokers directly again. (What rules do to real members: test_rpc_faults.py.)"""
import pytest

pytestmark = pytest.mark.cluster
LANE = "member-8"  # the session cluster's last member lane: no chaos_run uses it with 3-member scenarios


def upstreams(cluster) -> dict[str, str]:
    proxies = cluster.toxiproxy.proxies()
    return {b.name: proxies[b.proxy(LANE)]["upstream"] for b in cluster.brokers}


def test_proxied_lanes_points_a_lane_at_the_proxy_and_back(kafka_cluster):
    direct = upstreams(kafka_cluster)
    with kafka_cluster.proxied_lanes([LANE]) as proxy:
        through = upstreams(kafka_cluster)
        gateway = kafka_cluster.gateway_ip
        assert through == {b.name: f"{gateway}:{proxy.ports[f'{LANE}@{b.name}']}" for b in kafka_cluster.brokers}
    assert upstreams(kafka_cluster) == direct


def test_reset_faults_restores_a_lane_left_pointed_elsewhere(kafka_cluster):
    direct = upstreams(kafka_cluster)
    kafka_cluster.point_lane(LANE, {b.name: "10.255.255.1:9" for b in kafka_cluster.brokers})
    kafka_cluster.reset_faults()
    assert upstreams(kafka_cluster) == direct
