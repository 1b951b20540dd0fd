"""What the verified readers saw of the members' transactions (issue 56; harness/verified.py), by Jepsen's names. Each
output record is tied to the transaction that wrote it by its acknowledged (partition, offset) in transactions/.

- `aborted_read` (G1a): a read_committed reader read a record of a transaction that aborted.
- `precommitted_read`: a read_committed reader read a record before its transaction's commit was even asked for
  (read_at_ms before commit_transaction's call, by more than the logs' millisecond rounding), or of a transaction
  never asked to commit (its process died in it).
- `torn_transaction`: a committed transaction that a read_committed reader saw in part: some of its records read,
  others passed over (the reader's position went beyond them) unread.
- `inconsistent_offsets`: an output offset read holding another record than its writer acknowledged at it (or than
  another reader read there): the log disagreeing with itself (Jepsen's; a truncation, an unclean election).
- `nonmonotonic_poll`: a reader read an offset of a partition at or below one it had read there before.
- `poll_skip`: a reader passed over a record it should have read: one of a committed transaction (read_committed),
  or any acknowledged one (read_uncommitted), below the reader's final position and never read.

And, counted by the `stall` check (stall.py), a read_committed reader left below a partition's end once every member
stopped: `waiting_for: stable_offset`, with the record it waits at, the transaction that wrote it and the producer
that holds it open (its leader's DescribeProducers, transaction-states.jsonl; else the rpc rules' hits); `cause:
hanging_transaction` where that transaction was over (aborted, or committed more than MARKER_GRACE_MS before the
reader gave up), yet the partition holds it open: a write that landed after its transaction ended (KAFKA-14402's, a
late EndTxn's with partition verification off), or no member logged the write its leader held open; else
`open_transaction` (its outcome unknown: a member died in it; or its commit's marker may not have come yet).

Every anomaly is placed in the output topic (output.json's topic): partition and offsets are the output record's;
`input` names the input record, `transaction` the writer (member#incarnation.number), with its transactional id."""
from __future__ import annotations

from collections import defaultdict

from analysis.checks.framework import CheckResult, Facts, check
from analysis.rundir.transactions import ABORTED, COMMITTED, Held, Transaction

ROUNDING_MS = 2  # a row's ts_ms and elapsed_ms are each rounded to the millisecond
COMMITTED_READER = "read_committed"
# a committed transaction's markers are written after EndTxn answers (transaction version 1 and 2 alike), within
# moments unless a broker is down; one still held open this long after its commit returned will not be ended
MARKER_GRACE_MS = 10_000


def _anomaly(x: Facts, kind: str, partition: int, offsets: list[int], t: Transaction | None, times: list[int],
             **more) -> dict:
    topic = (x.history.output or {}).get("topic", "output")
    return {"type": kind, "topic": topic, "partition": partition, "offsets": [min(offsets), max(offsets)],
            "count": len(offsets), "members": [t.member] if t else [], "generations": [],
            "time_ms": [min(times), max(times)], "fault_ids": [],
            **({"transaction": t.name, "transactional_id": t.transactional_id} if t else {}), **more}


def _by_writer(x: Facts, kind: str, rows: list[dict], judge) -> list[dict]:
    """One ``kind`` anomaly per (writing transaction, output partition) of the rows ``judge(row, txn)`` finds wrong."""
    written = x.history.transactions.by_output
    found: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        t = written.get((r["partition"], r["offset"]))
        if t is not None and judge(r, t):
            found[(t.name, r["partition"])].append(r)
    out = []
    for (name, partition), rs in sorted(found.items()):
        t = written[(partition, rs[0]["offset"])]
        out.append(_anomaly(x, kind, partition, [r["offset"] for r in rs], t, [r["read_at_ms"] for r in rs],
                            input=f"{rs[0]['topic']}:{rs[0]['input_partition']}:{rs[0]['input_offset']}",
                            outcome=t.outcome, commit_called_ms=t.commit_called_ms))
    return out


def _committed_reader(x: Facts):
    return x.history.transactions.readers[COMMITTED_READER]


def _result(found: list[dict]) -> CheckResult:
    return CheckResult(found, sum(a["count"] for a in found), {})


@check("aborted_read", needs=("verified",), unit="record of an aborted transaction read read_committed (G1a)",
       color="#e377c2")
def aborted_read(x: Facts):
    reader = _committed_reader(x)
    return _result(_by_writer(x, "aborted_read", reader.rows, lambda r, t: t.outcome == ABORTED))


@check("precommitted_read", needs=("verified",),
       unit="record read read_committed before its transaction was asked to commit", color="#f7b6d2")
def precommitted_read(x: Facts):
    reader = _committed_reader(x)

    def early(r, t):
        if t.commit_called_ms is None:
            return t.outcome != ABORTED
        return r["read_at_ms"] + ROUNDING_MS < t.commit_called_ms
    return _result(_by_writer(x, "precommitted_read", reader.rows, early))


@check("torn_transaction", needs=("verified",),
       unit="committed transaction read read_committed in part (counted in records unread)", color="#9467bd")
def torn_transaction(x: Facts):
    reader = _committed_reader(x)
    read = reader.offsets_read
    found = []
    for t in x.history.transactions.transactions:
        if t.outcome != COMMITTED or not t.acked:
            continue
        seen = [(p, o) for p, o, _ in t.acked if (p, o) in read]
        passed = [(p, o, i) for p, o, i in t.acked if (p, o) not in read and reader.positions.get(p, 0) > o]
        if seen and passed:
            by_partition = defaultdict(list)
            for p, o, _ in passed:
                by_partition[p].append(o)
            for p, offsets in sorted(by_partition.items()):
                found.append(_anomaly(x, "torn_transaction", p, offsets, t, [t.ended_ms or t.begun_ms or 0],
                                      read_of_transaction=len(seen), written=len(t.acked), input=passed[0][2]))
    return _result(found)


@check("inconsistent_offsets", needs=("verified",),
       unit="output offset read holding another record than its writer acknowledged there, or another reader read",
       color="#8c564b")
def inconsistent_offsets(x: Facts):
    """Jepsen's inconsistent offsets: one offset of the output log holding two records. A read is held against the
    writer's acknowledgement of that offset (its input record), else against the first reader that read it."""
    files, found = x.history.transactions, []
    acked = {(p, o): (source, t) for t in files.transactions for p, o, source in t.acked}
    first: dict[tuple[int, int], str] = {}
    for isolation, reader in sorted(files.readers.items()):
        for r in reader.rows:
            key = (r["partition"], r["offset"])
            read = f"{r['topic']}:{r['input_partition']}:{r['input_offset']}"
            expected, t = acked.get(key, (first.get(key), None))
            if expected is not None and read != expected:
                found.append(_anomaly(x, "inconsistent_offsets", key[0], [key[1]], t, [r["read_at_ms"]], reader=isolation,
                                      read=read, expected=expected, against="ack" if key in acked else "another reader"))
            first.setdefault(key, read)
    return _result(found)


@check("nonmonotonic_poll", needs=("verified",), unit="read at or below an offset the reader had read before",
       color="#bcbd22")
def nonmonotonic_poll(x: Facts):
    found = []
    for isolation, reader in sorted(x.history.transactions.readers.items()):
        last: dict[int, dict] = {}
        for r in reader.rows:
            before = last.get(r["partition"])
            if before is not None and r["offset"] <= before["offset"]:
                found.append(_anomaly(x, "nonmonotonic_poll", r["partition"], [r["offset"]], None,
                                      [before["read_at_ms"], r["read_at_ms"]], reader=isolation,
                                      after_offset=before["offset"]))
            if before is None or r["offset"] > before["offset"]:
                last[r["partition"]] = r
    return _result(found)


@check("poll_skip", needs=("verified",), unit="record a reader passed over without reading", color="#17becf")
def poll_skip(x: Facts):
    files, found = x.history.transactions, []
    for isolation, reader in sorted(files.readers.items()):
        read = reader.offsets_read
        should = [(p, o, t) for t in files.transactions for p, o, _ in t.acked
                  if (isolation != COMMITTED_READER or t.outcome == COMMITTED)
                  and (p, o) not in read and reader.positions.get(p, 0) > o]
        by_writer = defaultdict(list)
        for p, o, t in should:
            by_writer[(t.name, p)].append((o, t))
        for (_, p), items in sorted(by_writer.items()):
            t = items[0][1]
            found.append(_anomaly(x, "poll_skip", p, [o for o, _ in items], t, [t.ended_ms or t.begun_ms or 0],
                                  reader=isolation, outcome=t.outcome))
    return _result(found)


def hanging_transactions(x: Facts) -> list[dict]:
    """The stalls of the read_committed reader (see the module); none where it reached every partition's end."""
    files = x.history.transactions
    reader = files.readers.get(COMMITTED_READER) if files is not None else None
    if reader is None or reader.reached_end:
        return []
    written, out = files.by_output, []
    for p, end in sorted(reader.ends.items()):
        at = reader.positions.get(p, 0)
        if at >= end:
            continue
        t, held = written.get((p, at)), files.held.get((p, at))
        since = t.acked_at.get((p, at)) if t is not None else held.first_seen_ms if held is not None else None
        until = reader.finished_at_ms or since or 0
        out.append(_anomaly(x, "stall", p, [at], t, [since or until, until], waiting_for="stable_offset", cause=_cause(t, held, until),
                            producer_id=held.producer_id if held is not None else _producer_id(x, t, since),
                            producer_epoch=None if held is None else held.producer_epoch,
                            held_open_until_ms=None if held is None else held.last_seen_ms,
                            age_ms=None if since is None else until - since,
                            records_held=end - at, outcome=None if t is None else t.outcome,
                            reason=f"read_committed stopped at offset {at} of {end} once the members had stopped: "
                                   f"the last stable offset held by "
                                   f"{'transaction ' + t.name if t else 'a transaction no member logged'}"))
    return out


def _cause(t: Transaction | None, held: Held | None, gave_up_ms: int) -> str:
    """hanging_transaction: the partition holds open a transaction its writer aborted, or committed more than
    MARKER_GRACE_MS before the reader gave up (a write that reached the partition after its transaction was over, say
    behind a late EndTxn, with the brokers' partition verification off), or one no member logged that its leader
    held; else open_transaction (a commit whose marker may not have come yet, or a writer's outcome unknown: its
    process gone, and the coordinator times it out)."""
    if t is None:
        return "hanging_transaction" if held is not None else "open_transaction"
    over = t.outcome == ABORTED or (t.outcome == COMMITTED and gave_up_ms - (t.ended_ms or gave_up_ms) > MARKER_GRACE_MS)
    return "hanging_transaction" if over else "open_transaction"


def _producer_id(x: Facts, t: Transaction | None, at_ms: int | None) -> int | None:
    """The writer's producer id where the partition's leader was not seen holding the transaction open
    (transaction-states.jsonl): as the request-aware proxy saw its producer's last transactional request before
    ``at_ms`` (an rpc fault's hits); None where no rule saw it either."""
    if t is None:
        return None
    hits = [h for f in x.history.faults for h in f.hits
            if h.get("transactional_id") == t.transactional_id and h.get("producer_id", -1) >= 0
            and (at_ms is None or h.get("at_ms", 0) <= at_ms)]
    return max(hits, key=lambda h: h.get("at_ms", 0))["producer_id"] if hits else None
