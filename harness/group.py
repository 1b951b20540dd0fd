"""What the harness asks Kafka about the group while a run goes on (all on the control lane).

librdkafka's coordinator-bound admin calls (DescribeConsumerGroups, ListConsumerGroupOffsets) abort
the whole process when a request to the coordinator fails (librdkafka issue 4605, fix pending in
PR 5397): exactly what a fault causes. So committed offsets come from a plain, never-subscribed
Consumer (`committed()` takes another code path), and the one describe the harness needs runs in a
child process (`python -m harness.group`) whose crash is just "not known yet".
"""
from __future__ import annotations

import json
import logging
import subprocess
import sys
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from workloads.security import security_config

REQUEST_TIMEOUT_S = 10


@dataclass(frozen=True)
class GroupProgress:
    end_offsets: dict[tuple[str, int], int]
    committed: dict[tuple[str, int], int]

    @property
    def produced(self) -> int:
        return sum(self.end_offsets.values())

    @property
    def lag(self) -> int:
        return sum(max(0, end - self.committed.get(p, 0)) for p, end in self.end_offsets.items())


class GroupWatcher:
    """Reads end offsets and the group's committed offsets through a consumer that never joins the group.

    After a failover a client can keep a stale leader epoch and fail the same way forever
    (FENCED_LEADER_EPOCH, unknown partition); so a failed read replaces the consumer.
    """

    def __init__(self, bootstrap: str, group_id: str, topics: list[str], partitions: int) -> None:
        """`topics` is read on every call: a topic_create trigger appends to it."""
        self.bootstrap, self.group_id, self.topics, self.partitions = bootstrap, group_id, topics, partitions
        self._consumer = self._new_consumer()

    def _new_consumer(self) -> Consumer:
        return Consumer({**security_config(), "bootstrap.servers": self.bootstrap, "group.id": self.group_id, "enable.auto.commit": False,
                         "client.id": "kafka-chaos-watcher"}, logger=logging.getLogger("kafka-chaos.watcher"))

    def progress(self) -> GroupProgress:
        try:
            partitions = [TopicPartition(topic, p) for topic in list(self.topics) for p in range(self._partitions_of(topic))]
            ends = {(tp.topic, tp.partition): self._consumer.get_watermark_offsets(tp, timeout=REQUEST_TIMEOUT_S)[1]
                    for tp in partitions}
            committed = self._consumer.committed(partitions, timeout=REQUEST_TIMEOUT_S)
        except KafkaException:
            self._consumer.close()
            self._consumer = self._new_consumer()
            raise
        self.partitions = len(partitions)
        return GroupProgress(ends, {(tp.topic, tp.partition): tp.offset for tp in committed if tp.offset >= 0})

    def _partitions_of(self, topic: str) -> int:
        """Asked every time: a partitions_add trigger grows a topic mid-run."""
        metadata = self._consumer.list_topics(topic, timeout=REQUEST_TIMEOUT_S).topics[topic]
        if metadata.error is not None:
            raise KafkaException(metadata.error)
        return len(metadata.partitions)

    def is_stable(self, members: int) -> bool:
        """Every member joined and every partition assigned (asked in a child process, see above)."""
        state = describe_group_isolated(self.bootstrap, self.group_id)
        return state is not None and state["state"] == "STABLE" and state["members"] == members \
            and state["assigned"] == self.partitions

    def close(self) -> None:
        self._consumer.close()


def describe_group_isolated(bootstrap: str, group_id: str) -> dict | None:
    try:
        result = subprocess.run([sys.executable, "-m", "harness.group", bootstrap, group_id],
                                capture_output=True, text=True, timeout=REQUEST_TIMEOUT_S + 10)
    except subprocess.TimeoutExpired:
        return None
    return json.loads(result.stdout) if result.returncode == 0 else None


def _describe_group(bootstrap: str, group_id: str) -> dict:
    admin = AdminClient({**security_config(), "bootstrap.servers": bootstrap}, logger=logging.getLogger("kafka-chaos.describe"))
    description = admin.describe_consumer_groups([group_id], request_timeout=REQUEST_TIMEOUT_S)[group_id].result()
    return {"state": description.state.name, "members": len(description.members),
            "assigned": sum(len(m.assignment.topic_partitions) for m in description.members if m.assignment),
            "coordinator": description.coordinator.id if description.coordinator else None}


if __name__ == "__main__":
    print(json.dumps(_describe_group(sys.argv[1], sys.argv[2])))
