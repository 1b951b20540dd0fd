"""What the harness asks Kafka about the group while a run goes on (all on the control lane).

librdkafka's coordinator-bound admin calls (DescribeConsumerGroups, ListConsumerGroupOffsets) abort
the whole process when a request to the coordinator fails (librdkafka issue 4605, fix pending in
PR 5397): exactly what a fault causes. So committed offsets come from a plain, never-subscribed
Consumer (`committed()` takes another code path), and the one describe the harness needs runs in a
child process (`python -m harness.group`, kept for the run: GroupDescriber) whose crash is just "not known yet".
"""
from __future__ import annotations

import json
import logging
import select
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

    def __init__(self, bootstrap: str, group_id: str, topics: list[str], partitions: int, log=None,
                 protocol: str = "classic") -> None:
        """`topics` is read on every call: a topic_create trigger appends to it. `log` (a settling.GroupLog) keeps
        every description. A `streams` group (KIP-1071) is described on the wire: no admin client knows it."""
        self.bootstrap, self.group_id, self.topics, self.partitions = bootstrap, group_id, topics, partitions
        self._consumer = self._new_consumer()
        self._describer = WireDescriber(bootstrap, protocol) if protocol == "streams" else GroupDescriber(bootstrap)
        self.log = log
        self.last_described: dict | None = None  # the last answer is_stable had (None: Kafka or the child could not say)
        self.ever_described = False               # any answer at all since the last reset_seen()
        self.last_progress: GroupProgress | None = None

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
        self.last_progress = GroupProgress(ends, {(tp.topic, tp.partition): tp.offset for tp in committed if tp.offset >= 0})
        return self.last_progress

    def _partitions_of(self, topic: str) -> int:
        """Asked every time: a partitions_add trigger grows a topic mid-run."""
        metadata = self._consumer.list_topics(topic, timeout=REQUEST_TIMEOUT_S).topics[topic]
        if metadata.error is not None:
            raise KafkaException(metadata.error)
        return len(metadata.partitions)

    def is_stable(self, members: int, phase: str = "join") -> bool:
        """Every member joined and every partition assigned (asked of the describing child, see above)."""
        state = self.describe(phase)
        return state is not None and state["state"] == "STABLE" and state["members"] == members \
            and state["assigned"] == self.partitions

    def describe(self, phase: str) -> dict | None:
        """The group as the describing child sees it now (None: not known), kept in the log."""
        state = self._describer.describe(self.group_id)
        if state is not None:
            self.last_described, self.ever_described = state, True
            if self.log is not None:
                self.log.described(phase, state)
        return state

    @property
    def describe_error(self) -> str | None:
        """Why the last description is missing (the Kafka error, or the child's end), if it is."""
        return self._describer.last_error

    def close(self) -> None:
        self._consumer.close()
        self._describer.close()


class WireDescriber:
    """Describes a group on the wire (kafkanet/group_wire.py), in this process: nothing of librdkafka's is involved,
    so nothing can abort. Its answers read as GroupDescriber's (the state in capitals, the members' client ids)."""

    def __init__(self, bootstrap: str, protocol: str) -> None:
        self.bootstrap, self.protocol = bootstrap, protocol
        self.last_error: str | None = None

    def describe(self, group_id: str) -> dict | None:
        from kafkanet.group_wire import GroupWireError, describe_group
        try:
            got = describe_group(self.bootstrap, group_id, self.protocol, timeout_s=REQUEST_TIMEOUT_S)
        except (GroupWireError, OSError, ValueError) as exc:
            self.last_error = f"{self.protocol} group describe failed: {exc}"
            return None
        self.last_error = None
        return {"state": got["state"].upper(), "members": got["members"], "assigned": got["assigned"],
                "coordinator": None, "client_ids": sorted(got["assignments"])}  # the wire names it by address

    def close(self) -> None:
        pass


class GroupDescriber:
    """A child process (`python -m harness.group BOOTSTRAP`) that describes a group each time it is asked, on one
    admin client: its crash is "not known yet", and the next question starts another. One child for a whole run,
    not one a question: the harness polls while members join, and a Python start costs more than the answer."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self._proc: subprocess.Popen | None = None
        self.last_error: str | None = None  # why the last question had no answer (a run's error message says it)
        try:  # started now, so that the first question (as the members start) is answered without its start-up
            self._spawn()
        except OSError as exc:
            self.last_error = f"the describing child did not start: {exc}"

    def _spawn(self) -> None:
        if self._proc is None or self._proc.poll() is not None:
            self._proc = subprocess.Popen([sys.executable, "-m", "harness.group", self.bootstrap], text=True,
                                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def describe(self, group_id: str) -> dict | None:
        try:
            self._spawn()
            self._proc.stdin.write(group_id + "\n")
            self._proc.stdin.flush()
            ready, _, _ = select.select([self._proc.stdout], [], [], REQUEST_TIMEOUT_S + 10)
            line = self._proc.stdout.readline() if ready else ""
            if not line:  # it crashed (librdkafka 4605) or hangs: another one next time
                self.last_error = "the describing child ended or hung without an answer"
                self.close()
                return None
            answer = json.loads(line)
            self.last_error = answer.get("error") if isinstance(answer, dict) else None
            return None if self.last_error else answer
        except (OSError, ValueError) as exc:
            self.last_error = f"the describing child failed: {exc}"
            self.close()
            return None

    def close(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
            self._proc = None


def describe_group_isolated(bootstrap: str, group_id: str) -> dict | None:
    """One question, in a child of its own (tests; the run asks a GroupDescriber)."""
    describer = GroupDescriber(bootstrap)
    try:
        return describer.describe(group_id)
    finally:
        describer.close()


def _describe_group(admin: AdminClient, group_id: str) -> dict:
    description = admin.describe_consumer_groups([group_id], request_timeout=REQUEST_TIMEOUT_S)[group_id].result()
    return {"state": description.state.name, "members": len(description.members),
            "assigned": sum(len(m.assignment.topic_partitions) for m in description.members if m.assignment),
            "coordinator": description.coordinator.id if description.coordinator else None,
            "client_ids": sorted(m.client_id for m in description.members)}


def _answer(bootstrap: str) -> None:
    """The child: one group id a line in, one JSON answer a line out ({"error": why} when Kafka could not say).

    A failed describe replaces the admin client. librdkafka's admin client caches a group's coordinator until the
    entry goes unused for metadata.max.age.ms (15 min), and nothing evicts it when the coordinator answers
    NOT_COORDINATOR (src/rdkafka_coord.c: only the transaction manager evicts): asked every 0.2 s, a coordinator
    cached while `__consumer_offsets` leadership was moving (the cluster reset's preferred election) is asked for
    ever, while the group is stable on the new one. That was the "not stable within 60 s" flake of bdd7487 and
    e53304e; tests/cluster/test_describer_coordinator_move.py reproduces it. A new client starts with an empty cache."""
    def new_admin() -> AdminClient:
        return AdminClient({**security_config(), "bootstrap.servers": bootstrap}, logger=logging.getLogger("kafka-chaos.describe"))
    admin = new_admin()
    for line in sys.stdin:
        try:
            answer = _describe_group(admin, line.strip())
        except KafkaException as exc:
            answer, admin = {"error": f"describe_consumer_groups failed: {exc}"}, new_admin()
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    _answer(sys.argv[1])
