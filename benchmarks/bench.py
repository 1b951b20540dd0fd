"""Analysis benchmark (issue 3 item 6): `kafka-chaos analyze` against DuckDB on the same files, same run.

A seeded synthetic run (benchmarks/synth.py: 10M consumed records by default, eager rebalances, planted
duplicates, losses, a skip, a step back, a commit regression, an unhealed fault) is analysed by
analysis.analyze() in a warm Spark session and by DuckDB computing the duplicate and loss counts, alternately,
REPEAT times each. Both must give identical counts (and the generator's ground truth). Prints a table and
writes benchmarks/results/<name>.json.

    .venv/bin/python -m benchmarks.bench --records 10000000 --format parquet
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

COUNT_KEYS = ("duplicated_offsets", "duplicate_extra_deliveries", "lost_records", "consumed_rows", "produced_records")


def duckdb_query(run_dir: Path, fmt: str) -> str:
    def src(sub, cols):
        if fmt == "parquet":
            return f"read_parquet('{run_dir}/{sub}/*.parquet')"
        spec = ", ".join(f"'{c}': '{t}'" for c, t in cols.items())
        return f"read_json('{run_dir}/{sub}/*.jsonl', format='newline_delimited', columns={{{spec}}})"
    consumed = src("consumed", {"topic": "VARCHAR", "partition": "INTEGER", "offset": "BIGINT"})
    produced = src("produced", {"topic": "VARCHAR", "partition": "INTEGER", "offset": "BIGINT", "status": "VARCHAR"})
    # one aggregation of consumed, one full outer join with the acked records
    return f"""
        WITH c AS (SELECT topic, partition, "offset", count(*) AS n FROM {consumed} GROUP BY ALL),
             p AS (SELECT topic, partition, "offset" FROM {produced} WHERE status IS NULL OR status = 'ok')
        SELECT count(*) FILTER (WHERE c.n > 1) AS duplicated_offsets,
               coalesce(sum(c.n - 1) FILTER (WHERE c.n > 1), 0) AS duplicate_extra_deliveries,
               count(*) FILTER (WHERE c.n IS NULL) AS lost_records,
               coalesce(sum(c.n), 0) AS consumed_rows,
               count(p."offset") AS produced_records
        FROM c FULL OUTER JOIN p USING (topic, partition, "offset")"""


def run(records: int, fmt: str, repeat: int, data_dir: Path, seed: int, cold_cli: bool, compact: bool = False) -> dict:
    import duckdb

    from benchmarks.synth import Plan, generate
    rd = data_dir / f"synth-{records}-{fmt}-s{seed}"
    t = time.monotonic()
    if not (rd / "truth.json").is_file():
        generate(rd, Plan(records=records, fmt=fmt, seed=seed))
    gen_s = time.monotonic() - t
    truth = json.loads((rd / "truth.json").read_text())
    size = sum(p.stat().st_size for sub in ("produced", "consumed") for p in (rd / sub).iterdir())

    out = {"records": records, "format": fmt, "run_dir": str(rd), "input_bytes": size, "generate_s": round(gen_s, 2),
           "truth": {k: truth[k] for k in COUNT_KEYS}, "machine": {"cpus": os.cpu_count(), "python": platform.python_version()}}
    if cold_cli:  # a fresh process: JVM start-up + first (JIT-cold) analysis
        t = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "analysis", str(rd)], capture_output=True, text=True,
                              cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)))
        out["cold_cli_s"] = round(time.monotonic() - t, 2)
        out["cold_cli_exit"] = proc.returncode

    from analysis.api import analyze
    from analysis.api import get_session
    t = time.monotonic()
    spark = get_session()
    out["session_start_s"] = round(time.monotonic() - t, 2)
    t = time.monotonic()
    first = analyze(rd, spark=spark)
    out["first_analysis_s"] = round(time.monotonic() - t, 2)

    con = duckdb.connect()
    q = duckdb_query(rd, fmt)
    duck_times, spark_times, phases = [], [], []
    duck_counts = None
    for _ in range(repeat):
        t = time.monotonic()
        row = con.execute(q).fetchone()
        duck_times.append(time.monotonic() - t)
        duck_counts = dict(zip(COUNT_KEYS, row))
        marks = {}
        t = time.monotonic()
        s = analyze(rd, spark=spark, progress=lambda phase, detail="": marks.setdefault(phase, time.monotonic() - t))
        spark_times.append(time.monotonic() - t)
        phases.append(marks)
    spark_counts = {k: s[k] for k in COUNT_KEYS}
    out.update({
        "duckdb_s": [round(x, 3) for x in duck_times], "analyze_s": [round(x, 3) for x in spark_times],
        "duckdb_median_s": round(statistics.median(duck_times), 3), "analyze_median_s": round(statistics.median(spark_times), 3),
        "ratio_median": round(statistics.median(spark_times) / statistics.median(duck_times), 2),
        "ratio_best": round(min(spark_times) / min(duck_times), 2),
        "phases_last_run_s": {k: round(v, 2) for k, v in phases[-1].items()},
        "duckdb_counts": duck_counts, "analyze_counts": spark_counts,
        "identical_counts": duck_counts == spark_counts == out["truth"],
        "analyze_anomaly_counts": s["anomaly_counts"], "valid": s["valid"],
        "drilled_blocks": s["input"]["drilled_blocks"], "first_counts_equal": {k: first[k] for k in COUNT_KEYS} == spark_counts,
    })
    if fmt == "jsonl" and compact:
        out["compacted"] = compacted_figures(rd, spark, repeat)
    return out


def compacted_figures(rd: Path, spark, repeat: int) -> dict:
    """The JSONL run as `kafka-chaos run` leaves it: compacted to Parquet once, then analysed."""
    import shutil

    from analysis.api import analyze
    from analysis.api import compact
    copy = rd.with_name(rd.name + "-compacted")
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(rd, copy)
    t = time.monotonic()
    done = compact(copy)
    compact_s = time.monotonic() - t
    times, counts = [], None
    for _ in range(repeat):
        t = time.monotonic()
        s = analyze(copy, spark=spark)
        times.append(time.monotonic() - t)
        counts = {k: s[k] for k in COUNT_KEYS}
    shutil.rmtree(copy, ignore_errors=True)
    return {"compact_s": round(compact_s, 2), "bytes_before": done.bytes_before, "bytes_after": done.bytes_after,
            "analyze_s": [round(x, 3) for x in times], "analyze_median_s": round(statistics.median(times), 3),
            "counts": counts}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=10_000_000)
    ap.add_argument("--format", choices=("parquet", "jsonl"), default="parquet")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--data-dir", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "kafka-chaos-bench")
    ap.add_argument("--cold-cli", action="store_true", help="also time `python -m analysis RUN` in a fresh process")
    ap.add_argument("--compact", action="store_true", help="JSONL: also time `kafka-chaos compact` and the analysis after it")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    a = ap.parse_args(argv)
    res = run(a.records, a.format, a.repeat, a.data_dir, a.seed, a.cold_cli, a.compact)
    a.out.mkdir(parents=True, exist_ok=True)
    name = f"analyze-vs-duckdb-{a.records}-{a.format}.json"
    (a.out / name).write_text(json.dumps(res, indent=2) + "\n")
    print(f"records {a.records:,} ({a.format}, {res['input_bytes'] / 1e6:.0f} MB): analyze median {res['analyze_median_s']:.2f}s, "
          f"DuckDB median {res['duckdb_median_s']:.2f}s, ratio {res['ratio_median']:.2f} (best/best {res['ratio_best']:.2f}); "
          f"identical counts: {res['identical_counts']}")
    print(json.dumps({k: res[k] for k in ("session_start_s", "first_analysis_s", "analyze_s", "duckdb_s", "phases_last_run_s")}))
    ok = res["identical_counts"]
    if "compacted" in res:
        c = res["compacted"]
        ok = ok and c["counts"] == res["truth"]
        print(f"compacted to Parquet in {c['compact_s']:.1f}s ({c['bytes_before'] / 1e6:.0f} MB -> {c['bytes_after'] / 1e6:.0f} MB), "
              f"then analyze median {c['analyze_median_s']:.2f}s, ratio to DuckDB on the JSONL "
              f"{c['analyze_median_s'] / res['duckdb_median_s']:.2f}; counts equal the truth: {c['counts'] == res['truth']}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
