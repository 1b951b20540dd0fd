"""`commit: transaction`: a librdkafka member that consumes, transforms and produces in transactions that also commit
its input offsets (KIP-447: the offsets go with the consumer's group metadata, so a member that lost its partitions
is fenced). The member's own half of exactly-once; the harness reads the output topic back read_committed
(output-topic mode: consumed/ comes from what the transactions committed, harness/output_topic.py).

Each input record becomes one output record (its key and value, to `<group id>-txn-out`), whose headers name the
input (topic, partition, offset, producer id, seq), the member, when it was processed and the transaction number. A
transaction is committed every `interval_ms`, before the member's partitions are revoked, and when it stops.

The commit's window is logged as every commit's (workloads/app.py ContractLog): `commit_sent` before
send_offsets_to_transaction, then `committed` when commit_transaction returned, or `commit_failed`: with
`aborted: true` once the transaction was aborted (its offsets certainly not applied), else indeterminate. The client's
documented handling (confluent-kafka's transactional examples, KIP-447):
- retriable: the same call again (an unknown commit outcome is retried, never aborted);
- abortable (txn_requires_abort): abort, then rewind: every assigned partition back to its committed offset, and a
  `rewound` event with those offsets (the records after them are consumed again, by the same ownership);
- fatal (a producer fenced by a newer one with its transactional.id, a broken epoch): a new producer, then rewind;
- partitions lost: the open transaction aborted (its offsets could only be refused).

The transactional.id is the member's (`<group id>-<member>`), or, with transaction.transactional_id: partition (the
pattern before KIP-447), an input partition's (`<group id>-<topic>-<partition>`): a producer each partition the member
owns, made on its first record (its init_transactions fences the last owner's zombie by the id), closed when the
partition is revoked or lost; each commits its own transaction with its own partition's offsets, and an abort
rewinds only its partition.

transactions/<member>.jsonl keeps one row an operation of the producer (docs/DESIGN.md, "A transaction's commit"):
init, begin, send and ack (each output record: the input it came from; the ack, its output partition and offset),
send_offsets, commit, abort, each with the transaction's number, elapsed_ms, the error and its class.
"""
from __future__ import annotations

import time
from pathlib import Path

from confluent_kafka import OFFSET_BEGINNING, KafkaError, KafkaException, Producer, TopicPartition

from workloads.app import error_detail
from workloads.config import MemberConfig, TransactionSettings
from workloads.history import JsonlLog, now_ms
from workloads.producer import produce, value_parts
from workloads.security import security_config

CALL_TIMEOUT_S = 30  # the consumer's committed() in a rewind; the producer's calls take transaction.call_timeout_ms
RETRIES = 20         # a retriable error: the same call this many times at most, then it is what it is


def transactional_id(cfg: MemberConfig) -> str:
    return member_transactional_id(cfg.group_id, cfg.member)


def partition_transactional_id(group_id: str, topic: str, partition: int) -> str:
    """One transactional.id an input partition (transaction.transactional_id: partition, the pattern before KIP-447):
    whichever member owns the partition writes its output with this id, so the next owner's init_transactions fences
    the last owner's zombie by the id, not by the group's generation."""
    return f"{group_id}-{topic}-{partition}"


def member_transactional_id(group_id: str, member: str) -> str:
    """One transactional.id a member: a restarted member fences its own zombie (KIP-98), and no two members share
    one (the group id keeps two runs on one cluster apart). The Java member's is the same (Transactions.java)."""
    return f"{group_id}-{member}"


def producer_settings(cfg: MemberConfig, spec: TransactionSettings, txn_id: str) -> dict:
    """The member's transactional producer: its client.id is the member's name, so an rpc rule aimed at the member
    matches its Produce, AddPartitionsToTxn, EndTxn and the rest. librdkafka's request time-out is
    socket.timeout.ms (a timed-out request closes its connection: socket.max.fails is 1)."""
    timeout = {} if spec.request_timeout_ms is None else {"socket.timeout.ms": spec.request_timeout_ms}
    return {**security_config(), "bootstrap.servers": cfg.bootstrap_servers, "client.id": cfg.member,
            "transactional.id": txn_id, "transaction.timeout.ms": spec.timeout_ms,
            "enable.idempotence": True, "linger.ms": 5, **timeout}


def output_headers(message, member: str, txn: int) -> list[tuple[str, bytes]]:
    """What output-topic mode reads from an output record (harness/scenario/schema.py OutputFields' defaults)."""
    producer_id, seq = value_parts(message.value())
    return [("in-topic", message.topic().encode()), ("in-partition", str(message.partition()).encode()),
            ("in-offset", str(message.offset()).encode()), ("in-member", member.encode()),
            ("in-processed-at", str(now_ms()).encode()), ("in-producer-id", producer_id.encode()),
            ("in-seq", seq.encode()), ("txn", str(txn).encode())]


def error_class(error: KafkaError) -> str:
    """How the client documents handling it: fatal (a new producer), abortable (abort, rewind), retriable (the same
    call again), or other."""
    return ("fatal" if error.fatal() else "abortable" if error.txn_requires_abort()
            else "retriable" if error.retriable() else "other")


class TransactionLog:
    """transactions/<member>.jsonl: one row an operation of the member's transactional producer."""

    def __init__(self, cfg: MemberConfig, spec: TransactionSettings) -> None:
        self.file = JsonlLog(Path(cfg.run_dir) / "transactions" / f"{cfg.member}.jsonl")
        self.base = {"member": cfg.member, "timeout_ms": spec.timeout_ms}

    def row(self, op: str, txn: int, txn_id: str, started_s: float | None = None, error: KafkaError | None = None,
            flush: bool = True, **fields) -> None:
        row = {"ts_ms": now_ms(), **self.base, "transactional_id": txn_id, "op": op, "txn": txn, **fields}
        if started_s is not None:
            row["elapsed_ms"] = round((time.monotonic() - started_s) * 1000)
        if error is not None:
            row.update(error=error.name(), error_class=error_class(error), detail=error_detail(error))
        self.file.append(row)
        if flush:
            self.file.flush()

    def close(self) -> None:
        self.file.close()


class Rewind(Exception):
    """The open transaction is gone (aborted, or its producer replaced): its partitions go back to their committed
    offsets (`partitions`: those, as (topic, partition); None: every assigned one)."""

    def __init__(self, partitions: set[tuple[str, int]] | None = None) -> None:
        super().__init__(partitions)
        self.partitions = partitions


class Numbering:
    """The transactions a member process began, numbered from 1 across its producers (a row's `txn`)."""

    def __init__(self) -> None:
        self.last = 0

    def next(self) -> int:
        self.last += 1
        return self.last


class Transactions:
    """A member's transactions: one transactional producer (transaction.transactional_id: member), or one an input
    partition it owns (partition: created on the partition's first record, closed when it is revoked)."""

    def __init__(self, cfg: MemberConfig, spec: TransactionSettings, log) -> None:
        self.cfg, self.spec, self.log = cfg, spec, log
        self.rows, self.numbers = TransactionLog(cfg, spec), Numbering()
        self.per_partition = spec.transactional_id == "partition"
        self.lanes: dict[tuple[str, int] | None, TransactionalProducer] = {}
        if not self.per_partition:
            self.lanes[None] = TransactionalProducer(self, transactional_id(cfg))

    def _lane(self, key: tuple[str, int] | None) -> "TransactionalProducer":
        if key not in self.lanes:  # a partition's first record: its producer, its id's init fencing the last owner's
            self.lanes[key] = TransactionalProducer(self, partition_transactional_id(self.cfg.group_id, *key))
        return self.lanes[key]

    def process(self, records) -> None:
        """Each record's output in its producer's open transaction (begun if none is); a new partition's producer
        begins its transaction before the next one starts (only a process's first init row has txn 0)."""
        by_key: dict[tuple[str, int] | None, list] = {}
        for m in records:
            by_key.setdefault((m.topic(), m.partition()) if self.per_partition else None, []).append(m)
        for key, batch in by_key.items():
            self._lane(key).process(batch)

    def due(self) -> bool:
        return any(lane.due() for lane in self.lanes.values())

    def commit(self, consumer) -> None:
        """Every open transaction committed (see TransactionalProducer.commit); one that could not be is Rewind for
        its partitions, raised once the others were committed."""
        rewound: set[tuple[str, int]] = set()
        for lane in list(self.lanes.values()):
            try:
                lane.commit(consumer)
            except Rewind as exc:
                if not self.per_partition:
                    raise Rewind() from None  # the member's one transaction: every assigned partition goes back
                rewound |= exc.partitions or set()
        if rewound:
            raise Rewind(rewound)

    def abort_lost(self) -> None:
        for lane in self.lanes.values():
            lane.abort_lost()

    def revoked(self, partitions) -> None:
        """Once a revocation's commit is done: the revoked partitions' producers closed (their next owner's
        init_transactions takes their ids over)."""
        if not self.per_partition:
            return
        for tp in partitions:
            lane = self.lanes.pop((tp.topic, tp.partition), None)
            if lane is not None:
                lane.close()

    def close(self) -> None:
        for lane in self.lanes.values():
            lane.close()
        self.rows.close()


class TransactionalProducer:
    """One transactional.id's producer and its open transaction: begin on the first record after a commit, one output
    record an input record, commit on time, before a revocation and at the stop."""

    def __init__(self, owner: Transactions, txn_id: str) -> None:
        self.cfg, self.spec, self.log = owner.cfg, owner.spec, owner.log
        self.rows, self.numbers, self.transactional_id = owner.rows, owner.numbers, txn_id
        self.call_s = self.spec.call_timeout_ms / 1000  # each transactional call's time-out
        self.number = self.numbers.last  # its open transaction's number (an init row: the process's last so far)
        self.opened_at: float | None = None  # monotonic; None: no transaction open
        self.failed = False  # a record of the open transaction was refused: it ends (aborts) at once
        self.next_offsets: dict[tuple[str, int], int] = {}  # what the open transaction consumed: its offsets to commit
        self.producer = self._new_producer()

    def _new_producer(self) -> Producer:
        producer = Producer(producer_settings(self.cfg, self.spec, self.transactional_id))
        self._retrying("init", lambda: producer.init_transactions(self.call_s))
        return producer

    @property
    def open(self) -> bool:
        return self.opened_at is not None

    def process(self, records) -> None:
        """Each record's output in the open transaction (begun if none is)."""
        if not self.open:
            self.producer.begin_transaction()
            self.number = self.numbers.next()
            self.opened_at = time.monotonic()
            self.rows.row("begin", self.number, self.transactional_id)
        txn = self.number
        for m in records:
            source = f"{m.topic()}:{m.partition()}:{m.offset()}"
            try:
                produce(self.producer, self.cfg.output_topic, key=m.key(), value=m.value(),
                        headers=output_headers(m, self.cfg.member, txn),
                        on_delivery=lambda err, out, source=source: self._acked(txn, source, err, out))
            except KafkaException as exc:
                if exc.args[0].code() != KafkaError._STATE:
                    raise
                # the transaction failed (a record refused: librdkafka refuses every produce() after it): the rest of
                # the batch is not sent, and the commit that follows at once meets the abortable error, aborts, rewinds
                self.rows.row("send", txn, self.transactional_id, error=exc.args[0], input=source)
                self.failed = True
                break
            self.rows.row("send", txn, self.transactional_id, flush=False, input=source)
            tp = (m.topic(), m.partition())
            self.next_offsets[tp] = max(self.next_offsets.get(tp, 0), m.offset() + 1)
        self.producer.poll(0)

    def _acked(self, txn: int, source: str, error: KafkaError | None, out) -> None:
        """The delivery report (the input named from the send: a failed delivery's record may carry no headers)."""
        self.rows.row("ack", txn, self.transactional_id, error=error, flush=False, input=source, partition=out.partition(),
                      offset=out.offset() if error is None else None)

    def due(self) -> bool:
        return self.open and (self.failed or (time.monotonic() - self.opened_at) * 1000 >= self.spec.interval_ms)

    def commit(self, consumer) -> None:
        """Commit the open transaction with its input offsets, or abort it on purpose (every abort_every-th); on a
        failure the client's documented handling (the module's doc), then Rewind for the caller to act on."""
        if not self.open:
            return
        offsets = [TopicPartition(t, p, o) for (t, p), o in sorted(self.next_offsets.items())]
        committed, consumed = {f"{tp.topic}:{tp.partition}": tp.offset for tp in offsets}, set(self.next_offsets)
        window = self.log.open_window(committed)
        try:
            if self.spec.abort_every and self.number % self.spec.abort_every == 0:
                self._abort(committed, window, "aborted on purpose (transaction.abort_every)")
                raise Rewind(consumed)
            self._retrying("send_offsets", lambda: self.producer.send_offsets_to_transaction(
                offsets, consumer.consumer_group_metadata(), self.call_s), offsets=committed)
            self._retrying("commit", lambda: self.producer.commit_transaction(self.call_s))
        except KafkaException as exc:
            self._failed(exc.args[0], committed, window)
            raise Rewind(consumed) from None
        self.log.event("committed", offsets=committed, **window)
        self._closed()

    def abort_lost(self) -> None:
        """The partitions were lost: the open transaction cannot commit their offsets any more."""
        if self.open:
            try:
                self._retrying("abort", lambda: self.producer.abort_transaction(self.call_s), why="partitions lost")
            except KafkaException as exc:
                self._replace_if_fatal(exc.args[0])
            self._closed()

    def _failed(self, error: KafkaError, committed: dict, window: dict) -> None:
        if error.txn_requires_abort():
            self._abort(committed, window, error_detail(error))
            return
        self.log.event("commit_failed", offsets=committed, **window, detail=error_detail(error))  # outcome unknown
        self._replace_if_fatal(error, always=True)
        self._closed()

    def _abort(self, committed: dict, window: dict, why: str) -> None:
        try:
            self._retrying("abort", lambda: self.producer.abort_transaction(self.call_s), why=why)
        except KafkaException as exc:  # an abort that failed leaves the outcome unknown: the producer is replaced
            self.log.event("commit_failed", offsets=committed, **window, detail=f"{why}; abort failed: "
                                                                              f"{error_detail(exc.args[0])}")
            self._replace_if_fatal(exc.args[0], always=True)
        else:
            self.log.event("commit_failed", offsets=committed, **window, aborted=True, detail=why)
        self._closed()

    def _replace_if_fatal(self, error: KafkaError, always: bool = False) -> None:
        """A fatal error leaves the producer unusable: a new one (init_transactions fences the old epoch)."""
        if error.fatal() or always:
            self.log.event("error", detail=f"transactional producer replaced: {error_detail(error)}")
            self.producer = self._new_producer()

    def _closed(self) -> None:
        self.opened_at, self.failed = None, False
        self.next_offsets.clear()

    def _retrying(self, op: str, fn, **fields) -> None:
        """The call, again on a retriable error (at most RETRIES times); one row of transactions/ for it, with its
        outcome and the time all its attempts took."""
        started = time.monotonic()
        for attempt in range(RETRIES):
            try:
                fn()
                self.rows.row(op, self.number, self.transactional_id, started, retries=attempt, **fields)
                return
            except KafkaException as exc:
                error = exc.args[0]
                if not error.retriable() or error.txn_requires_abort() or error.fatal() or attempt == RETRIES - 1:
                    self.rows.row(op, self.number, self.transactional_id, started, error, retries=attempt, **fields)
                    raise
                time.sleep(0.1)

    def close(self) -> None:
        """What is buffered sent (the producer itself goes with its last reference)."""
        self.producer.flush(self.call_s)


def rewind(consumer, log, partitions: set[tuple[str, int]] | None = None) -> None:
    """Every assigned partition (of `partitions`, when given) back to its committed offset (the start, where none
    is): what the aborted transaction consumed is consumed again, by the same ownership. Logged as `rewound`, with
    the offsets."""
    assignment = [tp for tp in consumer.assignment() if partitions is None or (tp.topic, tp.partition) in partitions]
    if not assignment:
        return
    positions = consumer.committed(assignment, timeout=CALL_TIMEOUT_S)
    for tp in positions:
        consumer.seek(TopicPartition(tp.topic, tp.partition, tp.offset if tp.offset >= 0 else OFFSET_BEGINNING))
    log.event("rewound", offsets={f"{tp.topic}:{tp.partition}": max(tp.offset, 0) for tp in positions})
