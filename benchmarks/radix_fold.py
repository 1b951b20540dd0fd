"""The scan's consumed-side aggregation, Spark's hash aggregation against a radix-partitioned fold in the JVM
(benchmarks/jvm/RadixFold.java), exact and timed (issue 23, fourteenth increment, docs/benchmarks-history.md).

In random row order Spark's partial aggregation misses the caches on almost every row: a scan task meets about
every group of the run, and its one hash map is far larger than a core's cache. DuckDB scatters the rows by key
hash first and folds each part in a table that fits. RadixFold does that inside each Spark scan task (over
Spark's internal rows, after the scan's own projection, spark_plan.consumed_keyed), and Spark merges the tasks'
partial groups after its shuffle. Measured here, not used by the analysis: it needs Spark's internal API
(``queryExecution().toRdd()``, ``internalCreateDataFrame``), which a Spark Connect client cannot call.

Each run: first the two results compared (every group, every column); then, in one warm session, alternately:
``spark`` (spark_plan.aggregate on the consumed side), ``radix`` (RadixFold with the analysis's own input splits),
``radix, 1 split a core`` and ``radix partial`` (the tasks' partial groups alone, no merge). Every column
written to Spark's ``noop`` sink (a ``count()`` would let Spark prune the aggregates).

    .venv/bin/python -m benchmarks.radix_fold RUN_DIR [RUN_DIR...] [--rounds 3]

Needs ``javac`` (Java 17 or later): the class is compiled against pyspark's own jars into a temporary folder.
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

from benchmarks.plan_timing import Run, noop_seconds

SOURCE = Path(__file__).with_name("jvm") / "RadixFold.java"
MERGE = ("sum(n) AS n", "bit_or(mask) AS mask", "min(kmin) AS kmin", "max(kmax) AS kmax", "max(gmax) AS gmax",
         "bit_or(nmask0) AS nmask0", "bit_or(nmask1) AS nmask1", "bit_or(nmask2) AS nmask2", "bit_or(nmask3) AS nmask3",
         "sum(nsum) AS nsum")


def build_jar(folder: Path) -> Path:
    """RadixFold compiled against pyspark's jars, as a jar in ``folder``."""
    import pyspark
    javac = shutil.which("javac")
    if javac is None:
        raise SystemExit("radix_fold: javac not found (a JDK 17 or later is needed to compile RadixFold.java)")
    jars = Path(pyspark.__file__).parent / "jars"
    classes = folder / "classes"
    subprocess.run([javac, "--release", "17", "-cp", f"{jars}/*", "-d", str(classes), str(SOURCE)], check=True)
    jar = folder / "radix-fold.jar"
    with zipfile.ZipFile(jar, "w") as z:
        for path in classes.rglob("*.class"):
            z.write(path, path.relative_to(classes).as_posix())
    return jar


def spark_groups(run: Run):
    from analysis.engine import spark_plan
    return spark_plan.aggregate(run.produced.limit(0), run.consumed, run.bounds)


def radix_partial(run: Run):
    from pyspark.sql import DataFrame

    from analysis.engine import spark_plan
    keyed = spark_plan.consumed_keyed(run.consumed, run.bounds)
    keyed = keyed.selectExpr(*[f"CAST(`{c}` AS BIGINT) AS `{c}`" for c in keyed.columns])
    spark = keyed.sparkSession
    return DataFrame(spark.sparkContext._jvm.kafkachaos.bench.RadixFold.partial(keyed._jdf), spark)


def radix_groups(run: Run):
    from pyspark.sql import functions as F

    from analysis.engine import kernels, spark_plan
    merged = radix_partial(run).groupBy(*spark_plan.CONSUMED_KEY).agg(*[F.expr(x) for x in MERGE])
    return spark_plan.unpacked(merged, ["mask"], list(kernels.NMASK_COLUMNS))


def differences(a, b) -> tuple[int, int]:
    """Groups of ``a`` not in ``b`` and of ``b`` not in ``a`` (every column, as BIGINT)."""
    a, b = (x.selectExpr(*[f"CAST(`{c}` AS BIGINT) AS `{c}`" for c in x.columns]) for x in (a, b))
    return a.exceptAll(b).count(), b.exceptAll(a).count()


def timed(spark, run: Run, groups, splits_a_core: bool) -> float:
    from analysis.engine.spark import default_parallelism
    conf = {"spark.sql.files.maxPartitionBytes": str(run.size // default_parallelism(spark) + 1)} if splits_a_core else None
    return noop_seconds(spark, run, groups, conf)


VARIANTS = {"spark": (spark_groups, False), "radix": (radix_groups, False),
            "radix, 1 split a core": (radix_groups, True), "radix partial": (radix_partial, False)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", type=Path, help="run directories (benchmarks/synth.py writes them)")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args(argv)
    from analysis.engine.spark import get_session
    with tempfile.TemporaryDirectory(prefix="radix-fold-") as folder:
        spark = get_session(conf={"spark.jars": str(build_jar(Path(folder)))})
        runs = [Run(spark, d) for d in a.runs]
        for run in runs:
            ours, theirs = spark_groups(run), radix_groups(run)
            print(f"{run.dir.name}: {ours.count():,} groups; differing groups: {differences(ours, theirs)}", flush=True)
            for groups, splits in VARIANTS.values():  # not counted: each variant's first run compiles its code
                timed(spark, run, groups, splits)
        for r in range(a.rounds):
            for run in runs:
                names = list(VARIANTS) if r % 2 == 0 else list(VARIANTS)[::-1]
                line = [f"{name} {timed(spark, run, *VARIANTS[name]):.2f} s" for name in names]
                print(f"round {r} {run.dir.name}: " + " | ".join(line), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
