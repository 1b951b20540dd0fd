"""Issue 38, item 7: the "group did not become stable within 60 s" flake (bdd7487, e53304e), reproduced on demand.

The cause, in librdkafka (src/rdkafka_coord.c, rdkafka_admin.c): an admin client keeps each group's coordinator in a
cache whose entries expire only after `metadata.max.age.ms` (15 min) *without use*, and nothing evicts an entry when
the coordinator answers NOT_COORDINATOR (only the transaction manager calls rd_kafka_coord_cache_evict); the admin
call just fails. The describer asked every 0.2 s, so an entry cached while `__consumer_offsets` leadership was moving
(the cluster reset's preferred election, a second before the run) was used forever, every describe failed, while
the group was stable on its new coordinator. The describing child now starts a new admin client (an empty cache)
after any failed describe (harness/group.py `_answer`)."""
import json
import subprocess
import time

import pytest
from confluent_kafka.admin import AdminClient

from faults.targets import OFFSETS_TOPIC, offsets_partition
from harness.group import GroupDescriber

pytestmark = pytest.mark.cluster


def offsets_replicas(cluster, partition: int) -> list[int]:
    [p] = [p for p in cluster.view().partitions if p.topic == OFFSETS_TOPIC and p.partition == partition]
    return list(p.replicas)


def lead_by(cluster, partition: int, replicas: list[int]) -> None:
    """The same replicas in another order (a reassignment that moves no data), then the preferred election: the
    group's coordinator moves to replicas[0] at once, as the cluster reset's election moved it."""
    plan = json.dumps({"version": 1, "partitions": [{"topic": OFFSETS_TOPIC, "partition": partition, "replicas": replicas}]})
    container = cluster.brokers[0].container.get_wrapped_container().name
    done = subprocess.run(["docker", "exec", container, "sh", "-c", f"echo '{plan}' > /tmp/move.json && "
                           "/opt/kafka/bin/kafka-run-class.sh org.apache.kafka.tools.reassign.ReassignPartitionsCommand "
                           "--bootstrap-server localhost:9094 "
                           "--reassignment-json-file /tmp/move.json --execute"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    cluster.wait_until(lambda: offsets_replicas(cluster, partition) == replicas, 60, "reassignment not done")
    cluster.elect_preferred_leaders([(OFFSETS_TOPIC, partition)])


def describe(admin: AdminClient, group_id: str) -> str:
    try:
        return admin.describe_consumer_groups([group_id], request_timeout=5)[group_id].result().state.name
    except Exception as exc:
        return f"error: {exc}"


def test_a_coordinator_moved_after_the_describer_cached_it(kafka_cluster):
    group_id = "coordinator-moves"
    partition = offsets_partition(group_id, sum(1 for p in kafka_cluster.view().partitions if p.topic == OFFSETS_TOPIC))
    before = offsets_replicas(kafka_cluster, partition)
    plain = AdminClient({"bootstrap.servers": kafka_cluster.control_bootstrap_servers})
    describer = GroupDescriber(kafka_cluster.control_bootstrap_servers)
    try:
        assert not describe(plain, group_id).startswith("error") and describer.describe(group_id) is not None  # cached
        lead_by(kafka_cluster, partition, before[1:] + before[:1])
        # librdkafka's cause: once the old coordinator has let the group go (it may answer for a moment after the
        # election), the same client asks it for as long as it keeps asking, every 0.2 s as the describer did
        answers = []
        for _ in range(20):
            answers.append(describe(plain, group_id))
            time.sleep(0.2)
        assert all("NOT_COORDINATOR" in a for a in answers[-10:]), answers
        # the fix: one failed describe at most, then the new coordinator answers
        found = [describer.describe(group_id) for _ in range(3)]
        assert any(a is not None and a["coordinator"] == before[1] for a in found), (found, describer.last_error)
    finally:
        describer.close()
        lead_by(kafka_cluster, partition, before)
