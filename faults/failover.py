"""What a fault aimed at the group's coordinator did to the group: the coordinator before and after,
and how long until the group committed again. Observed on the harness's CONTROL lane, written into
the fault's row in faults.jsonl (`coordinator_before`, `coordinator_after`, `commits_resumed_after_ms`)."""
from __future__ import annotations

import logging
import threading

from confluent_kafka import Consumer, TopicPartition

from faults.backend import BrokerHandle, ClusterHandle
from faults.base import Fault
from faults.targets import coordinator_id
from kafkanet.clock import now_ms
from kafkanet.waiting import wait_until
from workloads.security import security_config

POLL_S = 0.5
WATCH_LIMIT_S = 600


class WatchesCoordinator(Fault):
    """A fault on one broker: when it was aimed at `coordinator`, record what the group's coordinator did
    (a base of every such kind, so each records it the same way)."""
    _failover: "CoordinatorFailover | None" = None

    def watch_coordinator(self, broker: BrokerHandle, cluster: ClusterHandle | None, group_id: str | None,
                          requested_target: object) -> None:
        if requested_target == "coordinator" and cluster is not None and group_id:
            self._failover = CoordinatorFailover(self, broker, cluster, group_id)

    def inject(self) -> Fault:
        if self._failover is not None and not self.active:
            self._failover.before()
        super().inject()
        if self._failover is not None:
            self._failover.watch()
        return self


class CoordinatorFailover:
    def __init__(self, fault: Fault, broker: BrokerHandle, cluster: ClusterHandle, group_id: str) -> None:
        self.fault, self.broker, self.cluster, self.group_id = fault, broker, cluster, group_id
        self._committed_before: dict = {}
        self._thread: threading.Thread | None = None

    def before(self) -> None:
        self._consumer = Consumer({**security_config(), "bootstrap.servers": self.cluster.control_bootstrap_servers, "group.id": self.group_id,
                                   "enable.auto.commit": False, "client.id": "kafka-chaos-failover-watch"},
                                  logger=logging.getLogger("kafka-chaos.failover"))
        try:
            self._committed_before = self._committed()
        except Exception:  # the group may have committed nothing yet: any commit then counts
            self._committed_before = {}

    def watch(self) -> None:
        self.fault.note(coordinator_before=self.broker.node_id)
        self._thread = threading.Thread(target=self._run, name=f"failover-watch-{self.fault.target}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        injected_ms = self.fault.row()["injected_at_ms"]
        seen = {"moved": False, "resumed": False}

        def both_seen() -> bool:
            if not seen["moved"]:
                seen["moved"] = self._note_new_coordinator()
            if not seen["resumed"] and self._committed_since():
                self.fault.note(commits_resumed_after_ms=now_ms() - injected_ms)
                seen["resumed"] = True
            return seen["moved"] and seen["resumed"]

        try:
            wait_until(both_seen, WATCH_LIMIT_S, interval_s=POLL_S)
        finally:
            self._consumer.close()

    def _note_new_coordinator(self) -> bool:
        try:
            now = coordinator_id(self.cluster.view(), self.group_id)
        except Exception:
            return False
        if now == self.broker.node_id and self.fault.active:
            return False  # still the same broker while the fault lasts: no failover (yet)
        self.fault.note(coordinator_after=now)
        return True

    def _committed_since(self) -> bool:
        try:
            now = self._committed()
        except Exception:
            return False
        return any(offset > self._committed_before.get(key, -1) for key, offset in now.items())

    def _committed(self) -> dict:
        topics = self._consumer.list_topics(timeout=5).topics
        partitions = [TopicPartition(t, p) for t, meta in topics.items() if not t.startswith("__")
                      for p in meta.partitions]
        return {(tp.topic, tp.partition): tp.offset for tp in self._consumer.committed(partitions, timeout=5) if tp.offset >= 0}
