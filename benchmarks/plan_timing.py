"""Timing one Spark plan of the analysis on a run, as the analysis would run it (benchmarks/group_width.py,
benchmarks/radix_fold.py): the run's inputs loaded once, the plan's every column written to Spark's ``noop`` sink
(a ``count()`` would let Spark prune the aggregates it does not read) under the analysis's own per-run settings."""
from __future__ import annotations

import time
from pathlib import Path


class Run:
    """One run directory's inputs and ownership bounds, loaded once."""

    def __init__(self, spark, run_dir: Path):
        from analysis.rundir import history
        from analysis.rundir import inputs
        self.dir = run_dir
        self.files = inputs.precheck(run_dir, "produced") + inputs.precheck(run_dir, "consumed")
        self.size = sum(f.stat().st_size for f in self.files)
        self.bounds = history.Ownership(history.build(run_dir, "auto")).bounds
        self.produced = inputs.load(spark, run_dir, "produced").df
        self.consumed = inputs.load(spark, run_dir, "consumed").df


def noop_seconds(spark, run: Run, plan, conf: dict[str, str] | None = None) -> float:
    """Seconds to compute every column of ``plan(run)`` with the analysis's settings for this run (job._tune),
    and ``conf`` over them."""
    from analysis import job
    saved = job._tune(spark, run.size)
    try:
        for key, value in (conf or {}).items():
            spark.conf.set(key, value)
        t = time.monotonic()
        plan(run).write.format("noop").mode("overwrite").save()
        return time.monotonic() - t
    finally:
        job._restore(spark, saved)
