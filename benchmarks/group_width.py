"""What the scan's aggregation costs as a function of how many groups it folds the rows into (issue 23, twelfth and
thirteenth increments, docs/benchmarks-history.md).

A group holds 64 offsets (one 64-bit word of offsets, ``b = offset >> 6``) and 256 values of the consumption
sequence n (four words, ``nb = n >> 8``). Here the scan's own aggregation over both sides of a run
(spark_plan.aggregate, its width given: the offset and n sets as W words each) is timed with wider groups, every
column of its result computed (written to Spark's ``noop`` sink: the partial and the final aggregation, nothing
downstream), in one warm session, alternated. Not ``count()``: Spark prunes every aggregate a count does not read,
so a count times the grouping alone, without the W words a row updates (the twelfth increment's figures did).

    .venv/bin/python -m benchmarks.group_width RUN_DIR [RUN_DIR...] [--shapes 1x4,4x4,16x16,4x16] [--rounds 3]

A shape OxN: O words of offsets (64 O offsets a group), N words of n (64 N values a bucket); 1x4 is today's.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from benchmarks.plan_timing import Run, noop_seconds


def timed(spark, run: Run, ow: int, nw: int) -> tuple[float, int]:
    """Seconds of the aggregation of one run in this shape, and its number of groups (the analysis's own settings)."""
    from analysis.engine import spark_plan
    plan = lambda r: spark_plan.aggregate(r.produced, r.consumed, r.bounds, offset_words=ow, n_words=nw)  # noqa: E731
    return noop_seconds(spark, run, plan), plan(run).count()


def main(argv=None) -> int:
    from analysis.engine.spark import get_session
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", type=Path, help="run directories (benchmarks/synth.py writes them)")
    ap.add_argument("--shapes", default="1x4,4x4,16x16,4x16", help="OxN, comma-separated (1x4: today's groups)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", type=Path, default=None, help="write the figures as JSON here too")
    a = ap.parse_args(argv)
    shapes = [tuple(int(x) for x in s.split("x")) for s in a.shapes.split(",")]
    for ow, nw in shapes:
        if ow & (ow - 1) or nw & (nw - 1) or not (1 <= ow <= 64 and 1 <= nw <= 64):
            ap.error(f"--shapes: {ow}x{nw}: each side must be a power of 2 from 1 to 64")
    spark = get_session()
    runs = [Run(spark, d) for d in a.runs]
    for run in runs:  # not counted: the first aggregation of each shape compiles its code
        for ow, nw in shapes:
            timed(spark, run, ow, nw)
    got: dict = {}
    for r in range(a.rounds):
        for run in runs:
            line = []
            for ow, nw in (shapes if r % 2 == 0 else shapes[::-1]):
                seconds, groups = timed(spark, run, ow, nw)
                got.setdefault(f"{run.dir}|{ow}x{nw}", {"groups": groups, "seconds": []})["seconds"].append(round(seconds, 2))
                line.append(f"{64 * ow} offsets x {64 * nw} n: {seconds:.2f} s ({groups:,} groups)")
            print(f"round {r} {run.dir.name}: " + " | ".join(line), flush=True)
    if a.out:
        a.out.write_text(json.dumps(got, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
