"""The triggers a sweep measures, each declared once: what it does to the group (the fault entry a cell's scenario
gets, at the end of the warm-up), the group settings it needs, the partitions it adds (the figures cover them too)
and the sessions it expires of its own (a crash's member: more than that strains a cell). The analysis times and
windows each by its fault's facts (analysis/figures/rebalance_cost.py: group_change, ends_process)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class SweepTrigger:
    name: str
    about: str
    fault: Callable[[object, object], dict]   # (cell, the sweep's cell settings) -> the fault entry, without at_s
    classic_group: Callable[[object], dict] = lambda settings: {}  # group settings it needs under the classic protocol
    new_partitions: Callable[[object], int] = lambda cell: 0       # partitions it adds to the topic
    own_expiries: int = 0                                           # sessions it expires itself


def _middle(cell) -> str:
    return f"member-{(cell.members + 1) // 2}"


TRIGGERS = {t.name: t for t in (
    SweepTrigger("join", "one member joins",
                 lambda cell, s: {"kind": "member_join", "target": "group", "count": 1, "duration_s": 1}),
    # down for the whole observed window: its restart is not what is measured
    SweepTrigger("crash", "one member is killed: no leave",
                 lambda cell, s: {"kind": "member_crash", "target": _middle(cell), "duration_s": s.observe_s},
                 own_expiries=1),
    SweepTrigger("bounce", "one member restarts within the session",
                 lambda cell, s: {"kind": "member_bounce", "target": _middle(cell), "duration_s": s.bounce_s}),
    SweepTrigger("partitions_add", "the topic grows by one partition a member",
                 lambda cell, s: {"kind": "partitions_add", "target": "topic",
                                  "partitions": cell.partitions + cell.members, "duration_s": 1},
                 classic_group=lambda s: {"metadata_refresh_ms": s.metadata_refresh_ms},
                 new_partitions=lambda cell: cell.members),
)}
