"""The `duplicate_write` check: one producer_id/seq stored at more than one offset."""
from __future__ import annotations

from collections import defaultdict

from analysis.checks.framework import CheckResult, Facts, check
from analysis.engine.kernels import bits_of as bits


@check("duplicate_write", reads=("dirty",), asks=("unacked", "copies"),
       needs=("producer_id", "seq"), unit="producer_id/seq pairs stored at more than one offset",
       color="#bcbd22")
def duplicate_writes(x: Facts):
    """One producer_id/seq stored at more than one topic/partition/offset (a producer-side duplicate). A retry
    that duplicates a write always leaves a consumed copy nobody acked ok (the attempt whose acknowledgement
    was lost), so only the producer_id/seq of such records are looked up: a run without them pays nothing."""
    cells = {(r["topic"], r["partition"], r["b"] * 64 + j) for r in x.got.get("dirty", []) for j in bits(r["unackedmask"])}
    pairs = {(r["producer_id"], r["seq"]) for r in x.query("unacked", cells)} if cells else set()
    by_pair = defaultdict(list)
    for r in (x.query("copies", pairs) if pairs else []):
        by_pair[(r["producer_id"], r["seq"])].append(r)
    out = []
    for (pid, seq), rs in sorted(by_pair.items()):
        if len(rs) < 2:
            continue
        rs.sort(key=lambda r: (r["topic"], r["partition"], r["offset"]))
        out.append({"type": "duplicate_write", "topic": rs[0]["topic"], "partition": rs[0]["partition"],
                    "offsets": [rs[0]["offset"], rs[-1]["offset"]], "count": 1, "members": [], "generations": [],
                    "time_ms": [min(r["tmin"] for r in rs), max(r["tmax"] for r in rs)], "producer_id": pid, "seq": seq,
                    "copies": [f"{r['topic']}:{r['partition']}@{r['offset']}" for r in rs]})
    return CheckResult(out, len(out), {"unacked_records": len(cells)})
