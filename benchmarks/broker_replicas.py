"""What partition replicas cost a broker of the harness's own cluster, and how many one holds (issue 39, BENCHMARKS.md).

Starts the cluster (3 KRaft brokers by default) with a given heap, then grows the replicas each broker holds step by
step: a topic whose partitions x replication factor bring every broker to the step's count. After each step it waits
until every partition has a leader and its full ISR, and reads each broker's Java process from the host's /proc:
resident memory, open descriptors and memory maps (an active segment maps its offset and time index: the kernel's
vm.max_map_count bounds maps a process). A broker that logged an OutOfMemoryError, or a step whose partitions did not
all get a leader and full ISR in time, ends the heap's series: the step before it is what that heap holds here.

    .venv/bin/python -m benchmarks.broker_replicas --heap 512m --heap 1g --step 2000 --step 5000 --step 10000
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from confluent_kafka.admin import NewTopic

from harness.cluster.kafka import KafkaCluster
from harness.scenario import ClusterSpec

ROOT = Path(__file__).resolve().parents[1]
ISR_TIMEOUT_S = 300
MAX_CREATE = 9_999  # partitions in one CreateTopics: the controller refuses an operation of over 10,000 records


def java_process(host_pid: int) -> int:
    """The broker's JVM: the container's main process or the child it started (the largest resident one)."""
    candidates = [host_pid]
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == host_pid:
                candidates.append(int(entry.name))
        except (OSError, ValueError):
            continue
    return max(candidates, key=lambda pid: _rss_kb(pid))


def _rss_kb(pid: int) -> int:
    try:
        status = (Path("/proc") / str(pid) / "status").read_text()
    except OSError:
        return 0
    return next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0)


def broker_sample(broker) -> dict:
    container = broker.container.get_wrapped_container()
    container.reload()
    state = container.attrs["State"]
    if not state["Running"]:  # the broker died: how, from its own log
        tail = container.logs(tail=300).decode(errors="replace")
        return {"running": False, "exit_code": state["ExitCode"], "oom_killed": state["OOMKilled"],
                "oom": "OutOfMemoryError" in tail, "fds": 0, "last_error": next(
                    (line for line in reversed(tail.splitlines()) if "ERROR" in line or "Exception" in line), None)}
    pid = java_process(state["Pid"])
    proc = Path("/proc") / str(pid)
    return {"rss_mb": round(_rss_kb(pid) / 1024), "fds": len(list((proc / "fd").iterdir())),
            "maps": len((proc / "maps").read_text().splitlines()),
            "oom": "OutOfMemoryError" in container.logs(tail=2000).decode(errors="replace")}


def settled(cluster: KafkaCluster, topics: list[str], replicas: int, deadline: float) -> bool:
    """Every partition of the topics has a leader and its full ISR (metadata from the control lane), and the brokers
    have opened a log for every replica (their descriptors: one a replica's segment). The controller writes a new
    partition's ISR whole at its creation, so the metadata alone says nothing of the brokers' work."""
    while time.monotonic() < deadline:
        md = cluster.admin().list_topics(timeout=30)
        parts = [p for t in topics if t in md.topics for p in md.topics[t].partitions.values()]
        if parts and all(p.leader >= 0 and len(p.isrs) == len(p.replicas) for p in parts) and \
                all(t in md.topics for t in topics) and \
                sum(broker_sample(b)["fds"] for b in cluster.brokers) >= replicas:
            return True
        time.sleep(2)
    return False


def series(heap: str, brokers: int, rf: int, steps: list[int]) -> list[dict]:
    cluster = KafkaCluster(ClusterSpec(brokers=brokers, heap=heap), f"bench-replicas-{heap}-{int(time.time())}")
    rows: list[dict] = []
    try:
        cluster.start()
        held, topics = 0, []
        for step in steps:
            started = time.monotonic()
            while held < step:
                partitions = min(MAX_CREATE, (step - held) * brokers // rf)
                name = f"replicas-{len(topics) + 1}"
                future = cluster.admin().create_topics([NewTopic(name, partitions, rf)], operation_timeout=120,
                                                      request_timeout=120)[name]
                future.result(timeout=180)
                topics.append(name)
                held += partitions * rf // brokers
            try:
                ok = settled(cluster, topics, held * brokers, time.monotonic() + ISR_TIMEOUT_S)
            except Exception as exc:  # a broker gone: its metadata or its /proc with it
                print(f"not settled: {exc}", flush=True)
                ok = False
            samples = [broker_sample(b) for b in cluster.brokers]
            row = {"heap": heap, "replicas_per_broker": held, "settled": ok,
                   "seconds": round(time.monotonic() - started, 1), "brokers": samples}
            rows.append(row)
            print(json.dumps(row), flush=True)
            if not ok or any(s["oom"] or not s.get("running", True) for s in samples):
                break
    finally:
        cluster.stop()
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--heap", action="append", help="a broker heap to measure (repeatable; default 512m and 1g)")
    ap.add_argument("--step", action="append", type=int, help="replicas a broker at each step (repeatable)")
    ap.add_argument("--brokers", type=int, default=3)
    ap.add_argument("--rf", type=int, default=2)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "broker-replicas.json")
    a = ap.parse_args(argv)
    got = {heap: series(heap, a.brokers, a.rf, sorted(a.step or [2000, 5000, 10000]))
           for heap in a.heap or ["512m", "1g"]}
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps({"brokers": a.brokers, "rf": a.rf, "series": got}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
