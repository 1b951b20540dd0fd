"""The exactly-once checks of the committed output (issue 56), by Jepsen's names, on a run whose members promise
exactly once (a transactional member, `commit: transaction`, or a Kafka Streams member under exactly_once_v2) and whose
deliveries are what their transactions committed (output-topic mode, read back read_committed):

- `eos_duplicate`: an input record in the committed output more than once, whatever the budget (exactly once has none);
- `eos_lost`: an input record the group committed past with no committed output naming it, whatever the budget; where
  the members logged their transactions (transactions/), the committed transaction whose offsets went past it.

- `offset_output_mismatch`: offset/output atomicity within a transaction: a committed transaction whose input offsets
  are not one past the last input it wrote output for, partition by partition (its commit's offsets and its output,
  atomic together, disagree: past inputs it never transformed, or short of ones it did). Read from transactions/.

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


@check("offset_output_mismatch", needs=("eos",),
       unit="input partition whose offset a committed transaction committed is not one past the last input it wrote",
       color="#c49c94")
def offset_output_mismatch(x: Facts):
    files, found = x.history.transactions, []
    for t in files.transactions if files is not None else []:
        if t.outcome != COMMITTED:
            continue
        wrote: dict[str, int] = {}  # "topic:partition" -> the last input offset the transaction wrote output for
        for _, _, source in t.acked:
            key, _, offset = source.rpartition(":")
            wrote[key] = max(wrote.get(key, -1), int(offset))
        for key in sorted(set(wrote) | set(t.offsets)):
            last, committed = wrote.get(key), t.offsets.get(key)
            if last is not None and committed == last + 1:
                continue
            topic, _, partition = key.rpartition(":")
            edge = [v for v in (None if last is None else last + 1, committed) if v is not None]
            found.append({"type": "offset_output_mismatch", "topic": topic, "partition": int(partition),
                          "offsets": [min(edge), max(edge)], "count": 1, "members": [t.member], "generations": [],
                          "time_ms": [t.ended_ms or t.begun_ms or 0] * 2, "fault_ids": [], "transaction": t.name,
                          "transactional_id": t.transactional_id, "committed_offset": committed,
                          "last_input_written": last,
                          "reason": f"transaction {t.name} committed {key} at {committed} having written output for "
                                    f"its inputs up to {last}"})
    return CheckResult(found, len(found), {})
