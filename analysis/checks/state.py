"""The exact state check (a stateful run: state/): `state_duplicate`, `state_lost` and `state_duplicate_within_budget`.

Expected per key: every distinct offset of the key consumed at least once (the key read from the produced record;
an acked record nobody consumed is already `lost` and not counted again, a consumed `info` record counts). Each
final value (state/final.jsonl) is walked back through the state rows: (key, offset = last_offset, count), then
(key, prev_offset, count - 1), ... to the zero value. An offset applied twice on that chain is a `state_duplicate`
(`state_duplicate_within_budget` when the duplicate check judges its re-delivery within the budget: the revoked
owner's uncommitted tail); an expected offset missing from it is `state_lost`.
"""
from __future__ import annotations

from bisect import bisect_right
from collections import Counter, defaultdict

from analysis.checks import state_suspects
from analysis.checks.framework import CheckResult, Facts, check
from analysis.intervals import merged_ranges
from analysis.rundir.history import OPEN

NEEDS = ("state",)
READS = ("groups", "rows")


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
    chains = {(topic, f["partition"], f["key"]): _chain(f, by_step, seq_at)
              for f in files.final.filter(suspects.final).to_pylist()}
    within = _within_budget_offsets(x)
    found = {"state_duplicate": [], "state_lost": [], "state_duplicate_within_budget": []}
    for key in sorted(chains.keys() | expected.keys(), key=str):
        chain = chains.get(key, [])
        last = chain[0] if chain else None
        zombie = last is not None and _after_ownership(x, last)
        for offset, n in sorted(Counter(r["offset"] for r in chain).items()):
            if n > 1:
                rows = [r for r in chain if r["offset"] == offset]
                kind = "state_duplicate_within_budget" if (key[0], key[1], offset) in within else "state_duplicate"
                found[kind].append(_anomaly(kind, key, offset, rows, zombie, applied=n))
        for offset in sorted(expected.get(key, set()) - {r["offset"] for r in chain}):
            # from its applications (if any) to the first later change that built without it (else the last)
            later = [r for r in chain if r["offset"] > offset]
            skipped_by = min(later, key=lambda r: r["offset"]) if later else last
            off_chain = applied.get((key[1], key[2], offset), [])
            rows = off_chain + ([skipped_by] if skipped_by else [])
            found["state_lost"].append(_anomaly("state_lost", key, offset, rows, zombie, applied=len(off_chain)))
    found["info"] = {"keys_expected": len(keyed.drop_duplicates(["partition", "key"])), "keys_final": files.final.num_rows,
                     "keys_walked": suspects.keys, "state_rows": files.rows.num_rows, "members": files.members}
    return found


def _chain(final: dict, by_step: dict, seq_at: dict) -> list[dict]:
    """The state rows that built a final value, newest first: each step is the row applying (offset, count, sum),
    and the one before it applied (prev_offset, count - 1, sum less this record's seq). Where several members applied
    the same change (a zombie's after the new owner's), the final value's own is the one its changelog record names
    (member and ts_ms), and a change it built on is the latest applied before it."""
    chain, partition, key = [], final["partition"], final["key"]
    offset, count, total = final["last_offset"], final["count"], final["sum"]
    writer, before = (final.get("member"), final.get("ts_ms")), None
    while count > 0:
        rows = by_step.get((partition, key, offset, count, total))
        if not rows or (partition, offset) not in seq_at:
            raise BrokenChain(f"state/final.jsonl: {key} of partition {partition} (count {final['count']}) has no "
                              f"state row applying offset {offset} as its change number {count}")
        row = _pick(rows, writer if not chain else None, before)
        chain.append(row)
        offset, count, total = row["prev_offset"], count - 1, total - seq_at[(partition, offset)]
        before = row["ts_ms"]
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


def _after_ownership(x: Facts, row: dict) -> bool:
    """Whether a state row was written while its member owned no period of the partition (a zombie write)."""
    periods = x.ctx.owners.get((row["topic"], row["partition"]), [])
    return not any(p.member == row["member"] and p.start <= row["ts_ms"] <= (OPEN if p.end is None else p.end)
                   for p in periods)


def _anomaly(kind: str, key: tuple, offset: int, rows: list[dict], zombie: bool, applied: int) -> dict:
    topic, partition, name = key
    times = [r["ts_ms"] for r in rows] or [0]
    return {"type": kind, "topic": topic, "partition": partition, "offsets": [offset, offset], "count": 1,
            "members": sorted({r["member"] for r in rows}),
            "generations": sorted({r["generation"] for r in rows if r.get("generation") is not None}),
            "time_ms": [min(times), max(times)], "key": name, "input_offset": offset, "applied": applied,
            "zombie_write": zombie}


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
