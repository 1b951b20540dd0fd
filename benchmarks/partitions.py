"""Analysis cost over partitions, members, rebalances and row order at a fixed record count (issue 23, item 2).

The same kind of synthetic run (benchmarks/synth.py) at RECORDS records, its topic cut into 6 to 5,000 partitions,
read by 3 to 500 members, through G generations (rebalances), in consumption order or shuffled; each cell
analysed in one warm Spark session REPEAT times (median, min and max of the whole analysis and of its phases).
The machine's load average is printed beside each cell: the machine is shared, so compare cells of one
invocation only.

    .venv/bin/python -m benchmarks.partitions --records 1000000 --repeat 3
    .venv/bin/python -m benchmarks.partitions --records 120000 --cells 6x3,1000x10 --repeat 3

Real runs (issue 37): ``--runs RUN_DIR...`` times ``kafka-chaos analyze RUN_DIR --json`` instead, each call a fresh
process, on an analysis service of the benchmark's own, warmed by a first call of each run (not counted); the runs
alternate, REPEAT times. Besides the wall time it prints the analysis's own ``analysis_seconds``, and every line of
the console that is neither the CLI's progress nor the JSON summary (Spark's or the JVM's text). The runs come from
``benchmarks/scenarios/`` (one at a time: each starts its own cluster):

    .venv/bin/kafka-chaos run benchmarks/scenarios/real-grow-1000.yaml --runs-dir /tmp/realruns
    .venv/bin/python -m benchmarks.partitions --runs /tmp/realruns/*-real-* --repeat 5
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.synth import Plan, generate

DEFAULT_CELLS = "6x3,100x3,1000x3,5000x3,6x50,6x500,1000x50,5000x500"


def cell_plan(records: int, cell: str, generations: int, order: str) -> Plan:
    partitions, members = (int(x) for x in cell.split("x"))
    return Plan(records=records, partitions=partitions, members=members, generations=generations, order=order)


def measure(run_dir: Path, spark, repeat: int) -> dict:
    from analysis.api import analyze
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


def measure_real(runs: list[Path], repeat: int) -> list[dict]:
    """Each run analysed by ``kafka-chaos analyze`` (a fresh process a call) on a warm service of its own."""
    from benchmarks.cold_analyze import stop_service
    folder = tempfile.mkdtemp(prefix="kafka-chaos-bench-service-")
    env = {**os.environ, "KAFKA_CHAOS_ANALYSIS_SERVICE_DIR": folder}
    got: dict[Path, dict] = {rd: {"wall": [], "analysis": [], "loads": [], "stray": set()} for rd in runs}
    try:
        for i in range(repeat + 1):  # round 0 starts the service and compiles each run's plans: not counted
            for rd in runs if i % 2 else runs[::-1]:
                wall, summary, stray = analyze_cli(rd, env)
                if i:
                    g = got[rd]
                    g["wall"].append(wall)
                    g["analysis"].append(summary["analysis_seconds"])
                    g["loads"].append(os.getloadavg()[0])
                    g["stray"] |= set(stray)
                    g["partitions"] = len(summary["partitions"])
                    g["rows"] = summary["consumed_rows"]
    finally:
        stop_service(folder)
    return [{"run": str(rd), "partitions": g["partitions"], "consumed_rows": g["rows"], "wall_s": _stat(g["wall"]),
             "analysis_s": _stat(g["analysis"]), "load_average": _stat(g["loads"]), "stray_console_lines": sorted(g["stray"])}
            for rd, g in got.items()]


def analyze_cli(run_dir: Path, env: dict) -> tuple[float, dict, list[str]]:
    """Seconds of ``kafka-chaos analyze RUN_DIR --json``, its summary, and the console lines it did not write itself."""
    t = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "harness.cli", "analyze", str(run_dir), "--json"], env=env,
                          capture_output=True, text=True, cwd=Path(__file__).resolve().parents[1])
    wall = time.monotonic() - t
    if done.returncode not in (0, 1):
        raise RuntimeError(f"analyze {run_dir} exited {done.returncode}: {done.stderr[-2000:]}")
    progress = re.compile(r"^\[\s*[0-9.]+s\] ")  # the CLI's own lines, on stderr; stdout is the summary alone
    stray = [line for line in done.stderr.splitlines() if line.strip() and not progress.match(line)]
    return wall, json.loads(done.stdout), stray
    return wall, summary, stray


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
    ap.add_argument("--runs", type=Path, nargs="+", default=None, help="real run directories: timed through "
                    "`kafka-chaos analyze` on a warm service instead of the synthetic cells")
    a = ap.parse_args(argv)
    if a.runs:
        return print_real(measure_real(a.runs, a.repeat), a.out)
    from analysis.api import get_session
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


def print_real(results: list[dict], out: Path | None) -> int:
    print(f"{'partitions':>10} {'rows':>8} {'wall median (min-max)':>24} {'analysis_seconds':>22} {'load':>10}  run")
    for r in results:
        w, x, ld = r["wall_s"], r["analysis_s"], r["load_average"]
        print(f"{r['partitions']:>10} {r['consumed_rows']:>8} {w['median']:>8.2f} ({w['min']:.2f}-{w['max']:.2f}) s "
              f"{x['median']:>7.2f} ({x['min']:.2f}-{x['max']:.2f}) s {ld['min']:.1f}-{ld['max']:.1f}  {Path(r['run']).name}")
        for line in r["stray_console_lines"]:
            print(f"    console: {line}")
    if out:
        out.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
