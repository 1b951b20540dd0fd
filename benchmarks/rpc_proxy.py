"""What the request-aware proxy costs: `python -m benchmarks.rpc_proxy [--records N] [--repeat N]`.

On one real cluster, a client's lane as every run has it (Toxiproxy to the broker) against the same lane
with kafkanet/rpc_proxy.py behind Toxiproxy (no rule: every byte passed on), alternately (the order flips each round):
- produce: N records of 100 bytes flat out (acks=all, idempotent), acked records per second;
- fetch: the same N records read back by a consumer assigned every partition, records per second;
- latency: 300 single sends, each waited for (acks=all, linger 0): median and p99 round trip.
Prints the medians, min-max and the ratios (proxy / direct), and writes benchmarks/results/rpc-proxy.json.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
from contextlib import nullcontext
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition

from harness.cluster.kafka import KafkaCluster
from harness.progress import say
from harness.scenario import ClusterSpec

ROOT = Path(__file__).resolve().parents[1]
LANES = ("member-1", "producer-1")
PARTITIONS = 6


def produce_rate(bootstrap: str, topic: str, records: int) -> float:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True, "linger.ms": 5})
    value, acked, t0 = b"x" * 100, [0], time.monotonic()
    for i in range(records):
        while True:
            try:
                producer.produce(topic, value, key=str(i).encode(), on_delivery=lambda err, msg: acked.__setitem__(0, acked[0] + (err is None)))
                break
            except BufferError:
                producer.poll(0.01)
    producer.flush(120)
    assert acked[0] == records, f"{acked[0]} of {records} acked"
    return records / (time.monotonic() - t0)


def fetch_rate(bootstrap: str, topic: str, records: int) -> float:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{topic}", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    got, t0 = 0, time.monotonic()
    while got < records and time.monotonic() - t0 < 300:
        got += len([m for m in consumer.consume(1000, 1.0) if not m.error()])
    elapsed = time.monotonic() - t0
    consumer.close()
    assert got >= records, f"fetched {got} of {records}"
    return records / elapsed


def latencies_ms(bootstrap: str, topic: str, sends: int = 300) -> list[float]:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
    out = []
    for i in range(sends):
        t0 = time.monotonic()
        producer.produce(topic, b"y" * 100, partition=i % PARTITIONS)
        producer.flush(30)
        out.append((time.monotonic() - t0) * 1000)
    return out[20:]  # the first sends open connections and fetch metadata


def one_round(cluster: KafkaCluster, path: str, records: int, index: int) -> dict:
    topic = f"bench-{path}-{index}-{time.time_ns()}"
    cluster.create_topic(topic, PARTITIONS, 3)
    produced = produce_rate(cluster.lane_bootstrap_servers("producer-1"), topic, records)
    fetched = fetch_rate(cluster.lane_bootstrap_servers("member-1"), topic, records)
    lat = sorted(latencies_ms(cluster.lane_bootstrap_servers("producer-1"), topic))
    return {"produce_per_s": produced, "fetch_per_s": fetched, "latency_median_ms": statistics.median(lat),
            "latency_p99_ms": lat[int(len(lat) * 0.99) - 1]}


KEYS = ("produce_per_s", "fetch_per_s", "latency_median_ms", "latency_p99_ms")


def compare_paths(cluster: KafkaCluster, paths: dict, one_round, records: int, repeat: int, out: Path) -> dict:
    """Every path (name -> a context manager factory that sets it up) once a round, the order flipped each round:
    a path that always ran first (cold page cache, new log segments) would be favoured. Prints each figure's
    median (min-max) per path and the second path's ratio to the first; writes the rounds and the summary."""
    names = list(paths)
    results: dict[str, list[dict]] = {name: [] for name in names}
    for i in range(repeat):
        for name in names if i % 2 == 0 else names[::-1]:
            with paths[name]():
                results[name].append(one_round(cluster, name, records, i))
            say(f"round {i + 1} {name}: {results[name][-1]}")
    (base, other), summary = names, {}
    for key in KEYS:
        b, o = [r[key] for r in results[base]], [r[key] for r in results[other]]
        ratio = statistics.median(o) / statistics.median(b)
        summary[key] = {f"{base}_median": statistics.median(b), f"{base}_min_max": [min(b), max(b)],
                        f"{other}_median": statistics.median(o), f"{other}_min_max": [min(o), max(o)],
                        f"{other}_to_{base}": ratio}
        print(f"{key:18} {base} {statistics.median(b):10.1f} ({min(b):.1f}-{max(b):.1f})   {other} {statistics.median(o):10.1f} "
              f"({min(o):.1f}-{max(o):.1f})   {other}/{base} {ratio:.2f}")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"records": records, "repeat": repeat, "rounds": results, "summary": summary}, indent=2) + "\n")
    return summary


def compare_main(argv, doc: str, name: str, records: int, paths_of, one_round) -> int:
    """A comparison benchmark's command line (--records, --repeat, --out) on a cluster of its own; `paths_of(cluster)`
    gives compare_paths its paths."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=records, help=f"records produced and fetched a round (default {records})")
    ap.add_argument("--repeat", type=int, default=3, help="rounds, each path once a round (default 3)")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / f"{name}.json",
                    help=f"where the rounds and the summary are written (default benchmarks/results/{name}.json)")
    args = ap.parse_args(argv)
    with KafkaCluster(ClusterSpec(), run_id=f"bench-{name}-{time.time_ns() % 10**6}", client_lanes=LANES) as cluster:
        compare_paths(cluster, paths_of(cluster), one_round, args.records, args.repeat, args.out)
    return 0


def main(argv=None) -> int:
    return compare_main(argv, __doc__, "rpc-proxy", 200_000,
                        lambda cluster: {"direct": nullcontext, "proxy": lambda: cluster.proxied_lanes(list(LANES))}, one_round)


if __name__ == "__main__":
    raise SystemExit(main())
