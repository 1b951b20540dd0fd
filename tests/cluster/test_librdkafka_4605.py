"""librdkafka#4605 (open upstream; confluent-kafka 2.16.1, librdkafka 2.16.0): an admin DescribeConsumerGroups or
ListConsumerGroupOffsets that times out while the group's coordinator is unreachable aborts the process once the
coordinator is back. The admin call gives up and drops its hold on its enq-once; the internal coordinator request
is still pending, and when the coordinator answers again it drops the last reference, fails, and queues a reply
that points at the freed enq-once: `rd_kafka_enq_once_del_source_return: Assertion 'eonce->refcnt > 0' failed`,
SIGABRT. harness/group.py works around it (it asks the group's state of one child process it can replace).

The zoo entry (scenarios/zoo/librdkafka-4605.yaml: an admin probe beside a group, `kafka-chaos zoo librdkafka#4605`)
shows it in a run; this is the bare reproducer, a fresh AdminClient a call:
`pytest -m slow tests/cluster/test_librdkafka_4605.py -s` (about a minute with its own cluster). Measured on
2026-11-25: 9 aborts in 9 trials over two clusters (describe 6 of 6, offsets 3 of 3), 0.1-0.5 s after the
coordinator's proxy came back; the control call (coordinator reachable) answered and the process lived."""
import secrets
import subprocess
import sys

import pytest

from faults.targets import coordinator_id
from harness.cluster.kafka import KafkaCluster
from harness.scenario import ClusterSpec

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

GROUP, TIMEOUT_S, SIGABRT = "repro-4605", 3, -6
CHILD = r"""
import sys, time
from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException
from confluent_kafka.admin import AdminClient
bootstrap, group, timeout, call = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
admin = AdminClient({"bootstrap.servers": bootstrap, "reconnect.backoff.max.ms": 500})
try:
    if call == "offsets":
        admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)], request_timeout=timeout)[group].result()
    else:
        admin.describe_consumer_groups([group], request_timeout=timeout)[group].result()
    print("answered", flush=True)
except KafkaException as exc:
    print("failed " + exc.args[0].name(), flush=True)
time.sleep(8)
print("alive", flush=True)
"""


def admin_call(cluster, proxies: list[str], call: str, cut: bool) -> tuple[str, int, str]:
    """(the call's outcome, the process's exit code, its assertion line) with the coordinator's client proxies cut
    for the call's time-out, then restored."""
    for proxy in proxies:
        cluster.toxiproxy.set_enabled(proxy, not cut)
    child = subprocess.Popen([sys.executable, "-c", CHILD, cluster.bootstrap_servers, GROUP, str(TIMEOUT_S), call],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        outcome = child.stdout.readline().strip()
    finally:
        for proxy in proxies:
            cluster.toxiproxy.set_enabled(proxy, True)
    try:
        _, err = child.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        child.kill()
        _, err = child.communicate()
    return outcome, child.returncode, next((line for line in err.splitlines() if "Assertion" in line), "")


def test_an_admin_call_timed_out_against_a_cut_coordinator_aborts_the_process_when_it_comes_back():
    with KafkaCluster(ClusterSpec(), run_id=f"t4605-{secrets.token_hex(3)}") as cluster:
        proxies = cluster.broker_by_id(coordinator_id(cluster.view(), GROUP)).client_proxies()
        assert admin_call(cluster, proxies, "describe", cut=False)[1] == 0   # control: nothing cut, it lives
        for call in ("describe", "offsets"):
            outcome, code, assertion = admin_call(cluster, proxies, call, cut=True)
            assert outcome.startswith("failed"), f"{call}: the call should time out while the coordinator is cut: {outcome!r}"
            assert code == SIGABRT and "enq_once_del_source_return" in assertion, (
                f"{call}: librdkafka#4605 no longer aborts (exit {code}, {assertion!r}): fixed upstream? "
                f"check the newest confluent-kafka and drop the workaround in harness/group.py")
