"""Network partitions between brokers on the real cluster (iptables in each broker's namespace).

While a broker is cut off, its own metadata goes stale (it no longer hears the quorum), so what the
cluster decided is read from the other brokers only: an admin client bootstrapped on their control lanes.
"""
import random
import subprocess
import threading
import time

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from faults import netns
from faults.context import FaultContext
from faults.partition import IsolateBroker, PartitionPair
from faults.targets import controller_id
from faults.timeline import FaultTimeline
from harness.probe import api_versions_roundtrip
from run_logs import rows

pytestmark = pytest.mark.cluster


def wait_until(condition, timeout_s: float = 90, poll_s: float = 0.25) -> float | None:
    """Seconds until the condition held, or None if it never did."""
    started = time.monotonic()
    while time.monotonic() - started < timeout_s:
        try:
            if condition():
                return time.monotonic() - started
        except Exception:  # a metadata request that times out counts as not yet
            pass
        time.sleep(poll_s)
    return None


def admin_on(brokers) -> AdminClient:
    return AdminClient({"bootstrap.servers": ",".join(b.control_address for b in brokers),
                        "client.id": "kafka-chaos-test-observer"})


def partitions(admin, topic):
    return admin.list_topics(topic, timeout=5).topics[topic].partitions.values()


def new_topic(cluster, count=6):
    topic = f"partition-{random.randrange(16**6):06x}"
    cluster.admin().create_topics([NewTopic(topic, count, 3)])[topic].result(30)
    assert wait_until(lambda: {p.leader for p in partitions(cluster.admin(), topic)} == {1, 2, 3}, 60), \
        "leaders not spread over the 3 brokers"
    return topic


def context(cluster, topic):
    return FaultContext(cluster, {}, FaultTimeline(None), random.Random(0), "g", topic)


def reaches(source, target) -> bool:
    """Can `source` open a TCP connection to `target`'s replication proxy, from inside its container?"""
    name = source.container.get_wrapped_container().name
    result = subprocess.run(["docker", "exec", name, "timeout", "3", "bash", "-c",
                             f"exec 3<>/dev/tcp/toxiproxy/{target.peer_ports[0]}"], capture_output=True, timeout=30)
    return result.returncode == 0


def no_rules_left(cluster) -> bool:
    return all(netns.rules(b.container.get_wrapped_container()) == [] for b in cluster.brokers)


class Trickle:
    """A few acks=1 records a second to every partition: a follower that stops fetching leaves the
    ISR only when the leader's log moves on without it."""

    def __init__(self, cluster, topic, count):
        self._producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "1", "linger.ms": 5})
        self._topic, self._count, self._stop = topic, count, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.wait(0.1):
            for partition in range(self._count):
                self._producer.produce(self._topic, b"x", partition=partition)
            self._producer.poll(0)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(10)
        self._producer.flush(10)


def test_an_isolated_broker_leaves_the_isr_and_loses_leadership_while_clients_still_reach_it(kafka_cluster):
    topic = new_topic(kafka_cluster)
    broker, others = kafka_cluster.brokers[0], kafka_cluster.brokers[1:]
    observer = admin_on(others)
    fault = IsolateBroker.build(context(kafka_cluster, topic), broker.name, IsolateBroker.Params())
    with Trickle(kafka_cluster, topic, 6), fault:
        assert not reaches(broker, others[0]) and not reaches(others[0], broker), "the peer link is still up"
        assert reaches(others[0], others[1]) and reaches(broker, broker), "cut more than the isolated broker's links"
        cut_off = wait_until(lambda: all(broker.node_id not in p.isrs and p.leader != broker.node_id
                                         for p in partitions(observer, topic)))
        assert cut_off is not None, f"{broker.name} still in an ISR or leading, seen from the other brokers"
        assert api_versions_roundtrip(broker.client_address) is not None, "a client can no longer reach it"
    back = wait_until(lambda: all(broker.node_id in p.isrs for p in partitions(observer, topic)), 120)
    assert back is not None, "never back in the ISR after the heal"
    assert no_rules_left(kafka_cluster)
    print(f"\nisolate_broker {broker.name}: out of every ISR and leading nothing {cut_off:.1f} s after inject; "
          f"back in every ISR {back:.1f} s after heal")


def test_isolating_a_broker_with_its_clients_cuts_every_lane_but_the_harness_own(kafka_cluster):
    broker = kafka_cluster.brokers[2]
    fault = IsolateBroker.build(context(kafka_cluster, "kafka-chaos-ready"), broker.name, IsolateBroker.Params(clients=True))
    with fault:
        assert fault.record["disabled_proxies"] == [broker.proxy("client")], fault.record
        assert api_versions_roundtrip(broker.client_address) is None, "its client lane still answers"
        assert api_versions_roundtrip(broker.control_address) is not None, "the harness's own lane is never cut"
        assert not reaches(kafka_cluster.brokers[0], broker)
    assert wait_until(lambda: api_versions_roundtrip(broker.client_address) is not None, 10) is not None
    assert reaches(kafka_cluster.brokers[0], broker) and no_rules_left(kafka_cluster)


@pytest.mark.slow
def test_a_pair_partition_cuts_only_that_pair(kafka_cluster):
    """The pair is the two brokers that are not the active controller, so neither is fenced: the only
    effect is that replication between them stops (after replica.lag.time.max.ms, 30 s)."""
    topic = new_topic(kafka_cluster)
    controller = controller_id(kafka_cluster.admin())
    a, b = [x for x in kafka_cluster.brokers if x.node_id != controller]
    c = kafka_cluster.broker_by_id(controller)
    fault = PartitionPair.build(context(kafka_cluster, topic), "cluster", PartitionPair.Params(a=a.name, b=b.name))
    full_isrs_on_c = []

    def pair_split_in_isr():
        views = list(partitions(kafka_cluster.admin(), topic))
        full_isrs_on_c.append(all(set(p.isrs) == {1, 2, 3} for p in views if p.leader == c.node_id))
        return all(not ({a.node_id, b.node_id} <= set(p.isrs)) and c.node_id in p.isrs for p in views)

    with Trickle(kafka_cluster, topic, 6), fault:
        assert fault.record["cut"] == [sorted([a.name, b.name])], fault.record
        assert not reaches(a, b) and not reaches(b, a)
        assert reaches(a, c) and reaches(c, a) and reaches(b, c) and reaches(c, b)
        split = wait_until(pair_split_in_isr, 120)
        assert split is not None, "a and b still replicate from each other"
        assert all(full_isrs_on_c), "replication from the third broker stopped too"
    assert reaches(a, b) and reaches(b, a) and no_rules_left(kafka_cluster)
    healed = wait_until(lambda: not kafka_cluster.under_replicated(), 120)
    assert healed is not None, "ISRs not full again after the heal"
    print(f"\npartition_pair {a.name}<->{b.name}: each out of the other's ISRs {split:.1f} s after inject; "
          f"every ISR full {healed:.1f} s after heal")


@pytest.mark.slow
def test_a_minority_split_keeps_the_majority_serving_and_loses_nothing(chaos_run):
    outcome = chaos_run({"producer": {"records": 30_000, "rate": 1500},
                         "faults": [{"kind": "split", "target": "kafka-3", "at_s": 3, "duration_s": 15}]})
    assert outcome.errors == [] and outcome.drained, outcome.errors
    [fault] = rows(outcome.run_dir, "faults")
    assert fault["side"] == ["kafka-3"] and fault["cut"] == [["kafka-1", "kafka-3"], ["kafka-2", "kafka-3"]], fault
    during = [r for r in rows(outcome.run_dir / "consumed")
              if fault["inject_done_ms"] <= r["consumed_at_ms"] <= fault["healed_at_ms"]]
    assert len(during) > 1000, f"the group consumed {len(during)} records while a minority was split off"
    assert outcome.summary["lost_records"] == 0, outcome.summary
    print(f"\nsplit kafka-3: {len(during)} records consumed during the 15 s split")
