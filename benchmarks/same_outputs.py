"""A change of layout, not of behaviour (issue 52): the same outputs from two checkouts of the project.

- plans: every scenario of the catalog (scenarios/, its zoo and experiments) and every cell of every sweep file,
  compiled offline into its plan (`kafka-chaos validate --plan`), must give the same plan.json in both checkouts;
- runs: each run directory given is analysed by each checkout (a copy each, so the run directory is left as it is),
  and its report/summary.json and anomalies.jsonl must be equal field by field, apart from timings;
- sweep cells: each cell given (a sweep folder's cell whose run directory it kept) is measured again by each
  checkout as `kafka-chaos sweep --refigure` measures it (harness.sweep.runner.measure, on a copy), and the rows must
  be equal field by field.

Prints what it compared and every difference; exits 1 on a difference.

    .venv/bin/python -m benchmarks.same_outputs --before /path/to/old/checkout [--run RUN_DIR ...]
        [--sweep SWEEP_FILE:SWEEP_FOLDER:CELL_ID ...]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# what differs between two analyses of one run directory whatever the code: how long it took, where the copy stood
TIMINGS = {"analysis_seconds", "run_dir"}

PLANS = """
import json, sys
from pathlib import Path
from harness.plan import compile_plan
from harness.scenario import load_scenario, parse_scenario
from harness.sweep.spec import load_sweep
root = Path(sys.argv[1])
out = {}
for path in sorted(p for p in (root / "scenarios").rglob("*.yaml") if "sweep" not in p.parts):
    out[str(path.relative_to(root))] = compile_plan(load_scenario(path), offline=True).to_json()
for path in sorted((root / "scenarios" / "sweep").glob("*.yaml")):
    spec = load_sweep(path)
    for cell in spec.cells():
        scenario = parse_scenario(spec.cell_scenario(cell), cell.id)
        out[f"{path.relative_to(root)}:{cell.id}"] = compile_plan(scenario, offline=True).to_json()
print(json.dumps(out))
"""


CELL = """
import json, shutil, sys, tempfile
from pathlib import Path
from analysis.api import get_session
from harness.sweep.runner import measure
from harness.sweep.spec import load_sweep
from harness.sweep.store import SweepDir
sweep_file, folder, cell_id, work = sys.argv[1:5]
spec = load_sweep(Path(sweep_file))
row = SweepDir(Path(folder)).finished()[cell_id]
cell = next(c for c in spec.cells() if c.id == cell_id)
source = SweepDir(Path(folder)).run_dir(row)
copy = Path(work) / source.name
shutil.copytree(source, copy, ignore=shutil.ignore_patterns("report"))
topic = json.loads((copy / "plan.json").read_text())["topics"][0]["name"]
print(json.dumps(measure(spec, cell, copy, topic, get_session()), default=str))
"""


def python_of(checkout: Path) -> list[str]:
    return [str(ROOT / ".venv" / "bin" / "python")]


def env_of(checkout: Path) -> dict:
    """The checkout's code, analysing in its own process: never a warm analysis service, which runs the code it
    started with (analysis/service.py)."""
    return {**os.environ, "PYTHONPATH": str(checkout), "KAFKA_CHAOS_ANALYSIS_SERVICE": "0"}


def plans(checkout: Path) -> dict:
    """Every catalog scenario's and sweep cell's plan, compiled by `checkout`'s code from this checkout's files."""
    done = subprocess.run([*python_of(checkout), "-c", PLANS, str(ROOT)], env=env_of(checkout), cwd=checkout,
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def analysed(checkout: Path, run_dir: Path, work: Path) -> tuple[dict, list[dict]]:
    """summary.json and anomalies.jsonl of `checkout`'s analysis of a copy of `run_dir`."""
    copy = work / f"{checkout.name}-{run_dir.name}"
    shutil.copytree(run_dir, copy, ignore=shutil.ignore_patterns("report"))
    subprocess.run([*python_of(checkout), "-m", "analysis", "analyze", str(copy)], env=env_of(checkout),
                   cwd=checkout, check=False, capture_output=True)
    report = copy / "report"
    anomalies = [json.loads(line) for line in (report / "anomalies.jsonl").read_text().splitlines() if line.strip()]
    return json.loads((report / "summary.json").read_text()), anomalies


def measured(checkout: Path, cell: str, work: Path) -> dict:
    """A sweep cell's row as `checkout`'s sweep measures it (sweep file:folder:cell id), from a copy of its run."""
    sweep_file, folder, cell_id = cell.split(":")
    place = work / f"{checkout.name}-{cell_id}"
    place.mkdir()
    done = subprocess.run([*python_of(checkout), "-c", CELL, str(Path(sweep_file).resolve()),
                           str(Path(folder).resolve()), cell_id, str(place)],
                          env=env_of(checkout), cwd=checkout, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def differences(before, after, where: str = "") -> list[str]:
    """Every field that differs, by its path (timings left out)."""
    if isinstance(before, dict) and isinstance(after, dict):
        keys = (before.keys() | after.keys()) - TIMINGS
        return [d for k in sorted(keys, key=str) for d in differences(before.get(k), after.get(k), f"{where}.{k}")]
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        return [d for i, (b, a) in enumerate(zip(before, after)) for d in differences(b, a, f"{where}[{i}]")]
    return [] if before == after else [f"{where or '.'}: {json.dumps(before)[:200]} -> {json.dumps(after)[:200]}"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", type=Path, required=True, help="the checkout of the code before the change")
    ap.add_argument("--run", type=Path, action="append", default=[], metavar="RUN_DIR",
                    help="a run directory to analyse with both (repeatable)")
    ap.add_argument("--sweep", action="append", default=[], metavar="SWEEP_FILE:FOLDER:CELL",
                    help="a sweep cell (its sweep file, the sweep's folder, its id) to measure with both (repeatable)")
    ap.add_argument("--no-plans", action="store_true", help="compare the run directories and cells only")
    args = ap.parse_args(argv)
    found = []
    if not args.no_plans:
        old, new = plans(args.before.resolve()), plans(ROOT)
        found += differences(old, new, "plans")
        print(f"plans: {len(new)} compiled by each checkout (catalog scenarios and sweep cells), "
              f"{len(found)} difference(s)")
    with tempfile.TemporaryDirectory() as work:
        for run_dir in args.run:
            before = analysed(args.before.resolve(), run_dir, Path(work))
            after = analysed(ROOT, run_dir, Path(work))
            diff = differences(before[0], after[0], "summary") + differences(before[1], after[1], "anomalies")
            print(f"run {run_dir}: {len(before[1])} anomaly rows, {len(diff)} difference(s)")
            found += diff
        for cell in args.sweep:
            diff = differences(measured(args.before.resolve(), cell, Path(work)), measured(ROOT, cell, Path(work)),
                               "row")
            print(f"sweep cell {cell}: {len(diff)} difference(s)")
            found += diff
    for line in found:
        print(f"  {line}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
