"""A large run end to end in one invocation (issue 23, item 3): generate, analyse, DuckDB, exact, memory.

    .venv/bin/python -m benchmarks.soak --records 100000000 --order shuffled
    .venv/bin/python -m benchmarks.soak --records 10000000 --order consumption --reuse

1. Generates the seeded synthetic run (benchmarks/synth.py, Parquet) in a child process, or reuses it (--reuse, when
   its truth.json is there); prints the generator's wall time and peak RSS.
2. Starts the analysis service (analysis/service.py) in a folder of its own and warms it on the small built-in run
   (analysis/engine/synthetic.py), so the timed analysis finds the JVM started and compiled, as `kafka-chaos run` does.
3. Times `kafka-chaos analyze RUN --json` in a fresh process (the warm-service path), then DuckDB in a fresh process
   on the same files (benchmarks.cold_analyze's command, benchmarks.bench's query).
4. Checks the analysis's counts against the generator's ground truth, exactly: produced, consumed, duplicated
   offsets, extra deliveries, lost, rebalances and every planted anomaly; DuckDB's counts too.
5. Prints the peak RSS (VmHWM) of the service's Python process (the driver's Python side), of its Spark JVM
   (local mode: driver and executors, heap bounded by spark.driver.memory) and of the CLI and DuckDB processes;
   the load average beside each figure. Stops the service; writes benchmarks/results/soak-<records>-<order>.json.
Exit 0 when every count is exact.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.bench import COUNT_KEYS
from benchmarks.cold_analyze import CLI, ROOT, duckdb_argv, stop_service
from benchmarks.synth import ORDERS

ANOMALY_KEYS = ("skip", "backwards", "duplicate_over_budget", "commit_regression", "unhealed_fault", "stall")
OUTPUT = ("stdout", "stderr")
SERVICE_LINE = "analysis service "  # the service's first log line: "analysis service PID on SOCKET (code ...)"


def load() -> str:
    return "load " + "/".join(f"{x:.1f}" for x in os.getloadavg())


def measured(argv: list[str], env: dict) -> dict:
    """Run argv to its end: wall seconds, exit code, stdout, stderr, peak RSS in MB (the child's ru_maxrss)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t = time.monotonic()
        proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.monotonic() - t
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return {"wall_s": round(wall, 2), "exit": proc.returncode, "stdout": out.read().decode(errors="replace"),
                "stderr": err.read().decode(errors="replace"), "peak_rss_mb": round(usage.ru_maxrss / 1024), "load": load()}


def peak_rss_mb(pid: int) -> int | None:
    """VmHWM of a live process, in MB."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024)
    except OSError:
        pass
    return None


def descendants(pid: int) -> list[int]:
    children = []
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        children += [int(c) for c in task.read_text().split()]
    return children + [d for c in children for d in descendants(c)]


def service_pids(folder: str) -> list[int]:
    """The pids of the services started in ``folder``, from their log: more than one means the warm service left
    (its code changed under it) and the timed analysis ran in a cold one."""
    return [int(line.split()[2]) for log in Path(folder).glob("*.log")
            for line in log.read_text().splitlines() if line.startswith(SERVICE_LINE) and line.split()[2].isdigit()]


def jvm_of(service_pid: int) -> int | None:
    jvms = [c for c in descendants(service_pid) if Path(f"/proc/{c}/comm").read_text().strip() == "java"]
    return jvms[0] if jvms else None


def generated(rd: Path, a, env: dict) -> dict:
    if a.reuse and (rd / "truth.json").is_file():
        return {"reused": True}
    argv = [sys.executable, "-m", "benchmarks.synth", str(rd), "--records", str(a.records), "--order", a.order,
            "--files", str(a.files), "--partitions", str(a.partitions)]
    done = measured(argv, env)
    if done["exit"] != 0:
        raise RuntimeError(f"the generator exited {done['exit']}: {done['stderr'][-2000:]}")
    return {"reused": False, **{k: v for k, v in done.items() if k not in OUTPUT}}


def differences(counts: dict, truth: dict) -> dict:
    return {k: {"got": counts.get(k), "truth": truth[k]} for k in counts if counts.get(k) != truth[k]}


def analysis_counts(summary: dict) -> dict:
    return {**{k: summary[k] for k in COUNT_KEYS}, "rebalances": summary["rebalances"],
            **{k: summary["anomaly_counts"].get(k, 0) for k in ANOMALY_KEYS}}


def summary_of(stdout: str, keep: Path) -> dict:
    """The summary `analyze --json` printed (a JSON object from a line of its own); else stdout is kept for a look."""
    try:
        start = 0 if stdout.startswith("{") else stdout.index("\n{") + 1
        return json.JSONDecoder().raw_decode(stdout, start)[0]
    except ValueError:
        keep.parent.mkdir(parents=True, exist_ok=True)
        keep.write_text(stdout)
        raise RuntimeError(f"no summary in the output of kafka-chaos analyze --json: kept in {keep}") from None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=100_000_000)
    ap.add_argument("--order", choices=ORDERS, default="shuffled")
    ap.add_argument("--files", type=int, default=0, help="consumed files (synth --files; 0: one a member)")
    ap.add_argument("--partitions", type=int, default=12)
    ap.add_argument("--reuse", action="store_true", help="analyse the run already generated there, if any")
    ap.add_argument("--data-dir", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "kafka-chaos-bench")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    a = ap.parse_args(argv)
    rd = a.data_dir / f"soak-{a.records}-{a.order}-f{a.files}-p{a.partitions}-s7"
    figures = {"records": a.records, "order": a.order, "files": a.files, "partitions": a.partitions, "run_dir": str(rd),
               "driver_memory": os.environ.get("KAFKA_CHAOS_SPARK_DRIVER_MEMORY", "4g"), "cpus": os.cpu_count()}
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    figures["generate"] = generated(rd, a, env)
    print(f"generate   {figures['generate']}", flush=True)
    truth = json.loads((rd / "truth.json").read_text())
    figures["input_mb"] = round(sum(p.stat().st_size for sub in ("produced", "consumed") for p in (rd / sub).iterdir()) / 1e6)
    with tempfile.TemporaryDirectory(prefix="kafka-chaos-service-") as folder, \
            tempfile.TemporaryDirectory(prefix="kafka-chaos-warm-") as warm_run:
        env = {**env, "KAFKA_CHAOS_ANALYSIS_SERVICE": "1", "KAFKA_CHAOS_ANALYSIS_SERVICE_DIR": folder}
        try:
            from analysis.api import write_synthetic_run as write_run
            figures["service_start"] = {k: v for k, v in measured(CLI + [str(write_run(Path(warm_run)))], env).items() if k not in OUTPUT}
            print(f"service    started and warmed on the 20,000-record built-in run: {figures['service_start']}", flush=True)
            analysed = measured(CLI + [str(rd), "--json"], env)
            if analysed["exit"] not in (0, 1):  # 1: the planted anomalies make the run invalid
                raise RuntimeError(f"kafka-chaos analyze exited {analysed['exit']}: {analysed['stderr'][-3000:]}")
            pids = service_pids(folder)
            jvm_pid = jvm_of(pids[-1]) if pids else None
            figures["service_starts"] = len(pids)
            figures["service_python_peak_rss_mb"] = peak_rss_mb(pids[-1]) if pids else None
            figures["jvm_peak_rss_mb"] = peak_rss_mb(jvm_pid) if jvm_pid else None
            duck = measured(duckdb_argv(rd), env)
        finally:
            stop_service(folder)
    summary = summary_of(analysed["stdout"], a.out / f"soak-{a.records}-{a.order}-stdout.txt")
    counts = analysis_counts(summary)
    duck_counts = dict(zip(COUNT_KEYS, json.loads(duck["stdout"][duck["stdout"].rindex("["):])))
    figures["analyze"] = {**{k: v for k, v in analysed.items() if k not in OUTPUT}, "counts": counts,
                          "progress": analysed["stderr"].strip().splitlines()[-20:],  # "[ 1.2s] phase: detail"
                          "differences": differences(counts, truth)}
    figures["duckdb"] = {**{k: v for k, v in duck.items() if k not in OUTPUT}, "counts": duck_counts,
                         "differences": differences(duck_counts, truth)}
    figures["ratio"] = round(analysed["wall_s"] / duck["wall_s"], 2)
    figures["exact"] = not figures["analyze"]["differences"] and not figures["duckdb"]["differences"]
    report(figures)
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / f"soak-{a.records}-{a.order}.json").write_text(json.dumps(figures, indent=2) + "\n")
    return 0 if figures["exact"] else 1


def report(f: dict) -> None:
    an, du = f["analyze"], f["duckdb"]
    print(f"records {f['records']:,} ({f['order']}, {f['input_mb']:,} MB of Parquet), the service warm, a fresh CLI process:")
    print(f"  kafka-chaos analyze   {an['wall_s']:8.2f} s   CLI peak RSS {an['peak_rss_mb']} MB   {an['load']}")
    print("".join(f"      {line}\n" for line in an["progress"]), end="")
    print(f"  DuckDB                {du['wall_s']:8.2f} s   peak RSS {du['peak_rss_mb']} MB   {du['load']}")
    print(f"  ratio                 {f['ratio']:8.2f}")
    print(f"  service peak RSS: Python {f['service_python_peak_rss_mb']} MB, Spark JVM {f['jvm_peak_rss_mb']} MB "
          f"(spark.driver.memory {f['driver_memory']}); services started: {f['service_starts']} (1: the analysis ran warm)")
    print(f"  exact: {f['exact']}  analysis {an['differences'] or 'equal to the truth'}; "
          f"DuckDB {du['differences'] or 'equal to the truth'}")


if __name__ == "__main__":
    raise SystemExit(main())
