"""Analysis cost over partitions, members, rebalances and row order at a fixed record count (issue 23, item 2).

The same kind of synthetic run (benchmarks/synth.py) at RECORDS records, its topic cut into 6 to 5,000 partitions,
read by 3 to 500 members, through G generations (rebalances), in consumption order or shuffled; each cell
analysed in one warm Spark session REPEAT times (median, min and max of the whole analysis and of its phases).
The machine's load average is printed beside each cell: the machine is shared, so compare cells of one
invocation only.

    .venv/bin/python -m benchmarks.partitions --records 1000000 --repeat 3
    .venv/bin/python -m benchmarks.partitions --records 120000 --cells 6x3,1000x10 --repeat 3
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

from benchmarks.synth import Plan, generate

DEFAULT_CELLS = "6x3,100x3,1000x3,5000x3,6x50,6x500,1000x50,5000x500"


def cell_plan(records: int, cell: str, generations: int, order: str) -> Plan:
    partitions, members = (int(x) for x in cell.split("x"))
    return Plan(records=records, partitions=partitions, members=members, generations=generations, order=order)


def measure(run_dir: Path, spark, repeat: int) -> dict:
    from analysis import analyze
    analyze(run_dir, spark=spark)  # not counted: the first analysis of a new shape compiles and caches
    walls, phases = [], []
    for _ in range(repeat):
        marks = []
        t = time.monotonic()
        summary = analyze(run_dir, spark=spark, progress=lambda phase, detail="": marks.append((phase, time.monotonic())))
        walls.append(time.monotonic() - t)
        ends = [m[1] for m in marks[1:]] + [t + walls[-1]]
        phases.append({phase: end - start for (phase, start), end in zip(marks, ends)})
    names = phases[0].keys()
    return {"wall_s": _stat(walls), "phases_s": {n: _stat([p.get(n, 0.0) for p in phases]) for n in names},
            "load_average": os.getloadavg()[0], "counts": summary["anomaly_counts"]}


def _stat(xs: list[float]) -> dict:
    return {"median": round(statistics.median(xs), 2), "min": round(min(xs), 2), "max": round(max(xs), 2)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--cells", default=DEFAULT_CELLS, help="PARTITIONSxMEMBERS, comma-separated")
    ap.add_argument("--generations", type=int, default=8)
    ap.add_argument("--order", default="consumption", choices=("consumption", "interleaved", "shuffled"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--data", type=Path, default=Path("/tmp/kafka-chaos-bench"))
    ap.add_argument("--out", type=Path, default=None, help="write the figures as JSON here too")
    a = ap.parse_args(argv)
    from analysis.spark import get_session
    spark = get_session()
    results = []
    print(f"{'cell':>10} {'order':>11} {'wall median (min-max)':>24} {'scanning':>9} {'checks':>8} {'load':>5}")
    for cell in a.cells.split(","):
        plan = cell_plan(a.records, cell, a.generations, a.order)
        rd = a.data / f"cell-{a.records}-{cell}-g{a.generations}-{a.order}"
        if not (rd / "truth.json").is_file():
            generate(rd, plan)
        r = {"cell": cell, "order": a.order, "records": a.records, "generations": a.generations,
             **measure(rd, spark, a.repeat)}
        results.append(r)
        w, ph = r["wall_s"], r["phases_s"]
        print(f"{cell:>10} {a.order:>11} {w['median']:>8.2f} ({w['min']:.2f}-{w['max']:.2f}) s "
              f"{ph.get('scanning', {}).get('median', 0):>8.2f} {ph.get('checks', {}).get('median', 0):>8.2f} "
              f"{r['load_average']:>5.1f}", flush=True)
    if a.out:
        a.out.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
