"""A transactional run's own logs (docs/DESIGN.md): transactions/<member>.jsonl, what each member's transactional
producer did, read into its transactions; verified/, what the verified readers read of the output topic; and the
open transactions the output partitions' leaders held and each transactional id's state at its coordinator
(transaction-states.jsonl, `kind: producers` and `kind: transaction`).

A transaction is named by its member, the member process's incarnation (1 for its first process; a restarted process
numbers its transactions from 1 again) and its number in that process. Its outcome, by the member's own log:
`committed` (commit_transaction returned), `aborted` (abort_transaction returned), or `unknown` (a commit whose
outcome the client could not tell, or a transaction its process died in: the coordinator aborts it, unless its
EndTxn was already on its way)."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from analysis.errors import InputError
from analysis.rundir.state import checked_lines

TRANSACTIONS_DIR, VERIFIED_DIR, READERS_FILE = "transactions", "verified", "readers.json"
STATES_FILE = "transaction-states.jsonl"
COMMITTED, ABORTED, UNKNOWN = "committed", "aborted", "unknown"


@dataclass
class Transaction:
    member: str
    incarnation: int
    txn: int
    transactional_id: str
    begun_ms: int | None = None
    commit_called_ms: int | None = None  # when commit_transaction was called (its row's ts_ms less its elapsed_ms)
    ended_ms: int | None = None
    outcome: str = UNKNOWN
    acked: list[tuple[int, int, str]] = field(default_factory=list)  # (output partition, offset, input t:p:o)
    acked_at: dict[tuple[int, int], int] = field(default_factory=dict)  # (output partition, offset) -> its ack's ts_ms
    offsets: dict[str, int] = field(default_factory=dict)            # send_offsets: "topic:partition" -> offset

    @property
    def name(self) -> str:
        return f"{self.member}#{self.incarnation}.{self.txn}"


@dataclass
class Reader:
    isolation: str
    rows: list[dict]          # the verified rows, in the order read
    reached_end: bool         # its position reached every partition's end
    positions: dict[int, int]  # partition -> the next offset it would read
    ends: dict[int, int] = field(default_factory=dict)  # partition -> its high watermark, last asked
    finished_at_ms: int | None = None  # when it stopped reading

    @cached_property
    def offsets_read(self) -> set[tuple[int, int]]:
        """Every (partition, offset) it read, found once."""
        return {(r["partition"], r["offset"]) for r in self.rows}


@dataclass
class Held:
    """A transaction a partition's leader held open (DescribeProducers): from its first offset on, read_committed
    readers wait."""
    producer_id: int
    producer_epoch: int
    first_seen_ms: int
    last_seen_ms: int   # the last sample that still listed it


@dataclass
class CoordinatorState:
    """A transactional id as its coordinator described it (DescribeTransactions), from the sample that first showed it
    so to the next sample that showed it otherwise, or the sampler's end. A sample the coordinator did not answer
    (moved, frozen, loading: state `unknown`) ends nothing: the id was in its last known state as far as anyone saw."""
    transactional_id: str
    state: str
    producer_id: int
    producer_epoch: int
    partitions: tuple[str, ...]  # those whose markers are still to be written, once the transaction is prepared
    coordinator: str             # its address on the harness's control lane: one a broker
    from_ms: int
    until_ms: int
    open: bool = False           # still so at the sampler's end


@dataclass
class TransactionFiles:
    transactions: list[Transaction]
    readers: dict[str, Reader]  # isolation -> its reader (none: the run kept no verified/)
    held: dict[tuple[int, int], Held] = field(default_factory=dict)  # (output partition, first offset) -> its holder
    states: dict[str, list[CoordinatorState]] = field(default_factory=dict)  # transactional id -> its states in order

    @cached_property
    def held_inputs(self) -> dict[tuple[str, int], set[int]]:
        """(input topic, partition) -> the input offsets whose output record a member's producer wrote behind a
        transaction its output partition still held open when the read_committed reader gave up (at or past where it
        stopped, below that partition's end): read_committed readers cannot see them, so they are not known lost."""
        reader = self.readers.get("read_committed")
        if reader is None or reader.reached_end:
            return {}
        stopped = {p: at for p, at in reader.positions.items() if at < reader.ends.get(p, at)}
        out: dict[tuple[str, int], set[int]] = {}
        for t in self.transactions:
            for p, o, source in t.acked:
                if p in stopped and o >= stopped[p] and source:
                    topic, partition, offset = source.rsplit(":", 2)
                    out.setdefault((topic, int(partition)), set()).add(int(offset))
        return out

    @cached_property
    def by_output(self) -> dict[tuple[int, int], Transaction]:
        """(output partition, offset) -> the transaction whose producer wrote it (an acknowledged send); found once,
        for every check that asks."""
        return {(p, o): t for t in self.transactions for p, o, _ in t.acked}


def read(run_dir: Path) -> TransactionFiles | None:
    """The transactions and the verified readers; None when the run kept no transactions/."""
    folder = run_dir / TRANSACTIONS_DIR
    if not folder.is_dir():
        return None
    transactions = []
    for path in sorted(folder.glob("*.jsonl")):
        transactions += member_transactions(checked_lines(path, "transactions", run_dir))
    states = _state_rows(run_dir)
    return TransactionFiles(transactions, _readers(run_dir), held_open(states), coordinator_states(states))


def member_transactions(rows: list[dict]) -> list[Transaction]:
    """One member's transactions from its rows, in order (see the module for incarnations and outcomes)."""
    out: dict[tuple[int, int], Transaction] = {}
    incarnation = 0
    for row in rows:
        op, txn = row["op"], row["txn"]
        if op == "init" and txn == 0:
            incarnation += 1
        if op == "init" or txn == 0:
            continue
        t = out.setdefault((incarnation, txn), Transaction(row["member"], max(incarnation, 1), txn, row["transactional_id"]))
        failed = row.get("error") is not None
        if op == "begin":
            t.begun_ms = row["ts_ms"]
        elif op == "ack" and not failed and row.get("offset") is not None:
            t.acked.append((row["partition"], row["offset"], row.get("input") or ""))
            t.acked_at[(row["partition"], row["offset"])] = row["ts_ms"]
        elif op == "send_offsets" and not failed:
            t.offsets = dict(row.get("offsets") or {})
        elif op == "commit":
            t.commit_called_ms = row["ts_ms"] - (row.get("elapsed_ms") or 0)
            t.ended_ms, t.outcome = row["ts_ms"], UNKNOWN if failed else COMMITTED
        elif op == "abort" and not failed:
            t.ended_ms, t.outcome = row["ts_ms"], ABORTED
    return list(out.values())


def _readers(run_dir: Path) -> dict[str, Reader]:
    folder = run_dir / VERIFIED_DIR
    if not folder.is_dir():
        return {}
    summary_path = folder / READERS_FILE
    try:
        summary = json.loads(summary_path.read_text()) if summary_path.is_file() else {}
    except ValueError as exc:
        raise InputError(f"{VERIFIED_DIR}/{READERS_FILE}: not JSON ({exc})") from None
    readers = {}
    for path in sorted(folder.glob("*.jsonl")):
        said = summary.get(path.stem, {})
        partitions = said.get("partitions") or {}
        positions = {int(p): v.get("position", 0) for p, v in partitions.items()}
        ends = {int(p): v["end"] for p, v in partitions.items() if v.get("end") is not None}
        readers[path.stem] = Reader(path.stem, checked_lines(path, "verified", run_dir), bool(said.get("reached_end")), positions,
                                    ends, said.get("finished_at_ms"))
    return readers


def _state_rows(run_dir: Path) -> list[dict]:
    path = run_dir / STATES_FILE
    return checked_lines(path, "transaction_states", run_dir) if path.is_file() else []


def held_open(rows: list[dict]) -> dict[tuple[int, int], Held]:
    """Each transaction the output partitions' leaders listed as open, by (partition, first offset), with the first
    and last sample that listed it (a row is written only when a partition's list changed: the next row of that
    partition, or the sampler's end, is the last time it was still listed). ``rows``: transaction-states.jsonl's."""
    held: dict[tuple[int, int], Held] = {}
    listed: dict[int, set[tuple[int, int]]] = {}   # partition -> the (partition, offset) keys its last row listed
    for row in rows:
        if row.get("kind") == "sampler_end":
            for keys in listed.values():
                for key in keys:
                    held[key].last_seen_ms = row["ts_ms"]
        if row.get("kind") != "producers":
            continue
        partition = int(str(row["partition"]).rsplit(":", 1)[1])
        for key in listed.get(partition, set()):
            held[key].last_seen_ms = row["ts_ms"]
        listed[partition] = set()
        for t in row.get("open") or []:
            key = (partition, t["txn_start_offset"])
            listed[partition].add(key)
            held.setdefault(key, Held(t["producer_id"], t["producer_epoch"], row["ts_ms"], row["ts_ms"]))
    return held


def coordinator_states(rows: list[dict]) -> dict[str, list[CoordinatorState]]:
    """transactional id -> its states at its coordinator, in order (transaction-states.jsonl's `transaction` rows:
    one each time what the coordinator said changed)."""
    out: dict[str, list[CoordinatorState]] = {}
    for row in rows:
        if row.get("kind") == "sampler_end":
            for states in out.values():
                if states[-1].open:
                    states[-1].until_ms = row["ts_ms"]
            break
        if row.get("kind") != "transaction" or row.get("state", "unknown") == "unknown":
            continue
        states = out.setdefault(row["transactional_id"], [])
        if states:
            states[-1].until_ms, states[-1].open = row["ts_ms"], False
        states.append(CoordinatorState(row["transactional_id"], row["state"], row["producer_id"], row["producer_epoch"],
                                       tuple(row.get("partitions") or ()), row.get("coordinator") or "?",
                                       row["ts_ms"], row["ts_ms"], open=True))
    return out
