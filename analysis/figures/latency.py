"""End-to-end latency, from the producer's ack to the record's first delivery to the group, in time windows.

The produced log has no send time, only ``acked_at_ms``: a record's latency here is its first ``consumed_at_ms``
minus its ack (0 when a member got it before the producer heard the ack). Exact percentiles (Spark's
``percentile``), over first deliveries only: a redelivery is the duplicate check's business, not latency.
"""
from __future__ import annotations

from analysis.rundir import inputs
from analysis.engine.spark_plan import OK_ACKED

QUANTILES = (0.5, 0.99)


def delivery_latency(spark, run_dir, windows: dict[str, tuple[int, int]],
                     partitions: list[tuple[str, int]] | None = None) -> dict[str, dict]:
    """name -> {records, p50_ms, p99_ms, max_ms} of the records first delivered in [lo, hi) of each named window
    (records 0 and the rest None when none was); only those of ``partitions`` (topic, partition) when given."""
    from pyspark.sql import functions as F
    lo = min(a for a, _ in windows.values())
    hi = max(b for _, b in windows.values())
    produced = inputs.load(spark, run_dir, "produced").df.where(OK_ACKED).select("topic", "partition", "offset",
                                                                                   "acked_at_ms")
    if partitions is not None:
        chosen = spark.createDataFrame([(t, int(p)) for t, p in partitions], "topic string, partition int")
        produced = produced.join(F.broadcast(chosen), ["topic", "partition"])
    first = (inputs.load(spark, run_dir, "consumed").df.where("_bad IS NULL")
             .groupBy("topic", "partition", "offset").agg({"consumed_at_ms": "min"})
             .withColumnRenamed("min(consumed_at_ms)", "first_ms")
             .where(f"first_ms >= {int(lo)} AND first_ms < {int(hi)}"))
    joined = first.join(produced, ["topic", "partition", "offset"])
    cases = " ".join(f"WHEN first_ms >= {int(a)} AND first_ms < {int(b)} THEN '{name}'"
                     for name, (a, b) in windows.items())
    named = joined.selectExpr(f"CASE {cases} END AS window", "GREATEST(first_ms - acked_at_ms, 0L) AS ms")
    quantiles = ", ".join(str(q) for q in QUANTILES)
    rows = named.where("window IS NOT NULL").groupBy("window").agg(
        F.count("*").alias("records"), F.expr(f"percentile(ms, array({quantiles}))").alias("q"),
        F.max("ms").alias("max_ms")).collect()
    out = {name: {"records": 0, "p50_ms": None, "p99_ms": None, "max_ms": None} for name in windows}
    for row in rows:
        p50, p99 = row["q"]
        out[row["window"]] = {"records": row["records"], "p50_ms": round(p50, 1), "p99_ms": round(p99, 1),
                              "max_ms": row["max_ms"]}
    return out

