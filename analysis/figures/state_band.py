"""The group's state machine over the run, for the report's band: what its coordinator logged (coordinator.log's
rounds, to the millisecond) and what it said when asked (group-states.jsonl, sampled), each segment saying which
(``source``: ``log`` or ``sampled``), and the CompletingRebalance no sample saw, inferred and marked so where the log
has no round.

A classic round: PreparingRebalance (the coordinator waits for every member's JoinGroup), CompletingRebalance (it
waits for the leader's SyncGroup), Stable. A round can be shorter than any sampling, CompletingRebalance always is in
a small group (it lasts as long as the leader's assignment takes), so where coordinator.log has a round the band takes
it from there: PreparingRebalance from ``Preparing to rebalance`` to ``Stabilized``, CompletingRebalance from there to
the leader's assignment (Stable from then; the group turns Stable once the assignment is stored, milliseconds later)
or to the next round, Empty where the round ended with no member. The samples fill the rest: one answered inside a
round the log timed gives way to it, and so does one of a rebalance state whose interval touches such a round (it saw
a state the log dates).

Without coordinator.log (an external cluster) the band is the samples alone, each classic generation taken from the
members' own ``assigned`` events. A CompletingRebalance no sample saw then lies between the last sample before the
round's first ``assigned`` event and that event (members log ``assigned`` once their SyncGroup is answered): that
interval is the inferred segment. KIP-848 has no such state (Assigning, Reconciling, Stable); its segments carry the
group epoch, the target assignment epoch and how many members are behind it, and each member's epoch is followed on
its own (``member_epochs``: the stretches it was behind the target).
"""
from __future__ import annotations

from analysis.rundir.history import History

COMPLETING = "CompletingRebalance"
PREPARING = "PreparingRebalance"
REBALANCING = (PREPARING, COMPLETING)


def generations(h: History) -> list[tuple[int, int]]:
    """(generation, first ``assigned`` of it) for every classic generation the members logged, in order."""
    first: dict[int, int] = {}
    for e in h.events:
        if e.kind == "assigned" and e.generation is not None and e.generation >= 0:
            first[e.generation] = min(first.get(e.generation, e.ts), e.ts)
    return sorted(first.items(), key=lambda g: g[1])


def band(h: History, observe_end: int, rounds: list[dict] | None = None) -> dict | None:
    """The band's segments (None when the run sampled nothing): see the module's doc. ``rounds``: coordinator.log's
    classic rounds (analysis/rundir/coordinator_log.py), None or empty when it has none."""
    rows = h.group_states
    if not rows:
        return None
    head = next((r for r in rows if r["kind"] == "sampler"), {})
    end = next((r["ts_ms"] for r in rows if r["kind"] == "sampler_end"), observe_end)
    seen = [r for r in rows if r["kind"] in ("state", "unknown")]
    rounds = rounds or []
    spans = round_spans(rounds)
    changes = [seg for row, seg in zip(seen, sampled(seen, end)) if not told_by_log(row, spans)] + logged(rounds)
    changes.sort(key=lambda c: (c["from_ms"], c["source"] != "log"))  # a sample of the log's millisecond comes after
    segments = [c for c in changes if c["from_ms"] < end]
    for segment, after in zip(segments, segments[1:] + [None]):
        segment["to_ms"] = after["from_ms"] if after else end
        if segment["source"] == "sampled":
            segment["last_seen_ms"] = min(segment["last_seen_ms"], segment["to_ms"])
    gens = generations(h) if head.get("protocol", "classic") == "classic" else []
    for segment in segments:
        if segment["source"] == "sampled" and gens:
            upto = segment["to_ms"] if segment["state"] == "Stable" else segment["from_ms"]
            reached = [g for g, ts in gens if ts <= upto]
            segment["generation"] = reached[-1] if reached else None
    return {"interval_ms": head.get("interval_ms"), "protocol": head.get("protocol"), "api": head.get("api"),
            "segments": segments, "inferred": completing(segments, gens), "member_epochs": member_epochs(seen, end)}


def sampled(seen: list[dict], end: int) -> list[dict]:
    """A segment begun by each sampled row: the state it saw (``unknown``: the coordinator could not be asked),
    when (``from_ms``), the last sample that still saw it (``last_seen_ms``) and what the coordinator said of the
    group; not yet cut where the next segment begins."""
    out = []
    for i, row in enumerate(seen):
        after = seen[i + 1] if i + 1 < len(seen) else None
        segment = {"state": row.get("state") if row["kind"] == "state" else "unknown", "from_ms": row["ts_ms"],
                   "last_seen_ms": after.get("since_ms", after["ts_ms"]) if after else end,
                   "members": row.get("members"), "assigned": row.get("assigned"), "source": "sampled"}
        if row.get("group_epoch") is not None:
            target = row.get("assignment_epoch")
            epochs = row.get("member_epochs") or {}
            segment.update(group_epoch=row["group_epoch"], assignment_epoch=target,
                           behind=sum(1 for epoch in epochs.values() if target is not None and epoch < target))
        out.append(segment)
    return out


def logged(rounds: list[dict]) -> list[dict]:
    """A segment begun by each change of state a classic round's lines date (see the module's doc), with the round's
    generation (PreparingRebalance: the one it leaves), its members once stabilized, and what began it."""
    out = []
    for r in rounds:
        out.append({"state": PREPARING, "from_ms": r["began_ms"], "generation": r["old_generation"],
                    "members": None, "reason": r["reason"]})
        if r["stable_ms"] is not None:
            out.append({"state": COMPLETING, "from_ms": r["stable_ms"], "generation": r["generation"],
                        "members": r["members"]})
        if r["assigned_ms"] is not None:
            out.append({"state": "Stable", "from_ms": r["assigned_ms"], "generation": r["generation"],
                        "members": r["members"]})
        if r.get("emptied_ms") is not None:
            out.append({"state": "Empty", "from_ms": r["emptied_ms"], "generation": None, "members": 0})
    return [{**c, "assigned": None, "source": "log"} for c in out]


def round_spans(rounds: list[dict]) -> list[tuple[int, int]]:
    """Each round from its first line to its end (the leader's assignment, an empty group, or the next round: it was
    superseded), or to its last line where the log stops first: the times the log knows the group's state."""
    out = []
    for r, after in zip(rounds, rounds[1:] + [None]):
        ended = r["assigned_ms"] if r["assigned_ms"] is not None else r.get("emptied_ms")
        if ended is None:
            ended = after["began_ms"] if after else max(t for t in (r["began_ms"], r["stable_ms"]) if t is not None)
        out.append((r["began_ms"], ended))
    return out


def told_by_log(row: dict, spans: list[tuple[int, int]]) -> bool:
    """Whether coordinator.log already says what this group-states.jsonl row saw (see the module's doc): the row was
    answered in (since_ms, ts_ms]."""
    for began, ended in spans:
        if began <= row["ts_ms"] < ended:
            return True
        if row.get("state") in REBALANCING and row.get("since_ms", row["ts_ms"]) <= ended and row["ts_ms"] >= began:
            return True
    return False


def member_epochs(seen: list[dict], end: int) -> list[dict] | None:
    """KIP-848, each member's epoch against the target assignment's over the run: per member (by client.id), when the
    coordinator first and last listed it, and the stretches its epoch was behind the target (from, to, its epoch,
    the target's). None for a classic group (no member epochs)."""
    if not any(row.get("member_epochs") is not None for row in seen):
        return None
    out: dict[str, dict] = {}
    for i, row in enumerate(seen):
        to = seen[i + 1]["ts_ms"] if i + 1 < len(seen) else end
        target = row.get("assignment_epoch")
        for member, epoch in (row.get("member_epochs") or {}).items():
            m = out.setdefault(member, {"member": member, "first_ms": row["ts_ms"], "last_ms": to, "behind": []})
            m["last_ms"] = to
            if target is None or epoch >= target:
                continue
            behind = m["behind"]
            if behind and behind[-1][1] == row["ts_ms"] and behind[-1][2:] == [epoch, target]:
                behind[-1][1] = to  # the same stretch, sampled again
            else:
                behind.append([row["ts_ms"], to, epoch, target])
    return sorted(out.values(), key=lambda m: (m["first_ms"], m["member"]))


def completing(segments: list[dict], gens: list[tuple[int, int]]) -> list[dict]:
    """The CompletingRebalance no sample saw: wherever a sampled PreparingRebalance was followed by another sampled
    state, it lay between the last sample in PreparingRebalance and the next sample (or the new generation's first
    ``assigned``, when that came first: members log it once their SyncGroup is answered, after CompletingRebalance
    ended)."""
    out = []
    for a, b in zip(segments, segments[1:]):
        if a["state"] != PREPARING or b["state"] == COMPLETING or "log" in (a["source"], b["source"]):
            continue
        new = [(g, ts) for g, ts in gens if ts > a["from_ms"]]
        hi = min([b["from_ms"]] + [ts for _, ts in new[:1]])
        if hi <= a["last_seen_ms"]:  # the new generation was assigned before the last PreparingRebalance sample
            continue
        out.append({"state": COMPLETING, "generation": new[0][0] if new else None, "from_ms": a["last_seen_ms"],
                    "to_ms": hi, "source": "inferred",
                    "inferred": "no sample saw it: it lay between the last sample in PreparingRebalance and the next "
                                "sample or the new generation's first assignment"})
    return out
