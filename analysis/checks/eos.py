"""The exactly-once checks of the committed output (issue 56), by Jepsen's names, on a run whose members promise
exactly once (a transactional member, `commit: transaction`, or a Kafka Streams member under exactly_once_v2) and whose
deliveries are what their transactions committed (output-topic mode, read back read_committed):

- `eos_duplicate`: an input record in the committed output more than once, whatever the budget (exactly once has none);
- `eos_lost`: an input record the group committed past with no committed output naming it, whatever the budget; where
  the members logged their transactions (transactions/), the committed transaction whose offsets went past it.

What the verified readers saw of each transaction is judged beside them (eos_reads.py)."""
from __future__ import annotations

from analysis.checks.framework import CheckResult, Facts, check
from analysis.checks.loss import losses
from analysis.rundir.transactions import COMMITTED


@check("eos_duplicate", needs=("eos",), reads=("groups", "rows"),
       unit="input record in the committed output more than once (exactly once promised)", color="#d62728")
def eos_duplicate(x: Facts):
    found = [{**a, "type": "eos_duplicate"} for a in x.duplicates().anomalies]
    return CheckResult(found, sum(a["count"] for a in found), {})


@check("eos_lost", needs=("eos",), reads=("periods", "dirty"),
       unit="input record committed past with no committed output (exactly once promised)", color="#8c564b")
def eos_lost(x: Facts):
    out, _ = losses(x)
    files = x.history.transactions
    found = []
    for a in out["lost"] + out["lost_within_budget"]:
        found.append({**{k: v for k, v in a.items() if k != "reason"}, "type": "eos_lost",
                      **(committed_past(files.transactions, a["topic"], a["partition"], a["offsets"][0]) if files else {})})
    return CheckResult(found, sum(a["count"] for a in found), {})


def committed_past(transactions, topic: str, partition: int, offset: int) -> dict:
    """The first committed transaction (by its commit's end) whose input offsets went past ``offset``: its name,
    transactional id and member; {} where none logged did (the group's commit came from elsewhere)."""
    key = f"{topic}:{partition}"
    past = [t for t in transactions if t.outcome == COMMITTED and t.offsets.get(key, -1) > offset]
    if not past:
        return {}
    first = min(past, key=lambda t: t.ended_ms or 0)
    return {"transaction": first.name, "transactional_id": first.transactional_id, "committed_by": first.member,
            "committed_at_ms": first.ended_ms}
