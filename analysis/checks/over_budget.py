"""The `duplicate_over_budget` check: duplicated offsets that a revoked owner's uncommitted tail does not explain."""
from __future__ import annotations

from analysis.checks.framework import CheckResult, Facts, check


@check("duplicate_over_budget", reads=("groups", "rows"),
       needs=("events", "commits"), unit="duplicated offsets not explained by a revoked owner's "
       "uncommitted tail", color="#e377c2")
def over_budget(x: Facts):
    found = x.duplicates()
    st = found.stats
    info = {"within_budget_offsets": st["duplicated_offsets"] - st["over_budget_offsets"] - st["unknown_budget_offsets"]}
    if st["unknown_budget_offsets"]:
        info.update(status="unknown", undecided_offsets=st["unknown_budget_offsets"], reason="some members logged no events")
    return CheckResult(found.over_budget, st["over_budget_offsets"], info)
