"""The public 10-member experiment (issue 40, item 3): a topic grown from 100 to 1,000 partitions under a 10-member
group, classic protocol (at the client's default 5-minute metadata refresh) against KIP-848, on the pinned brokers and
on Kafka 4.0.0. Each run is an ordinary run of scenarios/experiments/grow-100-to-1000-*.yaml on its own cluster,
analysed; the figures are analysis.rebalance_cost's over the window from the partitions' creation to the workload's
end: how long the group took to notice (the first assignment change), to assign and serve all 1,000 partitions, and
the partition-seconds the new partitions waited.

    .venv/bin/python -m benchmarks.partitions_grow [--release 4.3.1 --release 4.0.0] [--repeat 1]
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from analysis.api import analyze

from analysis.api import history

from analysis.api import rebalance_cost
from harness.releases.versions import kafka_version
from harness.run import run_scenario
from harness.scenario import load_scenario, parse_scenario

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "scenarios" / "experiments"
PUBLISHED = {"classic": 103_000, "consumer": 5_000}  # ms, Kafka 4.0, as cited by issue 40


def one_run(protocol: str, release: str, runs: Path) -> dict:
    data = load_scenario(SCENARIOS / f"grow-100-to-1000-{protocol}.yaml").model_dump(mode="json", exclude_unset=True)
    data["cluster"] = {**data.get("cluster", {}), "kafka_version": release}
    scenario = parse_scenario(data, f"grow-100-to-1000-{protocol} on {release}")
    outcome = run_scenario(scenario, runs)
    # the run's folder under --runs, not a path of the machine that ran it
    row = {"protocol": protocol, "release": release, "run_dir": outcome.run_dir.name, "errors": outcome.errors,
           "unsettled": outcome.unsettled}
    if outcome.errors:
        return row
    summary = analyze(outcome.run_dir)
    h = history.build(outcome.run_dir)
    fault = next(f for f in h.faults if f.kind == "partitions_add")
    topic = scenario.topics[0].name
    cost = rebalance_cost.cost(h, fault, [(topic, p) for p in range(1000)], 10, history.workload_stop(h))
    cost.pop("hit_partitions")  # which partitions, not a figure
    return {**row, **cost, "valid": summary["valid"], "lost": summary["lost_records"],
            "duplicates": summary["duplicate_extra_deliveries"], "published_ms": PUBLISHED[protocol]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--release", action="append", help="brokers' Kafka release (repeatable; default: the pinned one "
                    "and 4.0.0)")
    ap.add_argument("--protocol", action="append", choices=("classic", "consumer"))
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--runs", type=Path, default=Path("/tmp/partitions-grow"))
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "partitions-grow.json")
    a = ap.parse_args(argv)
    rows = []
    for release in a.release or [kafka_version(None), "4.0.0"]:
        for _ in range(a.repeat):
            for protocol in a.protocol or ["classic", "consumer"]:
                row = one_run(protocol, release, a.runs)
                rows.append(row)
                print(json.dumps({k: row.get(k) for k in ("protocol", "release", "first_change_ms", "time_to_stable_ms",
                                                          "unserved_partition_s", "rebalances", "valid", "lost",
                                                          "published_ms", "errors", "unsettled")}), flush=True)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
