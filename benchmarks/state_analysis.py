"""The exact state check's cost (issue 54, BENCHMARKS): a stateful synthetic run analysed warm against the same run
without state.

Two runs from one seed (benchmarks/synth.py): the same records, members, rebalances and planted anomalies; one with
``--state-keys KEYS`` (keys k<seq mod KEYS>, state/ written as stateful members write it: a row a change applied,
re-deliveries applied again, and each key's final value), one without. Both are analysed in one warm Spark session,
alternately, REPEAT times after a first analysis of each (not counted). Prints each side's median, min and max, the
ratio of the medians, the state check's phase, and whether its counts match the generator's truth (every input
offset applied twice is one state_duplicate or state_duplicate_within_budget; nothing is state_lost). Exit 0 when
exact.

``--run DIR`` measures a real stateful run instead: the run copied as it is and without its state/ (its other checks
the same), no truth to hold the counts to.

    .venv/bin/python -m benchmarks.state_analysis --records 100000 --keys 1000000 --repeat 5
    .venv/bin/python -m benchmarks.state_analysis --run sweeps/state-rebuild/runs/<a 50-member cell> --repeat 5
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import time
from pathlib import Path

from benchmarks.synth import Plan, generate

STATE_CHECKS = ("state_duplicate", "state_duplicate_within_budget", "state_lost")


def runs(data: Path, records: int, keys: int, partitions: int) -> dict[str, Path]:
    out = {}
    for name, state_keys in (("stateless", 0), ("stateful", keys)):
        rd = data / f"state-{records}-{keys}-{partitions}-{name}"
        if not (rd / "truth.json").is_file():
            generate(rd, Plan(records=records, partitions=partitions, state_keys=state_keys))
        out[name] = rd
    return out


def real_runs(data: Path, run: Path) -> dict[str, Path]:
    """The real run's two copies: as it is, and without state/ (the report folder of neither: analysis writes it)."""
    out = {}
    for name in ("stateless", "stateful"):
        rd = data / f"real-{run.name}-{name}"
        if not rd.is_dir():
            shutil.copytree(run, rd, ignore=shutil.ignore_patterns("report", *(["state"] if name == "stateless" else [])))
        out[name] = rd
    return out


def measure(rds: dict[str, Path], repeat: int) -> dict:
    from analysis.api import analyze, get_session
    spark = get_session()
    walls = {name: [] for name in rds}
    phases = {name: [] for name in rds}
    summaries = {name: analyze(rd, spark=spark) for name, rd in rds.items()}  # first analyses: not counted
    for i in range(repeat):
        for name, rd in (rds.items() if i % 2 else reversed(rds.items())):
            marks = []
            t = time.monotonic()
            summaries[name] = analyze(rd, spark=spark, progress=lambda phase, detail="": marks.append((phase, time.monotonic())))
            walls[name].append(time.monotonic() - t)
            ends = [m[1] for m in marks[1:]] + [t + walls[name][-1]]
            phases[name].append({phase: end - start for (phase, start), end in zip(marks, ends)})
    return {name: {"wall_s": _stat(walls[name]),
                   "phases_s": {p: _stat([x.get(p, 0.0) for x in phases[name]]) for p in phases[name][0]},
                   "counts": {k: summaries[name]["anomaly_counts"].get(k) for k in STATE_CHECKS}}
            for name in rds} | {"load_average": os.getloadavg()[0]}


def exact(result: dict, truth: dict) -> bool:
    c = result["stateful"]["counts"]
    return (c["state_duplicate"] + c["state_duplicate_within_budget"] == truth["state_doubled"]
            and c["state_lost"] == 0)


def _stat(xs: list[float]) -> dict:
    return {"median": round(statistics.median(xs), 2), "min": round(min(xs), 2), "max": round(max(xs), 2)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=100_000, help="consumed records, about (each a state update)")
    ap.add_argument("--keys", type=int, default=1_000_000, help="the stateful run's key space")
    ap.add_argument("--partitions", type=int, default=10, help="the keys a multiple of it")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--data", type=Path, default=Path("/tmp/kafka-chaos-bench"))
    ap.add_argument("--run", type=Path, default=None, help="a real stateful run directory to measure instead")
    ap.add_argument("--out", type=Path, default=None, help="write the figures as JSON here too")
    a = ap.parse_args(argv)
    if a.run is not None and not (a.run / "state").is_dir():
        ap.error(f"--run {a.run}: not a stateful run directory (no state/)")
    rds = real_runs(a.data, a.run) if a.run else runs(a.data, a.records, a.keys, a.partitions)
    head = {"run": str(a.run)} if a.run else {"records": a.records, "keys": a.keys, "partitions": a.partitions}
    result = {**head, **measure(rds, a.repeat)}
    result["ratio"] = round(result["stateful"]["wall_s"]["median"] / result["stateless"]["wall_s"]["median"], 2)
    truth = None if a.run else json.loads((rds["stateful"] / "truth.json").read_text())
    result["exact"] = exact(result, truth) if truth else None
    for name in rds:
        w, ph = result[name]["wall_s"], result[name]["phases_s"]
        print(f"{name:>9}: {w['median']:.2f} s ({w['min']:.2f}-{w['max']:.2f}); checks {ph.get('checks', {}).get('median', 0):.2f} s")
    against = f" against {truth['state_doubled']} applied twice: {'exact' if result['exact'] else 'NOT EXACT'}" if truth else ""
    print(f"ratio {result['ratio']}x; state counts {result['stateful']['counts']}{against}; load {result['load_average']:.1f}")
    if a.out:
        a.out.write_text(json.dumps(result, indent=2) + "\n")
    return 1 if result["exact"] is False else 0


if __name__ == "__main__":
    raise SystemExit(main())
