"""One run directory analysed locally (local[*]) and on Spark standalone clusters in containers of 1 and 2 workers
(harness/cluster/spark.py), in one invocation: the wall time of each analysis (a fresh session first, then
`--repeat - 1` more in the same session), the ratios to local, the load average beside each, and whether every
summary equals the local one (issue 23, item 5).

    python -m benchmarks.synth /tmp/s10m --records 10000000 --format parquet
    python -m benchmarks.spark_cluster /tmp/s10m --workers 1,2 --repeat 2
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

from analysis.api import analyze
from analysis import api
from harness.cluster.spark import SparkCluster


def timed(run_dir: Path, repeat: int, **target) -> tuple[list[float], list[float], dict]:
    """Seconds of each analysis (the first with a fresh session), the load average after each, the summary."""
    api.stop_session()
    seconds, loads, summary = [], [], None
    for _ in range(repeat):
        t0 = time.monotonic()
        summary = analyze(run_dir, **target)
        seconds.append(round(time.monotonic() - t0, 2))
        loads.append(round(os.getloadavg()[0], 1))
    api.stop_session()
    return seconds, loads, summary


def comparable(summary: dict) -> dict:
    return {k: v for k, v in summary.items() if k != "analysis_seconds"}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--workers", default="1,2", help="cluster sizes, comma-separated (default: 1,2)")
    ap.add_argument("--cores", type=int, default=None, help="cores of each worker (default: all of this machine's)")
    ap.add_argument("--memory-mb", type=int, default=2560, help="executor memory of each worker (default: 2560)")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/spark-cluster.json"))
    args = ap.parse_args(argv)
    run_dir = args.run_dir.resolve()
    rows = []
    seconds, loads, local = timed(run_dir, args.repeat)
    rows.append({"target": "local[*]", "seconds": seconds, "load": loads, "same_summary": True})
    for workers in [int(w) for w in args.workers.split(",")]:
        with SparkCluster(workers=workers, cores=args.cores, memory_mb=args.memory_mb, mounts=(run_dir,)) as cluster:
            seconds, loads, got = timed(run_dir, args.repeat, master=cluster.master_url, conf=cluster.driver_conf())
        rows.append({"target": f"{workers} worker(s)", "seconds": seconds, "load": loads,
                     "same_summary": comparable(got) == comparable(local)})
    base = rows[0]["seconds"]
    print(f"{run_dir}: {local['consumed_rows']:,} consumed rows, {os.cpu_count()} cores")
    print("| target | first (fresh session) | then (median) | ratio to local, first / then | load | same summary |")
    print("|---|---:|---:|---:|---:|:---:|")
    for r in rows:
        s = r["seconds"]
        rest = statistics.median(s[1:]) if len(s) > 1 else float("nan")
        base_rest = statistics.median(base[1:]) if len(base) > 1 else float("nan")
        print(f"| {r['target']} | {s[0]:.1f} s | {rest:.1f} s | {s[0] / base[0]:.2f} / {rest / base_rest:.2f} | "
              f"{', '.join(map(str, r['load']))} | {'yes' if r['same_summary'] else 'NO'} |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"run_dir": str(run_dir), "rows": rows}, indent=2))
    return 0 if all(r["same_summary"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
