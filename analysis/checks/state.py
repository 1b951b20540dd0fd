"""The exact state check (a stateful run: state/): `state_duplicate`, `state_lost` and `state_duplicate_within_budget`.

Expected per key: every distinct offset of the key consumed at least once (the key read from the produced record;
an acked record nobody consumed is already `lost` and not counted again, a consumed `info` record counts). Each
final value (state/final.jsonl) is walked back through the state rows: (key, offset = last_offset, count), then
(key, prev_offset, count - 1), ... to the zero value. An offset applied twice on that chain is a `state_duplicate`
(`state_duplicate_within_budget` when the duplicate check judges its re-delivery within the budget: the revoked
owner's uncommitted tail); an expected offset missing from it is `state_lost`.

A hidden change: a Kafka Streams program under at_least_once (output-topic mode: its state rows are its output
records) writes a change's changelog record and its output record in one producer but not atomically, so a crash can
land the first and lose the second. The chain then has a step no row applies; the walk crosses it when exactly one
row of the key applied the change before it (count - 1, sum less the record's seq) and counts it in the info
(`hidden_changes`). Anywhere else (our own members flush a row before the changelog; exactly_once writes both in one
transaction) a missing step is a BrokenChain.
"""
from __future__ import annotations

from bisect import bisect_right
from collections import Counter, defaultdict

from analysis.checks import state_suspects
from analysis.checks.context import Delivery, classify_budget
from analysis.checks.framework import CheckResult, Facts, check
from analysis.intervals import merged_ranges
from analysis.rundir.history import OPEN, Ownership

NEEDS = ("state",)
READS = ("groups", "rows")


HIDING_GUARANTEES = ("at_least_once",)  # Streams guarantees under which a change's output record can be lost alone


class BrokenChain(AssertionError):
    """A final value the state rows cannot explain: the member's contract was broken (rows are flushed before the
    changelog is written), not a finding about Kafka."""


def _judge(x: Facts) -> dict:
    return x.once("state", lambda: _walk(x))


def _walk(x: Facts) -> dict:
    files = x.history.state
    keyed = x.query("consumed_keys", None).to_pandas()  # topic, partition, offset, seq, key: a row a delivery
    keyed = keyed[keyed["key"].notna()].drop_duplicates(["partition", "offset"])  # one topic: checked below
    topics = set(files.rows.column("topic").unique().to_pylist()) | set(keyed["topic"].unique())
    if len(topics) > 1:
        raise BrokenChain(f"a stateful run has one input topic; state rows and records name {sorted(topics)}")
    topic = next(iter(topics), None)
    suspects = state_suspects.find(files.rows, files.final, keyed)  # most keys are whole: only the others are walked
    rows = files.rows.filter(suspects.rows).to_pylist()
    looked_at = keyed[suspects.keyed]
    expected: dict[tuple, set] = defaultdict(set)  # (topic, partition, key) -> offsets consumed
    for partition, key, offset in zip(*(looked_at[c].tolist() for c in ("partition", "key", "offset"))):
        expected[(topic, partition, key)].add(offset)
    seq_at = {(r["partition"], r["offset"]): int(seq) for r, seq, seen in
              zip(rows, suspects.seq[suspects.rows], suspects.seen[suspects.rows]) if seen}
    by_step: dict[tuple, list[dict]] = defaultdict(list)  # (partition, key, offset, count, sum) -> rows, in time
    applied: dict[tuple, list[dict]] = defaultdict(list)  # (partition, key, offset) -> every state row applying it
    for r in sorted(rows, key=lambda r: r["ts_ms"]):
        by_step[(r["partition"], r["key"], r["offset"], r["count"], r["sum"])].append(r)
        applied[(r["partition"], r["key"], r["offset"])].append(r)
    hidden = _HiddenChanges(rows, looked_at, topic) if _changes_can_hide(x) else None
    chains = {(topic, f["partition"], f["key"]): _chain(f, by_step, seq_at, hidden)
              for f in files.final.filter(suspects.final).to_pylist()}
    within = _within_budget_offsets(x)
    found = {"state_duplicate": [], "state_lost": [], "state_duplicate_within_budget": []}
    for key in sorted(chains.keys() | expected.keys(), key=str):
        chain = chains.get(key, [])
        last = chain[0] if chain else None
        zombie = last is not None and last["member"] is not None and _after_ownership(x, last)
        for offset, n in sorted(Counter(r["offset"] for r in chain).items()):
            if n > 1:
                rows = [r for r in chain if r["offset"] == offset]
                kind = ("state_duplicate_within_budget"
                        if (key[0], key[1], offset) in within or _hidden_within_budget(x, rows) else "state_duplicate")
                found[kind].append(_anomaly(kind, key, offset, rows, zombie, applied=n))
        for offset in sorted(expected.get(key, set()) - {r["offset"] for r in chain}):
            # from its applications (if any) to the first later change that built without it (else the last)
            later = [r for r in chain if r["offset"] > offset]
            skipped_by = min(later, key=lambda r: r["offset"]) if later else last
            off_chain = applied.get((key[1], key[2], offset), [])
            rows = off_chain + ([skipped_by] if skipped_by else [])
            found["state_lost"].append(_anomaly("state_lost", key, offset, rows, zombie, applied=len(off_chain)))
    found["info"] = {"keys_expected": len(keyed.drop_duplicates(["partition", "key"])), "keys_final": files.final.num_rows,
                     "keys_walked": suspects.keys, "state_rows": files.rows.num_rows, "members": files.members,
                     "hidden_changes": sum(1 for chain in chains.values() for r in chain if r.get("hidden"))}
    return found


def _changes_can_hide(x: Facts) -> bool:
    """Whether a change can reach the changelog without its state row: output-topic mode and a member whose Streams
    guarantee does not write both in one transaction (its `started` event names the guarantee)."""
    h = x.history
    return h.output is not None and any(e.kind == "started" and e.facts.get("guarantee") in HIDING_GUARANTEES
                                        for e in h.events)


class _HiddenChanges:
    """The links a walk may cross where no row applies a change: by (partition, key, count, sum), the rows of each
    key's changes; by (partition, offset), each consumed record's seq."""

    def __init__(self, rows: list[dict], keyed, topic: str | None) -> None:
        self.topic = topic
        self.by_value: dict[tuple, list[dict]] = defaultdict(list)
        for r in rows:
            self.by_value[(r["partition"], r["key"], r["count"], r["sum"])].append(r)
        self.seq = {(p, o): int(s) for p, o, s in zip(*(keyed[c].tolist() for c in ("partition", "offset", "seq")))}

    def link(self, partition: int, key: str, offset: int, count: int, total: int, writer: tuple) -> dict | None:
        """The hidden change applying `offset` as change number `count` (value `total`), built on the one change
        before it, or None when nothing (or more than one candidate) explains it. Its member and time are the final
        value's when it is the last change (the changelog record names them), else the change it built on's."""
        seq = self.seq.get((partition, offset))
        if seq is None:
            return None
        if count == 1:
            before, prev_offset = None, -1
            if total != seq:
                return None
        else:
            candidates = {r["offset"] for r in self.by_value.get((partition, key, count - 1, total - seq), [])}
            if len(candidates) != 1:
                return None
            prev_offset = candidates.pop()
            before = self.by_value[(partition, key, count - 1, total - seq)][-1]
        member, ts = writer if writer[0] is not None else ((before["member"], before["ts_ms"]) if before else (None, None))
        return {"topic": self.topic, "partition": partition, "key": key, "offset": offset, "prev_offset": prev_offset,
                "count": count, "sum": total, "member": member, "ts_ms": ts, "generation": None, "hidden": True,
                "seq": seq}


def _chain(final: dict, by_step: dict, seq_at: dict, hidden: _HiddenChanges | None = None) -> list[dict]:
    """The state rows that built a final value, newest first: each step is the row applying (offset, count, sum),
    and the one before it applied (prev_offset, count - 1, sum less this record's seq). Where several members applied
    the same change (a zombie's after the new owner's), the final value's own is the one its changelog record names
    (member and ts_ms), and a change it built on is the latest applied before it. With `hidden`, a step no row applies
    may be a hidden change (see the module's doc): a row marked `hidden`."""
    chain, partition, key = [], final["partition"], final["key"]
    offset, count, total = final["last_offset"], final["count"], final["sum"]
    writer, before = (final.get("member"), final.get("ts_ms")), None
    while count > 0:
        rows = by_step.get((partition, key, offset, count, total))
        if rows and (partition, offset) in seq_at:
            row = _pick(rows, writer if not chain else None, before)
            seq = seq_at[(partition, offset)]
        elif hidden is not None and (row := hidden.link(partition, key, offset, count, total,
                                                        writer if not chain else (None, None))) is not None:
            seq = row["seq"]
        else:
            raise BrokenChain(f"state/final.jsonl: {key} of partition {partition} (count {final['count']}) has no "
                              f"state row applying offset {offset} as its change number {count}")
        chain.append(row)
        offset, count, total = row["prev_offset"], count - 1, total - seq
        before = row["ts_ms"] if row["ts_ms"] is not None else before
    if offset != -1 or total != 0:
        raise BrokenChain(f"state/final.jsonl: {key} of partition {partition} does not walk back to its zero value")
    return chain


def _pick(rows: list[dict], writer: tuple | None, before: int | None) -> dict:
    """Of the rows applying one change (in time order): the writer's own (its member and ts_ms), else the latest at
    or before ``before`` (the change built on it), else the latest."""
    if writer is not None and writer[0] is not None:
        own = [r for r in rows if r["member"] == writer[0] and (writer[1] is None or r["ts_ms"] == writer[1])]
        if own:
            return own[-1]
    earlier = [r for r in rows if before is None or r["ts_ms"] <= before]
    return (earlier or rows)[-1]


class _WithinBudget:
    """The offsets whose re-delivery the duplicate check judged within the budget, kept as merged ranges a
    partition (a long uncommitted tail is one range, not one entry an offset)."""

    def __init__(self, anomalies):
        self.ranges: dict[tuple, tuple[list, list]] = {}
        for topic, partition, lo, hi in merged_ranges((a["topic"], a["partition"], *a["offsets"])
                                                      for a in anomalies if a.get("budget") == "within"):
            los, his = self.ranges.setdefault((topic, partition), ([], []))
            los.append(lo)
            his.append(hi)

    def __contains__(self, cell: tuple) -> bool:
        topic, partition, offset = cell
        los, his = self.ranges.get((topic, partition), ((), ()))
        i = bisect_right(los, offset) - 1
        return i >= 0 and offset <= his[i]


def _within_budget_offsets(x: Facts) -> _WithinBudget:
    return _WithinBudget(x.duplicates().anomalies)


def _hidden_within_budget(x: Facts, rows: list[dict]) -> bool:
    """A change applied twice where the first application is hidden (its delivery left no output record, so the
    duplicate check never saw it): the budget rule (context.classify_budget) for that delivery, its member's in the
    ownership it had then, and the next application's."""
    rows = sorted(rows, key=lambda r: r["ts_ms"] if r["ts_ms"] is not None else -1)
    first = next((i for i, r in enumerate(rows) if r.get("hidden") and r["member"] is not None), None)
    if first is None or first + 1 >= len(rows):
        return False
    hidden_row, again = rows[first], rows[first + 1]
    ownership = x.once("state_ownership", lambda: Ownership(x.history))
    prev, cur = (Delivery(r["member"], _period(ownership, r), r["ts_ms"], r["ts_ms"], ()) for r in (hidden_row, again))
    return classify_budget(x.ctx, prev, cur, again["topic"], again["partition"], again["offset"], {}).budget == "within"


def _period(ownership: Ownership, row: dict) -> int:
    return ownership.period_of(row["member"], row["topic"], row["partition"], bisect_right(ownership.bounds, row["ts_ms"]))


def _after_ownership(x: Facts, row: dict) -> bool:
    """Whether a state row was written while its member owned no period of the partition (a zombie write)."""
    periods = x.ctx.owners.get((row["topic"], row["partition"]), [])
    return not any(p.member == row["member"] and p.start <= row["ts_ms"] <= (OPEN if p.end is None else p.end)
                   for p in periods)


def _anomaly(kind: str, key: tuple, offset: int, rows: list[dict], zombie: bool, applied: int) -> dict:
    topic, partition, name = key
    times = [r["ts_ms"] for r in rows if r["ts_ms"] is not None] or [0]
    return {"type": kind, "topic": topic, "partition": partition, "offsets": [offset, offset], "count": 1,
            "members": sorted({r["member"] for r in rows if r["member"] is not None}),
            "generations": sorted({r["generation"] for r in rows if r.get("generation") is not None}),
            "time_ms": [min(times), max(times)], "key": name, "input_offset": offset, "applied": applied,
            "zombie_write": zombie, "hidden_changes": sum(1 for r in rows if r.get("hidden"))}


def _result(x: Facts, kind: str) -> CheckResult:
    found = _judge(x)
    return CheckResult(found[kind], len(found[kind]), dict(found["info"]) if kind == "state_lost" else {})


@check("state_duplicate", needs=NEEDS, reads=READS, asks=("consumed_keys",),
       unit="key/input offset applied twice to a key's final state", color="#e377c2")
def state_duplicate(x: Facts):
    return _result(x, "state_duplicate")


@check("state_duplicate_within_budget", needs=NEEDS, reads=READS, asks=("consumed_keys",), invalidates=False,
       unit="key/input offset applied twice, re-delivered within the budget", color="#f7b6d2")
def state_duplicate_within_budget(x: Facts):
    return _result(x, "state_duplicate_within_budget")


@check("state_lost", needs=NEEDS, reads=READS, asks=("consumed_keys",),
       unit="key/input offset consumed and missing from its key's final state", color="#7f7f7f")
def state_lost(x: Facts):
    return _result(x, "state_lost")
