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

import statistics
import time
from contextlib import nullcontext

from benchmarks.rpc_proxy import PARTITIONS, compare_main, fetch_rate, latencies_ms, produce_rate
from harness.cluster.kafka import KafkaCluster

def one_round(cluster: KafkaCluster, path: str, records: int, index: int) -> dict:
    topic = f"bench-{path}-{index}-{time.time_ns()}"
    cluster.create_topic(topic, PARTITIONS, 3)
    produce_to = cluster.lane_bootstrap_servers("producer-1") if path == "proxied" else cluster.control_bootstrap_servers
    fetch_from = cluster.lane_bootstrap_servers("member-1") if path == "proxied" else cluster.control_bootstrap_servers
    lat = sorted(latencies_ms(produce_to, topic))
    return {"produce_per_s": produce_rate(produce_to, topic, records), "fetch_per_s": fetch_rate(fetch_from, topic, records),
            "latency_median_ms": statistics.median(lat), "latency_p99_ms": lat[int(len(lat) * 0.99) - 1]}


def main(argv=None) -> int:
    return compare_main(argv, __doc__, "toxiproxy-cost", 500_000, lambda cluster: {"direct": nullcontext, "proxied": nullcontext},
                        one_round)

if __name__ == "__main__":
    raise SystemExit(main())
