"""What Toxiproxy costs a client (issue 13): `python -m benchmarks.toxiproxy_cost [--records N] [--repeat N]`.

On one real cluster, the same client work on two paths, alternately (the order flips each round):
- proxied: a workload client's lane, as every member and producer of a run has it (Toxiproxy, then the broker);
- direct: the harness's CONTROL listener, each broker's own port published on loopback (no Toxiproxy).
Produce: N records of 100 bytes flat out (acks=all, idempotent); fetch: the same N read back by a consumer assigned
every partition; latency: 280 single sends waited for one by one. Both paths pass Docker's published-port forwarder,
so the ratio is Toxiproxy's own cost. Prints medians (min-max) and proxied / direct; writes
benchmarks/results/toxiproxy-cost.json.
"""
from __future__ import annotations

import argparse
import statistics
import time
from contextlib import nullcontext
from pathlib import Path

from benchmarks.rpc_proxy import PARTITIONS, compare_paths, fetch_rate, latencies_ms, produce_rate
from harness.cluster import KafkaCluster
from harness.scenario import ClusterSpec

ROOT = Path(__file__).resolve().parents[1]
LANES = ("member-1", "producer-1")


def one_round(cluster: KafkaCluster, path: str, records: int, index: int) -> dict:
    topic = f"bench-{path}-{index}-{time.time_ns()}"
    cluster.create_topic(topic, PARTITIONS, 3)
    produce_to = cluster.lane_bootstrap_servers("producer-1") if path == "proxied" else cluster.control_bootstrap_servers
    fetch_from = cluster.lane_bootstrap_servers("member-1") if path == "proxied" else cluster.control_bootstrap_servers
    lat = sorted(latencies_ms(produce_to, topic))
    return {"produce_per_s": produce_rate(produce_to, topic, records), "fetch_per_s": fetch_rate(fetch_from, topic, records),
            "latency_median_ms": statistics.median(lat), "latency_p99_ms": lat[int(len(lat) * 0.99) - 1]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=500_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "toxiproxy-cost.json")
    args = ap.parse_args(argv)
    with KafkaCluster(ClusterSpec(), run_id=f"bench-toxi-{time.time_ns() % 10**6}", client_lanes=LANES) as cluster:
        compare_paths(cluster, {"direct": nullcontext, "proxied": nullcontext}, one_round, args.records, args.repeat, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
