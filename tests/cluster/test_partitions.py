"""Network partitions between brokers on the real cluster (iptables in each broker's namespace).

While a broker is cut off, its own metadata goes stale (it no longer hears the quorum), so what the
cluster decided is read as a majority of the brokers hold it (`cluster.view()`), never through a client
library, which may put the question to the stale broker.
"""
import random
import re
import subprocess
import threading

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import NewTopic

from faults.context import FaultContext
from faults.partition import IsolateBroker, PartitionPair, Split
from faults.timeline import FaultTimeline
from harness.cluster.broker_config import CONTROLLER_PORT
from kafkanet import netns, waiting
from kafkanet.clock import now_ms
from kafkanet.probe import api_versions_roundtrip
from run_logs import rows
from scenario_files import catalog

pytestmark = pytest.mark.cluster


def wait_until(condition, timeout_s: float = 90, since_ms: int | None = None) -> float | None:
    """Seconds until the condition held (counted from `since_ms`, a wall-clock time, if given), or
    None if it never did. A metadata request that times out counts as not yet."""
    started_ms = since_ms or now_ms()
    if not waiting.wait_until(condition, timeout_s, interval_s=0.25):
        return None
    return (now_ms() - started_ms) / 1000


def partitions(cluster, topic):
    return [p for p in cluster.view().partitions if p.topic == topic]


def new_topic(cluster, count=6):
    topic = f"partition-{random.randrange(16**6):06x}"
    cluster.admin().create_topics([NewTopic(topic, count, 3)])[topic].result(30)
    assert wait_until(lambda: {p.leader for p in partitions(cluster, topic)} == {1, 2, 3}, 60), \
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


def quorum_leader(broker) -> int:
    """The active KRaft controller, asked of the quorum itself. Not `describe_cluster().controller`:
    in KRaft a broker answers that with a random live broker (KIP-590)."""
    result = broker.container.get_wrapped_container().exec_run(
        ["/opt/kafka/bin/kafka-metadata-quorum.sh", "--bootstrap-controller", f"localhost:{CONTROLLER_PORT}",
         "describe", "--status"])
    match = re.search(rb"^LeaderId:\s+(\d+)", result.output, re.M)
    assert match, result.output.decode(errors="replace")[-2000:]
    return int(match[1])


def no_rules_left(cluster) -> bool:
    return all(netns.rules(b.run_in_netns) == [] for b in cluster.brokers)


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


@pytest.mark.slow  # make test's 30 minutes: isolate_broker runs there in test_fault_families.py
def test_an_isolated_broker_leaves_the_isr_and_loses_leadership_while_clients_still_reach_it(kafka_cluster):
    topic = new_topic(kafka_cluster)
    broker, others = kafka_cluster.brokers[0], kafka_cluster.brokers[1:]
    fault = IsolateBroker.build(context(kafka_cluster, topic), broker.name, IsolateBroker.Params())
    with Trickle(kafka_cluster, topic, 6), fault:
        assert not reaches(broker, others[0]) and not reaches(others[0], broker), "the peer link is still up"
        assert reaches(others[0], others[1]) and reaches(broker, broker), "cut more than the isolated broker's links"
        cut_off = wait_until(lambda: all(broker.node_id not in p.isr and p.leader != broker.node_id
                                         for p in partitions(kafka_cluster, topic)), since_ms=fault.record["inject_done_ms"])
        if cut_off is None:  # say what the rest of the cluster saw, to tell a slow fence from a leaky cut
            pytest.fail(f"{broker.name} still in an ISR or leading after 90 s, as a majority of the brokers see it: "
                        f"{[(p.partition, p.leader, p.isr) for p in partitions(kafka_cluster, topic)]}; active controller "
                        f"{quorum_leader(others[0])}; registered {sorted(kafka_cluster.registered_brokers())}; "
                        f"{broker.name} reaches {others[0].name}: {reaches(broker, others[0])}")
        assert api_versions_roundtrip(broker.client_address) is not None, "a client can no longer reach it"
    back = wait_until(lambda: all(broker.node_id in p.isr for p in partitions(kafka_cluster, topic)), 120,
                      since_ms=fault.record["healed_at_ms"])
    assert back is not None, "never back in the ISR after the heal"
    assert no_rules_left(kafka_cluster)
    print(f"\nisolate_broker {broker.name}: out of every ISR and leading nothing {cut_off:.1f} s after inject; "
          f"back in every ISR {back:.1f} s after heal")


def test_isolating_a_broker_with_its_clients_cuts_every_lane_but_the_harness_own(kafka_cluster):
    broker = kafka_cluster.brokers[2]
    fault = IsolateBroker.build(context(kafka_cluster, "kafka-chaos-ready"), broker.name, IsolateBroker.Params(clients=True))
    with fault:
        assert fault.record["disabled_proxies"] == broker.client_proxies(), fault.record
        enabled = {name: proxy["enabled"] for name, proxy in kafka_cluster.toxiproxy.proxies().items()}
        assert not any(enabled[name] for name in broker.client_proxies()), enabled
        assert api_versions_roundtrip(broker.client_address) is None, "its client lane still answers"
        assert api_versions_roundtrip(broker.control_address) is not None, "the harness's own lane is never cut"
        assert not reaches(kafka_cluster.brokers[0], broker)
    assert wait_until(lambda: api_versions_roundtrip(broker.client_address) is not None, 10) is not None
    assert reaches(kafka_cluster.brokers[0], broker) and no_rules_left(kafka_cluster)


def test_reset_faults_flushes_rules_a_fault_left_behind(kafka_cluster):
    """A harness that died mid-partition never ran the heal; the next run's reset removes the rules."""
    a, b, c = kafka_cluster.brokers
    Split.build(context(kafka_cluster, "kafka-chaos-ready"), a.name, Split.Params(side=[a.name])).inject()
    assert len(netns.rules(a.run_in_netns)) == 4  # b's and c's two peer ports
    assert not reaches(b, a)
    kafka_cluster.reset_faults()
    assert no_rules_left(kafka_cluster) and reaches(b, a) and reaches(a, c)


@pytest.mark.slow
def test_a_pair_partition_cuts_only_that_pair(kafka_cluster):
    """The pair is the two brokers that are not the active controller, so neither is fenced: the only
    effect is that each drops out of the ISRs the other leads (after replica.lag.time.max.ms, 30 s),
    while both keep replicating from the third broker."""
    topic = new_topic(kafka_cluster)
    controller = quorum_leader(kafka_cluster.brokers[0])
    a, b = [x for x in kafka_cluster.brokers if x.node_id != controller]
    c = kafka_cluster.broker_by_id(controller)
    fault = PartitionPair.build(context(kafka_cluster, topic), "cluster", PartitionPair.Params(a=a.name, b=b.name))
    full_isrs_on_c = []

    def pair_split_in_isr():
        views = list(partitions(kafka_cluster, topic))
        full_isrs_on_c.append(all(c.node_id in p.isr and (p.leader != c.node_id or len(p.isr) == 3) for p in views))
        return all(not ({a.node_id, b.node_id} <= set(p.isr)) for p in views if p.leader != c.node_id)

    with Trickle(kafka_cluster, topic, 6), fault:
        assert fault.record["cut"] == [sorted([a.name, b.name])], fault.record
        assert not reaches(a, b) and not reaches(b, a)
        assert reaches(a, c) and reaches(c, a) and reaches(b, c) and reaches(c, b)
        split = wait_until(pair_split_in_isr, 120, since_ms=fault.record["inject_done_ms"])
        assert split is not None, "a and b still replicate from each other"
        assert all(full_isrs_on_c), "replication to or from the third broker stopped too"
        assert kafka_cluster.registered_brokers() == {1, 2, 3}, "a broker of the pair was fenced"
    assert reaches(a, b) and reaches(b, a) and no_rules_left(kafka_cluster)
    healed = wait_until(lambda: not kafka_cluster.under_replicated(), 120, since_ms=fault.record["healed_at_ms"])
    assert healed is not None, "ISRs not full again after the heal"
    print(f"\npartition_pair {a.name}<->{b.name}: each out of the other's ISRs {split:.1f} s after inject; "
          f"every ISR full {healed:.1f} s after heal")


@pytest.mark.slow
def test_a_minority_split_keeps_the_majority_serving_and_loses_nothing(chaos_run):
    """35 s, so that the group recovers within the split even when its coordinator is the broker split
    off: that zombie coordinator (still reachable by its clients, unable to replicate) stalls the group
    until the controller fences it (broker session, 9 s), the majority elects a new coordinator and the
    members' sessions (10 s) expire there."""
    outcome = chaos_run(catalog("minority-split"))
    assert outcome.errors == [] and outcome.drained, outcome.errors
    [fault] = rows(outcome.run_dir, "faults")
    assert fault["side"] == ["kafka-3"] and fault["cut"] == [["kafka-1", "kafka-3"], ["kafka-2", "kafka-3"]], fault
    split_ms = (fault["inject_done_ms"], fault["healed_at_ms"])
    acked = sorted(r["acked_at_ms"] for r in rows(outcome.run_dir / "produced")
                   if r["status"] == "ok" and split_ms[0] <= r["acked_at_ms"] <= split_ms[1])
    consumed = sorted(r["consumed_at_ms"] for r in rows(outcome.run_dir / "consumed")
                      if split_ms[0] <= r["consumed_at_ms"] <= split_ms[1])
    assert len(acked) > 1000, f"the majority acknowledged {len(acked)} records while a minority was split off"
    assert len(consumed) > 1000, f"the group consumed {len(consumed)} records while a minority was split off"
    assert outcome.summary["lost_records"] == 0, outcome.summary
    gaps = [(b - a) / 1000 for a, b in zip([split_ms[0], *consumed], [*consumed, split_ms[1]])]
    print(f"\nsplit kafka-3 for 35 s: {len(acked)} records acked and {len(consumed)} consumed during it; "
          f"longest pause in consumption {max(gaps):.1f} s")
