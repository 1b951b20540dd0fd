"""Time a whole run by phase: `python -m benchmarks.run_phases [SCENARIO] [--repeat N]`.

Runs the scenario N times on its own cluster each time (as `make demo` does) and prints, per run,
the phase timings the harness recorded in run.json, the cluster's start-up steps (cluster.json's start_s),
the analysis time from report/summary.json, and the end-to-end wall time; then the median of each with its
minimum and maximum. The analysis service is stopped first (`kafka-chaos clean`), so the first run starts it
while its group drains, as a run on a fresh machine does; the later runs find it warm.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from benchmarks import spread

ROOT = Path(__file__).resolve().parents[1]


def one_run(scenario: Path, runs_dir: Path) -> dict[str, float]:
    before = set(runs_dir.glob("*")) if runs_dir.exists() else set()
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "harness.cli", "run", str(scenario), "--runs-dir", str(runs_dir)],
                            cwd=ROOT, capture_output=True, text=True)
    wall = time.monotonic() - started
    [run_dir] = set(runs_dir.glob("*")) - before
    figures = dict(json.loads((run_dir / "run.json").read_text())["phases_s"])
    cluster = run_dir / "cluster.json"
    if cluster.exists():
        figures.update({f"  start-up: {k}": v for k, v in json.loads(cluster.read_text()).get("start_s", {}).items()})
    summary = run_dir / "report" / "summary.json"
    if summary.exists():
        figures["analysis"] = json.loads(summary.read_text()).get("analysis_seconds")
    figures["end to end (exit %d)" % result.returncode] = round(wall, 1)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("scenario", nargs="?", type=Path, default=ROOT / "scenarios" / "default.yaml")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--runs-dir", type=Path, default=Path("/tmp/kafka-chaos-bench"))
    args = parser.parse_args()
    subprocess.run([sys.executable, "-m", "harness.cli", "clean"], cwd=ROOT, capture_output=True)
    runs = [one_run(args.scenario.resolve(), args.runs_dir) for _ in range(args.repeat)]
    phases = list(dict.fromkeys(k for run in runs for k in run))
    print(f"{'phase':40}" + "".join(f"{'run ' + str(i + 1):>10}" for i in range(len(runs))) + f"{'median (min-max)':>22}")
    for phase in phases:
        values = [run.get(phase) for run in runs]
        known = [v for v in values if isinstance(v, (int, float))]
        figure = spread(known) if known else "-"
        print(f"{phase:40}" + "".join(f"{v if v is not None else '-':>10}" for v in values) + f"{figure:>22}")


if __name__ == "__main__":
    main()
