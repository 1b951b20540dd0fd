"""The record-level work, all in Spark: one scan of each input, folded into small groups, then every partition's
groups checked at once (:func:`check_groups`: in executors, or in the driver for a small input). The driver
only collects what the checks report.

Every produced and consumed row is folded into a group keyed by

    (side, topic, partition, epoch, member, b = offset >> 6)

holding its row count ``n``, the 64-bit set ``mask`` of its offsets, min/max of ``ts << 6 | offset & 63`` and the
highest generation. None of it depends on where a row sits in its file, so neither the groups nor their number
depend on the row order or the file layout.

The one thing that depends on the order of consumption, ``backwards`` (a member's next record not above the previous
one inside one ownership), is settled by the same groups when every consumed file carries ``n`` (the member's
consumption sequence, contract v1): consumed groups are keyed by the bucket ``nb = n >> 8`` too and keep the set of
``n & 255`` (four 64-bit words) and the sum of ``(n & 255) * (offset & 63)``, from which :func:`unordered_ranges`
tells, exactly and in any row order, the ranges of n where a member may step back. Only their rows are read again
(:func:`_resequenced`: one shuffle by (range, n >> SEQUENCE_SHIFT), sorted by n inside each task, stitched by
:func:`stitch_by_sequence`), with the rows of the few blocks the groups cannot settle (duplicates, stalls:
:func:`block_rows`, a broadcast semi-join in the JVM). A run without anomalies reads no row twice. Without ``n`` (a
run written before the column, a user's own log), "next" means next in the member's log: one pass over the consumed
rows (:func:`log_pass`) cuts them into pieces (consecutive rows of one file split), finds the steps back inside
every (stream, piece) with numpy, and returns each piece's first and last record; the driver stitches the pieces of
each stream in log order (:func:`stitch_steps`); that is exact only when each member's rows are in consumption
order, and the check says so.

The epoch of a row is the number of ownership boundaries at or before its time (a binary search over them,
:func:`with_epoch`); the ownership period of a row or group is looked up from its epoch (:func:`periods_of`,
``history.Ownership``: the one period rule).

No query builds one SQL term per key, block or window: Spark compiles a query's expressions into one Java method,
and a few thousand OR-ed conditions or CASE branches outgrow Java's 64 KB (Janino refuses it, Spark falls back to
interpreting the plan and prints the compiler's stack trace). The keys go to a small broadcast table joined on an
exact condition instead, behind a bounded filter the reader can push down (:class:`Wanted`).
"""
from __future__ import annotations

import bisect
import json
import sys
from typing import NamedTuple

import numpy as np

from analysis.engine import kernels
from analysis.engine.kernels import (BAD_CONSUMED, BAD_PRODUCED, BIG, CONSUMED, FAILED, INFO, LOG_ROWS, LOG_SCHEMA,
                                     PRODUCED, SEGMENT, SEQUENCE_WORDS, STEP, UNPLACED, bit_runs,
                                     check_groups, check_task, codes, int_columns, log_batch, log_task)
from analysis import intervals
from analysis.intervals import gaps_inclusive, merged_ranges, segmented_cummax


# ------------------------------------------------------------------------------------------------- Spark
def lit(text) -> str:
    """A SQL string literal."""
    return "'" + str(text).replace("\\", "\\\\").replace("'", "\\'") + "'"


def with_epoch(df, bounds: list[int]):
    """``df`` with ``epoch``: how many of the sorted ``bounds`` are <= its ``ts`` (all of them for a NULL ts). A
    branch-free binary search over the bounds as one array literal: log2 steps, one projection each, whose
    generated code does not grow with the bounds (a CASE tree of one node a bound passed Java's 64 KB method limit
    at about 2,000 bounds, and past a few hundred its method was too large for the JIT: docs/benchmarks-history.md,
    issue 37)."""
    if not bounds:
        return df.selectExpr("*", "0 AS epoch")
    from pyspark.sql import functions as F
    depth = len(bounds).bit_length()
    padded = [*bounds, *[BIG] * ((1 << depth) - 1 - len(bounds))]  # every probe below lands inside the array
    df = df.selectExpr("*", f"array({', '.join(f'{b}L' for b in padded)}) AS _bounds", "0 AS _epoch")
    for step in (1 << i for i in reversed(range(depth))):  # _epoch: how many bounds are known to be <= ts
        df = df.withColumn("_epoch", F.expr(f"_epoch + IF(ts < _bounds[_epoch + {step - 1}], 0, {step})"))
    # spark_partition_id() makes the last step non-deterministic to the optimizer: a filter over the epoch stays
    # above it, for pushed down through the steps it would copy each step's expression into the next twice over
    # (2^depth copies: no memory is enough at 5,000 bounds)
    return df.withColumn("epoch", F.expr(f"least(_epoch, {len(bounds)}) + 0 * spark_partition_id()")).drop("_bounds", "_epoch")


def aggregate(produced_df, consumed_df, bounds: list[int], offset_words: int = 1, n_words: int | None = None):
    """The one pass (lazy): every row of both inputs folded into its group, key unpacked. Produced rows are
    folded apart, without the log-position aggregates they do not have. Topic and member are keyed by their
    64-bit hashes (``th``, ``mh``: string keys cost a third of the pass); :func:`name_rows` names them again.
    ``offset_words``, ``n_words``: a group's width, in words of 64 offsets (``mask``; more than one: ``mask0``...)
    and of 64 values of n (``nmask0``...). The checks read the defaults (1, SEQUENCE_WORDS) only;
    benchmarks/group_width.py measures wider groups: fewer groups, more words a row updates, no faster as a whole,
    and a coarser time for the anomalies they settle (docs/benchmarks-history.md, thirteenth increment)."""
    from pyspark.sql import functions as F
    n_words = n_words or SEQUENCE_WORDS
    shift, low = _offset_shift(offset_words), f"(`offset` & {64 * offset_words - 1})"
    masks = ["mask"] if offset_words == 1 else [f"mask{i}" for i in range(offset_words)]
    nmasks = [f"nmask{i}" for i in range(n_words)]
    base = ["count(1) AS n", *_word_sets("`offset`", masks), f"min(shiftleft(ts, {shift}) | {low}) AS kmin",
            f"max(shiftleft(ts, {shift}) | {low}) AS kmax"]
    sequence = [*_word_sets("n", nmasks), f"sum((n & {64 * n_words - 1}) * {low}) AS nsum"]
    c = consumed_keyed(consumed_df, bounds, offset_words, n_words)
    c = c.groupBy(*CONSUMED_KEY).agg(*[F.expr(x) for x in (*base, "max(generation) AS gmax", *sequence)])
    p = produced_df.selectExpr(_KEY.format(f"CASE WHEN _bad IS NOT NULL THEN {BAD_PRODUCED} WHEN status IS NULL OR "
                                           f"status = 'ok' THEN {PRODUCED} WHEN status = 'fail' THEN {FAILED} WHEN "
                                           f"status = 'unplaced' THEN {UNPLACED} ELSE {INFO} END", 0),
                               f"{hashed('topic')} AS th", f"`offset` >> {shift} AS b", "`offset`", "ts")
    p = p.groupBy("k", "th", "b").agg(*[F.expr(x) for x in base])
    return unpacked(c.unionByName(p, allowMissingColumns=True), masks, nmasks)


CONSUMED_KEY = ("k", "th", "mh", "b", "nb")


# side, partition and epoch packed in one long: fewer fixed-width keys hash measurably faster
_KEY = "{} + shiftleft(coalesce(CAST(`partition` AS BIGINT), 0L) & 4294967295L, 4) + shiftleft(CAST({} + 2 AS BIGINT), 36) AS k"


def consumed_keyed(consumed_df, bounds: list[int], offset_words: int = 1, n_words: int | None = None):
    """The consumed rows as :func:`aggregate` folds them: the group key (CONSUMED_KEY, side, partition and epoch
    packed in ``k``) and the columns its aggregates read."""
    n_words = n_words or SEQUENCE_WORDS
    return with_epoch(consumed_df, bounds).selectExpr(
                                  _KEY.format(f"CASE WHEN _bad IS NOT NULL THEN {BAD_CONSUMED} ELSE {CONSUMED} END", "epoch"),
                                  f"{hashed('topic')} AS th", f"{hashed('member')} AS mh",
                                  f"`offset` >> {_offset_shift(offset_words)} AS b",
                                  f"n >> {5 + n_words.bit_length()} AS nb", "`offset`", "ts", "generation", "n")


def _offset_shift(offset_words: int) -> int:
    """log2 of a group's offsets (64 per word; ``offset_words``: a power of 2)."""
    return 5 + offset_words.bit_length()


def unpacked(groups, masks: list[str], nmasks: list[str]):
    """:func:`aggregate`'s groups with ``k`` unpacked into side, partition and epoch, in the checks' column order."""
    return groups.selectExpr(
        "CAST(k & 15 AS INT) AS side", "CAST(shiftright(k, 4) & 4294967295L AS INT) AS `partition`",
        "CAST(shiftright(k, 36) - 2 AS INT) AS epoch", "th", "mh", "b", "n", *masks, "kmin", "kmax", "gmax", "nb",
        *nmasks, "nsum")


def _word_sets(column: str, names: list[str]):
    """SQL aggregates: the set of ``column``'s values modulo 64 len(names) as len(names) 64-bit words (word i, bit j:
    the value 64 i + j); one word without the word's test."""
    bit = f"shiftleft(1L, CAST({column} & 63 AS INT))"
    if len(names) == 1:
        yield f"bit_or({bit}) AS {names[0]}"
        return
    for i, name in enumerate(names):
        yield f"bit_or(IF(shiftright({column}, 6) & {len(names) - 1} = {i}, {bit}, 0L)) AS {name}"


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


def by_value(cloudpickle) -> None:
    """Executors get this module's functions, the kernels and the interval arithmetic by value: they need numpy and
    pyarrow, not this package."""
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    cloudpickle.register_pickle_by_value(kernels)
    cloudpickle.register_pickle_by_value(intervals)


def check_partitions(agg, cfg: dict, in_driver: bool = False) -> dict[str, list[dict]]:
    """Every partition's groups checked by :func:`check_groups`, all at once, results by kind. ``in_driver`` (a small
    input): the groups are collected as Arrow and checked here, without a Python worker or a shuffle (their fixed
    cost was most of a small run's scan: docs/benchmarks-history.md, eighth increment). Else in executors: the groups
    are hashed to tasks by (topic, partition) and each task checks all it got at once (no sort before the Python stage,
    which applyInArrow would add), its results sent back as JSON. Nothing is cached: the aggregation feeds this one
    job."""
    if in_driver:
        rows = check_groups(agg.toArrow(), cfg)
    else:
        import pyspark.cloudpickle as cp

        by_value(cp)
        fn = lambda batches: check_task(batches, cfg)  # noqa: E731
        table = agg.repartition("th", "partition").mapInArrow(fn, "q string, j string").toArrow()
        rows = zip(table.column("q").to_pylist(), map(json.loads, table.column("j").to_pylist()))
    got: dict[str, list[dict]] = {}
    for q, r in rows:
        got.setdefault(q, []).append(r)
    return got


class SideTotal(NamedTuple):
    """One side's (produced, consumed, bad rows) totals over every partition."""
    rows: int
    tmin: int | None
    tmax: int | None


def side_totals(got: dict[str, list[dict]]) -> dict[int, SideTotal]:
    """side -> its totals, over every partition."""
    by_side: dict[int, list[dict]] = {}
    for r in got.get("sides", []):
        by_side.setdefault(r["side"], []).append(r)
    return {side: SideTotal(sum(r["n"] for r in rows), min((r["tmin"] for r in rows if r["tmin"] is not None), default=None),
                   max((r["tmax"] for r in rows if r["tmax"] is not None), default=None))
            for side, rows in by_side.items()}




LOG_ORDER_NOTE = "backwards judged by log order: exact only when each member's rows are in consumption order"




SEQUENCE_ROWS_IN_DRIVER = LOG_ROWS       # ranges to re-sequence holding at most this many n: in the driver, at once


class At(NamedTuple):
    """A consumed record, as a step back names its two ends."""
    offset: int
    ts: int


class Step(NamedTuple):
    """One step back: inside one ownership ``period`` of (member, topic, partition), the record consumed ``after``
    ``before`` was not above it."""
    member: str
    topic: str
    partition: int
    period: int
    before: At
    after: At


class Steps(list):
    """Every step back, named and sorted: (member, topic, partition, period, (offset, ts) before, (offset, ts) after);
    ``by_sequence``: judged by the consumption sequence ``n`` (else by log order); ``unsequenced``: rows left out of
    the judgement for want of an ``n`` (in a run whose every file carries the column)."""

    def __init__(self, steps=(), by_sequence: bool = False, unsequenced: int = 0) -> None:
        super().__init__(steps)
        self.by_sequence, self.unsequenced = by_sequence, unsequenced


def log_pass(consumed, cfg: dict, bounds: list[int], blocks, names: dict, order: bool = True,
             unordered: list[dict] = (), unsequenced: int = 0) -> tuple[list[dict], "Steps"]:
    """The records of the 64-offset ``blocks`` (topic, partition, b) the groups could not settle (duplicates,
    stalls), and, when ``order``, every step back of every member. Returns (rows, steps), named.

    When the scan's groups settled the order by ``n`` (``cfg["sequence"]``: every consumed file carries it), only the
    rows of those blocks (:func:`block_rows`) and of the ``unordered`` streams the groups could not clear
    (:func:`unordered_ranges`, :func:`_resequenced`) are read, in one read when those ranges are small
    (:func:`_blocks_and_ranges`): a log in consumption order, in any row order, reads none. Else one job, no
    shuffle, judges each member's log in its order (:func:`stitch_steps`)."""
    ranges = merged_ranges((r["mh"], r["th"], r["partition"], r["lo"], r["hi"]) for r in unordered or ())
    if order and cfg.get("sequence") and ranges and sum(hi - lo + 1 for *_, lo, hi in ranges) <= SEQUENCE_ROWS_IN_DRIVER:
        rows, steps = _blocks_and_ranges(consumed, cfg, bounds, blocks, ranges, names)
        return rows, _named_steps(steps, names, order, unsequenced)
    rows = block_rows(consumed, bounds, blocks, names)
    if not order or cfg.get("sequence"):
        steps = _resequenced(consumed, cfg, bounds, ranges) if order and ranges else []
        return rows, _named_steps(steps, names, order, unsequenced)
    import pyspark.cloudpickle as cp

    by_value(cp)
    fn = lambda batches: log_task(batches, cfg)  # noqa: E731
    table = _log_columns(consumed, bounds).mapInArrow(fn, LOG_SCHEMA).toArrow()
    kind = np.asarray(table.column("kind"))
    steps = stitch_steps(int_columns(table.filter(kind == SEGMENT)), int_columns(table.filter(kind == STEP)), _file_ranks(consumed))
    return rows, _named_steps(steps, names, False, 0)


ROW_COLUMNS = ("th", "partition", "offset", "mh", "ts", "generation", "fh", "blk", "pos", "epoch")


def block_rows(consumed, bounds: list[int], blocks, names: dict) -> list[dict]:
    """Every consumed record of the 64-offset ``blocks`` (topic, partition, b), with its place in the log, named:
    picked in the JVM by a broadcast semi-join, so that only those rows leave it."""
    if not blocks:
        return []
    wanted = _wanted_blocks(consumed.df.sparkSession, blocks)
    df = _log_columns(consumed, bounds, wanted.cover).join(wanted.keys, wanted.on, "left_semi")
    return _named_rows(df.select(*ROW_COLUMNS).toArrow().to_pylist(), names)


class Wanted(NamedTuple):
    """The rows a read picks: ``cover``, a filter pushed down to the reader (it may let more through); ``keys``, a
    broadcast table; ``on``, the join condition with it that picks them exactly."""
    cover: str
    keys: object
    on: object


def wanted(spark, keys: list[tuple], schema: str, on: str, **cover) -> Wanted:
    """The rows that match one of the ``keys`` (rows of ``schema``) on ``on``, read behind :func:`covering` the
    ``cover`` (column -> every key's interval or name; the files' own column names: the reader filters first)."""
    from pyspark.sql import functions as F
    return Wanted(covering(**cover), F.broadcast(spark.createDataFrame(keys, schema)), F.expr(on))


def _wanted_blocks(spark, blocks) -> Wanted:
    """The rows of the 64-offset ``blocks`` (topic, partition, b); the keys' columns bth, bp, kb."""
    keys = sorted({(name_hash(t), p, b) for t, p, b in blocks})
    return wanted(spark, keys, "bth bigint, bp int, kb bigint", "th = bth AND `partition` = bp AND `offset` >> 6 = kb",
                  offset=[(b * 64, b * 64 + 63) for _, _, b in keys])


def _wanted_ranges(spark, ranges: list[tuple]) -> Wanted:
    """The rows of the ``ranges`` (member hash, topic hash, partition, lo, hi) of n; the keys' columns rid (the
    range's place in the list), rmh, rth, rp, lo, hi."""
    return wanted(spark, [(i, *r) for i, r in enumerate(ranges)], "rid bigint, rmh bigint, rth bigint, rp int, lo bigint, hi bigint",
                  "mh = rmh AND th = rth AND `partition` = rp AND n BETWEEN lo AND hi", n=[(lo, hi) for *_, lo, hi in ranges])


def _blocks_and_ranges(consumed, cfg: dict, bounds: list[int], blocks, ranges: list[tuple], names: dict):
    """:func:`block_rows` and :func:`_resequenced` in one read, the re-sequencing done in the driver: the ranges hold
    at most SEQUENCE_ROWS_IN_DRIVER values of n, so at most as many rows (n numbers a member's records once). Each
    of the two was a full read of the consumed rows whenever the row groups' statistics could not skip (rows in no
    order): docs/benchmarks-history.md, tenth increment. Returns (rows, steps) as they do."""
    import pyarrow as pa
    import pyarrow.compute as pc
    spark = consumed.df.sparkSession
    in_range = _wanted_ranges(spark, ranges)
    in_block = _wanted_blocks(spark, blocks) if blocks else None
    df = _log_columns(consumed, bounds, in_range.cover + (f" OR {in_block.cover}" if in_block else ""))
    df = df.join(in_block.keys, in_block.on, "left") if in_block else df.selectExpr("*", "CAST(NULL AS BIGINT) AS kb")
    df = df.join(in_range.keys, in_range.on, "left")
    table = df.where("kb IS NOT NULL OR rid IS NOT NULL").select(*ROW_COLUMNS, "n", "kb", "rid").toArrow()
    rows = _named_rows(table.filter(pc.is_valid(table["kb"])).select(list(ROW_COLUMNS)).to_pylist(), names)
    in_ranges = table.filter(pc.is_valid(table["rid"]))
    segments = list(log_task(in_ranges.to_batches(), cfg, by_sequence=True))  # as an executor's task does
    return rows, _stitched_by_sequence(pa.Table.from_batches(segments or [log_batch({}, 0)]))


def _named_rows(rows: list[dict], names: dict) -> list[dict]:
    for r in rows:
        r["topic"], r["member"] = names[("topic", r.pop("th"))], names[("member", r.pop("mh"))]
    return rows


def _named_steps(steps, names: dict, by_sequence: bool, unsequenced: int) -> "Steps":
    return Steps([Step(names[("member", m)], names[("topic", t)], p, period, At(*before), At(*after))
                  for m, t, p, period, before, after in steps], by_sequence, unsequenced)


def _log_columns(consumed, bounds: list[int], condition: str | None = None):
    """The consumed rows as the log pass reads them: keys hashed, epoch, place in the log, consumption sequence;
    only those matching ``condition`` (SQL over the file's columns, pushed down to the reader), if given."""
    return with_epoch(consumed.rows(condition).where("_bad IS NULL"), bounds).selectExpr(
        f"{hashed('member')} AS mh", f"{hashed('topic')} AS th", "`partition`", "epoch",
        "_fh AS fh", "_blk AS blk", "_pos AS pos", "`offset`", "ts", "generation", "n")


COVER_INTERVALS = 32  # at most this many BETWEENs in a read's pushed-down filter


def covering_intervals(intervals, at_most: int = COVER_INTERVALS) -> list[tuple[int, int]]:
    """At most ``at_most`` sorted, disjoint intervals (inclusive) that cover every one of ``intervals``: the
    overlapping and touching ones merged, then the smallest gaps between them closed. A filter a reader can push
    down (Parquet skips the row groups whose statistics miss them all); the exact pick is the join after it."""
    merged = merged_ranges(intervals)
    if len(merged) > at_most:
        gaps = np.array([b[0] - a[1] for a, b in zip(merged, merged[1:])])
        cut = np.sort(np.argsort(gaps, kind="stable")[len(gaps) - (at_most - 1):])  # keep the widest gaps open
        starts, ends = [0, *(cut + 1).tolist()], [*cut.tolist(), len(merged) - 1]
        merged = [(merged[a][0], merged[z][1]) for a, z in zip(starts, ends)]
    return [(lo, hi) for lo, hi in merged]


def covering(**columns) -> str:
    """SQL that holds every row whose each column lies in one of its intervals (column -> [(lo, hi)], inclusive; an
    empty one holds no row) or, for a name column, is one of its names (column -> [name]; left out beyond
    COVER_INTERVALS names): a reader's pushed-down filter, at most COVER_INTERVALS terms a column."""
    terms = []
    for column, values in columns.items():
        values = list(values)
        if values and isinstance(values[0], str):
            names = sorted(set(values))
            terms += [f"`{column}` IN ({', '.join(map(lit, names))})"] if len(names) <= COVER_INTERVALS else []
        else:
            terms.append(f"({between_any(column, covering_intervals((lo, hi) for lo, hi in values if lo <= hi))})")
    return " AND ".join(terms) or "true"


def between_any(column: str, intervals: list[tuple[int, int]]) -> str:
    return " OR ".join(f"`{column}` BETWEEN {lo} AND {hi}" for lo, hi in intervals) or "false"


def _resequenced(consumed, cfg: dict, bounds: list[int], ranges: list[tuple]) -> list[tuple]:
    """The steps back, by ``n``, inside the ``ranges`` (member hash, topic hash, partition, lo, hi) of n the groups
    could not clear (:func:`unordered_ranges`, :func:`merged_ranges`): their rows, picked by a broadcast join,
    shuffled by (range, n >> SEQUENCE_SHIFT) and sorted by n inside each task, so that every task's segments of a
    range are disjoint in n and stitch exactly; a range is stitched on its own (``rid``), never to the next one of
    its stream, whose seam the groups cleared."""
    from pyspark.sql import functions as F
    wanted = _wanted_ranges(consumed.df.sparkSession, ranges)
    df = (_log_columns(consumed, bounds, wanted.cover).where("n IS NOT NULL").select("mh", "th", "partition", "epoch", "offset", "ts", "n")
          .join(wanted.keys, wanted.on)
          .drop("rmh", "rth", "rp", "lo", "hi")
          .repartition("rid", F.expr(f"n >> {kernels.SEQUENCE_SHIFT}"))
          .sortWithinPartitions("rid", "n")
          .selectExpr("*", "0L AS fh", "-1L AS blk", "0L AS pos", "-1 AS generation"))
    fn = lambda batches: log_task(batches, cfg, by_sequence=True)  # noqa: E731
    return _stitched_by_sequence(df.mapInArrow(fn, LOG_SCHEMA).toArrow())


def _stitched_by_sequence(table) -> list[tuple]:
    """The steps back of the re-sequenced segments (a table of LOG_SCHEMA rows), stitched by n; a range whose
    segments overlap is bad input."""
    kind = np.asarray(table.column("kind"))
    steps, unsettled = stitch_by_sequence(int_columns(table.filter(kind == SEGMENT)), int_columns(table.filter(kind == STEP)))
    if unsettled:  # sorted by n, a range's segments overlap only where one n is on more than one row
        from analysis.errors import InputError
        raise InputError(f"consumed/: column 'n' has one value on more than one row of a member's partition "
                         f"({len(unsettled)} such partitions): n numbers each record a member consumed, once")
    return steps


def _file_ranks(consumed) -> dict[int, int]:
    """File id (``_fh``) -> its place in the sorted file names: how two files whose first records of a partition
    share a millisecond are ordered. Only when no two files share a name (the id is then the name's hash); else
    such ties fall to the id, an arbitrary but fixed order."""
    names = sorted(p.name for p in consumed.files)
    return {name_hash(n): i for i, n in enumerate(names)} if len(set(names)) == len(names) else {}


def stitch_by_sequence(seg: dict, inner: dict) -> tuple[list[tuple], set[tuple]]:
    """Every step back by ``n``: those inside a segment (``inner``), and those between consecutive segments of one
    stream in the order of their first n. Exact for the streams whose segments are disjoint in n; the others are
    returned apart, as their (member hash, topic hash, partition), their steps left out.
    ((member hash, topic hash, partition, period, (offset, ts) before, (offset, ts) after) sorted, unsettled)."""
    steps = list(zip(inner["mh"].tolist(), inner["th"].tolist(), inner["partition"].tolist(), inner["period"].tolist(),
                     zip(inner["offset"].tolist(), inner["ts"].tolist()), zip(inner["offset2"].tolist(), inner["ts2"].tolist())))
    unsettled: set[tuple] = set()
    if len(seg["mh"]):
        mh, th, part, period = seg["mh"], seg["th"], seg["partition"], seg["period"]
        stream = codes(mh, th, part, period, seg.get("rid", np.zeros(len(mh), np.int64)))[0]
        o = np.lexsort((seg["pos"], stream))
        s = stream[o]
        reach = segmented_cummax(s, seg["pos2"][o])      # the highest n of the stream's segments so far
        i, j = o[:-1], o[1:]
        same = s[1:] == s[:-1]
        overlap = same & (seg["pos"][j] < reach[:-1])  # an n both hold (not in a valid log) orders either way
        unsettled = set(zip(mh[j][overlap].tolist(), th[j][overlap].tolist(), part[j][overlap].tolist()))
        back = same & ~overlap & (seg["offset"][j] <= seg["offset2"][i])
        i, j = i[back], j[back]
        steps += zip(mh[j].tolist(), th[j].tolist(), part[j].tolist(), period[j].tolist(),
                     zip(seg["offset2"][i].tolist(), seg["ts2"][i].tolist()), zip(seg["offset"][j].tolist(), seg["ts"][j].tolist()))
    steps = [x for x in steps if x[:3] not in unsettled]
    steps.sort()
    return steps, unsettled


def stitch_steps(seg: dict, inner: dict, file_ranks: dict | None = None) -> list[tuple]:
    """Every step back of every member's log: those inside a (stream, piece) segment (``inner``), and those between
    consecutive segments of one stream, in log order: a member's files in the order of their first record of the
    partition (inside an ownership; ties by ``file_ranks``, file id -> rank), a file's splits by their first byte, a
    split's rows by position.
    (member hash, topic hash, partition, period, (offset, ts) before, (offset, ts) after), sorted."""
    out = list(zip(inner["mh"].tolist(), inner["th"].tolist(), inner["partition"].tolist(), inner["period"].tolist(),
                   zip(inner["offset"].tolist(), inner["ts"].tolist()), zip(inner["offset2"].tolist(), inner["ts2"].tolist())))
    if len(seg["mh"]):
        mh, th, part, period = seg["mh"], seg["th"], seg["partition"], seg["period"]
        file_code = codes(mh, th, part, seg["fh"])[0]
        file_first = np.full(file_code.max() + 1, BIG, np.int64)
        np.minimum.at(file_first, file_code, seg["tmin"])
        stream = codes(mh, th, part, period)[0]
        ranks = file_ranks or {}
        rank = np.fromiter((ranks.get(f, -1) for f in seg["fh"].tolist()), np.int64, len(seg["fh"]))
        o = np.lexsort((seg["pos"], seg["blk"], seg["fh"], rank, file_first[file_code], stream))
        i, j = o[:-1], o[1:]
        back = (stream[i] == stream[j]) & (seg["offset"][j] <= seg["offset2"][i])
        i, j = i[back], j[back]
        out += zip(mh[j].tolist(), th[j].tolist(), part[j].tolist(), period[j].tolist(),
                   zip(seg["offset2"][i].tolist(), seg["ts2"][i].tolist()), zip(seg["offset"][j].tolist(), seg["ts"][j].tolist()))
    out.sort()
    return out


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
    64-offset block: at most 63 a key, read behind their offset ranges (Parquet row groups skipped on their
    statistics)."""
    ranges = sorted({(t, p, top + 1, (top | 63) + 1) for t, p, top in keys})
    if not ranges:
        return []
    w = wanted(produced.df.sparkSession, ranges, RANGE_KEYS, ON_RANGE, offset=[(lo, hi - 1) for *_, lo, hi in ranges])
    return (produced.rows(w.cover).where(OK_ACKED).join(w.keys, w.on, "left_semi")
            .select("topic", "partition", "offset", "ts").toArrow().to_pylist())


class DeliveryWindow(NamedTuple):
    """A window the ``split_ownership`` check asks about: from ``start`` to ``end`` (ms), ``member_a`` and ``member_b``
    both owned the partition; ``id`` names it in the answer (the rows' ``w``)."""
    id: int
    topic: str
    partition: int
    member_a: str
    member_b: str
    start: int
    end: int


def window_deliveries(consumed, windows: list[DeliveryWindow]):
    """For each window: how many records each of the two members delivered inside it, and the offsets both delivered
    there (count, lowest, highest). A record inside two windows counts in the first of the list."""
    from pyspark.sql import functions as F
    if not windows:
        return [], []
    pieces = first_window_pieces(windows)
    w = wanted(consumed.df.sparkSession, pieces, "w int, kt string, kp int, km string, t0 bigint, t1 bigint",
               "topic = kt AND `partition` = kp AND member = km AND ts BETWEEN t0 AND t1",
               consumed_at_ms=[(t0, t1) for *_, t0, t1 in pieces], member=[m for _, _, _, m, _, _ in pieces])
    x = consumed.rows(w.cover).where("_bad IS NULL").join(w.keys, w.on).select("w", "member", "offset")
    per_member = x.groupBy("w", "member").count().toArrow().to_pylist()
    twice = (x.groupBy("w", "offset").agg(F.countDistinct("member").alias("m")).where("m = 2").groupBy("w")
             .agg(F.count("*").alias("n"), F.min("offset").alias("lo"), F.max("offset").alias("hi")).toArrow().to_pylist())
    return per_member, twice


def first_window_pieces(windows: list[DeliveryWindow]) -> list[tuple]:
    """The windows cut into pieces (id, topic, partition, member, start, end) that no two share a record of: where
    windows of one member's partition overlap, the time goes to the first of the list (a record belongs to one
    window, as in a CASE over them in that order)."""
    taken: dict[tuple, list[tuple[int, int]]] = {}
    out = []
    for w, t, p, a, b, lo, hi in windows:
        for m in dict.fromkeys((a, b)):
            held = taken.setdefault((t, p, m), [])
            out += [(w, t, p, m, x, y) for x, y in gaps_inclusive(held, lo, hi)]
            held[:] = merged_ranges([*held, (lo, hi)] if lo <= hi else held)
    return out


def unacked_rows(consumed, keys):
    """producer_id/seq of the consumed rows in the given (topic, partition, offset) cells."""
    cells = sorted(set(keys))
    if not cells:
        return []
    w = wanted(consumed.df.sparkSession, cells, "kt string, kp int, ko bigint",
               "topic = kt AND `partition` = kp AND `offset` = ko", offset=[(o, o) for *_, o in cells])
    return (consumed.rows(w.cover).where("_bad IS NULL AND producer_id IS NOT NULL AND seq IS NOT NULL")
            .join(w.keys, w.on, "left_semi").select("topic", "partition", "offset", "producer_id", "seq").toArrow().to_pylist())


def consumed_keys(produced, consumed):
    """Every consumed (topic, partition, offset), a row a delivery, with its seq and its key as produced (joined on
    producer_id and seq, so a consumed `info` record has its key too), as a pyarrow Table: the state check's expected
    values. The produced files are read once more for their key, which the record-level pass never reads; a
    re-delivery's copies are left to the check (one job, no shuffle)."""
    spark, schema = consumed.df.sparkSession, "producer_id string, seq bigint, key string"
    frames = [(spark.read.schema(schema).json if s.fmt == "jsonl" else spark.read.schema(schema).parquet)(
        *[str(p) for p in s.files]) for s in produced.sources]
    if not frames:
        import pyarrow as pa
        return pa.table({"topic": pa.array([], pa.string()), "partition": pa.array([], pa.int32()),
                         "offset": pa.array([], pa.int64()), "seq": pa.array([], pa.int64()),
                         "key": pa.array([], pa.string())})
    keys = frames[0]
    for f in frames[1:]:
        keys = keys.unionByName(f)
    seen = consumed.df.where("_bad IS NULL").select("topic", "partition", "offset", "producer_id", "seq")
    return (seen.join(keys, ["producer_id", "seq"], "left")
            .select("topic", "partition", "offset", "seq", "key").toArrow())


def unplaced_acks(produced, consumed) -> list[dict]:
    """The ``unplaced`` acks (acknowledged with no error and no offset: producer_id, seq, topic, partition,
    acked_at_ms) that nobody consumed as the same (producer_id, seq), each with ``next_ok``: the lowest offset of an
    ok-acked record of the same producer, topic and partition with a higher seq, where it would have been written
    (None: none). Asked only when the scan counted unplaced rows (checks.lost_unplaced): their rows are read first
    (the status pushed down: Parquet skips the row groups whose statistics rule 'unplaced' out), then, behind their
    keys (a broadcast table, :func:`wanted`), one query: a left anti join on the consumed copies and the lowest
    later ok offset."""
    from pyspark.sql import functions as F
    acks = (produced.rows("status = 'unplaced'", needs=("status",)).where("_bad IS NULL AND status = 'unplaced'")
            .select("producer_id", "seq", "topic", "partition", "acked_at_ms").toArrow().to_pylist())
    if not acks:
        return []
    keys = [(i, r["producer_id"], r["seq"], r["topic"], r["partition"]) for i, r in enumerate(acks)]
    placed = [(pid, seq) for _, pid, seq, _, _ in keys if pid is not None and seq is not None]  # others match nothing
    schema, spark = "id int, kpid string, kseq bigint, kt string, kp int", produced.df.sparkSession
    copies = wanted(spark, keys, schema, "producer_id = kpid AND seq = kseq",
                    producer_id=[pid for pid, _ in placed], seq=[(seq, seq) for _, seq in placed])
    later = wanted(spark, keys, schema, "producer_id = kpid AND topic = kt AND `partition` = kp AND seq > kseq",
                   producer_id=[pid for pid, _ in placed], seq=[(seq + 1, BIG) for _, seq in placed])
    by_producer = ("producer_id", "seq")
    consumed_ids = consumed.rows(copies.cover, by_producer).where("_bad IS NULL").join(copies.keys, copies.on).select("id")
    next_ok = (produced.rows(later.cover, by_producer).where(OK_ACKED).join(later.keys, later.on)
               .groupBy("id").agg(F.min("offset").alias("next_ok")))
    # both answers are small (next_ok: a row a key; consumed_ids: a row a delivery of a key's record): broadcast too
    got = (copies.keys.join(F.broadcast(consumed_ids), "id", "left_anti").join(F.broadcast(next_ok), "id", "left")
           .select("id", "next_ok"))
    return [{**acks[r["id"]], "next_ok": r["next_ok"]} for r in sorted(got.toArrow().to_pylist(), key=lambda r: r["id"])]


RANGE_KEYS = "kt string, kp int, lo bigint, hi bigint"


ON_RANGE = "topic = kt AND `partition` = kp AND `offset` >= lo AND `offset` < hi"


OK_ACKED = "_bad IS NULL AND (status IS NULL OR status = 'ok')"


class CommitAsked(NamedTuple):
    """A commit the ``commit_ahead`` check asks about: logged at ``ts``, it vouches for offsets [lo, hi); ``id`` names
    it in the answer."""
    id: int
    lo: int
    hi: int
    ts: int


class OwnershipAsked(NamedTuple):
    """One ownership (``id``: its period) of a partition by ``member``, fetching from ``t0`` to ``t1`` (ms), and its
    commits the ``commit_ahead`` check asks about."""
    id: int
    member: str
    topic: str
    partition: int
    t0: int
    t1: int
    commits: list[CommitAsked]


def commits_ahead(produced, consumed, ownerships: list[OwnershipAsked]):
    """For each ownership, whose commits vouch for offsets [lo, hi): each commit with ok-acked offsets in [lo, hi)
    that the member did not consume between t0 and t1 (``n``, ``first``, ``last`` of them), and the highest offset in
    [lo, hi) it consumed between t0 and the commit's ts (``last_consumed``, null: none). One query keyed by ownership
    finds what each ownership missed (as offset ranges), whatever its number of commits; the driver places the commits
    in them; only the commits found ahead are asked their last_consumed (a second query). Asked only for the commits
    the groups cannot clear (checks.commit_ahead)."""
    if not ownerships:
        return []
    missed = missed_ranges(produced, consumed, [(o, m, t, p, t0, t1, min(c[1] for c in cs), max(c[2] for c in cs))
                                                for o, m, t, p, t0, t1, cs in ownerships])
    out, ahead = [], []
    for o, m, t, p, t0, t1, cs in ownerships:
        ranges = missed.get(o, [])
        ends = [z for _, z in ranges]
        for cid, lo, hi, ts in cs:
            got = inside(ranges, ends, lo, hi)
            if got is not None:
                out.append({"id": cid, **got})
                ahead.append((cid, m, t, p, t0, t1, lo, hi, ts))
    last = last_consumed(consumed, ahead)
    return [{**r, "last_consumed": last.get(r["id"])} for r in out]


def inside(ranges: list[tuple[int, int]], ends: list[int], lo: int, hi: int) -> dict | None:
    """``n``, ``first``, ``last`` of the offsets in [lo, hi) that the sorted, disjoint inclusive ``ranges`` (``ends``:
    their last offsets) hold; None when they hold none."""
    n, first, last = 0, None, None
    for a, z in ranges[bisect.bisect_left(ends, lo):]:
        if a >= hi:
            break
        a, z = max(a, lo), min(z, hi - 1)
        n, first, last = n + z - a + 1, a if first is None else first, z
    return {"n": n, "first": first, "last": last} if n else None


def missed_ranges(produced, consumed, ownerships) -> dict[int, list[tuple[int, int]]]:
    """ownership id -> the inclusive offset ranges of ok-acked records in [lo, hi) its member did not consume between
    t0 and t1, for each ownership (id, member, topic, partition, t0, t1, lo, hi). One aggregation: both sides' rows
    in the ranges, folded per (ownership, 64-offset block) into two bit sets, acked and consumed; only the blocks
    with an acked offset not consumed leave the JVM, as ``acked & ~consumed``, and the driver joins their runs of
    bits (:func:`bit_runs`) across blocks (a plan of one shuffle: a row number over a window and two joins took
    three more, the fixed cost of every question: docs/benchmarks-history.md, eighth increment)."""
    from pyspark.sql import functions as F
    offsets = [(lo, hi - 1) for *_, lo, hi in ownerships]
    w = wanted(consumed.df.sparkSession, ownerships, "oid int, km string, kt string, kp int, t0 bigint, t1 bigint, lo bigint, hi bigint",
               f"{ON_RANGE} AND member = km AND ts BETWEEN t0 AND t1", offset=offsets,
               consumed_at_ms=[(t0, t1) for _, _, _, _, t0, t1, _, _ in ownerships], member=[m for _, m, *_ in ownerships])
    acked = (produced.rows(covering(offset=offsets)).where(OK_ACKED)
             .join(w.keys, F.expr(ON_RANGE)).selectExpr("oid", "`offset`", "true AS acked"))
    mine = consumed.rows(w.cover).where("_bad IS NULL").join(w.keys, w.on).selectExpr("oid", "`offset`", "false AS acked")
    bit = "shiftleft(1L, CAST(`offset` & 63 AS INT))"
    blocks = (acked.unionByName(mine).groupBy("oid", F.expr("`offset` >> 6").alias("b"))
              .agg(F.expr(f"bit_or(IF(acked, {bit}, 0L)) & ~bit_or(IF(acked, 0L, {bit})) AS missed"))
              .where("missed != 0"))
    runs = ((r["oid"], r["b"] * 64 + lo, r["b"] * 64 + hi) for r in blocks.toArrow().to_pylist() for lo, hi in bit_runs(r["missed"]))
    out: dict[int, list[tuple[int, int]]] = {}
    for oid, a, z in merged_ranges(runs):  # runs of one ownership that touch across blocks: one run
        out.setdefault(oid, []).append((a, z))
    return out


def last_consumed(consumed, commits) -> dict[int, int]:
    """commit id -> the highest offset in [lo, hi) the member consumed between t0 and t1 and by the commit's ts, for
    each commit (id, member, topic, partition, t0, t1, lo, hi, ts); absent: none."""
    from pyspark.sql import functions as F
    if not commits:
        return {}
    w = wanted(consumed.df.sparkSession, commits,
               "id int, km string, kt string, kp int, t0 bigint, t1 bigint, lo bigint, hi bigint, kts bigint",
               f"{ON_RANGE} AND member = km AND ts BETWEEN t0 AND t1 AND ts <= kts",
               offset=[(lo, hi - 1) for *_, lo, hi, _ in commits],
               consumed_at_ms=[(t0, min(t1, ts)) for _, _, _, _, t0, t1, _, _, ts in commits],
               member=[m for _, m, *_ in commits])
    got = consumed.rows(w.cover).where("_bad IS NULL").join(w.keys, w.on).groupBy("id").agg(F.max("offset").alias("last"))
    return {r["id"]: r["last"] for r in got.toArrow().to_pylist()}
