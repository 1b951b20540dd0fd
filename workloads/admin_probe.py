"""The admin probe, its own OS process: one admin call about the group every every_ms, on a client lane of its
own, as a monitoring tool makes them (the scenario's consumer_group.admin_probe).

Each call is one event in events/<probe-id>.jsonl (run-directory contract v1), `role: admin_probe` so that the
analysis never takes the probe for a group member: kind `admin_call`, the Kafka request it sends to the group's
coordinator (`request`), the error that ended it (`error`, null when answered) and how long it took. A death by
a signal cannot be logged by the process itself; the harness logs it (workloads/services.py).
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException
from confluent_kafka.admin import AdminClient

from kafkanet.waiting import wait_until
from workloads import config as workload_config
from workloads.config import AdminProbeConfig
from workloads.history import JsonlLog, now_ms
from workloads.member import librdkafka_facts
from workloads.security import security_config

ROLE = "admin_probe"
REQUESTS = {"describe": "DescribeGroups", "offsets": "OffsetFetch"}  # what each call asks the coordinator


class AdminProbe:
    def __init__(self, cfg: AdminProbeConfig) -> None:
        self.cfg, self.stopping = cfg, False
        self.events = JsonlLog(Path(cfg.run_dir) / "events" / f"{cfg.probe_id}.jsonl")
        self.admin = AdminClient({**security_config(), "bootstrap.servers": cfg.bootstrap_servers,
                                  "client.id": cfg.probe_id})

    def event(self, kind: str, **fields) -> None:
        self.events.append({"ts_ms": now_ms(), "member": self.cfg.probe_id, "kind": kind, "role": ROLE, **fields})
        self.events.flush()

    def call(self) -> None:
        """One admin call, to its answer or its error; logged either way."""
        cfg, timeout_s = self.cfg, self.cfg.request_timeout_ms / 1000
        started, error, detail = time.monotonic(), None, "answered"
        try:
            if cfg.call == "offsets":
                futures = self.admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(cfg.group_id)],
                                                                 request_timeout=timeout_s)
            else:
                futures = self.admin.describe_consumer_groups([cfg.group_id], request_timeout=timeout_s)
            futures[cfg.group_id].result()
        except KafkaException as exc:
            error, detail = exc.args[0].name(), f"{exc.args[0].name()}: {exc.args[0].str()}"
        self.event("admin_call", request=REQUESTS[cfg.call], error=error,
                   elapsed_ms=round((time.monotonic() - started) * 1000), detail=detail)

    def run(self) -> int:
        cfg = self.cfg
        self.event("started", **librdkafka_facts(),
                   detail=f"call={cfg.call} every_ms={cfg.every_ms} request_timeout_ms={cfg.request_timeout_ms}")
        while not self.stopping:
            due = time.monotonic() + cfg.every_ms / 1000
            self.call()
            wait_until(lambda: self.stopping, due - time.monotonic(), interval_s=0.1)
        self.event("stopped")
        self.events.close()
        return 0


if __name__ == "__main__":
    sys.exit(workload_config.run_workload(AdminProbe, AdminProbeConfig))
