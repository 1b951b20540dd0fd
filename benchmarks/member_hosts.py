"""What a group member costs on this machine, hosted against one process a member (issue 39, BENCHMARKS.md).

Real runs on a real cluster (run_scenario, the harness's own path): the same group in processes of their own and in
member hosts, one after the other, each through its join and a steady workload. While a run goes on, a sampler reads
/proc of the workload's member processes (workloads.member, workloads.member_host, the Java member program) every
second: resident memory (VmRSS), open descriptors, threads, and CPU time. The figures are per member, over the
window once the group is stable; each run also reports its time from start to stable (the `join` phase).

    .venv/bin/python -m benchmarks.member_hosts --members 20 --per-host 20
    .venv/bin/python -m benchmarks.member_hosts --members 500 --per-host 50 --hosted-only --protocol consumer
    .venv/bin/python -m benchmarks.member_hosts --members 50 --per-host 50 --hosted-only --state 5000
    .venv/bin/python -m benchmarks.member_hosts --members 500 --per-host 50 --start-storm 2 --seconds 20

--start-storm N pairs the hosts' start spacing (consumer_group.start_spacing_ms, the default) against all members
started at once (start_spacing_ms 0), N pairs, the order alternating: each run's time to stable and the
ApiVersionRequest time-outs in its hosts' logs (a new connection's first request waiting past librdkafka's 10 s).
"""
from __future__ import annotations

import argparse
import json
import os
import threading
import time
from pathlib import Path

from workloads.kinds import kinds_that

MEMBER_MODULES = (b"workloads.member", b"workloads.member_host", b"org.kafkachaos")
TICK_S = os.sysconf("SC_CLK_TCK")


def member_pids() -> list[int]:
    """The member processes this harness started (their owner id is ours): not another run's, nor anyone's JVM."""
    from workloads.owner import this_owner
    from workloads.services import OWNER_ENV
    mine = f"{OWNER_ENV}={this_owner()}".encode()
    pids = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            cmdline = (entry / "cmdline").read_bytes()
            if any(m in cmdline for m in MEMBER_MODULES) and mine in (entry / "environ").read_bytes().split(b"\0"):
                pids.append(int(entry.name))
        except OSError:
            continue
    return pids


def sample(pid: int) -> dict | None:
    try:
        status = (Path("/proc") / str(pid) / "status").read_text()
        stat = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    return {"rss_kb": int(fields["VmRSS"].split()[0]), "threads": int(fields["Threads"]), "fds": fds,
            "cpu_s": (int(stat[11]) + int(stat[12])) / TICK_S}


CPUACCT = Path("/sys/fs/cgroup/cpuacct/docker")


def container_cpu_s() -> dict[str, float]:
    """CPU seconds of this run's containers by role (brokers, toxiproxy, ...), from their cgroups (v1 cpuacct), and of
    the whole machine (/proc/stat): where a member's cost lands besides its own process."""
    import docker
    by_role: dict[str, float] = {}
    for c in docker.from_env().containers.list(filters={"name": "kafka-chaos-"}):
        role = "brokers" if c.name.rsplit("-", 2)[-2:][0] == "kafka" else c.name.rsplit("-", 1)[-1]
        try:
            by_role[role] = by_role.get(role, 0.0) + int((CPUACCT / c.id / "cpuacct.usage").read_text()) / 1e9
        except OSError:
            continue
    for name, cpu_s in engine_cpu_s().items():
        by_role[name] = cpu_s
    busy = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    by_role["machine"] = (sum(map(int, busy)) - int(busy[3]) - int(busy[4])) / TICK_S  # all but idle and iowait
    return by_role


ENGINE_PROCESSES = ("docker-proxy", "dockerd", "containerd-shim", "containerd")


def engine_cpu_s() -> dict[str, float]:
    """CPU seconds of the Docker engine's own processes by name: docker-proxy copies every byte a client sends to a
    published port (unless the engine runs with `userland-proxy: false`), outside any container's cgroup."""
    by_name: dict[str, float] = {}
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            name = (entry / "comm").read_text().strip()
            if name.startswith(ENGINE_PROCESSES):
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                key = next(n for n in ENGINE_PROCESSES if name.startswith(n))
                by_name[key] = by_name.get(key, 0.0) + (int(stat[11]) + int(stat[12])) / TICK_S
        except (OSError, StopIteration):
            continue
    return by_name


class Sampler(threading.Thread):
    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.rows: list[dict] = []
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(1.0):
            samples = {pid: s for pid in member_pids() if (s := sample(pid))}
            harness = sample(os.getpid())  # the harness: its request-aware proxy runs in this process
            if samples and harness:
                self.rows.append({"t": time.monotonic(), "processes": len(samples), "harness_cpu_s": harness["cpu_s"],
                                  "containers_cpu_s": container_cpu_s(),
                                  "cpu_by_pid": {pid: s["cpu_s"] for pid, s in samples.items()},
                                  **{k: sum(s[k] for s in samples.values()) for k in ("rss_kb", "threads", "fds")}})


def scenario(members: int, per_host: int | None, client: str, protocol: str, seconds: int, rate: int,
             rpc_proxy: bool = False, config: dict | None = None, join_watch: bool = True,
             keys: int | None = None) -> dict:
    group = {"members": members, "client": client, "protocol": protocol, "config": config or {}}
    if protocol == "classic":
        group |= {"session_timeout_ms": 30_000, "heartbeat_interval_ms": 3000}
    if per_host:
        group["members_per_host"] = per_host
    return {"name": f"bench-hosts-{members}", "topic": {"partitions": 4 * members, "replication_factor": 1},
            "producer": {"records": seconds * rate, "rate": rate}, "consumer_group": group,
            "analysis": {"enabled": False}, "run": {"log_format": "jsonl", "rpc_proxy": rpc_proxy, "join_watch": join_watch},
            **({"state": {"keys_per_partition": keys}} if keys else {})}


def join_seconds(phases: dict[str, float]) -> float | None:
    """The run's join phase ("N members join <group>"), in seconds."""
    return next((v for k, v in phases.items() if "join" in k), None)


def measure(data: dict, runs_root: Path) -> dict:
    from harness.run import run_scenario
    from harness.scenario import parse_scenario
    sampler = Sampler()
    sampler.start()
    start = time.monotonic()
    outcome = run_scenario(parse_scenario(data), runs_root)
    sampler.done.set()
    run = json.loads((outcome.run_dir / "run.json").read_text())
    phases = run.get("phases_s", {})
    join = join_seconds(phases)
    members = data["consumer_group"]["members"]
    # once the group is stable, while every member process runs (not its stop at the end)
    most = max((r["processes"] for r in sampler.rows), default=0)
    steady = [r for r in sampler.rows if r["processes"] == most and r["t"] > start + (join or 0) + 15]
    if len(steady) < 2:
        return {"members": members, "error": "no steady window", "run_dir": str(outcome.run_dir)}
    first, last = steady[0], steady[-1]
    both = first["cpu_by_pid"].keys() & last["cpu_by_pid"].keys()  # CPU time of the processes that ran throughout
    cpu = sum(last["cpu_by_pid"][p] - first["cpu_by_pid"][p] for p in both) / (last["t"] - first["t"])
    harness_cpu = (last["harness_cpu_s"] - first["harness_cpu_s"]) / (last["t"] - first["t"])
    elsewhere = {role: round(100 * (last["containers_cpu_s"][role] - first["containers_cpu_s"].get(role, 0.0))
                             / (last["t"] - first["t"]), 1)
                 for role in last["containers_cpu_s"]}  # % of one core; "machine" is everything, of 2 cores
    return {"members": members, "processes": last["processes"], "join_s": join, "errors": outcome.errors,
            "unsettled": outcome.unsettled, "drained": outcome.drained,
            "rss_mb_per_member": round(max(r["rss_kb"] for r in steady) / 1024 / members, 2),
            "fds_per_member": round(max(r["fds"] for r in steady) / members, 1),
            "threads_per_member": round(max(r["threads"] for r in steady) / members, 1),
            "cpu_pct_per_member": round(100 * cpu / members, 3), "cpu_pct_all": round(100 * cpu, 1),
            "harness_cpu_pct": round(100 * harness_cpu, 1), "cpu_pct_elsewhere": elsewhere, "rpc_proxy": data["run"].get("rpc_proxy", False),
            "join_watch": data["run"].get("join_watch", True), "state": data.get("state"),
            "window_s": round(last["t"] - first["t"]), "load": os.getloadavg()[0], "run_dir": str(outcome.run_dir)}


CONNECT_TIMEOUT_LINE = b"ApiVersionRequest failed"


def connect_timeouts(run_dir: Path) -> int:
    """The hosts' librdkafka lines for a new connection whose first request (ApiVersion) timed out."""
    return sum(p.read_bytes().count(CONNECT_TIMEOUT_LINE) for p in (run_dir / "logs").glob("host-*.log"))


def joined_late(run_dir: Path) -> bool:
    """The group was not stable within its join limit: the harness's `unsettled` row of the join in group.jsonl."""
    rows = (json.loads(line) for line in (run_dir / "group.jsonl").read_text().splitlines() if line.strip())
    return any(r.get("kind") == "unsettled" and r.get("phase") == "join" for r in rows)


def start_run(data: dict, runs_root: Path) -> dict:
    """One run for the start pairing: how long the join took, whether the group became stable, its time-outs."""
    from harness.run import run_scenario
    from harness.scenario import parse_scenario
    scenario_ = parse_scenario(data)
    outcome = run_scenario(scenario_, runs_root)
    stable = not outcome.errors and not joined_late(outcome.run_dir)
    return {"start_spacing_ms": scenario_.consumer_group.effective().start_spacing_ms,
            "join_s": join_seconds(outcome.phases),
            "stable": stable, "connect_timeouts": connect_timeouts(outcome.run_dir), "errors": outcome.errors,
            "load": os.getloadavg()[0], "run_dir": str(outcome.run_dir)}


def start_pairs(a, config: dict) -> list[dict]:
    """--start-storm: the default spacing and all at once, a.start_storm pairs, each pair's order the other's."""
    rows = []
    for pair in range(a.start_storm):
        for spacing in ((None, 0) if pair % 2 == 0 else (0, None)):
            data = scenario(a.members, a.per_host, a.client, a.protocol, a.seconds, a.rate, config=config)
            if spacing is not None:
                data["consumer_group"]["start_spacing_ms"] = spacing
            print(f"== pair {pair + 1}: {a.members} {a.client} members ({a.protocol}), hosts of {a.per_host}, "
                  + ("all at once" if spacing == 0 else "spaced"), flush=True)
            rows.append({"pair": pair + 1, **start_run(data, a.runs_dir)})
            print(json.dumps(rows[-1]), flush=True)
    for label, mine in (("spaced", [r for r in rows if r["start_spacing_ms"]]),
                        ("all at once", [r for r in rows if not r["start_spacing_ms"]])):
        joins = [("no join phase" if r["join_s"] is None else f"{r['join_s']:.1f} s") + ("" if r["stable"] else
                 " (not stable)") for r in mine]
        print(f"{label}: join {', '.join(joins)}; ApiVersion time-outs {[r['connect_timeouts'] for r in mine]}")
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--members", type=int, default=20)
    ap.add_argument("--per-host", type=int, default=20)
    ap.add_argument("--client", default="librdkafka", choices=kinds_that(lambda k: k.hosts))
    ap.add_argument("--protocol", default="classic", choices=("classic", "consumer"))
    ap.add_argument("--seconds", type=int, default=60, help="the producer's time at --rate")
    ap.add_argument("--rate", type=int, default=1000)
    ap.add_argument("--hosted-only", action="store_true", help="no one-process-a-member run (more than 32 members)")
    ap.add_argument("--proxy", action="store_true", help="the hosted run again with every member lane through the "
                    "request-aware proxy (what a hosted crash or cut needs): its cost in the harness process")
    ap.add_argument("--join-watch", action="store_true", help="the hosted run again with run.join_watch false (no "
                    "librdkafka debug=cgrp lines): what the join watch costs")
    ap.add_argument("--state", type=int, default=None, metavar="KEYS", help="the hosted run again with stateful "
                    "members (state: keys_per_partition KEYS, prefilled): what keeping state costs a member (its "
                    "changelog producer and restore consumer)")
    ap.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                    help="a consumer setting of every member (consumer_group.config), e.g. fetch.wait.max.ms=5000")
    ap.add_argument("--start-storm", type=int, default=0, metavar="PAIRS", help="only this: PAIRS pairs of the "
                    "hosted group started spaced (the default) and all at once (start_spacing_ms 0)")
    ap.add_argument("--runs-dir", type=Path, default=Path("runs/bench-member-hosts"))
    ap.add_argument("--out", type=Path, default=None, help="write the figures as JSON here too")
    a = ap.parse_args(argv)
    config = dict(item.split("=", 1) for item in a.config)
    if a.start_storm:
        rows = start_pairs(a, config)
        if a.out:
            a.out.write_text(json.dumps(rows, indent=2) + "\n")
        return 0
    cases = ([] if a.hosted_only else [("one process a member", None, False, True, None)])
    cases += [(f"hosts of {a.per_host}", a.per_host, False, True, None)]
    cases += [(f"hosts of {a.per_host}, lanes through the request-aware proxy", a.per_host, True, True, None)] if a.proxy else []
    cases += [(f"hosts of {a.per_host}, no join watch", a.per_host, False, False, None)] if a.join_watch else []
    cases += [(f"hosts of {a.per_host}, stateful ({a.state} keys a partition)", a.per_host, False, True, a.state)] \
        if a.state else []
    got = {}
    for label, per_host, proxy, watch, keys in cases:
        print(f"== {a.members} {a.client} members ({a.protocol}), {label}", flush=True)
        got[label] = measure(scenario(a.members, per_host, a.client, a.protocol, a.seconds, a.rate, proxy, config, watch,
                                      keys), a.runs_dir)
        print(json.dumps(got[label]), flush=True)
    pairs = [] if a.hosted_only else [("one process a member", list(got)[0], list(got)[1])]
    pairs += [("stateful", list(got)[-1], f"hosts of {a.per_host}")] if a.state else []
    for name, left, right in pairs:
        for key in ("rss_mb_per_member", "fds_per_member", "threads_per_member", "cpu_pct_per_member"):
            if key in got[left] and key in got[right] and got[right][key]:
                print(f"{key}: {left} {got[left][key]} / {right} {got[right][key]} = "
                      f"{got[left][key] / got[right][key]:.2f}x")
    if a.out:
        a.out.write_text(json.dumps(got, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
