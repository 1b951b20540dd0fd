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
    folded apart, without the log-position aggregates they do not have. Topic and member are keyed by their
    64-bit hashes (``th``, ``mh``: string keys cost a third of the pass); :func:`name_rows` names them again."""
    from pyspark.sql import functions as F
    # side, partition and epoch packed in one long: fewer fixed-width keys hash measurably faster
    key = "{} + shiftleft(coalesce(CAST(`partition` AS BIGINT), 0L) & 4294967295L, 4) + shiftleft(CAST({} + 2 AS BIGINT), 36) AS k"
    base = ["count(1) AS n", "bit_or(shiftleft(1L, CAST(`offset` & 63 AS INT))) AS mask",
            "min(shiftleft(ts, 6) | (`offset` & 63)) AS kmin", "max(shiftleft(ts, 6) | (`offset` & 63)) AS kmax"]
    pw = [f"bit_or(CASE WHEN (_pos >> 6) & {WORDS - 1} = {w} THEN shiftleft(1L, CAST(_pos & 63 AS INT)) END) AS p{w}"
          for w in range(WORDS)]
    c = consumed_df.selectExpr(key.format(f"CASE WHEN _bad IS NOT NULL THEN {BAD_CONSUMED} ELSE {CONSUMED} END",
                                          epoch_expr(bounds)),
                               f"{hashed('topic')} AS th", f"{hashed('member')} AS mh", "`offset` >> 6 AS b",
                               "_fh AS fh", "_blk AS blk", f"_pos >> {CHUNK_BITS} AS c", "`offset`", "ts", "generation",
                               "_pos")
    c = c.groupBy("k", "th", "mh", "b", "fh", "blk", "c").agg(*[F.expr(x) for x in (
        *base, "max(generation) AS gmax", *pw, f"sum((`offset` & 63) * (_pos & {(1 << CHUNK_BITS) - 1})) AS s")])
    p = produced_df.selectExpr(key.format(f"CASE WHEN _bad IS NOT NULL THEN {BAD_PRODUCED} WHEN status IS NULL OR "
                                          f"status = 'ok' THEN {PRODUCED} WHEN status = 'fail' THEN {FAILED} ELSE {INFO} END", 0),
                               f"{hashed('topic')} AS th", "`offset` >> 6 AS b", "`offset`", "ts")
    p = p.groupBy("k", "th", "b").agg(*[F.expr(x) for x in base])
    return c.unionByName(p, allowMissingColumns=True).selectExpr(
        "CAST(k & 15 AS INT) AS side", "CAST(shiftright(k, 4) & 4294967295L AS INT) AS `partition`",
        "CAST(shiftright(k, 36) - 2 AS INT) AS epoch", "th", "mh", "b", "fh", "blk", "c", "n", "mask", "kmin",
        "kmax", "gmax", *[f"p{w}" for w in range(WORDS)], "s")


def hashed(column: str) -> str:
    """SQL: the 64-bit key a name column is grouped by (NULL keeps a key of its own)."""
    return f"xxhash64(`{column}`)"


def name_hash(name: str) -> int:
    """Spark's ``xxhash64(name)`` (XXH64 of the UTF-8 bytes, seed 42, as a signed long), computed here: the names
    the history knows are hashed without a query."""
    import xxhash
    h = xxhash.xxh64_intdigest(name.encode(), seed=42)
    return h - (1 << 64) if h >= 1 << 63 else h


def resolve_names(produced, consumed, unknown_topics: set[int], unknown_members: set[int]) -> dict[tuple[str, int], str]:
    """Names of the hashes the history did not know (a topic nobody was assigned, a member without events):
    one query over the inputs, asked only when there are such hashes."""
    out = {}
    for table, column, wanted in ((produced, "topic", unknown_topics), (consumed, "topic", unknown_topics),
                                  (consumed, "member", unknown_members)):
        if not wanted:
            continue
        cond = f"{hashed(column)} IN ({', '.join(str(h) for h in sorted(wanted))})"
        for r in table.rows(cond).selectExpr(f"{hashed(column)} AS h", f"`{column}` AS name").distinct().toArrow().to_pylist():
            out[(column, r["h"])] = r["name"]
    return out


NAMED = ("topic", "member")


def _hashed_cells(got: dict[str, list[dict]]):
    """(row, column, hash) for every topic or member an executor's row gives by its hash."""
    for rows in got.values():
        for r in rows:
            for column in NAMED:
                h = r.get(column)
                if h is not None and not isinstance(h, str):
                    yield r, column, h


def name_rows(got: dict[str, list[dict]], names: dict[tuple[str, int], str]) -> None:
    """The executor's rows name topics and members by hash: put the names back (in place)."""
    for r, column, h in list(_hashed_cells(got)):
        r[column] = names[(column, h)]


def unnamed(got: dict[str, list[dict]], names: dict[tuple[str, int], str]) -> dict[str, set[int]]:
    out = {column: set() for column in NAMED}
    for _, column, h in _hashed_cells(got):
        if (column, h) not in names:
            out[column].add(h)
    return out


def check_partitions(agg, cfg: dict) -> dict[str, list[dict]]:
    """Every partition's groups checked by :func:`check_partition` in an executor: the groups are hashed to tasks by
    (topic, partition) and each task splits what it got by partition itself (no sort before the Python stage, which
    applyInArrow would add). Nothing is cached: the aggregation feeds this one job. The small results are collected
    once, as Arrow."""
    import pyspark.cloudpickle as cp

    from . import records as me
    cp.register_pickle_by_value(me)  # executors need numpy and pyarrow, not this package
    fn = lambda batches: _check_task(batches, cfg)  # noqa: E731
    out = agg.repartition("th", "partition").mapInArrow(fn, "q string, j string")
    got: dict[str, list[dict]] = {}
    table = out.toArrow()
    for q, j in zip(table.column("q").to_pylist(), table.column("j").to_pylist()):
        got.setdefault(q, []).append(json.loads(j))
    return got


def side_totals(got: dict[str, list[dict]]) -> dict[int, tuple]:
    """side -> (rows, tmin, tmax), over every partition."""
    by_side: dict[int, list[dict]] = {}
    for r in got.get("sides", []):
        by_side.setdefault(r["side"], []).append(r)
    return {side: (sum(r["n"] for r in rows), min((r["tmin"] for r in rows if r["tmin"] is not None), default=None),
                   max((r["tmax"] for r in rows if r["tmax"] is not None), default=None))
            for side, rows in by_side.items()}


def _check_task(batches, cfg):
    """One executor task: its groups split by (topic, partition), each checked; one batch of results a partition."""
    import pyarrow as pa
    table = pa.Table.from_batches(list(batches))
    if table.num_rows == 0:
        return
    th, part = np.asarray(table.column("th")), np.asarray(table.column("partition"))
    order = np.lexsort((part, th))
    table, th, part = table.take(order), th[order], part[order]
    starts = np.flatnonzero(np.r_[True, (th[1:] != th[:-1]) | (part[1:] != part[:-1])])
    for a, z in zip(starts, np.r_[starts[1:], len(th)]):
        rows = check_partition(table.slice(a, z - a), cfg)
        yield pa.RecordBatch.from_pydict({"q": pa.array([q for q, _ in rows], pa.string()),
                                          "j": pa.array([json.dumps(r, default=int) for _, r in rows], pa.string())})


def read_rows(spark, consumed, units: list[dict], blocks: list[tuple], chunks: list[dict], bounds: list[int]):
    """Record-level rows, read back only where the groups could not settle a check: the log units of
    ``units`` (order; Parquet: 512 rows of one file, JSONL: one split of one member's partition) and the
    64-offset ``blocks`` (duplicates, stalls), each looked for only in the log units that hold its records
    (``chunks``): Parquet row groups are skipped on their row indexes. One job; Arrow."""
    def in_unit(fh, blk, c):
        if blk < 0:  # a Parquet file: only its reader has row indexes
            lo = c << CHUNK_BITS
            return f"{consumed.file_id} = {fh} AND _metadata.row_index BETWEEN {lo} AND {lo + (1 << CHUNK_BITS) - 1}"
        return f"{consumed.file_id} = {fh} AND _metadata.file_block_start = {blk}"

    conds = [(u["blk"], f"({in_unit(u['fh'], u['blk'], u['c'])} AND topic = {lit(u['topic'])} "
                        f"AND `partition` = {u['partition']} AND member = {lit(u['member'])})") for u in units]
    wanted = set(blocks)
    unplaced = wanted - {(k["topic"], k["partition"], k["b"]) for k in chunks}
    assert not unplaced, f"no log unit holds the records of blocks {sorted(unplaced)[:3]}"
    conds += [(k["blk"], f"({in_unit(k['fh'], k['blk'], k['c'])} AND topic = {lit(k['topic'])} "
                         f"AND `partition` = {k['partition']} AND `offset` BETWEEN {k['b'] * 64} AND {k['b'] * 64 + 63})")
              for k in chunks if (k["topic"], k["partition"], k["b"]) in wanted]
    if not conds:
        return []
    by_format = {"parquet": " OR ".join(c for blk, c in conds if blk < 0) or None,  # each unit in its own format
                 "jsonl": " OR ".join(c for blk, c in conds if blk >= 0) or None}
    df = consumed.rows(by_format).where("_bad IS NULL")
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


def acked_in_block(produced, keys):
    """The ok-acked produced rows (topic, partition, offset, ts) above each (topic, partition, top) inside top's
    64-offset block: at most 63 a key, pushed down as offset ranges (Parquet row groups skipped on their
    statistics)."""
    conds = [f"(topic = {lit(t)} AND `partition` = {p} AND `offset` BETWEEN {top + 1} AND {top | 63})"
             for t, p, top in sorted(keys)]
    if not conds:
        return []
    return (produced.rows(" OR ".join(conds)).where("_bad IS NULL AND (status IS NULL OR status = 'ok')")
            .select("topic", "partition", "offset", "ts").toArrow().to_pylist())


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


def _bits(words: np.ndarray) -> np.ndarray:
    """One row of 64 booleans per 64-bit word, bit 0 first."""
    return np.unpackbits(words.view(np.uint64).view(np.uint8).reshape(-1, 8), axis=1, bitorder="little").view(bool)


def _chunk_sorted(mask, n, pw, s) -> np.ndarray:
    """Per group: offsets and log positions are both known exactly (bit sets); the group was consumed in
    offset order iff every offset came once and s equals the pairing of both in sorted order."""
    pcount = sum(popcount(w) for w in pw)
    ok = (popcount(mask) == n) & (pcount == n)
    idx = np.nonzero(ok)[0]
    if len(idx):
        o = np.flatnonzero(_bits(mask[idx]))  # row-major: the k-th offset of a group pairs with its k-th position
        words = np.stack([w[idx] for w in pw], axis=1)
        gi, wi = np.nonzero(words)           # only the words a group occupies are unpacked
        cell = np.flatnonzero(_bits(words[gi, wi]))
        pos = wi[cell >> 6] * 64 + (cell & 63)
        smax = np.bincount(o >> 6, weights=((o & 63) * pos).astype(np.float64), minlength=len(idx))
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
    ``periods`` {(member hash, topic hash, partition): [(first epoch, last epoch, period id)]}, ``with_events``
    (hashes of the members that logged events), ``stall_ms``. Returns (kind, row) pairs; topics and members
    are their hashes (:func:`name_rows`)."""
    if table.num_rows == 0:
        return []
    col = lambda name, fill=0: np.asarray(table.column(name).fill_null(fill).to_numpy(zero_copy_only=False))  # noqa: E731
    topic, partition = int(table.column("th")[0].as_py()), int(table.column("partition")[0].as_py())
    side, b = col("side").astype(np.int64), col("b").astype(np.int64)
    out = _sides(side, col("n").astype(np.int64), col("kmin", BIG).astype(np.int64), col("kmax", SMALL).astype(np.int64))
    if (side >= BAD_PRODUCED).all():  # rows that break the contract (diagnose names them) are only counted
        return out
    cons = np.nonzero(side == CONSUMED)[0]
    prod = np.nonzero(side == PRODUCED)[0]
    names, mcode = np.unique(col("mh")[cons].astype(np.int64), return_inverse=True)
    mcode = mcode.ravel().astype(np.int64)
    names = names.tolist()
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
          "kmin": col("kmin")[prod].astype(np.int64), "kmax": col("kmax")[prod].astype(np.int64)}
    pb = _reduce(pb, ["b"], {"mask": "or", "n": "sum", "kmin": "min", "kmax": "max"})
    pb["tmin"], pb["tmax"] = pb["kmin"] >> 6, pb["kmax"] >> 6
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
    out += _rate(bg["tmin"], bg["n"], topic, partition)
    out += [("skip", r) for r in _skips(bg, allb, known, topic, partition, names)]
    spans = _delivery_spans(bg, topic, partition, cfg["stall_ms"])
    # every offset that can be the top of a gap: -1, the running top at each span's end, and any offset of a block
    # read back for the stall check; what the blocks cannot say of them, the block's end (exact) and its rows can
    tops = np.maximum.accumulate([-1] + [r["omax"] for q, r in spans if q == "spans"])
    ends = [t | 63 for t in tops if t >= 0] + [r["b"] * 64 + 63 for q, r in spans if q == "stall_blocks"]
    out += [("acks", {"topic": topic, "partition": partition, "top": int(t), **first_ack(pb, int(t))})
            for t in np.unique(np.concatenate([tops, np.asarray(ends, np.int64)]))]
    # where in the logs the records of each block that may be read back lie (re-delivered or slow blocks)
    wanted = np.union1d(allb[extra > 0], [r["b"] for q, r in spans if q == "stall_blocks"])
    at = _reduce({k: g[k][np.isin(g["b"], wanted)] for k in ("b", "fh", "blk", "c", "n")}, ["b", "fh", "blk", "c"], {"n": "sum"})
    out += [("chunks", {"topic": topic, "partition": partition, "b": int(x), "fh": int(f), "blk": int(k), "c": int(c)})
            for x, f, k, c in zip(at["b"], at["fh"], at["blk"], at["c"])]
    return out + spans


def _sides(side, n, kmin, kmax) -> list[tuple[str, dict]]:
    """Rows and time range of each side (consumed, produced ok, failed, info, bad input) of this partition."""
    out = []
    for s in np.unique(side).tolist():
        at = side == s
        lo, hi = int(kmin[at].min()), int(kmax[at].max())
        out.append(("sides", {"side": s, "n": int(n[at].sum()),
                              "tmin": None if lo == BIG else lo >> 6, "tmax": None if hi == SMALL else hi >> 6}))
    return out


RATE_BINS = 400


def _rate(tmin, n, topic, partition) -> list[tuple[str, dict]]:
    """Deliveries per time bin (by each block group's first delivery): bins of 100 * 2^k ms from the epoch, the
    smallest with at most RATE_BINS over this partition, so that every partition's bins nest in the largest."""
    if len(tmin) == 0:
        return []
    size = 100
    while (int(tmin.max()) - int(tmin.min())) // size >= RATE_BINS:
        size *= 2
    r = _reduce({"bin": tmin // size, "n": n}, ["bin"], {"n": "sum"})
    return [("rate", {"start": int(x) * size, "size": size, "n": int(k)}) for x, k in zip(r["bin"], r["n"])]


def first_ack(pb: dict, top: int) -> dict:
    """Bounds ``lo``/``hi`` on when the first record above offset ``top`` was acked ok, from the produced blocks
    (``pb``, sorted by block): exact (lo == hi) unless ``top`` splits a block whose earliest ack lies at or
    below it; both None when nothing above ``top`` was acked. The ``stall`` check asks Spark only when it must
    know more."""
    b, bit = top >> 6, top & 63
    i = int(np.searchsorted(pb["b"], b, side="right"))
    above = int(np.min(pb["tmin"][i:])) if i < len(pb["b"]) else BIG
    lo = hi = above
    j = i - 1
    if top >= 0 and bit < 63 and j >= 0 and pb["b"][j] == b:
        rest = (int(pb["mask"][j]) & U64) >> (bit + 1)
        if rest:
            tmin, tmax = int(pb["tmin"][j]), int(pb["tmax"][j])
            lo = min(lo, tmin)
            if int(pb["kmin"][j]) & 63 > bit:
                hi = min(hi, tmin)
            elif int(pb["kmax"][j]) & 63 > bit:
                hi = min(hi, tmax)
    return {"lo": None if lo == BIG else lo, "hi": None if hi == BIG else hi}


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
    a_, z_ = inside[:-1], inside[1:]  # bg is sorted by (member, period, b): consecutive blocks of one ownership
    gap = (bg["m"][a_] == bg["m"][z_]) & (bg["period"][a_] == bg["period"][z_]) & (bg["omin"][z_] > bg["omax"][a_] + 1)
    for a, z in zip(a_[gap].tolist(), z_[gap].tolist()):
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
