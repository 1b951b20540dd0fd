"""A transactional run's figures (summary.json `transactions`, the report's "Transactions" section), from
transactions/ and verified/ (analysis/rundir/transactions.py): how many transactions ended which way, how long a
commit took (commit_transaction's call, every attempt), why the aborted ones were, and how long a committed record
took to be read: after its commit returned (read_committed), and held back by the last stable offset (the same
record read read_committed against read_uncommitted, where both readers ran)."""
from __future__ import annotations

from collections import Counter

from analysis.figures import latency
from analysis.rundir.transactions import COMMITTED, TransactionFiles

QUANTILES = tuple(zip(("p50", "p99"), latency.QUANTILES))  # the latency figures', by the same rule


def percentile(ordered: list[int], q: float) -> float:
    """Spark SQL's exact `percentile`, which the latency figures ask Spark for: linear between the two nearest
    ranks, so a transactional run's percentiles and its latency's are one definition."""
    at = q * (len(ordered) - 1)
    low = int(at)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (at - low)


def spread(values: list[int]) -> dict | None:
    """p50 and p99 of ``values`` (:func:`percentile`, to a tenth, as the latency figures), max and n; None when there
    are none."""
    if not values:
        return None
    ordered = sorted(values)
    out = {name: round(percentile(ordered, q), 1) for name, q in QUANTILES}
    return {**out, "max": ordered[-1], "n": len(ordered)}


def figures(files: TransactionFiles | None, rows_by_member: dict | None = None) -> dict | None:
    """See the module; None for a run without transactions/."""
    if files is None:
        return None
    ts = files.transactions
    commits = [t.ended_ms - t.commit_called_ms for t in ts if t.outcome == COMMITTED and t.commit_called_ms is not None]
    out = {"transactions": len(ts), "by_outcome": dict(Counter(t.outcome for t in ts)),
           "by_member": dict(Counter(t.member for t in ts)), "commit_ms": spread(commits),
           "records_written": sum(len(t.acked) for t in ts),
           "records_committed": sum(len(t.acked) for t in ts if t.outcome == COMMITTED),
           "readers": {i: {"rows": len(r.rows), "reached_end": r.reached_end} for i, r in files.readers.items()}}
    ended = {(p, o): t.ended_ms for t in ts if t.outcome == COMMITTED and t.ended_ms is not None for p, o, _ in t.acked}
    committed = files.readers.get("read_committed")
    if committed is not None:
        out["read_after_commit_ms"] = spread([r["read_at_ms"] - ended[(r["partition"], r["offset"])]
                                              for r in committed.rows if (r["partition"], r["offset"]) in ended])
        uncommitted = files.readers.get("read_uncommitted")
        if uncommitted is not None:
            first = {}
            for r in uncommitted.rows:
                first.setdefault((r["partition"], r["offset"]), r["read_at_ms"])
            out["held_back_ms"] = spread([r["read_at_ms"] - first[(r["partition"], r["offset"])]
                                          for r in committed.rows if (r["partition"], r["offset"]) in first])
    return out
