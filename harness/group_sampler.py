"""What the coordinators say over the whole run, sampled (kafkanet.group_wire, kafkanet.txn_wire): the group's state
for the report's state band (run_dir/group-states.jsonl), and a transactional run's transactions
(run_dir/transaction-states.jsonl). The contract: docs/DESIGN.md.

A row is written when what the coordinator says changed, so a row means "like this from some time in (since_ms,
ts_ms] on"; the first row records the sampling interval, the last one when sampling ended. A state shorter than the
interval (CompletingRebalance lasts milliseconds) may never be seen: the report's band takes each classic round from
coordinator.log where it has it, and otherwise infers CompletingRebalance from the members' events and marks it
inferred (analysis/figures/state_band.py).
"""
from __future__ import annotations

import threading
from pathlib import Path

from kafkanet.group_wire import describe_group
from kafkanet.txn_wire import open_transactions, transaction_states, transactional_ids
from workloads.history import JsonlLog, now_ms

STATES_FILE = "group-states.jsonl"
TXN_STATES_FILE = "transaction-states.jsonl"
APIS = {"classic": "DescribeGroups v5", "consumer": "ConsumerGroupDescribe v0", "streams": "StreamsGroupDescribe v0"}
COMPARED = ("state", "members", "assigned", "assignor", "coordinator", "group_epoch", "assignment_epoch", "member_epochs",
            "assignments", "member_ids", "standby_tasks", "warmup_tasks")


class Sampler:
    """Asks `sample()` every interval: {key: row}, one row a thing sampled (the group: one, under None); a key's row
    is written when it differs from the key's last, with since_ms."""
    file = ""

    def __init__(self, run_dir: Path, interval_ms: int, first: dict) -> None:
        self.interval_s = interval_ms / 1000
        self._log = JsonlLog(Path(run_dir) / self.file)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=type(self).__name__, daemon=True)
        self.samples = 0
        self._write({"kind": "sampler", "interval_ms": interval_ms, **first})

    def sample(self) -> dict:
        raise NotImplementedError

    def start(self) -> "Sampler":
        self._thread.start()
        return self

    def _loop(self) -> None:
        last: dict = {}
        since = now_ms()
        while not self._stop.is_set():
            started = now_ms()
            try:
                rows = self.sample()
            except Exception as exc:  # a fault on a coordinator: not known for a while (and a sampler never dies)
                rows = {None: {"kind": "unknown", "error": str(exc).splitlines()[0] if str(exc) else type(exc).__name__}}
            self.samples += 1
            for key, row in rows.items():
                if row != last.get(key):
                    self._write({**row, "since_ms": since})
                    last[key] = row
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


class GroupSampler(Sampler):
    file = STATES_FILE

    def __init__(self, run_dir: Path, bootstrap: str, group_id: str, protocol: str, interval_ms: int) -> None:
        self.bootstrap, self.group_id, self.protocol = bootstrap, group_id, protocol
        super().__init__(run_dir, interval_ms, {"protocol": protocol, "api": APIS[protocol]})

    def sample(self) -> dict:
        seen = describe_group(self.bootstrap, self.group_id, self.protocol, timeout_s=max(self.interval_s * 4, 2))
        return {None: {"kind": "state", **{k: seen.get(k) for k in COMPARED}}}


class TransactionSampler(Sampler):
    """Each of the run's transactional ids (the transactional members', given; and those listed that start with the
    group id and '-': a Kafka Streams group's) as its coordinator describes it, and each output partition's open
    transactions as its leader says them: one row an id, or a partition, each time it changed."""
    file = TXN_STATES_FILE

    def __init__(self, run_dir: Path, bootstrap: str, group_id: str, interval_ms: int, ids: list[str] = (),
                 partitions: list[tuple[str, int]] = ()) -> None:
        self.brokers, self.prefix = bootstrap.split(","), f"{group_id}-"
        self.partitions = list(partitions)  # the output's: their leaders' open transactions (DescribeProducers)
        # the ids known before (the transactional members'), and every id listed since: each is described while its
        # coordinator lists nothing (a broker answers ListTransactions only once it has loaded all its partitions of
        # __transaction_state, seen to take most of a short run on this machine)
        self.known: set[str] = set(ids)
        self.coordinators: dict[str, str] = {}  # id -> its coordinator's address, while it answers
        super().__init__(run_dir, interval_ms, {"api": "ListTransactions v1, DescribeTransactions v0, "
                                                       "DescribeProducers v0"})

    def sample(self) -> dict:
        timeout_s = max(self.interval_s * 4, 2)
        self.known |= transactional_ids(self.brokers, self.prefix, timeout_s)
        states = transaction_states(self.brokers, self.known, timeout_s, self.coordinators)
        rows = {tid: {"kind": "transaction", "transactional_id": tid, **d} for tid, d in states.items()}
        if self.partitions:
            held = open_transactions(self.brokers, self.partitions, timeout_s)
            rows.update({f"producers {tp}": {"kind": "producers", "partition": tp, **d} for tp, d in held.items()})
        return rows
