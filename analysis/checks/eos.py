"""The exactly-once checks (issue 56), by Jepsen's names, on a run whose members promise exactly once (a transactional
member, `commit: transaction`, or a Kafka Streams member under exactly_once_v2) and whose deliveries are what their
transactions committed (output-topic mode, read back read_committed): `eos_duplicate`, an input record in the
committed output more than once, whatever the budget (exactly once has none)."""
from __future__ import annotations

from analysis.checks.framework import CheckResult, Facts, check


@check("eos_duplicate", needs=("eos",), reads=("groups", "rows"),
       unit="input record in the committed output more than once (exactly once promised)", color="#d62728")
def eos_duplicate(x: Facts):
    found = [{**a, "type": "eos_duplicate"} for a in x.duplicates().anomalies]
    return CheckResult(found, sum(a["count"] for a in found), {})
