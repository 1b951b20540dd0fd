"""The group's state machine over the run, for the report's band: what its coordinator said (group-states.jsonl,
sampled), with each classic generation from the members' own ``assigned`` events, and the CompletingRebalance the
sampler could not see, inferred and marked so.

A classic round: PreparingRebalance (the coordinator waits for every member's JoinGroup), CompletingRebalance (it
waits for the leader's SyncGroup), Stable. CompletingRebalance lasts as long as the leader's assignment takes:
milliseconds in a small group, shorter than any sampling. When no sample saw it, it lies between the last sample
before the round's first ``assigned`` event and that event (members log ``assigned`` once their SyncGroup is
answered): that interval is the inferred segment. KIP-848 has no such state (Assigning, Reconciling, Stable); its
segments carry the group epoch, the target assignment epoch and how many members are behind it, and each member's
epoch is followed on its own (``member_epochs``: the stretches it was behind the target).
"""
from __future__ import annotations

from .history import History

COMPLETING = "CompletingRebalance"
PREPARING = "PreparingRebalance"


def generations(h: History) -> list[tuple[int, int]]:
    """(generation, first ``assigned`` of it) for every classic generation the members logged, in order."""
    first: dict[int, int] = {}
    for e in h.events:
        if e.kind == "assigned" and e.generation is not None and e.generation >= 0:
            first[e.generation] = min(first.get(e.generation, e.ts), e.ts)
    return sorted(first.items(), key=lambda g: g[1])


def band(h: History, observe_end: int) -> dict | None:
    """The band's segments (None when the run sampled nothing): see the module's doc."""
    rows = h.group_states
    if not rows:
        return None
    head = next((r for r in rows if r["kind"] == "sampler"), {})
    end = next((r["ts_ms"] for r in rows if r["kind"] == "sampler_end"), observe_end)
    seen = [r for r in rows if r["kind"] in ("state", "unknown")]
    segments = []
    for i, row in enumerate(seen):
        after = seen[i + 1] if i + 1 < len(seen) else None
        segment = {"state": row.get("state") if row["kind"] == "state" else "unknown", "from_ms": row["ts_ms"],
                   "to_ms": after["ts_ms"] if after else end,
                   "last_seen_ms": after.get("since_ms", after["ts_ms"]) if after else end,
                   "members": row.get("members"), "assigned": row.get("assigned"), "observed": True}
        if row.get("group_epoch") is not None:
            target = row.get("assignment_epoch")
            epochs = row.get("member_epochs") or {}
            segment.update(group_epoch=row["group_epoch"], assignment_epoch=target,
                           behind=sum(1 for epoch in epochs.values() if target is not None and epoch < target))
        segments.append(segment)
    gens = generations(h) if head.get("protocol", "classic") == "classic" else []
    for segment in segments:
        upto = segment["to_ms"] if segment["state"] == "Stable" else segment["from_ms"]
        reached = [g for g, ts in gens if ts <= upto]
        if gens:
            segment["generation"] = reached[-1] if reached else None
    return {"interval_ms": head.get("interval_ms"), "protocol": head.get("protocol"), "api": head.get("api"),
            "segments": segments, "inferred": completing(segments, gens), "member_epochs": member_epochs(seen, end)}


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
    """The CompletingRebalance no sample saw: wherever PreparingRebalance was followed by another state, it lay
    between the last sample in PreparingRebalance and the next sample (or the new generation's first ``assigned``,
    when that came first: members log it once their SyncGroup is answered, after CompletingRebalance ended)."""
    out = []
    for a, b in zip(segments, segments[1:]):
        if a["state"] != PREPARING or b["state"] == COMPLETING:
            continue
        new = [(g, ts) for g, ts in gens if ts > a["from_ms"]]
        hi = min([b["from_ms"]] + [ts for _, ts in new[:1]])
        if hi <= a["last_seen_ms"]:  # the new generation was assigned before the last PreparingRebalance sample
            continue
        out.append({"state": COMPLETING, "generation": new[0][0] if new else None, "from_ms": a["last_seen_ms"],
                    "to_ms": hi, "observed": False,
                    "inferred": "no sample saw it: it lay between the last sample in PreparingRebalance and the next "
                                "sample or the new generation's first assignment"})
    return out
