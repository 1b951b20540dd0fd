"""The `duplicate` check: a topic/partition/offset consumed more than once."""
from __future__ import annotations

from analysis.checks.framework import CheckResult, Facts, check


@check("duplicate", reads=("stats", "groups", "rows"),
       invalidates=False, unit="distinct topic/partition/offset consumed more than once", color="#8c8c8c")
def duplicate_check(x: Facts):
    found = x.duplicates()
    st = found.stats
    extra = sum(r["extra"] for r in x.got.get("stats", []))
    if st["extra_deliveries"] != extra:
        raise AssertionError(f"block counts say {extra} extra deliveries, records say {st['extra_deliveries']}")
    return CheckResult(found.anomalies, st["duplicated_offsets"], {"extra_deliveries": st["extra_deliveries"]})
