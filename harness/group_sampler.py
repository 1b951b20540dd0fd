"""The group's state over the whole run, sampled from its coordinator (kafkanet.group_wire), for the report's state
band: run_dir/group-states.jsonl (the contract: docs/DESIGN.md).

A row is written when what the coordinator says changed, so a row means "like this from some time in (since_ms,
ts_ms] on"; the first row records the sampling interval, the last one when sampling ended. A state shorter than the
interval (CompletingRebalance lasts milliseconds) may never be seen: the report's band takes each classic round from
coordinator.log where it has it, and otherwise infers CompletingRebalance from the members' events and marks it
inferred (analysis/figures/state_band.py).
"""
from __future__ import annotations

import threading
from pathlib import Path

from kafkanet.group_wire import GroupWireError, describe_group
from workloads.history import JsonlLog, now_ms

STATES_FILE = "group-states.jsonl"
APIS = {"classic": "DescribeGroups v5", "consumer": "ConsumerGroupDescribe v0", "streams": "StreamsGroupDescribe v0"}
COMPARED = ("state", "members", "assigned", "assignor", "coordinator", "group_epoch", "assignment_epoch", "member_epochs",
            "assignments", "member_ids", "standby_tasks", "warmup_tasks")


class GroupSampler:
    def __init__(self, run_dir: Path, bootstrap: str, group_id: str, protocol: str, interval_ms: int) -> None:
        self.bootstrap, self.group_id, self.protocol = bootstrap, group_id, protocol
        self.interval_s = interval_ms / 1000
        self._log = JsonlLog(Path(run_dir) / STATES_FILE)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="group-sampler", daemon=True)
        self.samples = 0
        self._write({"kind": "sampler", "interval_ms": interval_ms, "protocol": protocol, "api": APIS[protocol]})

    def start(self) -> "GroupSampler":
        self._thread.start()
        return self

    def _loop(self) -> None:
        last: dict | None = None
        since = now_ms()
        while not self._stop.is_set():
            started = now_ms()
            try:
                seen = describe_group(self.bootstrap, self.group_id, self.protocol, timeout_s=max(self.interval_s * 4, 2))
                row = {"kind": "state", **{k: seen.get(k) for k in COMPARED}}
            except (GroupWireError, OSError, ValueError) as exc:  # a fault on the coordinator: not known for a while
                row = {"kind": "unknown", "error": str(exc).splitlines()[0] if str(exc) else type(exc).__name__}
            self.samples += 1
            if row != last:
                self._write({**row, "since_ms": since})
                last = row
            since = started
            self._stop.wait(max(0.0, self.interval_s - (now_ms() - started) / 1000))

    def _write(self, row: dict) -> None:
        self._log.append({"ts_ms": now_ms(), **row})
        self._log.flush()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        self._write({"kind": "sampler_end", "samples": self.samples})
        self._log.close()
