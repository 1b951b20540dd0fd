"""The record-level work, all in Spark: one scan of each input, folded into small groups, then one job that
checks each partition's groups in an executor. The driver only collects what the checks report.

Every produced and consumed row is folded into a group keyed by

    (side, topic, partition, epoch, member, b = offset >> 6, log chunk)

holding its row count ``n``, the 64-bit set ``mask`` of its offsets, min/max of ``ts << 6 | offset & 63``
and, for consumed rows, where in the member's log it sits: the file (``fh``, a hash of its path), the split
(``blk``, JSONL only) and the chunk ``c`` of 512 log positions, the set ``p0..p7`` of positions it occupies
in that chunk and ``s`` = sum of ``(offset & 63) * (position & 511)``. The offsets and the positions of a group
are both known exactly (two bit sets), so whether the group was consumed in offset order is exact arithmetic
(the rearrangement inequality: ``s`` is the largest pairing sum only for the sorted pairing). Groups of one
ownership, ordered by their place in the log, must follow each other; where they do not (or a group is not
sorted), those log chunks are read back and the steps back are found record by record. So ``backwards`` is
exact at every size, and a log that is in order costs only the aggregation.

The epoch of a row is the number of ownership boundaries at or before its time (a balanced CASE tree); the
ownership period of a group is looked up from its epoch (``history.Ownership``: the one period rule).
"""
from __future__ import annotations

import json

import numpy as np

CONSUMED, PRODUCED, FAILED, INFO, BAD_PRODUCED, BAD_CONSUMED = 0, 1, 2, 3, 8, 9
NO_EVENTS_PERIOD, OUTSIDE_PERIOD = -2, -1
CHUNK_BITS, WORDS = 9, 8                      # log chunks of 512 positions: 8 words of 64 bits
U64 = (1 << 64) - 1
BIG, SMALL = np.iinfo(np.int64).max, np.iinfo(np.int64).min


# ------------------------------------------------------------------------------------------------- Spark
def lit(text) -> str:
    """A SQL string literal."""
    return "'" + str(text).replace("\\", "\\\\").replace("'", "\\'") + "'"


def epoch_expr(bounds: list[int]) -> str:
    """SQL: how many of the sorted ``bounds`` are <= ts, as a balanced CASE tree (log2 comparisons a row)."""
    def tree(lo, hi):
        if lo >= hi:
            return str(lo)
        mid = (lo + hi) // 2
        return f"CASE WHEN ts < {bounds[mid]} THEN {tree(lo, mid)} ELSE {tree(mid + 1, hi)} END"
    return f"CAST({tree(0, len(bounds))} AS INT)" if bounds else "0"


def aggregate(produced_df, consumed_df, bounds: list[int]):
    """The one pass (lazy): every row of both inputs folded into its group, key unpacked. Produced rows are
    folded apart, without the log-position aggregates they do not have."""
    from pyspark.sql import functions as F
    # side, partition and epoch packed in one long: fewer fixed-width keys hash measurably faster
    key = "{} + shiftleft(coalesce(CAST(`partition` AS BIGINT), 0L) & 4294967295L, 4) + shiftleft(CAST({} + 2 AS BIGINT), 36) AS k"
    base = ["count(1) AS n", "bit_or(shiftleft(1L, CAST(`offset` & 63 AS INT))) AS mask",
            "min(shiftleft(ts, 6) | (`offset` & 63)) AS kmin", "max(shiftleft(ts, 6) | (`offset` & 63)) AS kmax"]
    pw = [f"bit_or(CASE WHEN (_pos >> 6) & {WORDS - 1} = {w} THEN shiftleft(1L, CAST(_pos & 63 AS INT)) END) AS p{w}"
          for w in range(WORDS)]
    c = consumed_df.selectExpr(key.format(f"CASE WHEN _bad IS NOT NULL THEN {BAD_CONSUMED} ELSE {CONSUMED} END",
                                          epoch_expr(bounds)),
                               "topic", "member", "`offset` >> 6 AS b", "_fh AS fh", "_blk AS blk",
                               f"_pos >> {CHUNK_BITS} AS c", "`offset`", "ts", "generation", "_pos")
    c = c.groupBy("k", "topic", "member", "b", "fh", "blk", "c").agg(*[F.expr(x) for x in (
        *base, "max(generation) AS gmax", *pw, f"sum((`offset` & 63) * (_pos & {(1 << CHUNK_BITS) - 1})) AS s")])
    p = produced_df.selectExpr(key.format(f"CASE WHEN _bad IS NOT NULL THEN {BAD_PRODUCED} WHEN status IS NULL OR "
                                          f"status = 'ok' THEN {PRODUCED} WHEN status = 'fail' THEN {FAILED} ELSE {INFO} END", 0),
                               "topic", "`offset` >> 6 AS b", "`offset`", "ts")
    p = p.groupBy("k", "topic", "b").agg(*[F.expr(x) for x in base])
    return c.unionByName(p, allowMissingColumns=True).selectExpr(
        "CAST(k & 15 AS INT) AS side", "CAST(shiftright(k, 4) & 4294967295L AS INT) AS `partition`",
        "CAST(shiftright(k, 36) - 2 AS INT) AS epoch", "topic", "member", "b", "fh", "blk", "c", "n", "mask", "kmin",
        "kmax", "gmax", *[f"p{w}" for w in range(WORDS)], "s")


def totals(agg) -> dict[int, tuple]:
    """side -> (rows, groups, tmin, tmax): one small job, which also fills the cache of ``agg``."""
    rows = agg.groupBy("side").agg({"n": "sum", "*": "count", "kmin": "min", "kmax": "max"}).toArrow().to_pylist()
    shift = lambda v: None if v is None else v >> 6  # noqa: E731  (no offset: a send that was not ok)
    return {r["side"]: (r["sum(n)"], r["count(1)"], shift(r["min(kmin)"]), shift(r["max(kmax)"])) for r in rows}


def check_partitions(agg, cfg: dict) -> dict[str, list[dict]]:
    """Every partition's groups checked in one executor task each (:func:`check_partition`); the small
    results collected once, as Arrow."""
    import pyspark.cloudpickle as cp

    from . import records as me
    cp.register_pickle_by_value(me)  # executors need numpy and pyarrow, not this package
    fn = lambda t: _check_partition_arrow(t, cfg)  # noqa: E731
    out = agg.where(f"side < {BAD_PRODUCED}").groupBy("topic", "partition").applyInArrow(fn, "q string, j string")
    got: dict[str, list[dict]] = {}
    table = out.toArrow()
    for q, j in zip(table.column("q").to_pylist(), table.column("j").to_pylist()):
        got.setdefault(q, []).append(json.loads(j))
    return got


def _check_partition_arrow(table, cfg):
    import pyarrow as pa
    rows = check_partition(table, cfg)
    return pa.table({"q": pa.array([q for q, _ in rows], pa.string()),
                     "j": pa.array([json.dumps(r, default=int) for _, r in rows], pa.string())})


def read_rows(spark, consumed, units: list[dict], blocks: list[tuple], bounds: list[int]):
    """Record-level rows, read back only where the groups could not settle a check: the log units of
    ``units`` (order; Parquet: 512 rows of one file, JSONL: one split of one member's partition) and the
    64-offset ``blocks`` (duplicates). One job; Arrow."""
    conds = []
    for u in units:
        key = f"topic = {lit(u['topic'])} AND `partition` = {u['partition']} AND member = {lit(u['member'])}"
        where = f"xxhash64(_metadata.file_path) = {u['fh']}"
        if u["blk"] < 0:
            lo = u["c"] << CHUNK_BITS
            where += f" AND _metadata.row_index BETWEEN {lo} AND {lo + (1 << CHUNK_BITS) - 1}"
        else:
            where += f" AND _metadata.file_block_start = {u['blk']}"
        conds.append(f"({where} AND {key})")
    ranges = []
    for t, p, b in sorted(set(blocks)):  # adjacent blocks merged: Parquet row groups skipped on offset statistics
        if ranges and ranges[-1][0] == t and ranges[-1][1] == p and ranges[-1][3] == b * 64 - 1:
            ranges[-1][3] = b * 64 + 63
        else:
            ranges.append([t, p, b * 64, b * 64 + 63])
    conds += [f"(topic = {lit(t)} AND `partition` = {p} AND `offset` BETWEEN {lo} AND {hi})" for t, p, lo, hi in ranges]
    if not conds:
        return []
    df = consumed.rows(" OR ".join(conds)).where("_bad IS NULL")
    return df.selectExpr("topic", "`partition`", "`offset`", "member", "ts", "generation", "_fh AS fh", "_blk AS blk",
                         "_pos AS pos", f"{epoch_expr(bounds)} AS epoch").toArrow().to_pylist()


def write_copies(spark, produced_df, consumed_df, pairs):
    """Every distinct record carrying one of the (producer_id, seq) pairs, acked ok or consumed."""
    from pyspark.sql import functions as F
    k = spark.createDataFrame(sorted(pairs), "producer_id string, seq bigint")
    cols = ["producer_id", "seq", "topic", "partition", "offset", "ts"]
    p = produced_df.where("_bad IS NULL AND (status IS NULL OR status = 'ok')").select(*cols)
    u = p.unionByName(consumed_df.where("_bad IS NULL").select(*cols)).join(F.broadcast(k), ["producer_id", "seq"], "left_semi")
    return (u.groupBy("producer_id", "seq", "topic", "partition", "offset")
            .agg(F.min("ts").alias("tmin"), F.max("ts").alias("tmax")).toArrow().to_pylist())


def first_acks(spark, produced_df, keys):
    """For each (topic, partition, offset): the earliest time a record above that offset was acked ok."""
    from pyspark.sql import functions as F
    k = spark.createDataFrame(sorted(keys), "topic string, `partition` int, above bigint")
    p = produced_df.where("_bad IS NULL AND (status IS NULL OR status = 'ok')").select("topic", "partition", "offset", "ts")
    return (p.join(F.broadcast(k), ["topic", "partition"]).where("`offset` > above")
            .groupBy("topic", "partition", "above").agg(F.min("ts").alias("ts")).toArrow().to_pylist())


def window_deliveries(consumed, windows):
    """For each window (id, topic, partition, member a, member b, from ms, to ms): how many records each of
    the two members delivered inside it, and the offsets both delivered there (count, lowest, highest)."""
    from pyspark.sql import functions as F
    cond = "topic = {} AND `partition` = {} AND member IN ({}, {}) AND {} BETWEEN {} AND {}"
    if not windows:
        return [], []
    read = " OR ".join("(" + cond.format(lit(t), p, lit(a), lit(b), "consumed_at_ms", lo, hi) + ")"
                       for _, t, p, a, b, lo, hi in windows)  # pushed to the reader: the file's own column names
    case = "CASE " + " ".join(f"WHEN {cond.format(lit(t), p, lit(a), lit(b), 'ts', lo, hi)} THEN {w}"
                              for w, t, p, a, b, lo, hi in windows) + " END"
    x = consumed.rows(read).where("_bad IS NULL").selectExpr(f"{case} AS w", "member", "`offset`")
    per_member = x.groupBy("w", "member").count().toArrow().to_pylist()
    twice = (x.groupBy("w", "offset").agg(F.countDistinct("member").alias("m")).where("m = 2").groupBy("w")
             .agg(F.count("*").alias("n"), F.min("offset").alias("lo"), F.max("offset").alias("hi")).toArrow().to_pylist())
    return per_member, twice


def unacked_rows(consumed, keys):
    """producer_id/seq of the consumed rows in the given (topic, partition, offset) cells."""
    conds = " OR ".join(f"(topic = {lit(t)} AND `partition` = {p} AND `offset` = {o})" for t, p, o in sorted(keys))
    return (consumed.rows(conds).where("_bad IS NULL AND producer_id IS NOT NULL AND seq IS NOT NULL")
            .select("topic", "partition", "offset", "producer_id", "seq").toArrow().to_pylist())


# --------------------------------------------------------------------------------- in the executor: numpy
def popcount(a: np.ndarray) -> np.ndarray:
    return np.bitwise_count(a.view(np.uint64)).astype(np.int64)


def lowbit(m: np.ndarray) -> np.ndarray:
    u = m.view(np.uint64)
    with np.errstate(over="ignore"):
        return np.bitwise_count((u & (~u + np.uint64(1))) - np.uint64(1)).astype(np.int64)


def highbit(m: np.ndarray) -> np.ndarray:
    x = m.view(np.uint64).copy()
    for k in (1, 2, 4, 8, 16, 32):
        x |= x >> np.uint64(k)
    return np.bitwise_count(x).astype(np.int64) - 1


def range_mask(lo: np.ndarray, hi: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Bits of block b for offsets in [lo, hi]."""
    base = b * 64
    low, high = np.clip(lo - base, 0, 64), np.clip(hi - base, -1, 63)
    ones = np.uint64(U64)
    with np.errstate(over="ignore"):
        left = np.where(low >= 64, np.uint64(0), ones << np.minimum(low, 63).astype(np.uint64))
        right = ones >> (63 - np.maximum(high, 0)).astype(np.uint64)
    return np.where((hi < base) | (lo > base + 63) | (high < low), 0, (left & right).view(np.int64))


def bits_of(mask: int) -> list[int]:
    m, out = mask & U64, []
    while m:
        low = m & -m
        out.append(low.bit_length() - 1)
        m ^= low
    return out


def _starts(*keys) -> np.ndarray:
    n = len(keys[0])
    if n == 0:
        return np.zeros(0, np.int64)
    change = np.zeros(n, bool)
    change[0] = True
    for k in keys:
        change[1:] |= k[1:] != k[:-1]
    return np.nonzero(change)[0]


def _reduce(cols: dict, keys: list[str], ops: dict) -> dict:
    """Group rows of equal ``keys`` (numpy columns): ops name -> "sum" | "or" | "min" | "max" | "first"."""
    n = len(cols[keys[0]])
    if n == 0:
        return {k: cols[k][:0] for k in list(keys) + list(ops)}
    order = np.lexsort([cols[k] for k in reversed(keys)])
    st = _starts(*[cols[k][order] for k in keys])
    ufunc = {"sum": np.add, "or": np.bitwise_or, "min": np.minimum, "max": np.maximum}
    out = {k: cols[k][order][st] for k in keys}
    for name, op in ops.items():
        v = cols[name][order]
        out[name] = v[st] if op == "first" else ufunc[op].reduceat(v, st)
    return out


def _chunk_sorted(mask, n, pw, s) -> np.ndarray:
    """Per group: offsets and log positions are both known exactly (bit sets); the group was consumed in
    offset order iff every offset came once and s equals the pairing of both in sorted order."""
    pcount = sum(popcount(w) for w in pw)
    ok = (popcount(mask) == n) & (pcount == n)
    idx = np.nonzero(ok)[0]
    if len(idx):
        om = np.unpackbits(mask[idx].view(np.uint64).view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")
        pm = np.concatenate([np.unpackbits(w[idx].view(np.uint64).view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")
                             for w in pw], axis=1)
        o = np.flatnonzero(om.view(bool))   # row-major: the k-th offset of a group pairs with its k-th position
        pcol = np.flatnonzero(pm.view(bool)) % (64 * WORDS)
        smax = np.bincount(o >> 6, weights=((o & 63) * pcol).astype(np.float64), minlength=len(idx))
        ok[idx] = np.rint(smax).astype(np.int64) == s[idx]
    return ok


def _pos_bounds(pw) -> tuple[np.ndarray, np.ndarray]:
    lo = np.full(len(pw[0]), BIG, np.int64)
    hi = np.full(len(pw[0]), -1, np.int64)
    for w, word in enumerate(pw):
        has = word != 0
        lo = np.where(has & (lo == BIG), w * 64 + lowbit(word), lo)
        hi = np.where(has, w * 64 + highbit(word), hi)
    return lo, hi


def check_partition(table, cfg: dict) -> list[tuple[str, dict]]:
    """All checks over one partition's groups (pyarrow table of :func:`aggregate`'s columns). ``cfg``:
    ``periods`` {(member, topic, partition): [(first epoch, last epoch, period id)]}, ``with_events``
    (members that logged events), ``t0``/``bin_ms`` (the rate's bins). Returns (kind, row) pairs."""
    import pyarrow as pa
    import pyarrow.compute as pc
    if table.num_rows == 0:
        return []
    col = lambda name, fill=0: np.asarray(table.column(name).fill_null(fill).to_numpy(zero_copy_only=False))  # noqa: E731
    topic, partition = table.column("topic")[0].as_py(), int(table.column("partition")[0].as_py())
    side, b = col("side").astype(np.int64), col("b").astype(np.int64)
    out: list[tuple[str, dict]] = []
    cons = np.nonzero(side == CONSUMED)[0]
    prod = np.nonzero(side == PRODUCED)[0]
    names = sorted({m for m in table.column("member").unique().to_pylist() if m is not None})
    mcode = np.asarray(pc.index_in(table.column("member"), pa.array(names, pa.string())).fill_null(-1))[cons].astype(np.int64)
    epoch = col("epoch")[cons].astype(np.int64)
    pairs, inv = np.unique(mcode << 32 | epoch, return_inverse=True)
    values = []
    for m, e in zip((pairs >> 32).tolist(), (pairs & 0xFFFFFFFF).tolist()):  # one lookup per (member, epoch)
        value = OUTSIDE_PERIOD if names[m] in cfg["with_events"] else NO_EVENTS_PERIOD
        values.append(next((pid for lo, hi, pid in cfg["periods"].get((names[m], topic, partition), ())
                            if lo <= e <= hi), value))
    period = np.asarray(values, np.int64)[inv.ravel()] if len(cons) else np.zeros(0, np.int64)
    g = {"m": mcode, "period": period, "b": b[cons], "n": col("n")[cons].astype(np.int64),
         "mask": col("mask")[cons].astype(np.int64), "kmin": col("kmin")[cons].astype(np.int64),
         "kmax": col("kmax")[cons].astype(np.int64), "fh": col("fh")[cons].astype(np.int64),
         "blk": col("blk")[cons].astype(np.int64), "c": col("c")[cons].astype(np.int64),
         "s": col("s")[cons].astype(np.int64), "gmax": col("gmax", -1)[cons].astype(np.int64)}
    g["gmin"] = np.where(g["gmax"] < 0, BIG, g["gmax"])
    for w in range(WORDS):
        g[f"p{w}"] = col(f"p{w}")[cons].astype(np.int64)
    # several epochs inside one period and one log chunk: one group
    ops = {"n": "sum", "mask": "or", "kmin": "min", "kmax": "max", "s": "sum", "gmin": "min", "gmax": "max",
           **{f"p{w}": "or" for w in range(WORDS)}}
    g = _reduce(g, ["m", "period", "fh", "blk", "c", "b"], ops)
    out += [("order", r) for r in _order(g, topic, partition, names)]

    # one group per (member, period, block): the deliveries the other checks reason about
    bg = _reduce(g, ["m", "period", "b"], {k: ops[k] for k in ("n", "mask", "kmin", "kmax", "gmin", "gmax")})
    bg["tmin"], bg["tmax"] = bg["kmin"] >> 6, bg["kmax"] >> 6
    bg["omin"], bg["omax"] = bg["b"] * 64 + lowbit(bg["mask"]), bg["b"] * 64 + highbit(bg["mask"])

    # blocks: everything consumed and acked ok per 64 offsets
    pb = {"b": b[prod], "mask": col("mask")[prod].astype(np.int64), "n": col("n")[prod].astype(np.int64),
          "tmin": col("kmin")[prod].astype(np.int64) >> 6, "tmax": col("kmax")[prod].astype(np.int64) >> 6}
    pb = _reduce(pb, ["b"], {"mask": "or", "n": "sum", "tmin": "min", "tmax": "max"})
    cb = _reduce(bg, ["b"], {"mask": "or", "n": "sum", "tmin": "min", "tmax": "max", "omax": "max"})
    allb = np.union1d(pb["b"], cb["b"])
    ip, ic = np.searchsorted(pb["b"], allb), np.searchsorted(cb["b"], allb)
    hasp = (ip < len(pb["b"])) & (pb["b"][np.minimum(ip, len(pb["b"]) - 1)] == allb) if len(pb["b"]) else np.zeros(len(allb), bool)
    hasc = (ic < len(cb["b"])) & (cb["b"][np.minimum(ic, len(cb["b"]) - 1)] == allb) if len(cb["b"]) else np.zeros(len(allb), bool)
    take = lambda d, i, has, k, fill: np.where(has, d[k][np.minimum(i, max(len(d[k]) - 1, 0))] if len(d[k]) else fill, fill)  # noqa: E731
    B = {"b": allb, "pmask": take(pb, ip, hasp, "mask", 0), "pn": take(pb, ip, hasp, "n", 0),
         "ptmin": take(pb, ip, hasp, "tmin", BIG), "ptmax": take(pb, ip, hasp, "tmax", SMALL),
         "cmask": take(cb, ic, hasc, "mask", 0), "cn": take(cb, ic, hasc, "n", 0),
         "ctmin": take(cb, ic, hasc, "tmin", BIG), "ctmax": take(cb, ic, hasc, "tmax", SMALL)}
    known = B["pmask"] | B["cmask"]
    extra = B["cn"] - popcount(B["cmask"])
    lostmask = B["pmask"] & ~B["cmask"]
    unacked = B["cmask"] & ~B["pmask"]
    out.append(("stats", {"topic": topic, "partition": partition, "produced": int(B["pn"].sum()),
                          "consumed_rows": int(B["cn"].sum()), "consumed_distinct": int(popcount(B["cmask"]).sum()),
                          "extra": int(extra.sum()), "lost": int(popcount(lostmask).sum()),
                          "unacked": int(popcount(unacked).sum()),
                          "produced_repeats": int((B["pn"] - popcount(B["pmask"])).sum())}))
    none = lambda v, sentinel: None if v == sentinel else int(v)  # noqa: E731
    for i in np.nonzero((lostmask != 0) | (unacked != 0))[0]:
        out.append(("dirty", {"topic": topic, "partition": partition, "b": int(allb[i]), "lostmask": int(lostmask[i]),
                              "unackedmask": int(unacked[i]), "ptmin": none(B["ptmin"][i], BIG),
                              "ptmax": none(B["ptmax"][i], SMALL), "ctmax": none(B["ctmax"][i], SMALL)}))
    for i in np.nonzero(np.isin(bg["b"], allb[extra > 0]))[0]:
        out.append(("groups", {"topic": topic, "partition": partition, "b": int(bg["b"][i]),
                               "member": names[bg["m"][i]], "period": int(bg["period"][i]), "n": int(bg["n"][i]),
                               "mask": int(bg["mask"][i]), "tmin": int(bg["tmin"][i]), "tmax": int(bg["tmax"][i]),
                               "gmin": none(bg["gmin"][i], BIG), "gmax": none(bg["gmax"][i], -1)}))
    ps = _reduce(bg, ["m", "period"], {"n": "sum", "tmin": "min", "tmax": "max"})
    out += [("periods", {"member": names[m], "topic": topic, "partition": partition, "period": int(p), "n": int(n),
                         "tmin": int(t0), "tmax": int(t1)})
            for m, p, n, t0, t1 in zip(ps["m"], ps["period"], ps["n"], ps["tmin"], ps["tmax"])]
    rate = _reduce({"bin": (bg["tmin"] - cfg["t0"]) // cfg["bin_ms"], "n": bg["n"]}, ["bin"], {"n": "sum"})
    out += [("rate", {"bin": int(x), "n": int(n)}) for x, n in zip(rate["bin"], rate["n"])]
    out += [("skip", r) for r in _skips(bg, allb, known, topic, partition, names)]
    out += _delivery_spans(bg, topic, partition, cfg["stall_ms"])
    return out


def _delivery_spans(bg, topic, partition, stall_ms) -> list[tuple[str, dict]]:
    """When the partition was delivered, folded into spans with no gap above ``stall_ms`` inside, each with the
    highest offset delivered in it (the ``stall`` check's input). A group whose own time span is above
    ``stall_ms`` may hide such a gap: its block is returned (``stall_blocks``) to be read back record by record."""
    long = (bg["tmax"] - bg["tmin"]) > stall_ms
    out = [("stall_blocks", {"topic": topic, "partition": partition, "b": int(b)}) for b in np.unique(bg["b"][long])]
    return out + [("spans", {"topic": topic, "partition": partition, "start": a, "end": z, "omax": o})
                  for a, z, o in merge_spans(bg["tmin"][~long], bg["tmax"][~long], bg["omax"][~long], stall_ms)]


def merge_spans(t0, t1, omax, gap_ms: int) -> list[tuple[int, int, int]]:
    """Time spans [t0, t1] (each with a highest offset) merged wherever no gap above ``gap_ms`` separates them:
    [(from, to, highest offset)], in time order. The one span rule of the ``stall`` check (executor and driver)."""
    t0, t1, omax = (np.asarray(v, np.int64) for v in (t0, t1, omax))
    if len(t0) == 0:
        return []
    order = np.argsort(t0, kind="stable")
    t0, t1, omax = t0[order], t1[order], omax[order]
    new = np.ones(len(t0), bool)
    new[1:] = t0[1:] - np.maximum.accumulate(t1)[:-1] > gap_ms
    st = np.nonzero(new)[0]
    return list(zip(t0[st].tolist(), np.maximum.reduceat(t1, st).tolist(), np.maximum.reduceat(omax, st).tolist()))


def _skips(bg, allb, known, topic, partition, names) -> list[dict]:
    """Known records inside one ownership's consumed range that the owner never consumed in it: missing bits
    inside a block's [omin, omax], and known records in the gap between two consecutive consumed blocks."""
    out = []
    inside = np.nonzero(bg["period"] >= 0)[0]
    kb = known[np.searchsorted(allb, bg["b"][inside])]
    miss = kb & ~bg["mask"][inside] & range_mask(bg["omin"][inside], bg["omax"][inside], bg["b"][inside])
    for j in np.nonzero(miss)[0]:
        i = inside[j]
        out.append({"member": names[bg["m"][i]], "topic": topic, "partition": partition, "period": int(bg["period"][i]),
                    "b": int(bg["b"][i]), "bits": int(miss[j]), "t0": int(bg["tmin"][i]), "t1": int(bg["tmax"][i])})
    for a, z in zip(inside[:-1], inside[1:]):  # bg is sorted by (member, period, b)
        if bg["m"][a] != bg["m"][z] or bg["period"][a] != bg["period"][z] or bg["omin"][z] <= bg["omax"][a] + 1:
            continue
        lo, hi = int(bg["omax"][a]) + 1, int(bg["omin"][z]) - 1
        i0, i1 = np.searchsorted(allb, lo >> 6), np.searchsorted(allb, hi >> 6, side="right")
        bits = known[i0:i1] & range_mask(np.full(i1 - i0, lo), np.full(i1 - i0, hi), allb[i0:i1])
        for k in np.nonzero(bits)[0]:
            out.append({"member": names[bg["m"][a]], "topic": topic, "partition": partition, "period": int(bg["period"][a]),
                        "b": int(allb[i0 + k]), "bits": int(bits[k]), "t0": int(bg["tmax"][a]), "t1": int(bg["tmin"][z])})
    return out


def _order(g, topic, partition, names) -> list[dict]:
    """Log units (Parquet: a chunk of 512 rows; JSONL: a split) whose records must be read back to find
    every step back exactly: those holding a group not consumed in order, or two groups of one ownership that
    do not follow each other in the log, and the units just before and after them in that ownership."""
    sel = np.nonzero(g["period"] >= 0)[0]
    if len(sel) == 0:
        return []
    pw = [g[f"p{w}"][sel] for w in range(WORDS)]
    ok = _chunk_sorted(g["mask"][sel], g["n"][sel], pw, g["s"][sel])
    plo, phi = _pos_bounds(pw)
    m, period, fh, blk, c, b = (g[k][sel] for k in ("m", "period", "fh", "blk", "c", "b"))
    omin, omax = b * 64 + lowbit(g["mask"][sel]), b * 64 + highbit(g["mask"][sel])
    # a member's files in the order of their first record of this partition
    _, fcode = np.unique(fh, return_inverse=True)
    files, inv = np.unique(m << 32 | fcode.ravel(), return_inverse=True)
    first = np.full(len(files), BIG, np.int64)
    np.minimum.at(first, inv.ravel(), g["kmin"][sel] >> 6)
    uc = np.where(blk < 0, c, 0)
    o = np.lexsort((b, c, blk, fh, first[inv.ravel()], period, m))
    m, period, fh, blk, c, uc, ok, plo, phi, omin, omax = (x[o] for x in (m, period, fh, blk, c, uc, ok, plo, phi, omin, omax))
    new_seq = np.ones(len(o), bool)
    new_seq[1:] = (m[1:] != m[:-1]) | (period[1:] != period[:-1])
    new_unit = new_seq.copy()
    new_unit[1:] |= (fh[1:] != fh[:-1]) | (blk[1:] != blk[:-1]) | (uc[1:] != uc[:-1])
    unit = np.cumsum(new_unit) - 1                       # global unit id, in log order
    seq = np.cumsum(new_seq) - 1
    seq_first = unit[new_seq]                           # first unit id of each (member, period)
    seq_end = np.append(seq_first[1:], unit[-1] + 1)
    same = np.zeros(len(o), bool)
    same[1:] = (fh[1:] == fh[:-1]) & (blk[1:] == blk[:-1]) & (c[1:] == c[:-1])
    clash = np.zeros(len(o), bool)                      # the two groups do not follow each other
    clash[1:] = ~new_seq[1:] & ((omax[:-1] >= omin[1:]) | (same[1:] & (phi[:-1] >= plo[1:])))
    bad_u = np.concatenate([unit[~ok], unit[clash], unit[clash & ~same] - 1])
    bad_s = np.concatenate([seq[~ok], seq[clash], seq[clash & ~same]])
    cand_u = np.concatenate([bad_u + d for d in (-1, 0, 1)])
    cand_s = np.tile(bad_s, 3)
    keep = (cand_u >= seq_first[cand_s]) & (cand_u < seq_end[cand_s])
    wanted = np.unique(cand_u[keep])
    rep = np.nonzero(new_unit)[0][wanted]               # first group of each wanted unit
    return [{"member": names[m[i]], "topic": topic, "partition": partition, "period": int(period[i]),
             "fh": int(fh[i]), "blk": int(blk[i]), "c": int(uc[i]), "idx": int(u - seq_first[seq[i]])}
            for u, i in zip(wanted.tolist(), rep.tolist())]


def steps_back(units: list[dict], rows: list[dict], period_of) -> list[tuple]:
    """Every step back (next offset not above the previous one) inside the read-back log units, record by
    record: (member, topic, partition, period, (offset, ts) before, (offset, ts) after)."""
    where = {}
    for u in units:
        where[(u["member"], u["topic"], u["partition"], u["period"], u["fh"], u["blk"], u["c"])] = u["idx"]
    seqs: dict[tuple, list] = {}
    for r in rows:
        blk = r["blk"]
        c = r["pos"] >> CHUNK_BITS if blk < 0 else 0
        period = period_of(r["member"], r["topic"], r["partition"], r["epoch"])
        idx = where.get((r["member"], r["topic"], r["partition"], period, r["fh"], blk, c))
        if idx is not None:
            seqs.setdefault((r["member"], r["topic"], r["partition"], period), []).append((idx, r["pos"], r["offset"], r["ts"]))
    out = []
    for key, seq in seqs.items():
        seq.sort()
        for (i0, p0, o0, t0), (i1, p1, o1, t1) in zip(seq, seq[1:]):
            if i1 - i0 <= 1 and (i0, p0) != (i1, p1) and o1 <= o0:
                out.append((*key, (o0, t0), (o1, t1)))
    return out
