"""`kafka-chaos analyze` as a user runs it, against DuckDB as a user would run it (issue 13): a fresh process each
time, on both sides. `python -m benchmarks.cold_analyze [--records N] [--repeat N]`.

On the same seeded synthetic run (benchmarks/synth.py, Parquet), alternately:
- `kafka-chaos analyze RUN` in a fresh process, the analysis service warm (analysis/service.py);
- a fresh Python process that imports duckdb and computes the duplicate and loss counts (benchmarks.bench's query).
Also timed once each: the first call, which starts the service (JVM start and cold JIT), and an analysis in the
CLI's own process without the service (KAFKA_CHAOS_ANALYSIS_SERVICE=0). The service runs from a folder of its own
and is stopped at the end. Prints median (min-max) and the ratio; writes benchmarks/results/cold-analyze-*.json.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import spread

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "harness.cli", "analyze"]


def timed(argv: list[str], env: dict) -> float:
    t = time.monotonic()
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True)
    if done.returncode not in (0, 1):  # 1: the synthetic run has planted anomalies
        raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}: {done.stderr[-2000:]}")
    return time.monotonic() - t


def stop_service(folder: str) -> None:
    """Stop the service of this folder only (not `kafka-chaos clean`: that also removes other runs' containers)."""
    subprocess.run([sys.executable, "-c", "from analysis.api import service; service.stop()"], cwd=ROOT,
                   env={**os.environ, "PYTHONPATH": str(ROOT), "KAFKA_CHAOS_ANALYSIS_SERVICE_DIR": folder}, capture_output=True)


def duckdb_argv(run_dir: Path) -> list[str]:
    """DuckDB as a user runs it: a fresh Python process that imports duckdb and prints the duplicate and loss counts
    of the Parquet run (benchmarks.bench's query), one row in bench.COUNT_KEYS order."""
    from benchmarks.bench import duckdb_query
    return [sys.executable, "-c", "import duckdb; print(list(duckdb.connect().execute('SET enable_progress_bar = false').execute("
            + repr(duckdb_query(run_dir, "parquet")) + ").fetchone()))"]  # no progress bar: stdout is the one row


def main(argv=None) -> int:
    from benchmarks.synth import Plan, generate
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--data-dir", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "kafka-chaos-bench")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    a = ap.parse_args(argv)
    rd = a.data_dir / f"synth-{a.records}-parquet-s7"
    if not (rd / "truth.json").is_file():
        generate(rd, Plan(records=a.records, fmt="parquet", seed=7))
    duck = duckdb_argv(rd)
    with tempfile.TemporaryDirectory(prefix="kafka-chaos-service-") as folder:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "KAFKA_CHAOS_ANALYSIS_SERVICE": "1",
               "KAFKA_CHAOS_ANALYSIS_SERVICE_DIR": folder}
        try:
            without = timed(CLI + [str(rd)], {**env, "KAFKA_CHAOS_ANALYSIS_SERVICE": "0"})
            first = timed(CLI + [str(rd)], env)
            warm, ducks = [], []
            for _ in range(a.repeat):
                ducks.append(timed(duck, env))
                warm.append(timed(CLI + [str(rd)], env))
        finally:
            stop_service(folder)
    ratio = statistics.median(warm) / statistics.median(ducks)
    print(f"records {a.records:,} (Parquet), a fresh process each time:")
    print(f"  kafka-chaos analyze, service warm   {spread(warm, unit=' s')}")
    print(f"  DuckDB (import + query)             {spread(ducks, unit=' s')}")
    print(f"  ratio (medians)                     {ratio:.2f}")
    print(f"  first call (starts the service)     {first:.2f} s")
    print(f"  without the service                 {without:.2f} s")
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / f"cold-analyze-{a.records}-parquet.json").write_text(json.dumps(
        {"records": a.records, "warm_service_s": warm, "duckdb_s": ducks, "ratio_median": round(ratio, 2),
         "first_call_s": first, "without_service_s": without}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
