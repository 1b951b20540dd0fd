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
import contextlib
import gc
import json
from typing import NamedTuple

import numpy as np

from .intervals import gaps_inclusive

# the sides of a row (a produced row's by its status: ok or absent, fail, info, unplaced; contract.STATUSES)
CONSUMED, PRODUCED, FAILED, INFO, UNPLACED, BAD_PRODUCED, BAD_CONSUMED = 0, 1, 2, 3, 4, 8, 9
NO_EVENTS_PERIOD, OUTSIDE_PERIOD = -2, -1
U64 = (1 << 64) - 1
BIG, SMALL = np.iinfo(np.int64).max, np.iinfo(np.int64).min


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


# What a consumed group keeps of its consumption sequence n. Groups are keyed by the bucket nb = n >> 8 too (so a
# group's rows all have an n or none has) and keep the set of n & 255, as four 64-bit words (word i, bit j: n & 255
# = 64 i + j), and the sum of (n & 255) * (offset & 63), which settle the order inside the group
# (:func:`unordered_ranges`). Why 256 and not 64: a member reading k partitions interleaves them, so one block of 64
# offsets spans about 64 k values of n; each bucket it spans is a group of its own, and the hash aggregation's cost
# follows the number of groups (random row order: every row a cache miss). Measured on 10M records, 4 partitions
# a member (docs/benchmarks-history.md, seventh increment): 1, 2, 4, 8, 16 words: 3.4, 2.0, 1.8, 2.1, 2.7 s in
# consumption order, 9.0, 6.7, 5.2, 6.4, 7.6 s shuffled.
SEQUENCE_WORDS = 4
SEQUENCE_BUCKET = 64 * SEQUENCE_WORDS                 # values of n a bucket holds
NMASK_COLUMNS = tuple(f"nmask{i}" for i in range(SEQUENCE_WORDS))


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


@contextlib.contextmanager
def gc_paused():
    """No cyclic garbage collection inside (as a decorator: during each call). The checks build hundreds of thousands
    of small dicts and tuples that live to the end, and Python's collector traversed them all again every few
    thousand allocations, to free nothing: none of them is in a cycle. It was 30 % of a 5,000-partition analysis
    (docs/benchmarks-history.md, ninth increment). Collection resumes on the way out, as it was (a nested use leaves it
    off)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


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

        from . import records as me
        cp.register_pickle_by_value(me)  # executors need numpy and pyarrow, not this package
        fn = lambda batches: _check_task(batches, cfg)  # noqa: E731
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


def _check_task(batches, cfg):
    """One executor task: every (topic, partition) it got, checked at once; one batch of results."""
    import pyarrow as pa
    got = list(batches)
    if not got:  # a task the shuffle gave no group
        return
    with gc_paused():
        rows = check_groups(pa.Table.from_batches(got), cfg)
    if rows:
        yield pa.RecordBatch.from_pydict({"q": pa.array([q for q, _ in rows], pa.string()),
                                          "j": pa.array([json.dumps(r, default=int) for _, r in rows], pa.string())})


SEGMENT, STEP = 0, 1  # the kinds of row the log pass returns
SEQUENCE_SHIFT = 20                      # the re-sequencing shuffle's key: (stream, n >> SEQUENCE_SHIFT)
LOG_ORDER_NOTE = "backwards judged by log order: exact only when each member's rows are in consumption order"
LOG_SCHEMA = ("kind int, mh bigint, th bigint, `partition` int, period bigint, fh bigint, blk bigint, pos bigint, "
              "`offset` bigint, ts bigint, generation int, epoch int, pos2 bigint, offset2 bigint, ts2 bigint, tmin bigint, "
              "rid bigint")
LOG_ROWS = 1 << 20                       # rows a task folds at once (its memory bound): pieces are stitched anyway
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

    from . import records as me
    cp.register_pickle_by_value(me)  # executors need numpy and pyarrow, not this package
    fn = lambda batches: _log_task(batches, cfg)  # noqa: E731
    table = _log_columns(consumed, bounds).mapInArrow(fn, LOG_SCHEMA).toArrow()
    kind = np.asarray(table.column("kind"))
    steps = stitch_steps(_columns(table.filter(kind == SEGMENT)), _columns(table.filter(kind == STEP)), _file_ranks(consumed))
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
    segments = list(_log_task(in_ranges.to_batches(), cfg, by_sequence=True))  # as an executor's task does
    return rows, _stitched_by_sequence(pa.Table.from_batches(segments or [_batch({}, 0)]))


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
          .repartition("rid", F.expr(f"n >> {SEQUENCE_SHIFT}"))
          .sortWithinPartitions("rid", "n")
          .selectExpr("*", "0L AS fh", "-1L AS blk", "0L AS pos", "-1 AS generation"))
    fn = lambda batches: _log_task(batches, cfg, by_sequence=True)  # noqa: E731
    return _stitched_by_sequence(df.mapInArrow(fn, LOG_SCHEMA).toArrow())


def _stitched_by_sequence(table) -> list[tuple]:
    """The steps back of the re-sequenced segments (a table of LOG_SCHEMA rows), stitched by n; a range whose
    segments overlap is bad input."""
    kind = np.asarray(table.column("kind"))
    steps, unsettled = stitch_by_sequence(_columns(table.filter(kind == SEGMENT)), _columns(table.filter(kind == STEP)))
    if unsettled:  # sorted by n, a range's segments overlap only where one n is on more than one row
        from .errors import InputError
        raise InputError(f"consumed/: column 'n' has one value on more than one row of a member's partition "
                         f"({len(unsettled)} such partitions): n numbers each record a member consumed, once")
    return steps


def _file_ranks(consumed) -> dict[int, int]:
    """File id (``_fh``) -> its place in the sorted file names: how two files whose first records of a partition
    share a millisecond are ordered. Only when no two files share a name (the id is then the name's hash); else
    such ties fall to the id, an arbitrary but fixed order."""
    names = sorted(p.name for p in consumed.files)
    return {name_hash(n): i for i, n in enumerate(names)} if len(set(names)) == len(names) else {}


def _columns(table) -> dict:
    return {c: np.asarray(table.column(c).fill_null(-1).to_numpy(zero_copy_only=False)).astype(np.int64)
            for c in table.column_names}


def _log_task(batches, cfg, by_sequence=False):
    """One executor task of :func:`log_pass`: its rows folded LOG_ROWS at a time."""
    import pyarrow as pa
    buf, n = [], 0
    for batch in batches:
        buf.append(batch)
        n += batch.num_rows
        if n >= LOG_ROWS:
            yield from _log_rows(pa.Table.from_batches(buf), cfg, by_sequence)
            buf, n = [], 0
    if n:
        yield from _log_rows(pa.Table.from_batches(buf), cfg, by_sequence)


def _log_rows(table, cfg, by_sequence=False):
    """The steps back inside every segment, with each segment's first and last record:
    ``by_sequence``, a segment is a stream's rows here, in the order of ``n`` (:func:`_sequence_segments`); else a
    stream's rows in one piece (consecutive rows of one file split, positions increasing), in log order. A stream is
    one ownership period of one (member, topic, partition); rows outside every ownership have none."""
    c = _columns(table)
    mh, th, part, epoch, fh, blk, pos, off, ts = (c[k] for k in ("mh", "th", "partition", "epoch", "fh", "blk", "pos",
                                                                 "offset", "ts"))
    period = periods_of(mh, th, part, epoch, cfg)
    batch = lambda kind, at, **more: _batch(  # noqa: E731
        {"kind": np.full(len(at), kind, np.int32), "mh": mh[at], "th": th[at], "partition": part[at].astype(np.int32),
         "period": period[at], **more}, len(at))
    if by_sequence:
        yield from _sequence_segments(c, period, batch)
        return
    new_piece = np.ones(len(pos), bool)
    new_piece[1:] = (fh[1:] != fh[:-1]) | (blk[1:] != blk[:-1]) | (pos[1:] <= pos[:-1])
    piece = np.cumsum(new_piece)
    sel = np.flatnonzero(period >= 0)
    if len(sel) == 0:
        return
    stream = _codes(mh[sel], th[sel], part[sel], period[sel])[0]
    k = np.lexsort((piece[sel], stream))                 # stable: each (stream, piece) keeps the log's order
    o, stream = sel[k], stream[k]
    same = (stream[1:] == stream[:-1]) & (piece[o][1:] == piece[o][:-1])
    back = same & (off[o][1:] <= off[o][:-1])
    i, j = o[:-1][back], o[1:][back]
    if len(j):
        yield batch(STEP, j, offset=off[i], ts=ts[i], offset2=off[j], ts2=ts[j])
    first = np.flatnonzero(np.r_[True, ~same])
    last = np.r_[first[1:] - 1, len(o) - 1]
    a, z = o[first], o[last]
    yield batch(SEGMENT, a, fh=fh[a], blk=blk[a], pos=pos[a], offset=off[a], ts=ts[a], pos2=pos[z], offset2=off[z],
                ts2=ts[z], tmin=np.minimum.reduceat(ts[o], first))


def _sequence_segments(c: dict, period, batch):
    """Inside every stream of these rows (``c``: numpy columns), in the order of ``n``: the steps back, and the
    first and last record (``pos``/``pos2``: their n) of each bucket of n (``n >> SEQUENCE_SHIFT``) the stream has
    here. Cut by bucket because the re-sequencing task that holds buckets 3 and 5 of a stream need not hold 4: one
    segment over both would overlap another task's. Every row has an n (:func:`_resequenced` reads no other)."""
    n, off, ts = c["n"], c["offset"], c["ts"]
    sel = np.flatnonzero(period >= 0)
    if len(sel) == 0:
        return
    rid = c.get("rid", np.zeros(len(n), np.int64))
    stream = _codes(c["mh"][sel], c["th"][sel], c["partition"][sel], period[sel], rid[sel])[0]
    k = np.lexsort((n[sel], stream))
    o, stream = sel[k], stream[k]
    bucket = n[o] >> SEQUENCE_SHIFT
    same = (stream[1:] == stream[:-1]) & (bucket[1:] == bucket[:-1])  # the step between two buckets is the stitch's
    back = same & (off[o][1:] <= off[o][:-1])
    i, j = o[:-1][back], o[1:][back]
    if len(j):
        yield batch(STEP, j, offset=off[i], ts=ts[i], offset2=off[j], ts2=ts[j])
    first = np.flatnonzero(np.r_[True, ~same])
    a, z = o[first], o[np.r_[first[1:] - 1, len(o) - 1]]
    yield batch(SEGMENT, a, pos=n[a], offset=off[a], ts=ts[a], pos2=n[z], offset2=off[z], ts2=ts[z], rid=rid[a])


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
        stream = _codes(mh, th, part, period, seg.get("rid", np.zeros(len(mh), np.int64)))[0]
        o = np.lexsort((seg["pos"], stream))
        s = stream[o]
        reach = _segmented_cummax(s, seg["pos2"][o])      # the highest n of the stream's segments so far
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


def _batch(columns: dict, n: int):
    """One batch of LOG_SCHEMA: the given columns, the others null."""
    import pyarrow as pa
    types = {"int": pa.int32(), "bigint": pa.int64()}
    fields = [(f.split()[0].strip("`"), types[f.split()[1]]) for f in LOG_SCHEMA.split(", ")]
    return pa.RecordBatch.from_arrays([pa.array(columns[k], t) if k in columns else pa.nulls(n, t) for k, t in fields],
                                      names=[k for k, _ in fields])


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
        file_code = _codes(mh, th, part, seg["fh"])[0]
        file_first = np.full(file_code.max() + 1, BIG, np.int64)
        np.minimum.at(file_first, file_code, seg["tmin"])
        stream = _codes(mh, th, part, period)[0]
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


def lowest_bit(words: np.ndarray) -> np.ndarray:
    """The lowest set bit of each row of words (word i: bits 64 i to 64 i + 63); each row has one."""
    i = (words != 0).argmax(axis=1)
    return 64 * i + lowbit(words[np.arange(len(words)), i])


def highest_bit(words: np.ndarray) -> np.ndarray:
    """The highest set bit of each row of words; each row has one."""
    i = words.shape[1] - 1 - (words[:, ::-1] != 0).argmax(axis=1)
    return 64 * i + highbit(words[np.arange(len(words)), i])


def bit_runs(mask: int) -> list[tuple[int, int]]:
    """The runs of consecutive set bits of a 64-bit mask, as (lowest, highest) bit: a step a run, not a bit."""
    m, out = mask & U64, []
    while m:
        lo = (m & -m).bit_length() - 1
        x = m >> lo
        n = (x ^ (x + 1)).bit_length() - 1  # the trailing ones of x
        out.append((lo, lo + n - 1))
        m &= ~(((1 << n) - 1) << lo)
    return out


def shared_runs(masks: list[int]) -> list[tuple[int, int, tuple[int, ...]]]:
    """The runs of consecutive bits set in at least two of the 64-bit ``masks``, each cut where the set of masks
    holding its bits changes, as (lowest, highest bit, the indexes of the masks holding them): a step a run, not a
    bit a mask."""
    masks = [m & U64 for m in masks]
    held = cut = 0
    for m in masks:
        cut |= m ^ (m >> 1)  # bit j: this mask holds j or j + 1, not both
        held |= m
    out = []
    for lo, hi in bit_runs(held):
        ends = bits_of(cut >> lo & ((1 << (hi - lo)) - 1)) + [hi - lo]
        a = lo
        for j in ends:
            who = tuple(i for i, m in enumerate(masks) if m >> a & 1)
            if len(who) > 1:
                out.append((a, lo + j, who))
            a = lo + j + 1
    return out


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


def _codes(*cols) -> tuple[np.ndarray, np.ndarray]:
    """Dense codes (0..k-1, in sorted order) of the distinct tuples of equal-length integer columns, and the index of
    one row of each. Runs of equal tuples (a log in order has long ones) are coded once."""
    n = len(cols[0])
    change = np.ones(n, bool)
    if n:
        change[1:] = np.logical_or.reduce([c[1:] != c[:-1] for c in cols])
    starts = np.flatnonzero(change)
    code, size = np.zeros(len(starts), np.int64), 1
    for c in cols:
        u, inv = np.unique(c[starts], return_inverse=True)
        if size * len(u) >= 1 << 62:  # re-number before the packed code could overflow
            u0, code = np.unique(code, return_inverse=True)
            code, size = code.ravel().astype(np.int64), len(u0)
        code, size = code * len(u) + inv.ravel(), size * len(u)
    _, first, inv = np.unique(code, return_index=True, return_inverse=True)
    return np.repeat(inv.ravel(), np.diff(np.r_[starts, n])), starts[first]


class EpochRange(NamedTuple):
    """Ownership ``period`` of a (member, topic, partition), as the epochs ``first``..``last`` it spans
    (history.Ownership); the executors get them in ``cfg["periods"]``."""
    first: int
    last: int
    period: int


def periods_of(mh, th, partition, epoch, cfg: dict) -> np.ndarray:
    """The ownership period of each row or group (member hash, topic hash, partition, epoch), one look-up per distinct
    tuple in ``cfg["periods"]`` (history.Ownership's EpochRanges): OUTSIDE_PERIOD for a member with events
    outside all of them, NO_EVENTS_PERIOD for a member without events."""
    if len(mh) == 0:
        return np.zeros(0, np.int64)
    code, first = _codes(mh, th, partition, epoch)
    values = []
    for m, t, p, e in zip(mh[first].tolist(), th[first].tolist(), partition[first].tolist(), epoch[first].tolist()):
        value = OUTSIDE_PERIOD if m in cfg["with_events"] else NO_EVENTS_PERIOD
        values.append(next((r.period for r in cfg["periods"].get((m, t, p), ()) if r.first <= e <= r.last), value))
    return np.asarray(values, np.int64)[code]


def check_groups(table, cfg: dict) -> list[tuple[str, dict]]:
    """All checks over the groups of every (topic, partition) in ``table`` (pyarrow, :func:`aggregate`'s columns) at
    once: numpy over all partitions, keyed by a partition code ``tp``, never a Python loop a partition. ``cfg``:
    ``periods`` {(member hash, topic hash, partition): [EpochRange]}, ``with_events``
    (hashes of the members that logged events), ``stall_ms``. Returns (kind, row) pairs; topics and members are
    their hashes (:func:`name_rows`). A partition with only rows that break the contract (diagnose names them) is
    only counted."""
    if table.num_rows == 0:
        return []
    col = lambda name, fill=0: np.asarray(table.column(name).fill_null(fill).to_numpy(zero_copy_only=False)).astype(np.int64)  # noqa: E731
    side, th, part, b = col("side"), col("th"), col("partition"), col("b")
    out = _sides(side, col("n"), col("kmin", BIG), col("kmax", SMALL))
    tp, first = _codes(th, part)
    P = {"th": th[first], "partition": part[first]}  # a partition code's topic hash and partition
    good = np.zeros(len(first), bool)
    good[tp[side < BAD_PRODUCED]] = True
    th_of, partition_of = P["th"].tolist(), P["partition"].tolist()
    where = lambda t: {"topic": th_of[t], "partition": partition_of[t]}  # noqa: E731
    cons, prod = np.flatnonzero(side == CONSUMED), np.flatnonzero(side == PRODUCED)
    mh = col("mh")[cons]
    g = {"tp": tp[cons], "m": mh, "period": periods_of(mh, th[cons], part[cons], col("epoch")[cons], cfg), "b": b[cons],
         "n": col("n")[cons], "mask": col("mask")[cons], "kmin": col("kmin")[cons], "kmax": col("kmax")[cons],
         "gmax": col("gmax", -1)[cons]}
    g["gmin"] = np.where(g["gmax"] < 0, BIG, g["gmax"])
    if cfg.get("sequence"):
        seq = {"nb": col("nb", -1)[cons], "nsum": col("nsum")[cons],
               "nmask": np.stack([col(c)[cons] for c in NMASK_COLUMNS], axis=1)}
        ranges, unsequenced = unordered_ranges({**g, **seq})
        out += [("unordered", {"th": int(P["th"][r.tp]), "partition": int(P["partition"][r.tp]), "mh": r.m, "lo": r.lo,
                               "hi": r.hi}) for r in ranges]
        out.append(("unsequenced", {"n": unsequenced}))
    # one group per (partition, member, period, block): the deliveries the other checks reason about (several
    # epochs inside one period fold into one)
    bg = _reduce(g, ["tp", "m", "period", "b"], {"n": "sum", "mask": "or", "kmin": "min", "kmax": "max",
                                                 "gmin": "min", "gmax": "max"})
    bg["tmin"], bg["tmax"] = bg["kmin"] >> 6, bg["kmax"] >> 6
    bg["omin"], bg["omax"] = bg["b"] * 64 + lowbit(bg["mask"]), bg["b"] * 64 + highbit(bg["mask"])
    bg["K"] = bg["tp"] << 40 | bg["b"]

    # blocks: everything consumed and acked ok per 64 offsets of each partition, keyed K = tp << 40 | b
    pb = {"tp": tp[prod], "b": b[prod], "mask": col("mask")[prod], "n": col("n")[prod], "kmin": col("kmin")[prod],
          "kmax": col("kmax")[prod]}
    pb = _reduce(pb, ["tp", "b"], {"mask": "or", "n": "sum", "kmin": "min", "kmax": "max"})
    pb["tmin"], pb["tmax"], pb["K"] = pb["kmin"] >> 6, pb["kmax"] >> 6, pb["tp"] << 40 | pb["b"]
    cb = _reduce(bg, ["K"], {"mask": "or", "n": "sum", "tmin": "min", "tmax": "max"})
    allK = np.union1d(pb["K"], cb["K"])
    B = {"tp": allK >> 40, "b": allK & ((1 << 40) - 1), **_merge_keyed(allK, pb, {"mask": ("pmask", 0), "n": ("pn", 0),
         "tmin": ("ptmin", BIG), "tmax": ("ptmax", SMALL)}), **_merge_keyed(allK, cb, {"mask": ("cmask", 0),
         "n": ("cn", 0), "tmin": ("ctmin", BIG), "tmax": ("ctmax", SMALL)})}
    known = B["pmask"] | B["cmask"]
    extra = B["cn"] - popcount(B["cmask"])
    lostmask, unacked = B["pmask"] & ~B["cmask"], B["cmask"] & ~B["pmask"]
    per = {"produced": B["pn"], "consumed_rows": B["cn"], "consumed_distinct": popcount(B["cmask"]), "extra": extra,
           "lost": popcount(lostmask), "unacked": popcount(unacked), "produced_repeats": B["pn"] - popcount(B["pmask"])}
    stats = {k: np.bincount(B["tp"], weights=v, minlength=len(first)) for k, v in per.items()}  # < 2^53: exact
    out += [("stats", {**where(t), **{k: int(v[t]) for k, v in stats.items()}}) for t in np.flatnonzero(good)]
    none = lambda v, sentinel: None if v == sentinel else int(v)  # noqa: E731
    for i in np.flatnonzero((lostmask != 0) | (unacked != 0)):
        out.append(("dirty", {**where(B["tp"][i]), "b": int(B["b"][i]), "lostmask": int(lostmask[i]),
                              "unackedmask": int(unacked[i]), "ptmin": none(B["ptmin"][i], BIG),
                              "ptmax": none(B["ptmax"][i], SMALL), "ctmax": none(B["ctmax"][i], SMALL)}))
    for i in np.flatnonzero(np.isin(bg["K"], allK[extra > 0])):
        out.append(("groups", {**where(bg["tp"][i]), "b": int(bg["b"][i]), "member": int(bg["m"][i]),
                               "period": int(bg["period"][i]), "n": int(bg["n"][i]), "mask": int(bg["mask"][i]),
                               "tmin": int(bg["tmin"][i]), "tmax": int(bg["tmax"][i]),
                               "gmin": none(bg["gmin"][i], BIG), "gmax": none(bg["gmax"][i], -1)}))
    ps = _reduce(bg, ["tp", "m", "period"], {"n": "sum", "tmin": "min", "tmax": "max", "omin": "min", "omax": "max"})
    out += [("periods", {"member": m, **where(t), "period": p, "n": n, "tmin": t0, "tmax": t1, "omin": o0, "omax": o1})
            for t, m, p, n, t0, t1, o0, o1 in zip(*(ps[k].tolist() for k in ("tp", "m", "period", "n", "tmin", "tmax",
                                                                             "omin", "omax")))]
    out += _rate(bg["tp"], bg["tmin"], bg["n"])
    out += [("skip", {**where(r.pop("tp")), **r}) for r in _skips(bg, allK, known)]
    spans, stall_blocks = _delivery_spans(bg, cfg["stall_ms"])
    out += [("stall_blocks", {**where(t), "b": x}) for t, x in stall_blocks]
    out += [("spans", {**where(t), "start": s.start, "end": s.end, "omax": s.top}) for t, s in spans]
    out += [("acks", {**where(t), "top": top, **first_ack(pb_t, top)}) for t, top, pb_t in _gap_tops(good, spans, stall_blocks, pb)]
    return out


class NRange(NamedTuple):
    """Consumption sequences ``lo``..``hi`` (inclusive) of one member's records of one (topic, partition) (``tp``: its
    partition code in a task, ``m``: the member's hash), to read again in the order of n."""
    tp: int
    m: int
    lo: int
    hi: int


def unordered_ranges(g: dict) -> tuple[list[NRange], int]:
    """Where a member's consumption, by ``n``, may step back inside an ownership period, from the consumed groups
    ``g`` alone (keyed by block b and bucket nb = n >> 8; :func:`aggregate`), as ranges of n to read again;
    and how many rows inside a period have no n (their groups have no bucket; they are left out of the judgement).

    No row order is needed. Inside one group, its n and its offsets are sets of 256 and 64 bits (``nmask``: one row
    of words each, ``mask``), and with no value repeated, its rows were consumed in offset order exactly when ``nsum``
    = sum((n & 255) * (offset & 63)) equals the sum over the two sets paired in sorted order (the rearrangement inequality: any other
    pairing sums less). A stream's (member, topic, partition, period) groups, by their first n, then chain: each
    rises above the last in n and in offset. A bucket holding a group that fails either is bad; its range runs
    from the start of the stream's bucket before it to the end of the one after it. Every step back lies inside a
    range (two consecutive records either share a bucket, or sit in neighbouring buckets: both clean means the chain
    between them was checked), and a log consumed in order has none."""
    inside = np.flatnonzero(g["period"] >= 0)
    unsequenced = int(g["n"][inside][g["nb"][inside] < 0].sum())
    inside = inside[g["nb"][inside] >= 0]
    if len(inside) == 0:
        return [], unsequenced
    c, nmask, mask, nb, b = (g[k][inside] for k in ("n", "nmask", "mask", "nb", "b"))
    one_each = (popcount(nmask).sum(axis=1) == c) & (popcount(mask) == c)
    in_order = one_each.copy()
    in_order[one_each] = g["nsum"][inside][one_each] == sorted_pairing_sum(nmask[one_each], mask[one_each])
    nmin, nmax = nb * SEQUENCE_BUCKET + lowest_bit(nmask), nb * SEQUENCE_BUCKET + highest_bit(nmask)
    omin, omax = b * 64 + lowbit(mask), b * 64 + highbit(mask)
    stream = _codes(g["tp"][inside], g["m"][inside], g["period"][inside])[0]
    o = np.lexsort((nmin, stream))
    stream, nb, in_order = stream[o], nb[o], in_order[o]
    bad = ~in_order
    broken = (stream[1:] == stream[:-1]) & ((nmin[o][1:] <= nmax[o][:-1]) | (omin[o][1:] <= omax[o][:-1]))
    bad[1:] |= broken
    bad[:-1] |= broken
    bucket = np.cumsum(np.r_[True, (stream[1:] != stream[:-1]) | (nb[1:] != nb[:-1])]) - 1
    first = np.flatnonzero(np.r_[True, bucket[1:] != bucket[:-1]])  # each bucket's first group
    b_stream, b_nb = stream[first], nb[first]
    b_bad = np.zeros(len(first), bool)
    b_bad[bucket[bad]] = True
    k = np.flatnonzero(b_bad)
    prev = np.where((k > 0) & (b_stream[np.maximum(k - 1, 0)] == b_stream[k]), k - 1, k)
    last = len(first) - 1
    nxt = np.where((k < last) & (b_stream[np.minimum(k + 1, last)] == b_stream[k]), k + 1, k)
    at = inside[o][first[k]]
    return [NRange(*r) for r in zip(g["tp"][at].tolist(), g["m"][at].tolist(), (b_nb[prev] * SEQUENCE_BUCKET).tolist(),
                                     (b_nb[nxt] * SEQUENCE_BUCKET + SEQUENCE_BUCKET - 1).tolist())], unsequenced


def merged_ranges(ranges) -> list[tuple[int, ...]]:
    """Ranges (*key, lo, hi) of integers (inclusive), sorted, those of one key that overlap or touch merged. For the
    re-read the key is (member hash, topic hash, partition) and each merged range of n is read and stitched on its
    own; :func:`covering_intervals` merges ranges without a key."""
    out: list[list[int]] = []
    for *key, lo, hi in sorted(ranges):
        if out and out[-1][:-2] == key and lo <= out[-1][-1] + 1:
            out[-1][-1] = max(out[-1][-1], hi)
        else:
            out.append([*key, lo, hi])
    return [tuple(r) for r in out]


SORTED_PAIRING_CHUNK = 1 << 16  # groups unpacked at once: a byte a bit of each


def sorted_pairing_sum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """For each row, sum over k of (k-th lowest set bit of ``a``) * (k-th lowest set bit of ``b``); ``a`` and ``b``
    are bit sets (a row: one 64-bit word, or a row of words, word i holding bits 64 i to 64 i + 63) with as many bits
    set in each row."""
    out = np.zeros(len(a), np.int64)
    for lo in range(0, len(a), SORTED_PAIRING_CHUNK):
        chunks = [np.ascontiguousarray(x[lo:lo + SORTED_PAIRING_CHUNK], "<i8") for x in (a, b)]
        bits = [np.unpackbits(x.view(np.uint8).reshape(len(x), -1), axis=1, bitorder="little") for x in chunks]
        (row, pa), (_, pb) = (np.nonzero(x) for x in bits)  # row-major: each row's bits in increasing position
        out[lo:lo + len(bits[0])] = np.bincount(row, weights=pa * pb, minlength=len(bits[0])).astype(np.int64)
    return out


def _merge_keyed(keys, d: dict, columns: dict) -> dict:
    """``d``'s columns (sorted by its ``K``) at each of the sorted ``keys``, renamed; ``fill`` where ``d`` has no row."""
    i = np.searchsorted(d["K"], keys)
    has = (i < len(d["K"])) & (d["K"][np.minimum(i, max(len(d["K"]) - 1, 0))] == keys) if len(d["K"]) else np.zeros(len(keys), bool)
    i = np.minimum(i, max(len(d["K"]) - 1, 0))
    return {name: np.where(has, d[c][i] if len(d[c]) else fill, fill).astype(np.int64) for c, (name, fill) in columns.items()}


def _sides(side, n, kmin, kmax) -> list[tuple[str, dict]]:
    """Rows and time range of each side (consumed, produced ok, failed, info, unplaced, bad input)."""
    r = _reduce({"side": side, "n": n, "kmin": kmin, "kmax": kmax}, ["side"], {"n": "sum", "kmin": "min", "kmax": "max"})
    return [("sides", {"side": s, "n": k, "tmin": None if lo == BIG else lo >> 6, "tmax": None if hi == SMALL else hi >> 6})
            for s, k, lo, hi in zip(*(r[c].tolist() for c in ("side", "n", "kmin", "kmax")))]


RATE_BINS = 400


def _rate(tp, tmin, n) -> list[tuple[str, dict]]:
    """Deliveries per time bin (by each block group's first delivery): bins of 100 * 2^k ms from the epoch, for each
    partition the smallest with at most RATE_BINS over it, so that every partition's bins nest in the largest."""
    if len(tmin) == 0:
        return []
    r = _reduce({"tp": tp, "lo": tmin, "hi": tmin}, ["tp"], {"lo": "min", "hi": "max"})
    size = np.full(len(r["tp"]), 100, np.int64)
    while ((r["hi"] - r["lo"]) // size >= RATE_BINS).any():
        size = np.where((r["hi"] - r["lo"]) // size >= RATE_BINS, size * 2, size)
    row_size = size[np.searchsorted(r["tp"], tp)]
    x = _reduce({"tp": tp, "bin": tmin // row_size, "size": row_size, "n": n}, ["tp", "bin"], {"n": "sum", "size": "first"})
    return [("rate", {"start": k * s, "size": s, "n": c}) for k, s, c in zip(*(x[c].tolist() for c in ("bin", "size", "n")))]


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


def _gap_tops(good, spans, stall_blocks, pb):
    """(partition, top, its produced blocks) for every offset that can be the top of a gap of a partition: -1, the
    running top at each span's end, their block ends, and the end of any block read back for the stall check;
    what the blocks cannot say of them, the block's end (exact) and its rows can."""
    tops = [(t, -1) for t in np.flatnonzero(good).tolist()]
    if spans:
        t, omax = (np.asarray(v, np.int64) for v in zip(*[(tp, s.top) for tp, s in spans]))
        top = _segmented_cummax(t, omax)  # spans come sorted by (partition, time)
        tops += zip(t.tolist(), top.tolist())
        tops += zip(t.tolist(), (top | 63).tolist())
    tops += [(t, x * 64 + 63) for t, x in stall_blocks]
    lo = np.searchsorted(pb["tp"], np.arange(len(good)))
    hi = np.searchsorted(pb["tp"], np.arange(len(good)), side="right")
    for t, top in sorted(set(tops)):
        yield t, top, {k: pb[k][lo[t]:hi[t]] for k in ("b", "mask", "tmin", "tmax", "kmin", "kmax")}


def _segmented_cummax(key, v) -> np.ndarray:
    """Running maximum of ``v`` restarted at each new value of ``key`` (rows sorted by key), exact for any values:
    the running maximum of (key, rank of v) pairs packed in one integer."""
    if len(v) == 0:
        return v
    u, rank = np.unique(v, return_inverse=True)
    seg = np.cumsum(np.r_[True, key[1:] != key[:-1]]) - 1
    return u[np.maximum.accumulate(seg * len(u) + rank.ravel()) - seg * len(u)]


def _delivery_spans(bg, stall_ms) -> tuple[list[tuple[int, Span]], list[tuple]]:
    """When each partition was delivered, folded into spans with no gap above ``stall_ms`` inside, each with the
    highest offset delivered in it (the ``stall`` check's input): [(partition code, Span)]. A
    group whose own time span is above ``stall_ms`` may hide such a gap: its block (partition code, b) is returned
    to be read back record by record."""
    long = (bg["tmax"] - bg["tmin"]) > stall_ms
    blocks = sorted(set(zip(bg["tp"][long].tolist(), bg["b"][long].tolist())))
    short = ~long
    return merge_spans(bg["tmin"][short], bg["tmax"][short], bg["omax"][short], stall_ms, key=bg["tp"][short]), blocks


class Span(NamedTuple):
    """A time a partition was delivered: from ``start`` to ``end`` (ms), ``top`` the highest offset delivered in it."""
    start: int
    end: int
    top: int


def merge_spans(t0, t1, omax, gap_ms: int, key=None) -> list:
    """Time spans [t0, t1] (each with a highest offset) merged wherever no gap above ``gap_ms`` separates them:
    [Span], in time order; with ``key``, only spans of one key merge: [(key, Span)], by key and time. The one span
    rule of the ``stall`` check (executor and driver)."""
    t0, t1, omax = (np.asarray(v, np.int64) for v in (t0, t1, omax))
    k = np.zeros(len(t0), np.int64) if key is None else np.asarray(key, np.int64)
    if len(t0) == 0:
        return []
    order = np.lexsort((t0, k))
    k, t0, t1, omax = k[order], t0[order], t1[order], omax[order]
    reach = _segmented_cummax(k, t1)
    new = np.ones(len(t0), bool)
    new[1:] = (k[1:] != k[:-1]) | (t0[1:] - reach[:-1] > gap_ms)
    st = np.flatnonzero(new)
    spans = [Span(*s) for s in zip(t0[st].tolist(), np.maximum.reduceat(t1, st).tolist(),
                                   np.maximum.reduceat(omax, st).tolist())]
    return spans if key is None else list(zip(k[st].tolist(), spans))


def _skips(bg, allK, known) -> list[dict]:
    """Known records inside one ownership's consumed range that the owner never consumed in it: missing bits
    inside a block's [omin, omax], and known records in the gap between two consecutive consumed blocks."""
    out = []
    inside = np.flatnonzero(bg["period"] >= 0)
    kb = known[np.searchsorted(allK, bg["K"][inside])]
    miss = kb & ~bg["mask"][inside] & range_mask(bg["omin"][inside], bg["omax"][inside], bg["b"][inside])
    for j in np.flatnonzero(miss):
        i = inside[j]
        out.append({"tp": int(bg["tp"][i]), "member": int(bg["m"][i]), "period": int(bg["period"][i]), "b": int(bg["b"][i]),
                    "bits": int(miss[j]), "t0": int(bg["tmin"][i]), "t1": int(bg["tmax"][i])})
    a_, z_ = inside[:-1], inside[1:]  # bg is sorted by (partition, member, period, b): consecutive blocks of one ownership
    gap = (bg["tp"][a_] == bg["tp"][z_]) & (bg["m"][a_] == bg["m"][z_]) & (bg["period"][a_] == bg["period"][z_]) & \
        (bg["omin"][z_] > bg["omax"][a_] + 1)
    for a, z in zip(a_[gap].tolist(), z_[gap].tolist()):
        t, lo, hi = int(bg["tp"][a]), int(bg["omax"][a]) + 1, int(bg["omin"][z]) - 1
        i0, i1 = np.searchsorted(allK, t << 40 | lo >> 6), np.searchsorted(allK, t << 40 | hi >> 6, side="right")
        bits = known[i0:i1] & range_mask(np.full(i1 - i0, lo), np.full(i1 - i0, hi), allK[i0:i1] & ((1 << 40) - 1))
        for k in np.flatnonzero(bits):
            out.append({"tp": t, "member": int(bg["m"][a]), "period": int(bg["period"][a]), "b": int(allK[i0 + k] & ((1 << 40) - 1)),
                        "bits": int(bits[k]), "t0": int(bg["tmax"][a]), "t1": int(bg["tmin"][z])})
    return out
