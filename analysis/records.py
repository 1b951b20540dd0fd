"""The record-level work in Spark: one scan of each input, aggregated to 64-offset blocks before any shuffle.

Every produced and consumed row is folded into a group keyed by

    (side, topic, partition, b = offset >> 6, member, ownership period)

holding its row count ``n``, the 64-bit set ``mask`` of offsets it contains (``bit_or`` of ``1 << (offset & 63)``),
time and offset bounds, and order keys ``kmin``/``kmax`` = min/max of ``ts << 6 | (offset & 63)``. Counts
follow exactly from the masks: the distinct consumed offsets of a block are ``bit_count(OR of masks)``,
deliveries beyond the first are ``rows - distinct``, lost records are ``bit_count(produced & ~consumed)``.
The aggregate is ~64x smaller than the input and cached; every later query runs on it, and record-level
rows are read again ("drill-down") only for the blocks whose counts show a repeat inside one member's
ownership, which a mask cannot resolve.
"""
from __future__ import annotations

from dataclasses import dataclass


CONSUMED, PRODUCED, FAILED, INFO, BAD_PRODUCED, BAD_CONSUMED = 0, 1, 2, 3, 8, 9
NO_EVENTS_PERIOD, OUTSIDE_PERIOD = -2, -1

BIT = "shiftleft(1L, cast(offset & 63 as int))"


def range_mask(lo: str, hi: str, b: str = "b") -> str:
    """SQL: the bits of block ``b`` for offsets in [lo, hi] (64-bit, wrapping arithmetic)."""
    low = f"greatest(({lo}) - ({b}) * 64, 0)"
    high = f"least(({hi}) - ({b}) * 64, 63)"
    return (f"(CASE WHEN ({hi}) < ({b}) * 64 OR ({lo}) > ({b}) * 64 + 63 THEN 0L ELSE "
            f"(shiftleft(-1L, cast({low} as int)) & shiftrightunsigned(-1L, cast(63 - {high} as int))) END)")


@dataclass
class Scan:
    agg: object          # cached DataFrame of groups (Spark engine)
    blocks: object       # cached DataFrame per (topic, partition, b)
    consumed_p: object   # consumed rows (lazy; for drill-down)
    totals: dict         # side -> (rows, groups, tmin, tmax)


MAX_CASE_BOUNDARIES = 512


def epoch_expr(bounds: list[int]) -> str:
    """SQL: how many of the sorted ``bounds`` are <= ts (Python's bisect_right), as a balanced CASE tree:
    log2(len(bounds)) comparisons per row, cheaper than a join."""
    def tree(lo, hi):
        if lo >= hi:
            return str(lo)
        mid = (lo + hi) // 2
        return f"CASE WHEN ts < {bounds[mid]} THEN {tree(lo, mid)} ELSE {tree(mid + 1, hi)} END"
    return tree(0, len(bounds))


def with_epoch(consumed_df, bounds: list[int] | None):
    """Consumed rows plus ``epoch``: the number of ownership boundaries (any member's period start or
    end + 1) at or before the row's time. Within one epoch every (member, partition) is either inside one
    ownership period or outside all, so the period is resolved per group after the aggregation."""
    from pyspark.sql import functions as F
    if not bounds:
        return consumed_df.withColumn("epoch", F.lit(0))
    return consumed_df.withColumn("epoch", F.expr(epoch_expr(bounds)).cast("int"))


def with_period(spark, consumed_df, join_rows, members_with_events):
    """Consumed rows plus ``period`` per row (a join; used for the few rows of the drill-down and when there
    are too many boundaries for :func:`epoch_expr`): the ownership period id, -1 outside every period of a
    member that logged events, -2 when the member logged no events (or there are no events at all)."""
    from pyspark.sql import functions as F
    if join_rows is None:
        return consumed_df.withColumn("period", F.lit(NO_EVENTS_PERIOD))
    known = F.col("member").isin(*members_with_events) if members_with_events else F.lit(False)
    if not join_rows:
        return consumed_df.withColumn("period", F.when(known, OUTSIDE_PERIOD).otherwise(NO_EVENTS_PERIOD))
    per = spark.createDataFrame(join_rows, "pm string, pt string, pp int, pid int, pstart bigint, pnext bigint, pend bigint")
    c = consumed_df
    cond = ((c["member"] == per["pm"]) & (c["topic"] == per["pt"]) & (c["partition"] == per["pp"])
            & (c["ts"] >= per["pstart"]) & (c["ts"] < per["pnext"]))
    j = c.join(F.broadcast(per), cond, "left")
    period = (F.when(F.col("pid").isNotNull() & (F.col("ts") <= F.col("pend")), F.col("pid"))
              .when(known, OUTSIDE_PERIOD).otherwise(NO_EVENTS_PERIOD))
    return j.select(*[F.col(x) for x in c.columns], period.alias("period"))


def aggregate(produced, consumed_e, hashed: bool = False):
    """The one pass: every row of both inputs folded into its group (lazy DataFrame).

    Group key: k (side, partition and epoch packed in one long: fewer, fixed-width hash keys are
    measurably faster), topic, b, member. Values: n, mask, kmin, kmax, gmax. Everything else is derived
    from these (see unpack): tmin = kmin >> 6, tmax = kmax >> 6, omin/omax = the lowest/highest bit of mask.
    """
    from pyspark.sql import functions as F
    rows_c = consumed_e.selectExpr(f"CASE WHEN _bad IS NOT NULL THEN {BAD_CONSUMED} ELSE {CONSUMED} END AS side",
                                   "topic", "`partition`", "`offset`", "member", "epoch", "ts", "generation")
    rows_p = produced.selectExpr(f"CASE WHEN _bad IS NOT NULL THEN {BAD_PRODUCED} WHEN status IS NULL OR status = 'ok' "
                                 f"THEN {PRODUCED} WHEN status = 'fail' THEN {FAILED} ELSE {INFO} END AS side",
                                 "topic", "`partition`", "`offset`", "CAST(NULL AS STRING) AS member",
                                 "CAST(NULL AS INT) AS epoch", "ts", "CAST(NULL AS INT) AS generation")
    # hashed: topic and member as one 64-bit xxhash64 key (~20 % faster than two string keys); the caller
    # maps hashes back to names it knows (Parquet footers) and checks that every hash was known
    names = ["xxhash64(topic, member) AS h"] if hashed else ["topic", "member"]
    u = rows_c.unionByName(rows_p).selectExpr(
        "side + shiftleft(coalesce(CAST(`partition` AS BIGINT), 0L) & 4294967295L, 4)"
        " + shiftleft(CAST(coalesce(epoch, 0) + 2 AS BIGINT), 36) AS k",
        *names, "`offset` >> 6 AS b", "`offset`", "ts", "generation")
    return u.groupBy("k", *[n.split(" AS ")[-1] for n in names], "b").agg(
        F.expr("count(1)").alias("n"),
        F.expr(f"bit_or({BIT})").alias("mask"),
        F.expr("min(shiftleft(ts, 6) | (`offset` & 63))").alias("kmin"),
        F.expr("max(shiftleft(ts, 6) | (`offset` & 63))").alias("kmax"),
        F.expr("max(generation)").alias("gmax"),
    )


def unpack(agg, hashed: bool = False):
    """side, partition, epoch back out of the packed key."""
    names = ["h"] if hashed else ["topic", "member"]
    return agg.selectExpr("CAST(k & 15 AS INT) AS side", "CAST(shiftright(k, 4) & 4294967295L AS INT) AS `partition`",
                          "b", *names, "CAST(shiftright(k, 36) - 2 AS INT) AS epoch", "n", "mask", "kmin", "kmax",
                          "CASE WHEN gmax >= 0 THEN gmax END AS gmax")


def name_hashes(spark, pairs) -> dict[int, tuple]:
    """xxhash64(topic, member) -> (topic, member), computed by Spark itself (one tiny query)."""
    pairs = sorted(pairs, key=lambda x: (x[0] or "", x[1] or ""))
    df = spark.createDataFrame(pairs, "topic string, member string")
    return {r["h"]: (r["topic"], r["member"]) for r in df.selectExpr("topic", "member", "xxhash64(topic, member) AS h").collect()}


def unhash(table, names: dict[int, tuple]):
    """Replace the h column of a collected aggregate by topic and member; None if a hash is unknown."""
    import numpy as np
    import pyarrow as pa
    h = np.asarray(table.column("h").to_numpy(zero_copy_only=False), dtype=np.int64)
    keys = np.array(sorted(names), dtype=np.int64)
    if len(h) == 0:
        idx = np.zeros(0, np.int64)
    else:
        if len(keys) == 0:
            return None
        idx = np.searchsorted(keys, h)
        idx = np.minimum(idx, len(keys) - 1)
        if not np.array_equal(keys[idx], h):
            return None
    topics = pa.array([names[k][0] for k in keys.tolist()], pa.string()).take(pa.array(idx))
    members = pa.array([names[k][1] for k in keys.tolist()], pa.string()).take(pa.array(idx))
    i = table.column_names.index("h")
    return table.remove_column(i).append_column("topic", topics).append_column("member", members)


def lowbit(m: str) -> str:
    return f"bit_count(({m} & -{m}) - 1)"


def highbit(m: str) -> str:
    x = m
    for k in (1, 2, 4, 8, 16, 32):
        x = f"({x} | shiftrightunsigned({x}, {k}))"
    return f"(bit_count({x}) - 1)"


def scan(spark, produced, consumed_e, epoch_map: list[tuple] | None, members_with_events,
         epoch_is_period: bool = False) -> Scan:
    """Spark engine: resolve epochs to periods (a join on the small aggregate), derive the time and offset
    bounds, cache, and read the totals per side."""
    from pyspark.sql import functions as F
    agg = unpack(aggregate(produced, consumed_e))
    known = F.col("member").isin(*members_with_events) if members_with_events else F.lit(False)
    outside = F.when(known, OUTSIDE_PERIOD).otherwise(NO_EVENTS_PERIOD)
    if epoch_is_period:
        agg = agg.withColumn("period", F.when(F.col("side") == CONSUMED, F.col("epoch")))
    elif epoch_map:
        m = spark.createDataFrame(epoch_map, "em string, et string, ep int, elo int, ehi int, pid int")
        j = agg.join(F.broadcast(m), (agg["member"] == m["em"]) & (agg["topic"] == m["et"]) & (agg["partition"] == m["ep"])
                     & (agg["epoch"] >= m["elo"]) & (agg["epoch"] <= m["ehi"]), "left")
        period = F.when(F.col("side") != CONSUMED, F.lit(None)).when(F.col("pid").isNotNull(), F.col("pid")).otherwise(outside)
        agg = j.select(*[F.col(x) for x in agg.columns], period.cast("int").alias("period"))
    else:
        agg = agg.withColumn("period", F.when(F.col("side") == CONSUMED, outside))
    # several epochs can fall inside one period: one group per period
    keys = ["side", "topic", "partition", "b", "member", "period"]
    agg = agg.groupBy(*keys).agg(F.sum("n").alias("n"), F.expr("bit_or(mask)").alias("mask"), F.min("kmin").alias("kmin"),
                                 F.max("kmax").alias("kmax"), F.min("gmax").alias("gmin"), F.max("gmax").alias("gmax"))
    agg = (agg.withColumn("tmin", F.expr("shiftright(kmin, 6)")).withColumn("tmax", F.expr("shiftright(kmax, 6)"))
           .withColumn("omin", F.expr(f"b * 64 + {lowbit('mask')}")).withColumn("omax", F.expr(f"b * 64 + {highbit('mask')}"))
           .cache())
    totals = {r["side"]: (r["rows"], r["groups"], r["tmin"] if r["side"] <= PRODUCED else None,
                          r["tmax"] if r["side"] <= PRODUCED else None) for r in
              agg.groupBy("side").agg(F.sum("n").alias("rows"), F.count(F.lit(1)).alias("groups"),
                                      F.min("tmin").alias("tmin"), F.max("tmax").alias("tmax")).collect()}
    return Scan(agg, None, consumed_e, totals)


def build_blocks(s: Scan):
    from pyspark.sql import functions as F
    a = s.agg.where(F.col("side") <= PRODUCED)
    isc, isp = F.col("side") == CONSUMED, F.col("side") == PRODUCED
    blocks = a.groupBy("topic", "partition", "b").agg(
        F.sum(F.when(isc, F.col("n")).otherwise(0)).alias("cn"),
        F.expr(f"bit_or(CASE WHEN side = {CONSUMED} THEN mask ELSE 0L END)").alias("cmask"),
        F.expr(f"sum(CASE WHEN side = {CONSUMED} THEN n - bit_count(mask) ELSE 0 END)").alias("internal"),
        F.sum(F.when(isc, 1).otherwise(0)).alias("cgroups"),
        F.expr(f"bit_or(CASE WHEN side = {PRODUCED} THEN mask ELSE 0L END)").alias("pmask"),
        F.sum(F.when(isp, F.col("n")).otherwise(0)).alias("pn"),
        F.min(F.when(isc, F.col("tmin"))).alias("ctmin"), F.max(F.when(isc, F.col("tmax"))).alias("ctmax"),
        F.min(F.when(isp, F.col("tmin"))).alias("ptmin"), F.max(F.when(isp, F.col("tmax"))).alias("ptmax"),
        F.max(F.when(isc, F.col("omax"))).alias("comax"),
    )
    blocks = (blocks.withColumn("distinct_c", F.expr("bit_count(cmask)"))
              .withColumn("extra", F.expr("cn - bit_count(cmask)"))
              .withColumn("lostmask", F.expr("pmask & ~cmask"))
              .withColumn("lost", F.expr("bit_count(pmask & ~cmask)"))
              .withColumn("unacked", F.expr("bit_count(cmask & ~pmask)"))
              .withColumn("prepeat", F.expr("pn - bit_count(pmask)"))
              .withColumn("known", F.expr("pmask | cmask"))).cache()
    s.blocks = blocks
    return blocks


def collect_many(queries: dict) -> dict[str, list[dict]]:
    """Run several small queries as ONE Spark job (a union of JSON-encoded rows): each job costs ~0.1-0.3 s
    of scheduling and code generation, which is most of the time on a small run."""
    from pyspark.sql import functions as F
    import json as _json
    parts = [df.select(F.lit(name).alias("q"), F.to_json(F.struct(*df.columns), {"ignoreNullFields": "false"}).alias("j")) for name, df in queries.items()]
    if not parts:
        return {}
    u = parts[0]
    for p in parts[1:]:
        u = u.unionByName(p)
    out: dict[str, list[dict]] = {name: [] for name in queries}
    for row in u.collect():
        out[row["q"]].append(_json.loads(row["j"]))
    return out


def q_partition_stats(s: Scan):
    from pyspark.sql import functions as F
    return s.blocks.groupBy("topic", "partition").agg(
        F.sum("pn").alias("produced"), F.sum("cn").alias("consumed_rows"), F.sum("distinct_c").alias("consumed_distinct"),
        F.sum("extra").alias("extra"), F.sum("lost").alias("lost"), F.sum("unacked").alias("unacked"),
        F.sum("prepeat").alias("produced_repeats"), F.sum("internal").alias("internal"),
        F.count_if(F.col("extra") > 0).alias("dup_blocks"), F.count_if(F.col("lost") > 0).alias("lost_blocks"),
        F.max("comax").alias("max_consumed_offset"),
        F.min("ptmin").alias("ptmin"), F.max("ptmax").alias("ptmax"),
        F.min("ctmin").alias("ctmin"), F.max("ctmax").alias("ctmax"),
    )


def q_dirty_blocks(s: Scan):
    from pyspark.sql import functions as F
    return (s.blocks.where((F.col("extra") > 0) | (F.col("lost") > 0) | (F.col("unacked") > 0))
            .select("topic", "partition", "b", "cn", "cmask", "pmask", "lostmask", "extra", "lost", "internal",
                    "unacked", "ctmin", "ctmax", "ptmin", "ptmax"))


def q_duplicate_groups(s: Scan):
    """The consumer groups (member, period) of every block with a duplicate delivery."""
    from pyspark.sql import functions as F
    dup = s.blocks.where(F.col("extra") > 0).select("topic", "partition", "b")
    return (s.agg.where(F.col("side") == CONSUMED).join(dup, ["topic", "partition", "b"], "left_semi")
            .select("topic", "partition", "b", "member", "period", "n", "mask", "tmin", "tmax", "gmin", "gmax"))


def q_period_summaries(s: Scan):
    """Per (member, topic, partition, period): what the member consumed in it (period < 0: outside)."""
    from pyspark.sql import functions as F
    return (s.agg.where(F.col("side") == CONSUMED).groupBy("member", "topic", "partition", "period").agg(
        F.sum("n").alias("n"), F.expr("sum(bit_count(mask))").alias("distinct"),
        F.min("omin").alias("omin"), F.max("omax").alias("omax"),
        F.min("tmin").alias("tmin"), F.max("tmax").alias("tmax"),
        F.expr("min_by(b * 64 + (kmin & 63), kmin)").alias("first"),
        F.expr("max_by(b * 64 + (kmax & 63), kmax)").alias("last"),
        F.min("gmin").alias("gmin"), F.max("gmax").alias("gmax"),
    ))


def q_ownership_flags(s: Scan):
    """Blocks of one member's ownership period that show a skip or a step back.

    kind: ``repeat`` (an offset consumed twice in the same ownership), ``order_in`` (inside the block the first
    record by time is not the lowest offset, or the last not the highest), ``order_across`` (a record of this
    block was consumed before the last one of the previous block), ``missing`` (known records inside
    [omin, omax] of the block not consumed: ``missing`` bits), ``gap`` (no consumption between the previous
    block's highest offset and this block's lowest: checked against known records by :func:`q_gap_skips`).
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F
    c1 = s.agg.where((F.col("side") == CONSUMED) & (F.col("period") >= 0)).select(
        "member", "topic", "partition", "period", "b", "n", "mask", "tmin", "tmax", "kmin", "kmax", "omin", "omax")
    w = Window.partitionBy("member", "topic", "partition", "period").orderBy("b")
    j = (c1.join(s.blocks.select("topic", "partition", "b", "known"), ["topic", "partition", "b"], "left")
         .withColumn("prev_b", F.lag("b").over(w)).withColumn("prev_omax", F.lag("omax").over(w))
         .withColumn("prev_tmax", F.lag("tmax").over(w)))
    j = (j.withColumn("repeat", F.expr("n > bit_count(mask)"))
         .withColumn("order_in", F.expr("(kmin & 63) != (omin & 63) OR (kmax & 63) != (omax & 63)"))
         .withColumn("order_across", F.expr("prev_tmax IS NOT NULL AND prev_tmax > tmin"))
         .withColumn("missing", F.expr(f"known & ~mask & {range_mask('omin', 'omax')}"))
         .withColumn("gap", F.expr("prev_omax IS NOT NULL AND omin > prev_omax + 1")))
    return (j.where("repeat OR order_in OR order_across OR missing != 0 OR gap")
            .select("member", "topic", "partition", "period", "b", "prev_b", "n", "mask", "tmin", "tmax", "omin",
                    "omax", "prev_omax", "prev_tmax", "repeat", "order_in", "order_across", "missing", "gap"))


def q_gap_skips(spark, s: Scan, gaps: list[dict]):
    """Known records strictly between prev_omax and omin for each gap row: (gid, b, bits)."""
    from pyspark.sql import functions as F
    g = spark.createDataFrame([(i, r["topic"], r["partition"], r["prev_omax"] + 1, r["omin"] - 1)
                               for i, r in enumerate(gaps)], "gid int, gt string, gp int, lo bigint, hi bigint")
    k = s.blocks.select("topic", "partition", "b", "known")
    j = k.join(F.broadcast(g), (k["topic"] == g["gt"]) & (k["partition"] == g["gp"])
               & (k["b"] >= F.expr("lo >> 6")) & (k["b"] <= F.expr("hi >> 6")), "inner")
    return j.withColumn("bits", F.expr(f"known & {range_mask('lo', 'hi')}")).where("bits != 0").select("gid", "b", "bits")


def q_known(spark, s: Scan, keys):
    k = spark.createDataFrame(sorted(set(keys)), "topic string, partition int, b bigint")
    return s.blocks.join(k, ["topic", "partition", "b"], "left_semi").select("topic", "partition", "b", "known")


def q_rate(s: Scan, t0: int, bin_ms: int):
    from pyspark.sql import functions as F
    return (s.agg.where(F.col("side") == CONSUMED)
            .groupBy(F.floor((F.col("tmin") - F.lit(t0)) / F.lit(bin_ms)).alias("bin"))
            .agg(F.sum("n").alias("n")))


def block_filter(keys) -> str:
    """SQL condition selecting the records of the given (topic, partition, block) keys; adjacent blocks are
    merged into offset ranges so that Parquet row groups can be skipped on their offset statistics."""
    ranges = []
    for t, p, b in sorted(set(keys)):
        if ranges and ranges[-1][0] == t and ranges[-1][1] == p and ranges[-1][3] == b * 64 - 1:
            ranges[-1][3] = b * 64 + 63
        else:
            ranges.append([t, p, b * 64, b * 64 + 63])
    lit = lambda t: "'" + t.replace("\\", "\\\\").replace("'", "\\'") + "'"  # noqa: E731
    return " OR ".join(f"(topic = {lit(t)} AND partition = {p} AND offset BETWEEN {lo} AND {hi})" for t, p, lo, hi in ranges)


def q_drill_down(records_obj, keys):
    """Record-level rows (with file order) of the given (topic, partition, block) keys; their ownership
    period is added on the driver (history.assign_periods), the rows being few."""
    return (records_obj.with_order(block_filter(keys)).where("_bad IS NULL")
            .select("topic", "partition", "offset", "member", "ts", "generation", "_file", "_block", "_row"))


def q_log_order(records_obj):
    """Every consumed record with its place in its member's log, for the exact order check of small runs."""
    return (records_obj.with_order().where("_bad IS NULL")
            .select("member", "topic", "partition", "offset", "ts", "_file", "_block", "_row"))


def unpersist(s: Scan | None) -> None:
    if s is None:
        return
    for df in (s.blocks, s.agg):
        if df is not None:
            try:
                df.unpersist()
            except Exception:
                pass





def q_unacked_rows(records_obj, keys):
    """Consumed rows of the blocks holding records nobody acked ok, with their producer_id and seq."""
    return (records_obj.with_order(block_filter(keys)).where("_bad IS NULL AND producer_id IS NOT NULL AND seq IS NOT NULL")
            .select("topic", "partition", "offset", "producer_id", "seq"))


def q_write_copies(spark, produced, consumed, pairs):
    """Every distinct record (topic, partition, offset) carrying one of the given (producer_id, seq) pairs,
    acked ok or consumed, with its time range."""
    from pyspark.sql import functions as F
    k = spark.createDataFrame(sorted(pairs), "producer_id string, seq bigint")
    p = produced.where("_bad IS NULL AND (status IS NULL OR status = 'ok')").select("producer_id", "seq", "topic", "partition", "offset", "ts")
    c = consumed.where("_bad IS NULL").select("producer_id", "seq", "topic", "partition", "offset", "ts")
    u = p.unionByName(c).join(F.broadcast(k), ["producer_id", "seq"], "left_semi")
    return u.groupBy("producer_id", "seq", "topic", "partition", "offset").agg(F.min("ts").alias("tmin"), F.max("ts").alias("tmax"))
