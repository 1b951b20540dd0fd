"""Attribution: each anomaly blamed on the faults whose window of effect it falls in."""
from __future__ import annotations

from analysis.rundir.history import OPEN, History


def attribute(anomalies: list[dict], h: History, grace_ms: int) -> None:
    """fault_ids: the faults whose window (History.blame_windows: the cause window plus grace, cut at the workload's
    stop) overlaps the anomaly's time."""
    windows = [(fid, lo, hi) for fid, (lo, hi) in h.blame_windows(grace_ms, OPEN).items()]
    for a in anomalies:
        if a["type"] == "unhealed_fault":
            continue
        t0, t1 = a["time_ms"]
        t1 = t0 if t1 is None else t1
        a["fault_ids"] = [fid for fid, lo, hi in windows if t0 <= hi and t1 >= lo]
