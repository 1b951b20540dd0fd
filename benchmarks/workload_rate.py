"""Is the workload ever the bottleneck? `python -m benchmarks.workload_rate [--records N] [--repeat N]`.

On one real cluster, for each member client (librdkafka as shipped, librdkafka pinned to an older
confluent-kafka, Java VerifiableConsumer): one producer flat out (`rate: 0`) and one member, every
record logged as in any run (JSONL, flushed per batch). From the logs:
- producer: acked records per second (first to last acknowledgement);
- member: logged records per second (first to last consumed_at), and how long after the last
  acknowledgement the member logged its last record (its catch-up: near zero means it kept pace with
  a producer running flat out, so its own rate is a lower bound).
Also the first-use cost of a pinned client (an empty kafka-chaos client cache; pip's and Maven's own
caches are left as they are, as on a CI machine that ran setup) and the cost once cached.
Prints a table and writes benchmarks/results/workload-rate.json.
"""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from harness.cluster.kafka import KafkaCluster
from harness.progress import say
from harness.releases import client_versions
from harness.run import run_scenario
from harness.scenario import ClusterSpec, parse_scenario
from workloads.kinds import member_kind

ROOT = Path(__file__).resolve().parents[1]
CASES = {"librdkafka (shipped)": {"client": "librdkafka"},
         "librdkafka (confluent-kafka 2.9.0)": {"client": "librdkafka", "version": "2.9.0"},
         "java (VerifiableConsumer)": {"client": "java"}}


def rows(folder: Path) -> list[dict]:
    return [json.loads(line) for path in sorted(folder.glob("*.jsonl")) for line in path.read_text().splitlines() if line]


def one_run(cluster: KafkaCluster, group: dict, records: int, runs: Path, index: int) -> dict:
    scenario = parse_scenario({"name": f"rate-{index}", "topic": {"name": f"rate-{index}-{time.time_ns()}"},
                               "producer": {"records": records, "rate": 0},
                               "consumer_group": {**group, "members": 1, "group_id": f"rate-{time.time_ns()}"},
                               "run": {"log_format": "jsonl"}, "analysis": {"enabled": False}})
    outcome = run_scenario(scenario, runs, cluster=cluster)
    acked = sorted(r["acked_at_ms"] for r in rows(outcome.run_dir / "produced") if r["status"] == "ok")
    consumed = sorted(r["consumed_at_ms"] for r in rows(outcome.run_dir / "consumed"))
    return {"producer_per_s": len(acked) / max(1e-3, (acked[-1] - acked[0]) / 1000),
            "member_per_s": len(consumed) / max(1e-3, (consumed[-1] - consumed[0]) / 1000),
            "member_catch_up_ms": consumed[-1] - acked[-1], "consumed": len(consumed), "acked": len(acked)}


def install_cost(kind: str, version: str) -> dict:
    install = client_versions.librdkafka_client if member_kind(kind).library == "librdkafka" else client_versions.java_client
    saved = client_versions.CACHE
    with tempfile.TemporaryDirectory() as empty:
        client_versions.CACHE = Path(empty)
        try:
            started = time.monotonic()
            install(version, log=say)
            first = time.monotonic() - started
            started = time.monotonic()
            install(version, log=say)
            cached = time.monotonic() - started
        finally:
            client_versions.CACHE = saved
    return {"first_use_s": round(first, 1), "cached_s": round(cached, 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    results: dict = {"records": args.records, "rates": {}, "pinned": {}}
    with tempfile.TemporaryDirectory() as runs, \
            KafkaCluster(ClusterSpec(spare_lanes=0), run_id="bench-rate", client_lanes=("member-1", "producer-1")) as cluster:
        for name, group in CASES.items():
            say(f"{name}: {args.repeat} run(s) of {args.records} records")
            results["rates"][name] = [one_run(cluster, group, args.records, Path(runs), i) for i in range(args.repeat)]
    for kind, version in (("librdkafka", "2.9.0"), ("java", "3.2.0")):
        say(f"pinned {kind} {version}: first use and cached")
        results["pinned"][f"{kind} {version}"] = install_cost(kind, version)

    print(f"\n{'member client':38} {'producer rec/s':>15} {'member rec/s':>13} {'catch-up ms':>12}")
    for name, runs_ in results["rates"].items():
        med = {k: statistics.median(r[k] for r in runs_) for k in ("producer_per_s", "member_per_s", "member_catch_up_ms")}
        print(f"{name:38} {med['producer_per_s']:>15,.0f} {med['member_per_s']:>13,.0f} {med['member_catch_up_ms']:>12,.0f}")
    print(f"\n{'pinned client':38} {'first use s':>12} {'cached s':>9}")
    for name, cost in results["pinned"].items():
        print(f"{name:38} {cost['first_use_s']:>12} {cost['cached_s']:>9}")
    out = ROOT / "benchmarks" / "results" / "workload-rate.json"
    out.write_text(json.dumps(results, indent=2))
    print(f"\nwritten: {out}")


if __name__ == "__main__":
    main()
