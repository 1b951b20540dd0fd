"""Every client request goes through Toxiproxy: cutting a broker's proxy cuts clients off that broker."""
import pytest
from confluent_kafka import Consumer

from faults.network import ProxyCut
from kafkanet.broker_view import view_of

pytestmark = pytest.mark.cluster


def metadata_via(address: str, timeout_s: float):
    consumer = Consumer({"bootstrap.servers": address, "group.id": "routing-probe", "socket.timeout.ms": 3000,
                         "reconnect.backoff.max.ms": 500})
    try:
        return consumer.list_topics(timeout=timeout_s)
    finally:
        consumer.close()


def test_brokers_advertise_their_toxiproxy_address(kafka_cluster):
    metadata = metadata_via(kafka_cluster.brokers[0].client_address, 20)
    advertised = {f"{b.host}:{b.port}" for b in metadata.brokers.values()}
    assert advertised == {b.client_address for b in kafka_cluster.brokers}
    proxies = kafka_cluster.toxiproxy.proxies()
    for broker in kafka_cluster.brokers:
        assert proxies[broker.proxy("client")]["upstream"] == f"{broker.name}:9092"


def test_cut_proxy_leaves_clients_unable_to_reach_that_broker(kafka_cluster):
    target, other = kafka_cluster.brokers[1], kafka_cluster.brokers[0]
    with ProxyCut(target, toxiproxy=kafka_cluster.toxiproxy):
        with pytest.raises(Exception):
            metadata_via(target.client_address, 4)
        assert len(metadata_via(other.client_address, 20).brokers) == len(kafka_cluster.brokers)
        # The harness's own lane is never cut.
        assert len(kafka_cluster.admin().list_topics(timeout=20).brokers) == len(kafka_cluster.brokers)
    assert len(metadata_via(target.client_address, 20).brokers) == len(kafka_cluster.brokers)


def test_each_broker_answers_for_its_own_view_with_what_a_client_sees(kafka_cluster):
    """kafkanet/broker_view.py reads the raw Metadata v7 answer of one chosen broker."""
    client = metadata_via(kafka_cluster.bootstrap_servers, 20).topics["kafka-chaos-ready"].partitions[0]
    for broker in kafka_cluster.brokers:
        view = view_of(broker.control_address, ["kafka-chaos-ready"])
        assert view.brokers == {b.node_id for b in kafka_cluster.brokers}
        [partition] = view.partitions
        assert (partition.leader, set(partition.isr), set(partition.replicas)) == \
            (client.leader, set(client.isrs), set(client.replicas))
