"""The `commit_ahead` check: a commit past an acked record the member never consumed in its ownership (librdkafka#4844),
with where each ownership started to fetch."""
from __future__ import annotations

from collections import defaultdict
from typing import NamedTuple
import bisect

from analysis.checks.context import ambiguity, loss_windows
from analysis.checks.framework import CheckResult, Facts, check
from analysis.engine.kernels import bits_of as bits
from analysis.engine.spark_plan import CommitAsked, OwnershipAsked
from analysis.rundir.history import OPEN, Commit, Period, periods_by_key


def _known(generation) -> bool:
    return generation is not None and generation >= 0


def ownership_of(by_key: dict, c: Commit) -> Period | None:
    """The ownership a commit belongs to: the member's last ownership of the partition begun by the time it logged
    the commit (a commit on revocation is logged after the ``revoked`` event), passing over one of a later
    generation than the commit's own (a revocation's commit logged after the partition was assigned again)."""
    return next((p for p in reversed(by_key.get((c.member, c.topic, c.partition), []))
                 if p.start <= c.ts and not (_known(c.generation) and _known(p.generation) and p.generation > c.generation)),
                None)


class CommitSpan(NamedTuple):
    """A successful ``commit`` in its ``ownership``, vouching for offsets [lo, commit.offset) in every reading of
    the commits that may have been the partition's committed offset when the ownership began, and for
    [lo_sure, commit.offset) in the reading that starts it lowest (lo_sure < lo: the start is ambiguous)."""
    commit: Commit
    ownership: Period
    lo: int
    lo_sure: int


def commit_spans(x: Facts) -> list[CommitSpan]:
    """Every successful commit that vouches for some offsets: from the member's previous commit in that ownership,
    or from where it began to fetch (:class:`StartPositions`, looked up by the member's first delivery in the
    ownership, so that a previous owner's commit answered late still counts)."""
    h, by_key = x.history, periods_by_key(x.history.periods)
    first = {(r["member"], r["topic"], r["partition"], r["period"]): r["tmin"] for r in x.got.get("periods", [])}
    starts = x.ctx.start_positions
    by_period = defaultdict(list)
    for c in sorted((c for c in h.commits if c.ok), key=lambda c: (c.ts, c.line)):
        p = ownership_of(by_key, c)
        if p is not None:
            by_period[p.id].append((c, p))
    out = []
    for cs in by_period.values():
        own, done = {id(c) for c, _ in cs}, -1
        for c, p in cs:
            until = min(c.ts, first.get((c.member, c.topic, c.partition, p.id), OPEN))
            lowest, highest = starts.at((c.topic, c.partition), until, own)
            lo, lo_sure = max(highest, done), max(lowest, done)
            if c.offset > lo_sure:
                out.append(CommitSpan(c, p, lo, lo_sure))
            done = max(done, c.offset)
    return out


def _cleared(x: Facts, span: CommitSpan, lo: int) -> bool:
    """The groups prove that the member consumed every known record the commit vouches for from ``lo`` in its
    ownership: the range lies inside the offsets it consumed there, and no known record inside those was skipped."""
    c, p = span.commit, span.ownership
    r = x.once("consumed_ranges", lambda: {(r["member"], r["topic"], r["partition"], r["period"]): r
                                            for r in x.got.get("periods", [])}).get((c.member, c.topic, c.partition, p.id))
    if r is None or lo < r["omin"] or c.offset - 1 > r["omax"]:
        return False
    holes = x.once("holes", lambda: _holes(x.got.get("skip", []))).get((c.member, c.topic, c.partition, p.id), [])
    i = bisect.bisect_left(holes, lo)
    return i == len(holes) or holes[i] >= c.offset


def _holes(rows: list[dict]) -> dict[tuple, list[int]]:
    out = defaultdict(list)
    for r in rows:
        out[(r["member"], r["topic"], r["partition"], r["period"])] += [r["b"] * 64 + j for j in bits(r["bits"])]
    return {k: sorted(v) for k, v in out.items()}


def _fetching_until(by_key: dict, p: Period) -> int:
    """The end of an ownership by the member's own log: its logged end, or its next ownership of the partition."""
    later = [q.start for q in by_key.get((p.member, p.topic, p.partition), []) if q.start > p.start]
    return min([p.logged_end] + [t - 1 for t in later])


def ownerships_asked(spans: list[CommitSpan], by_key: dict) -> list[OwnershipAsked]:
    """One question per ownership, however many commits it has. A commit's id is its place in ``spans`` for the
    range every reading gives it; its place plus len(spans) for the wider range of the reading where no commit in
    flight took effect, asked only when that range is wider."""
    commits: dict[int, list[CommitAsked]] = {}
    ownerships: dict[int, Period] = {}
    for i, (c, p, lo, lo_sure) in enumerate(spans):
        ownerships.setdefault(p.id, p)
        if c.offset > lo:
            commits.setdefault(p.id, []).append(CommitAsked(i, lo, c.offset, c.ts))
        if lo_sure < lo:
            commits.setdefault(p.id, []).append(CommitAsked(i + len(spans), lo_sure, c.offset, c.ts))
    return [OwnershipAsked(p.id, p.member, p.topic, p.partition, p.start, _fetching_until(by_key, p), commits[p.id])
            for p in ownerships.values()]


def commit_ahead_asks(x: Facts) -> tuple[list[CommitSpan], list[OwnershipAsked]]:
    """The commits the groups cannot clear, and the question that settles them (one term an ownership). Known from
    the history and the groups alone, before any record is read again: the analysis asks it beside the log pass."""
    def asks():
        spans = [s for s in commit_spans(x) if not _cleared(x, s, s.lo_sure)]
        return spans, ownerships_asked(spans, periods_by_key(x.history.periods))
    return x.once("commit_ahead_asks", asks)


@check("commit_ahead", reads=("periods", "skip"), asks=("commits_ahead",),
       needs=("events", "commits"), unit="successful commits past an acked record the member never consumed in "
       "that ownership", color="#ad494a")
def commit_ahead(x: Facts):
    """A member committed offset C on a partition while an ok-acked record o with lo <= o < C was never consumed by
    it in that ownership; lo is its previous commit in the ownership, or where it began to fetch (the partition's
    committed offset then, 0 when none). Only acked records count: offsets that are no record (transaction markers,
    aborted or compacted records) or whose write is not known to have succeeded are not skipped records.
    Invalidating: a commit is the member's promise that every record below it was processed; under at-least-once,
    committing past an unprocessed record is how one gets lost once the partition moves (librdkafka#4844), even when
    a rebalance or reset later delivers it to someone. Records in an at-most-once member's loss budget (committed,
    then killed before it logged them: ``lost_within_budget``) are not reported, nor a transactional member's records
    it wrote behind a transaction its output partition held open (the read-back cannot see them: the first and last
    skipped both held, TransactionFiles.held_inputs). The groups clear almost every
    commit; the rest are settled by one Spark query keyed by ownership (``spark_plan.commits_ahead``). One row per commit: the committed
    offset, the last offset the member had consumed in [lo, C) by then (null: none), the first acked offset it
    skipped, and how many acked records it skipped (``skipped``)."""
    spans, asked = commit_ahead_asks(x)
    found = {r["id"]: r for r in (x.query("commits_ahead", asked) if asked else [])}
    budgets = loss_windows(x.ctx)

    held = x.history.held_inputs

    def ahead(c: Commit, r: dict | None) -> bool:
        behind = held.get((c.topic, c.partition), set())
        return r is not None and not (r["first"] in behind and r["last"] in behind) and not any(
            w.member == c.member and w.lo <= r["first"] and r["last"] <= w.hi for w in budgets.get((c.topic, c.partition), []))
    out, ambiguous = [], []
    for i, (c, p, lo, lo_sure) in enumerate(spans):
        r = found.get(i)
        if not ahead(c, r):
            if ahead(c, found.get(i + len(spans))):  # only if no commit in flight when the ownership began took effect
                ambiguous.append(f"{c.member} {c.topic}:{c.partition} committed {c.offset}: from {lo_sure} or {lo}")
            continue
        gens = [c.generation] if _known(c.generation) else list(x.ctx.period_gens(p.id))
        last = r["last_consumed"]
        out.append({"type": "commit_ahead", "topic": c.topic, "partition": c.partition, "offsets": [r["first"], r["last"]],
                    "count": 1, "members": [c.member], "generations": gens, "time_ms": [c.ts, c.ts],
                    "committed_offset": c.offset, "from_offset": lo, "last_consumed": last, "first_skipped": r["first"],
                    "skipped": r["n"], "period": p.id,
                    "reason": f"{c.member} committed {c.offset} having consumed "
                              f"{'nothing' if last is None else f'up to {last}'} since {lo}: {r['n']} acked record(s) "
                              f"from {r['first']} never consumed in that ownership"})
    return CheckResult(out, len(out), {"commits": sum(1 for c in x.history.commits if c.ok), "queried": len(spans),
                                       "ownerships_queried": len(asked), **ambiguity(x.history, ambiguous)})
