"""The loss checks: `lost` (outside any budget), `lost_within_budget` (a crashed at-most-once member's), `unseen`
(beyond every position read) and `lost_unplaced` (acks without an offset)."""
from __future__ import annotations

from collections import defaultdict
from typing import NamedTuple

from analysis.checks.context import LossWindow, merged_by_signature, loss_windows
from analysis.checks.framework import CheckResult, Facts, check
from analysis.engine.kernels import UNPLACED
from analysis.engine.kernels import bits_of as bits
from analysis.engine.spark_plan import side_totals


class LostOffset(NamedTuple):
    """An acked record nobody consumed: its ``offset``, the ``block`` row (check_groups' "dirty") it is in, and the
    loss window that explains it (None: none does)."""
    offset: int
    block: dict
    window: LossWindow | str | None  # its loss budget; UNSEEN: nothing was read that far; HELD: see HELD; None: lost


def read_frontiers(x: Facts) -> dict[tuple[str, int], int]:
    """(topic, partition) -> the highest offset some member of the group read past: the highest it consumed there,
    or the group's last successful commit there less one (its final commits in output-topic mode, output.json). An acked record nobody consumed is ``lost`` at or below
    it (a read went past it without it) and ``unseen`` above it (nothing has been read that far yet: the record is
    still in Kafka), as Jepsen's Kafka checker tells them apart."""
    def frontiers():
        out: dict[tuple[str, int], int] = {}
        for r in x.got.get("periods", []):
            key = (r["topic"], r["partition"])
            out[key] = max(out.get(key, -1), r["omax"])
        for c in x.history.commits:
            if c.ok:
                key = (c.topic, c.partition)
                out[key] = max(out.get(key, -1), c.offset - 1)
        for key, offset in ((x.history.output or {}).get("commits") or {}).items():  # output-topic mode's final ones
            out[key] = max(out.get(key, -1), offset - 1)
        return out
    return x.once("read_frontiers", frontiers)


def losses(x: Facts):
    """(anomalies, counts) of ``lost``, ``lost_within_budget`` and ``unseen``: every acked record nobody consumed,
    split by the read frontier (:func:`read_frontiers`) and the loss budget (:func:`loss_windows`)."""
    def split():
        windows = loss_windows(x.ctx) if x.history.has_events else {}
        frontier = read_frontiers(x)
        held = x.history.held_inputs
        out = {"lost": [], "lost_within_budget": [], "unseen": []}
        counts = {"lost": 0, "lost_within_budget": 0, "unseen": 0}
        by_tp = defaultdict(list)
        for r in x.got.get("dirty", []):
            if r["lostmask"]:
                by_tp[(r["topic"], r["partition"])].append(r)
        for (topic, partition), rs in sorted(by_tp.items()):
            cells = sorted((r["b"] * 64 + j, r) for r in rs for j in bits(r["lostmask"]))
            ws, top = windows.get((topic, partition), []), frontier.get((topic, partition), -1)
            behind = held.get((topic, partition), set())
            lost_offsets = [LostOffset(o, r, HELD if o in behind else UNSEEN if o > top
                                       else next((w for w in ws if w.lo <= o <= w.hi), None)) for o, r in cells]
            for run in merged_by_signature(lost_offsets, lambda it: it.window, lambda it: (it.offset, it.offset)):
                kind, a = _loss_anomaly(x, topic, partition, run)
                if run[0].window == HELD:
                    a.update(read_up_to=None if top < 0 else top, held_open=True,
                             reason="acked and written to the output topic behind a transaction an output partition "
                                    "still held open when the read_committed reader gave up (the stall on the stable "
                                    "offset): not readable read_committed, not known lost")
                elif kind == "unseen":
                    a.update(read_up_to=None if top < 0 else top,
                             reason=f"acked, never consumed, and beyond every member's last position and the group's "
                                    f"last commit ({'nothing read' if top < 0 else f'read up to {top}'}): still in Kafka")
                out[kind].append(a)
                counts[kind] += a["count"]
        return out, counts
    return x.once("losses", split)


UNSEEN = "unseen"  # a LostOffset's window when nothing has been read that far
HELD = "held"  # ... when its output lies behind a transaction left open (TransactionFiles.held_inputs): unseen too


def _loss_anomaly(x: Facts, topic: str, partition: int, run: list[LostOffset]) -> tuple[str, dict]:
    window, offsets = run[0].window, [it.offset for it in run]
    t0 = min(it.block["ptmin"] for it in run)
    t1 = max(max(it.block["ptmax"], it.block["ctmax"] or it.block["ptmax"]) for it in run)
    owners = x.ctx.owners_during(topic, partition, t0, t1)
    kind = "lost" if window is None else UNSEEN if window in (UNSEEN, HELD) else "lost_within_budget"
    a = {"type": kind, "topic": topic, "partition": partition, "offsets": [offsets[0], offsets[-1]],
         "count": len(offsets), "members": sorted({p.member for p in owners}),
         "generations": sorted({p.generation for p in owners if p.generation is not None}), "time_ms": [t0, t1]}
    if kind == "lost_within_budget":
        a.update(members=[window.member], time_ms=[t0, max(t1, window.crashed_at)],
                 reason=f"committed by {window.member} (commit: {window.mode}) and never logged: "
                        f"it was killed at {window.crashed_at}")
    return kind, a


@check("lost", reads=("periods", "dirty"),
       unit="acked (ok) records never consumed that a member read or committed past, outside any loss budget",
       color="#d62728")
def lost(x: Facts):
    out, counts = losses(x)
    return CheckResult(out["lost"], counts["lost"], {})


@check("lost_within_budget", reads=("periods", "dirty"),
       invalidates=False, needs=("events", "commits"), unit="acked records never consumed that a crashed "
       "at-most-once member (commit: auto or before_process) had committed", color="#f7b6d2")
def lost_within_budget(x: Facts):
    out, counts = losses(x)
    return CheckResult(out["lost_within_budget"], counts["lost_within_budget"], {})


@check("unseen", reads=("periods", "dirty"),
       invalidates=False, unit="acked records never consumed, beyond every member's last position and the "
       "group's last commit in their partition (still in Kafka: the group had not read that far)", color="#c7c7c7")
def unseen(x: Facts):
    """Not a loss: the group had not caught up when the run ended. Its info gives the lag per partition (``lag``:
    topic, partition, unseen records, the offset read up to)."""
    out, counts = losses(x)
    lag = defaultdict(int)
    for a in out["unseen"]:
        lag[(a["topic"], a["partition"], a["read_up_to"])] += a["count"]
    return CheckResult(out["unseen"], counts["unseen"], {"lag": [
        {"topic": t, "partition": p, "unseen": n, "read_up_to": top} for (t, p, top), n in sorted(lag.items(), key=str)]})


@check("lost_unplaced", reads=("sides", "periods"), asks=("unplaced",),
       needs=("producer_id", "seq"), unit="acks without an offset (status unplaced) never consumed, in "
       "a partition the group read past the producer's next ok record there", color="#a50f15")
def lost_unplaced(x: Facts):
    """An ``unplaced`` ack (the client acknowledged it with no error and no offset: librdkafka 2.16.0's first record
    to a partition just added) that nobody consumed as its producer_id/seq, although the group read past the lowest
    offset of an ok-acked record of the same producer, topic and partition with a higher seq (``next_ok_offset``):
    the producer writes a partition in seq order, so the record, had it been written, would stand below that one,
    and was read past. One anomaly a record; ``offsets`` is null (its place is unknown). The others are counted in
    the info: ``unplaced_consumed`` (written after all), ``unplaced_unseen`` (no later ok record of the producer
    there, or the group had not read that far). The scan counts the unplaced rows; only a run with some asks Spark
    (spark_plan.unplaced_acks)."""
    total = side_totals(x.got).get(UNPLACED)
    total = total.rows if total else 0
    acks = x.query("unplaced", total) if total else []
    frontier = read_frontiers(x)
    out, unseen_acks = [], 0
    for r in acks:
        nxt, top = r["next_ok"], frontier.get((r["topic"], r["partition"]), -1)
        if nxt is None or nxt > top:
            unseen_acks += 1
            continue
        out.append({"type": "lost_unplaced", "topic": r["topic"], "partition": r["partition"], "offsets": None, "count": 1,
                    "members": [], "generations": [], "time_ms": [r["acked_at_ms"], r["acked_at_ms"]],
                    "producer_id": r["producer_id"], "seq": r["seq"], "next_ok_offset": nxt, "read_up_to": top,
                    "reason": f"acknowledged without an offset and never consumed; {r['producer_id']}'s next ok record "
                              f"in the partition (a higher seq) is at offset {nxt}, and the group read up to {top}"})
    return CheckResult(out, len(out), {"unplaced": total, "unplaced_consumed": total - len(acks),
                                       "unplaced_unseen": unseen_acks})
