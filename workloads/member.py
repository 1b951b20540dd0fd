"""One consumer-group member, its own OS process (librdkafka through confluent-kafka).

The client contract, shared with the Java member: consumed rows go to consumed/<member>.jsonl and
group events to events/<member>.jsonl (run-directory contract v1). A batch is appended and flushed
to the log BEFORE its offsets are committed, so a killed member never looks like a Kafka loss.
"""
from __future__ import annotations

import random
import re
import sys
import time
import zlib
from pathlib import Path

import confluent_kafka
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from workloads import config as workload_config
from workloads.app import (ContractLog, consumer_settings, current_generation, error_detail, is_fatal,
                           package_version, partition_names, row_of, subscription)
from workloads.client_debug import JoinWatch
from workloads.config import MemberConfig, ProcessingConfig
from workloads.control import ControlFile, control_path
from workloads.history import end_event, now_ms, started_facts
from workloads.state import MemberState
from workloads.transactions import Rewind, Transactions, rewind

CLIENT = "librdkafka"
RESTORING_WAIT_MS = 50  # the batch wait while a restore is under way: the restore advances between batches
# A stateful member's batch wait: an assignment arrives inside consume(), which then waits out its time-out before the
# loop can begin the restore (every partition paused: no record returns it sooner), so the wait bounds how late a
# restore starts to read. 500 ms would add up to half a second to every restore; 100 ms costs an idle member 10 polls
# a second.
STATEFUL_WAIT_MS = 100


class Processing:
    """The application's work per batch: a fixed or exponentially distributed delay per record and per
    batch (from the member's own seeded generator), so a member can be made slower than
    max.poll.interval.ms allows."""

    def __init__(self, spec: ProcessingConfig, seed: int) -> None:
        self.per_record_ms, self.per_batch_ms, self.distribution = spec.per_record_ms, spec.per_batch_ms, spec.distribution
        self.rng = random.Random(spec.seed ^ seed)

    def delay(self, records: int) -> None:
        mean_ms = self.per_batch_ms + self.per_record_ms * records
        if mean_ms <= 0:
            return
        ms = self.rng.expovariate(1 / mean_ms) if self.distribution == "exponential" else mean_ms
        time.sleep(ms / 1000)


# The group requests librdkafka may name in a fatal error's text ("ConsumerGroupHeartbeat fatal error: ...",
# "OffsetCommit failed: ...").
GROUP_REQUESTS = ("ConsumerGroupHeartbeat", "JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup", "OffsetCommit",
                  "OffsetFetch", "FindCoordinator")


def _descriptions() -> list[tuple[str, str]]:
    """(librdkafka's text, Kafka error name) of every error code, the longest text first."""
    codes = {v for k, v in vars(KafkaError).items() if k.isupper() and not k.startswith("_") and isinstance(v, int)}
    return sorted(((KafkaError(c).str(), KafkaError(c).name()) for c in codes), key=lambda d: -len(d[0]))


def error_name(error: KafkaError) -> str:
    """The Kafka error name, also when librdkafka reports the error wrapped as a fatal one (_FATAL, the
    reason only in the text: "Fatal error: Broker: Static consumer fenced by ...")."""
    if error.code() != KafkaError._FATAL:
        return error.name()
    return next((name for text, name in _descriptions() if f"Fatal error: {text}" in error.str()), error.name())


def named_request(error: KafkaError) -> str | None:
    """The group request that drew a fatal error, when librdkafka's text names it."""
    match = re.search(r"\b(\w+) (?:fatal error|failed)\b", error.str())
    return match.group(1) if match and match.group(1) in GROUP_REQUESTS else None


def librdkafka_facts(member: MemberConfig | None = None) -> dict:
    """The `started` facts of a process on this client: the confluent-kafka and librdkafka that run it."""
    return started_facts(CLIENT, package_version(), member, librdkafka_version=confluent_kafka.libversion()[0])


class FatalError(Exception):
    """A fatal client error, with the group request that drew it when the member knows it."""

    def __init__(self, error: KafkaError, request: str | None) -> None:
        super().__init__(error.str())
        self.error, self.request = error, request


class Member:
    def __init__(self, cfg: MemberConfig) -> None:
        self.cfg = cfg
        self.name = cfg.member
        run_dir = Path(cfg.run_dir)
        self.log = ContractLog(cfg, CLIENT)  # consumed/ and events/, the sequence n, the commit windows
        self.stopping = False
        self.crashed = False  # a hosted member brought down as if killed (workloads/member_host.py)
        # A failed commit is retried when the member is idle: otherwise a group whose last commit
        # failed (e.g. in a rebalance) would never show its real progress to Kafka.
        self.uncommitted = False
        settings = consumer_settings(cfg)
        if cfg.commit in ("async", "auto"):
            settings["on_commit"] = self.on_commit  # results arrive in later consume() calls
        self.seed = zlib.crc32(self.name.encode())  # the member's own processing delays, reproducible
        self.processing = Processing(cfg.processing, self.seed)
        self.control = ControlFile(control_path(run_dir, self.name))
        self._override, self._slow = None, None
        self.join_watch = None  # a user's own `debug` setting goes to stderr as they asked, and no watch
        if cfg.join_watch_s and "debug" not in settings:
            self.join_watch = JoinWatch(self.name, run_dir, cfg.join_watch_s)
            settings.update(self.join_watch.settings())
        self.consumer = Consumer(settings)
        self.state = MemberState(cfg, cfg.state, settings) if cfg.state is not None else None
        self.transactions = Transactions(cfg, cfg.transaction, self.log) if cfg.commit == "transaction" else None

    def refresh_generation(self) -> int:
        self.log.generation = current_generation(self.consumer)
        return self.log.generation

    def event(self, kind: str, **fields) -> None:
        self.log.event(kind, **fields)

    # Rebalance callbacks run inside consume(), between batches: the previous batch is already committed.
    def on_assign(self, consumer, partitions) -> None:
        if self.join_watch is not None:
            self.join_watch.joined()
        self.refresh_generation()
        self.event("assigned", partitions=partition_names(partitions), member_id=consumer.memberid())
        if self.state is not None:  # takes the assignment itself, to pause what it restores
            self.state.assigned(consumer, partitions, self.event)

    def on_revoke(self, consumer, partitions) -> None:
        if self.state is not None:  # the changelog flushed before the partitions go
            self.state.revoked(partitions, self.event)
        if self.transactions is not None:  # the open transaction committed (or aborted) before the partitions go
            try:
                self.transactions.commit(consumer)
            except Rewind:
                pass  # what it consumed goes to the next owner, from the committed offsets
            self.transactions.revoked(partitions)
        self.event("revoked", partitions=partition_names(partitions))

    def on_lost(self, consumer, partitions) -> None:
        if self.transactions is not None:
            self.transactions.abort_lost()
            self.transactions.revoked(partitions)
        if self.state is not None:
            self.state.lost(partitions, self.event)
        self.event("lost", partitions=partition_names(partitions))

    def run(self) -> int:
        self.consumer.subscribe(subscription(self.cfg), on_assign=self.on_assign, on_revoke=self.on_revoke, on_lost=self.on_lost)
        cfg = self.cfg
        # typed facts of the client contract; the analysis reads these fields, detail is for people
        self.event("started", **librdkafka_facts(cfg), detail=f"commit={cfg.commit}")
        subscribed_s = time.monotonic()
        graceful = False  # the loop ended on a stop: the open transaction is committed below, its window logged
        try:
            while not self.stopping and not self.crashed:
                self._watch_join(subscribed_s)
                restoring = self.state is not None and self.state.restoring
                if restoring:
                    self.state.step(self.consumer, self.event)
                wait_ms = RESTORING_WAIT_MS if restoring else STATEFUL_WAIT_MS if self.state is not None \
                    else workload_config.BATCH_WAIT_MS
                batch = self.consumer.consume(self.cfg.batch_size, timeout=wait_ms / 1000)
                records = [m for m in batch if not self._is_error(m)]
                if self.state is not None:
                    records = self.state.held_back(records, self.consumer)
                if records:
                    self._handle(records)
                elif self.uncommitted:
                    self._commit_positions()
                elif self.transactions is not None and self.transactions.due():
                    self._commit_transaction()
            graceful = not self.crashed
        except FatalError as exc:
            self._end_on(exc.error, exc.request)
            return 3
        except KafkaException as exc:
            self._end_on(exc.args[0], None)
            return 3
        finally:
            if self.join_watch is not None:
                self.join_watch.close()
            if not graceful:  # nothing more is logged
                self.log.consumed.close()
        if self.crashed:
            return 0
        if self.transactions is not None:  # a graceful stop commits the open transaction (its window logs consumed/)
            self._commit_transaction()
            self.transactions.close()
        self.log.consumed.close()
        self.consumer.close()  # leaves the group: the rebalance this triggers is the leave trigger
        if self.state is not None:
            self.state.close()
        self.event("stopped")
        self.log.events.close()
        return 0

    def abandon(self) -> None:
        """A crashed member's end: its Consumer destroyed without the consumer close (confluent-kafka's dealloc passes
        RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE: no final commit, no LeaveGroup of its own), its logs left as they are."""
        self.log.events.close()
        self.consumer = None
        if self.state is not None:
            self.state.abandon()

    def _watch_join(self, subscribed_s: float) -> None:
        watch = self.join_watch
        if watch is not None and watch.overdue(subscribed_s, time.monotonic()):
            self.event("join_overdue", debug_log=str(watch.path.relative_to(self.cfg.run_dir)),
                       waited_ms=round(watch.watch_s * 1000))

    def _end_on(self, error: KafkaError, request: str | None) -> None:
        """The member's last event: the error it ends on, whether the client marked it fatal, and the request that
        drew it (the member's own call, else the one librdkafka's text names)."""
        kind, fields = end_event(error_name(error), error.str(), is_fatal(error), request or named_request(error))
        self.event(kind, **fields)

    def _handle(self, records) -> None:
        """Process (the configured delay), log, commit, in the order the commit mode says:
        sync/async: log, then commit (at least once); before_process: commit, then process and log
        (at most once, on purpose); auto: log, and the background timer commits what consume() stored;
        transaction: an output record each, in the open transaction, committed with the offsets on time (the
        harness reads what it consumed back from the output topic)."""
        commit, received_at = self.cfg.commit, now_ms()  # consumed: when consume() handed the batch over
        if commit == "transaction":
            self._processing().delay(len(records))
            self.transactions.process(records)
            if self.transactions.due():
                self._commit_transaction()
            return
        if commit == "before_process":
            self._commit(records)
        self._processing().delay(len(records))
        self._log_batch(records, received_at)
        if commit in ("sync", "async"):
            self._commit(records)

    def _processing(self) -> "Processing":
        """The scenario's processing, or a slow_processing trigger's while it lasts (its control file)."""
        override = (self.control.read() or {}).get("processing")
        if override != self._override:
            self._override = override
            self._slow = Processing(ProcessingConfig(**override), self.seed) if override else None
        return self._slow or self.processing

    def _is_error(self, message) -> bool:
        error = message.error()
        if error is None:
            return False
        if error.code() != KafkaError._PARTITION_EOF:
            if is_fatal(error):  # logged once, by run(), as what it is (e.g. fenced); the member exits
                raise FatalError(error, None)
            self.event("error", detail=error_detail(error))
        return True

    def _log_batch(self, records, at: int) -> None:
        generation, log = self.refresh_generation(), self.log
        log.rows([row_of(m, self.name, at, generation, log.take_n(), self.cfg.instance_id, CLIENT) for m in records])
        if self.state is not None:
            self.state.apply(records, generation)

    def _commit_transaction(self) -> None:
        try:
            self.transactions.commit(self.consumer)
        except Rewind as exc:
            rewind(self.consumer, self.log, exc.partitions)

    def _commit(self, records) -> None:
        next_offsets: dict[tuple[str, int], int] = {}
        for m in records:
            key = (m.topic(), m.partition())
            next_offsets[key] = max(next_offsets.get(key, 0), m.offset() + 1)
        self._commit_offsets([TopicPartition(t, p, o) for (t, p), o in next_offsets.items()])

    def _commit_positions(self) -> None:
        """Commit where the member is: every record before its position is already in the log."""
        if self.cfg.commit == "auto":
            return
        try:
            positions = [tp for tp in self.consumer.position(self.consumer.assignment()) if tp.offset >= 0]
        except KafkaException:
            return
        if positions:
            self._commit_offsets(positions)
        else:
            self.uncommitted = False

    def _commit_offsets(self, offsets: list[TopicPartition]) -> None:
        """Commit through the contract's window (workloads/app.py ContractLog.commit); a failed commit is retried when
        the member is idle, and a fatal one ends the member."""
        asynchronous = self.cfg.commit == "async"
        if self.state is not None:
            self.state.flush()  # the changelog before the offsets: a commit never runs ahead of the state
        send = lambda: self.consumer.commit(offsets=offsets, asynchronous=asynchronous)  # noqa: E731
        try:
            self.log.commit(offsets, send, asynchronous)
            if not asynchronous:  # an asynchronous commit's answer comes to on_commit
                self.uncommitted = False
        except KafkaException as exc:
            error = exc.args[0]
            self.uncommitted = True
            if is_fatal(error):  # the commit's own answer, unless librdkafka's fatal state was set before (_FATAL)
                raise FatalError(error, "OffsetCommit" if error.code() != KafkaError._FATAL else None) from None

    def on_commit(self, err, partitions) -> None:
        """Result of an asynchronous commit (the member's or the auto-commit timer's)."""
        self.uncommitted = err is not None
        self.log.answer(err, partitions)


if __name__ == "__main__":
    sys.exit(workload_config.run_workload(Member, MemberConfig))
