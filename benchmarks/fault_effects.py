"""How fast each fault bites and lets go: `python -m benchmarks.fault_effects [--repeat N] [--kinds K ...]`.

On one real cluster, for each fault kind: inject it through the same `Fault.build` the nemesis uses,
then measure
- effect: from the end of inject() until the start of the first probe that fails or stalls (a stall is
  only known a time-out later, so this is when the fault had taken hold, not when a client noticed);
- recovery: from the end of heal() until the start of the first probe that succeeds in time.

Two probes, each polled every 50 ms:
- `request`: a fresh TCP connection to the target's lane and one Kafka ApiVersions request (raw bytes:
  no client library retries or caches hide anything); bad = refused, reset, no answer within 1 s, or an
  answer more than 150 ms slower than before the fault;
- `isr`: the ISR of the partitions the target broker leads or follows, read on the harness's own
  CONTROL lane; bad = a replica missing from the ISR; good = every ISR full again.
Prints a table (median, min and max over --repeat) and writes benchmarks/results/fault-effects.json.
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from pathlib import Path

from benchmarks import spread
from faults.context import FaultContext
from faults.timeline import FaultTimeline
from harness.cluster.kafka import KafkaCluster
from harness.scenario import FAULT_ENTRY, ClusterSpec
from kafkanet.probe import api_versions_roundtrip

ROOT = Path(__file__).resolve().parents[1]
POLL_S = 0.05
SLOWER_THAN_BASELINE_S = 0.15
GIVE_UP_S = 120
PROBE_TOPIC = "kafka-chaos-probe"

# kind -> (scenario fault entry without at_s/duration_s, probe, how long the fault is held)
CASES: dict[str, tuple[dict, str, float]] = {
    "broker_freeze": ({"target": "kafka-2"}, "request", 3),
    "proxy_cut": ({"target": "kafka-2"}, "request", 3),
    "latency": ({"target": "kafka-2", "latency_ms": 500}, "request", 3),
    "bandwidth": ({"target": "kafka-2", "rate_kb_s": 1}, "request", 3),  # the answer is a few hundred bytes
    "slicer": ({"target": "kafka-2", "average_size": 50, "delay_us": 100_000}, "request", 3),
    "reset_peer": ({"target": "kafka-2", "timeout_ms": 0}, "request", 3),
    "timeout": ({"target": "kafka-2", "timeout_ms": 0}, "request", 3),
    "limit_data": ({"target": "kafka-2", "bytes": 20}, "request", 3),
    "member_cut": ({"target": "member-1"}, "request", 3),
    "broker_crash": ({"target": "kafka-2"}, "request", 3),
    "broker_restart": ({"target": "kafka-2"}, "request", 3),
    "isolate_broker": ({"target": "kafka-2"}, "isr", 15),  # the controller fences it after its 9 s session
    "split": ({"target": "kafka-2"}, "isr", 15),
}
CLIENT_LANES = ("member-1",)  # member_cut's target


def isr_full(cluster: KafkaCluster, topics: list[str]) -> bool:
    metadata = cluster.admin().list_topics(timeout=5)
    for topic in topics:
        for partition in metadata.topics[topic].partitions.values():
            if sorted(partition.isrs) != sorted(partition.replicas):
                return False
    return True


def wait_for(condition, since: float) -> float | None:
    """Seconds from `since` until the start of the first probe for which `condition` held."""
    deadline = since + GIVE_UP_S
    while (started := time.monotonic()) < deadline:
        if condition():
            return started - since
        time.sleep(POLL_S)
    return None


def probe_address(cluster: KafkaCluster, target: str) -> str:
    """A broker's CLIENT proxy, or a workload client's own lane to the first broker."""
    if target in cluster.client_lanes:
        return cluster.brokers[0].lane_addresses[target]
    return cluster.broker(target).client_address


def measure(cluster: KafkaCluster, kind: str, entry: dict, probe: str, hold_s: float) -> dict:
    spec = FAULT_ENTRY.validate_python({"kind": kind, **entry, "at_s": 0, "duration_s": hold_s})
    ctx = FaultContext(cluster, {}, FaultTimeline(None), random.Random(0), "probe-group", PROBE_TOPIC)
    fault = spec.fault_class.build(ctx, spec.target, spec.params)
    address = probe_address(cluster, fault.target) if probe == "request" else None
    baseline = statistics.median(t for t in (api_versions_roundtrip(address) for _ in range(5)) if t) if address else 0

    def bad() -> bool:
        if probe == "isr":
            return not isr_full(cluster, [PROBE_TOPIC])
        took = api_versions_roundtrip(address)
        return took is None or took > baseline + SLOWER_THAN_BASELINE_S

    fault.inject()
    effect = wait_for(bad, time.monotonic())
    time.sleep(max(0.0, hold_s - (effect or 0)))
    heal_started = time.monotonic()
    fault.heal()  # a crashed broker's heal itself waits until it has registered again
    heal_s = time.monotonic() - heal_started
    recovery = wait_for(lambda: not bad(), time.monotonic())
    return {"effect_s": effect, "heal_s": round(heal_s, 2), "recovery_s": recovery}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--kinds", nargs="*", default=list(CASES), choices=list(CASES))
    args = parser.parse_args()
    results: dict[str, list[dict]] = {}
    with KafkaCluster(ClusterSpec(), run_id=f"bench-faults-{random.randrange(16**6):06x}",
                      client_lanes=CLIENT_LANES) as cluster:
        cluster.create_topic(PROBE_TOPIC, 3, 3)
        for _ in range(args.repeat):
            for kind in args.kinds:
                entry, probe, hold_s = CASES[kind]
                results.setdefault(kind, []).append(measure(cluster, kind, entry, probe, hold_s))
                wait_for(lambda: isr_full(cluster, [PROBE_TOPIC]), time.monotonic())  # the next starts healthy
    print_table(results)
    out = ROOT / "benchmarks" / "results" / "fault-effects.json"
    out.write_text(json.dumps(results, indent=2))
    print(f"raw figures: {out.relative_to(ROOT)}")


def print_table(results: dict[str, list[dict]]) -> None:
    def cell(values: list) -> str:
        known = [v for v in values if v is not None]
        if not known:
            return "never"
        text = spread(known)
        return text + (f" +{len(values) - len(known)} never" if len(known) < len(values) else "")

    print(f"{'kind':16} {'probe':8} {'inject -> effect, s':26} {'heal() took, s':26} {'heal -> recovered, s':26}")
    for kind, runs in results.items():
        print(f"{kind:16} {CASES[kind][1]:8} {cell([r['effect_s'] for r in runs]):26} "
              f"{cell([r['heal_s'] for r in runs]):26} {cell([r['recovery_s'] for r in runs]):26}")


if __name__ == "__main__":
    main()
