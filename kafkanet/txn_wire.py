"""The transactions of a run as their coordinators say them, asked on the wire (kio builds and reads the messages):
ListTransactions of every broker (each lists the transactional ids it coordinates), then DescribeTransactions of
each id's coordinator: its state (Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort,
PrepareEpochFence, Dead), producer id and epoch, time-out, the open transaction's start and partitions; and
DescribeProducers of the partitions a run writes in transactions: the transactions their leaders hold open (the
first offset of each, what a read_committed reader waits behind). Fresh connections, nothing cached (as
kafkanet.group_wire)."""
from __future__ import annotations

import struct

from kafkanet.group_wire import TRANSACTION_KEY, GroupWireError, ask, ask_raw, find_coordinator
from kafkanet.wire import read_uvarint

LIST_TRANSACTIONS, DESCRIBE_TRANSACTIONS, DESCRIBE_PRODUCERS = 66, 65, 61


def list_transactions(address: str, timeout_s: float) -> list[str]:
    """The transactional ids this broker coordinates."""
    from kio.schema.list_transactions.v1.request import ListTransactionsRequest
    response = ask(address, LIST_TRANSACTIONS, 1, ListTransactionsRequest(), timeout_s)
    if response.error_code.value != 0:
        raise GroupWireError(f"ListTransactions: {response.error_code.name}")
    return [str(t.transactional_id) for t in response.transaction_states]


def describe_transactions(address: str, ids: list[str], timeout_s: float) -> dict[str, dict]:
    """transactional id -> what its coordinator (at ``address``) says of it. Read here, not by kio: an id with no
    open transaction has a start time of -1, which kio refuses to read as a timestamp."""
    from kio.schema.describe_transactions.v0.request import DescribeTransactionsRequest
    from kio.schema.types import TransactionalId
    raw = ask_raw(address, DESCRIBE_TRANSACTIONS, 0,
                  DescribeTransactionsRequest(transactional_ids=tuple(TransactionalId(i) for i in ids)), timeout_s)
    return dict(_transaction_states(Reader(raw, 1)))  # after the header's tagged fields


class Reader:
    """A flexible response's fields, in order."""

    def __init__(self, data: bytes, at: int) -> None:
        self.data, self.at = data, at

    def fixed(self, fmt: str):
        (value,) = struct.unpack_from(fmt, self.data, self.at)
        self.at += struct.calcsize(fmt)
        return value

    def count(self) -> int:  # a compact array's length (+1) or a compact string's
        value, self.at = read_uvarint(self.data, self.at)
        return value - 1

    def string(self) -> str | None:
        n = self.count()
        if n < 0:
            return None
        value = bytes(self.data[self.at:self.at + n]).decode()
        self.at += n
        return value

    def skip_tags(self) -> None:
        for _ in range(self.count() + 1):
            _, self.at = read_uvarint(self.data, self.at)
            size, self.at = read_uvarint(self.data, self.at)
            self.at += size


def _transaction_states(r: Reader):
    """DescribeTransactionsResponse v0: throttle_time_ms, then each transaction's state."""
    from kio.schema.errors import ErrorCode
    r.fixed(">i")
    for _ in range(max(r.count(), 0)):
        error, tid, state = r.fixed(">h"), r.string(), r.string()
        timeout_ms, started, producer_id, epoch = r.fixed(">i"), r.fixed(">q"), r.fixed(">q"), r.fixed(">h")
        partitions = []
        for _ in range(max(r.count(), 0)):
            topic = r.string()
            partitions += [f"{topic}:{r.fixed('>i')}" for _ in range(max(r.count(), 0))]
            r.skip_tags()
        r.skip_tags()
        if error:
            yield tid, {"state": "unknown", "error": ErrorCode(error).name}
        else:
            yield tid, {"state": state, "producer_id": producer_id, "producer_epoch": epoch, "timeout_ms": timeout_ms,
                        "start_ms": started if started > 0 else None, "partitions": sorted(partitions)}


def describe_producers(address: str, partitions: list[tuple[str, int]], timeout_s: float) -> dict[str, list[dict]]:
    """topic:partition -> the transactions open on it (producer id, epoch, the transaction's first offset), for each
    partition the broker at ``address`` leads; a partition it does not lead (NOT_LEADER_OR_FOLLOWER) is left out."""
    from kio.schema.describe_producers.v0.request import DescribeProducersRequest, TopicRequest
    from kio.schema.types import TopicName
    from kio.static.primitive import i32
    topics: dict[str, list[int]] = {}
    for topic, partition in partitions:
        topics.setdefault(topic, []).append(partition)
    request = DescribeProducersRequest(topics=tuple(
        TopicRequest(name=TopicName(t), partition_indexes=tuple(i32(p) for p in ps)) for t, ps in topics.items()))
    response = ask(address, DESCRIBE_PRODUCERS, 0, request, timeout_s)
    return {f"{t.name}:{p.partition_index}": [
                {"producer_id": int(s.producer_id), "producer_epoch": int(s.producer_epoch),
                 "txn_start_offset": int(s.current_txn_start_offset)}
                for s in p.active_producers if s.current_txn_start_offset >= 0]
            for t in response.topics for p in t.partitions if p.error_code.value == 0}


def open_transactions(brokers: list[str], partitions: list[tuple[str, int]], timeout_s: float) -> dict[str, dict]:
    """Each partition's open transactions as its leader says them (every broker asked: each answers for the
    partitions it leads), with the leader's address; a partition no broker answered for is left out."""
    out: dict[str, dict] = {}
    for address in brokers:
        try:
            led = describe_producers(address, partitions, timeout_s)
        except (GroupWireError, OSError, ValueError):
            continue
        out.update({tp: {"open": txns, "leader": address} for tp, txns in led.items()})
    return out


def transactional_ids(brokers: list[str], prefix: str, timeout_s: float) -> set[str]:
    """The transactional ids starting with ``prefix`` that the brokers which answered coordinate (a broker frozen, or
    still loading its transaction state, lists nothing this time)."""
    ids: set[str] = set()
    for address in brokers:
        try:
            ids.update(i for i in list_transactions(address, timeout_s) if i.startswith(prefix))
        except (GroupWireError, OSError, ValueError):
            continue
    return ids


def transaction_states(brokers: list[str], ids: set[str], timeout_s: float,
                       coordinators: dict[str, str] | None = None) -> dict[str, dict]:
    """Each transactional id as its coordinator describes it, with that coordinator's address; `unknown`, with the
    error, for one whose coordinator could not be found or did not answer. `coordinators` (id -> address), kept by
    the caller between calls, saves a FindCoordinator for each id whose coordinator answered last time: an id its
    coordinator did not describe (moved, frozen, loading) is found again next time."""
    coordinators = {} if coordinators is None else coordinators
    by_coordinator: dict[str, list[str]] = {}
    out: dict[str, dict] = {}
    for transactional_id in sorted(ids):
        address = coordinators.get(transactional_id)
        if address is None:
            try:
                address = find_coordinator(",".join(brokers), transactional_id, timeout_s, TRANSACTION_KEY)
            except (GroupWireError, OSError, ValueError) as exc:
                out[transactional_id] = {"state": "unknown", "error": _first_line(exc)}
                continue
        by_coordinator.setdefault(address, []).append(transactional_id)
    for address, group in by_coordinator.items():
        try:
            described = describe_transactions(address, group, timeout_s)
        except (GroupWireError, OSError, ValueError) as exc:
            described = {i: {"state": "unknown", "error": _first_line(exc)} for i in group}
        for i, d in described.items():
            out[i] = {**d, "coordinator": address}
            if d["state"] == "unknown":
                coordinators.pop(i, None)
            else:
                coordinators[i] = address
    return out


def _first_line(exc: Exception) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
