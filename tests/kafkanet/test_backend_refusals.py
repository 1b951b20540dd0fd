"""What a backend cannot do it refuses with one error naming the broker and the operation (faults/backend.py):
the external backend's brokers, whose processes are the cluster owner's."""
from __future__ import annotations

import pytest

from faults.backend import BrokerHandle
from harness.cluster.external import ExternalBroker, ExternalCluster, ExternalClusterError
from kafkanet.broker_view import BrokerView, PartitionView

OPERATIONS = {"pause": (), "resume": (), "kill": (), "stop": (60,), "start": (), "running": (),
              "run_in_netns": (["iptables", "-S"],), "logs": ()}


@pytest.mark.parametrize("operation", sorted(OPERATIONS))
def test_an_external_broker_refuses_what_needs_its_process(operation):
    broker = ExternalBroker(2, "kafka-2", "127.0.0.1:9092")
    with pytest.raises(ExternalClusterError, match=rf"^kafka-2: cannot .*a broker of an external cluster"):
        getattr(broker, operation)(*OPERATIONS[operation])


def test_an_external_cluster_refuses_a_restart_naming_the_broker():
    cluster = ExternalCluster("127.0.0.1:9092", brokers=[ExternalBroker(1, "kafka-1", "127.0.0.1:9092")])
    with pytest.raises(ExternalClusterError, match="^kafka-1: cannot start"):
        cluster.start_broker(cluster.broker("kafka-1"))
    with pytest.raises(ExternalClusterError, match="rejoin"):
        cluster.wait_rejoined(cluster.brokers)


def test_both_backends_brokers_have_every_operation_of_the_protocol():
    """The shallow check, at run time (mypy's in test_typing.py compares the signatures too)."""
    from harness.cluster.brokers import Broker
    assert isinstance(ExternalBroker(1, "kafka-1", "h:1"), BrokerHandle)
    assert isinstance(Broker(1, "kafka-1", None, "h:1", "h:2"), BrokerHandle)


def test_under_replicated_names_each_partition_whose_isr_lacks_a_replica():
    view = BrokerView(frozenset({1, 2, 3}), (PartitionView("t", 0, 1, (1, 2, 3), (1, 2, 3)),
                                             PartitionView("t", 1, 2, (2,), (2, 3, 1)),
                                             PartitionView("u", 0, 3, (3, 1), (1, 3))))
    assert view.under_replicated() == ["t:1"]
