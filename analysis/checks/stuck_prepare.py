"""Transactions their coordinator never completed (counted by the `stall` check, stall.py): a transactional id that
its coordinator described as PrepareCommit or PrepareAbort with every marker written (no partition left to write
one to) for longer than COMPLETION_GRACE_MS (transaction-states.jsonl). A coordinator writes the transaction's
CompleteCommit or CompleteAbort as soon as its last marker is acknowledged, within moments; until it does, the
producer cannot begin another transaction (CONCURRENT_TRANSACTIONS, retried) and its member stops where it is.

The stall: `waiting_for: transaction_completion`, `cause: stuck_in_prepare`, with the transactional id, its member,
producer id and epoch, the state, from when it was prepared (`time_ms`) and its last marker written
(`markers_written_ms`; `stalled_ms` counts from there), and the coordinators that held
the transaction while it was prepared (`coordinators`, their control-lane addresses; `coordinator_moved` when more
than one): KAFKA-16352's shape (a marker request of the partition's old leadership completing after the new one's
began removes the new one's pending entry; fixed in 3.8.0), scenarios/zoo/kafka-16352.yaml.

Read read_committed, a stuck-in-prepare transaction holds nothing back: its markers are written, the data partitions'
last stable offsets pass it. What stops is its producer."""
from __future__ import annotations

from typing import NamedTuple

from analysis.checks.framework import Facts
from analysis.rundir.transactions import CoordinatorState

PREPARED = ("PrepareCommit", "PrepareAbort")
# the coordinator appends the Complete state once the last marker is acknowledged: one log append, moments; a
# transaction still prepared this long after it has no marker left to write is not being completed
COMPLETION_GRACE_MS = 10_000


class Prepared(NamedTuple):
    stalls: list[dict]          # the transactions left prepared with every marker written
    across_a_move: int | None   # prepared transactions whose coordinator changed (completed or not): what a run gave
                                # KAFKA-16352's race to act on; None without transaction states


def prepared_transactions(x: Facts) -> Prepared:
    """The prepared transactions of transaction-states.jsonl, read once: the stuck ones, and how many saw a move."""
    files = x.history.transactions
    if files is None or not files.states:
        return Prepared([], None)
    members = {t.transactional_id: t.member for t in files.transactions}
    stalls, across = [], 0
    for transactional_id, states in sorted(files.states.items()):
        for run in _prepared_runs(states):
            across += len({s.coordinator for s in run}) > 1
            written = next((s for s in run if not s.partitions), None)
            if written is not None and run[-1].until_ms - written.from_ms > COMPLETION_GRACE_MS:
                stalls.append(_stall(transactional_id, members.get(transactional_id), run, written))
    return Prepared(stalls, across)


def _prepared_runs(states: list[CoordinatorState]) -> list[list[CoordinatorState]]:
    """The runs of consecutive states that are one prepared transaction: the same prepared state, producer id and
    epoch (its partitions shrinking as the markers are written; its coordinator changing as the partition moves)."""
    runs: list[list[CoordinatorState]] = []
    for s in states:
        if s.state not in PREPARED:
            continue
        last = runs[-1][-1] if runs else None
        if last is not None and last.until_ms == s.from_ms and (last.state, last.producer_id, last.producer_epoch) == (
                s.state, s.producer_id, s.producer_epoch):
            runs[-1].append(s)
        else:
            runs.append([s])
    return runs


def _stall(transactional_id: str, member: str | None, run: list[CoordinatorState], written: CoordinatorState) -> dict:
    coordinators = [s.coordinator for i, s in enumerate(run) if i == 0 or s.coordinator != run[i - 1].coordinator]
    until, stuck = run[-1].until_ms, run[-1].until_ms - written.from_ms
    return {"type": "stall", "topic": None, "partition": None, "offsets": None, "count": 1,
            "members": [member] if member else [], "generations": [], "time_ms": [run[0].from_ms, until],
            "fault_ids": [], "stalled_ms": stuck, "markers_written_ms": written.from_ms,
            "waiting_for": "transaction_completion", "cause": "stuck_in_prepare",
            "transactional_id": transactional_id, "state": run[0].state, "producer_id": run[0].producer_id,
            "producer_epoch": run[0].producer_epoch, "prepared_since_ms": run[0].from_ms,
            "coordinators": coordinators, "coordinator_moved": len(coordinators) > 1, "open": run[-1].open,
            "reason": f"{transactional_id} {'was still' if run[-1].open else 'stayed'} in {run[0].state} "
                      f"{stuck / 1000:.1f} s after its last marker was written; its coordinator "
                      f"{'moved ' + ' -> '.join(coordinators) if len(coordinators) > 1 else 'stayed ' + coordinators[0]}"
                      f" while it was prepared"}
