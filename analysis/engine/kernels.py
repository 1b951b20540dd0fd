"""What the executors run over Arrow batches, with numpy: the record-level groups checked at once
(:func:`check_groups`), a consumed log cut into pieces with its steps back (:func:`log_task`), and the bit and
interval arithmetic under them. The driver's Spark plan (analysis/engine/plan.py) ships these to the executors by
value, so an executor needs numpy and pyarrow, not this package.
"""
from __future__ import annotations

import contextlib
import gc
import json
from typing import NamedTuple

import numpy as np

from analysis.intervals import Span, merge_spans, segmented_cummax

# the sides of a row (a produced row's by its status: ok or absent, fail, info, unplaced; contract.STATUSES)
CONSUMED, PRODUCED, FAILED, INFO, UNPLACED, BAD_PRODUCED, BAD_CONSUMED = 0, 1, 2, 3, 4, 8, 9
NO_EVENTS_PERIOD, OUTSIDE_PERIOD = -2, -1
U64 = (1 << 64) - 1
BIG, SMALL = np.iinfo(np.int64).max, np.iinfo(np.int64).min


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
SEQUENCE_SHIFT = 20                      # the re-sequencing shuffle's key: (stream, n >> SEQUENCE_SHIFT)
LOG_SCHEMA = ("kind int, mh bigint, th bigint, `partition` int, period bigint, fh bigint, blk bigint, pos bigint, "
              "`offset` bigint, ts bigint, generation int, epoch int, pos2 bigint, offset2 bigint, ts2 bigint, tmin bigint, "
              "rid bigint")


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


def check_task(batches, cfg):
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


# what check_groups reports, each a list of rows under its name (the checks' Facts.got)
RECORD_OUTPUTS = ("stats", "dirty", "groups", "periods", "skip", "stall_blocks", "spans", "acks", "rate", "sides",
                  "unordered", "unsequenced")
SEGMENT, STEP = 0, 1  # the kinds of row the log pass returns
LOG_ROWS = 1 << 20                       # rows a task folds at once (its memory bound): pieces are stitched anyway


def int_columns(table) -> dict:
    return {c: np.asarray(table.column(c).fill_null(-1).to_numpy(zero_copy_only=False)).astype(np.int64)
            for c in table.column_names}


def log_task(batches, cfg, by_sequence=False):
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
    c = int_columns(table)
    mh, th, part, epoch, fh, blk, pos, off, ts = (c[k] for k in ("mh", "th", "partition", "epoch", "fh", "blk", "pos",
                                                                 "offset", "ts"))
    period = periods_of(mh, th, part, epoch, cfg)
    batch = lambda kind, at, **more: log_batch(  # noqa: E731
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
    stream = codes(mh[sel], th[sel], part[sel], period[sel])[0]
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
    stream = codes(c["mh"][sel], c["th"][sel], c["partition"][sel], period[sel], rid[sel])[0]
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


def log_batch(columns: dict, n: int):
    """One batch of LOG_SCHEMA: the given columns, the others null."""
    import pyarrow as pa
    types = {"int": pa.int32(), "bigint": pa.int64()}
    fields = [(f.split()[0].strip("`"), types[f.split()[1]]) for f in LOG_SCHEMA.split(", ")]
    return pa.RecordBatch.from_arrays([pa.array(columns[k], t) if k in columns else pa.nulls(n, t) for k, t in fields],
                                      names=[k for k, _ in fields])


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


def codes(*cols) -> tuple[np.ndarray, np.ndarray]:
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
    code, first = codes(mh, th, partition, epoch)
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
    tp, first = codes(th, part)
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
    stream = codes(g["tp"][inside], g["m"][inside], g["period"][inside])[0]
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
        top = segmented_cummax(t, omax)  # spans come sorted by (partition, time)
        tops += zip(t.tolist(), top.tolist())
        tops += zip(t.tolist(), (top | 63).tolist())
    tops += [(t, x * 64 + 63) for t, x in stall_blocks]
    lo = np.searchsorted(pb["tp"], np.arange(len(good)))
    hi = np.searchsorted(pb["tp"], np.arange(len(good)), side="right")
    for t, top in sorted(set(tops)):
        yield t, top, {k: pb[k][lo[t]:hi[t]] for k in ("b", "mask", "tmin", "tmax", "kmin", "kmax")}


def _delivery_spans(bg, stall_ms) -> tuple[list[tuple[int, Span]], list[tuple]]:
    """When each partition was delivered, folded into spans with no gap above ``stall_ms`` inside, each with the
    highest offset delivered in it (the ``stall`` check's input): [(partition code, Span)]. A
    group whose own time span is above ``stall_ms`` may hide such a gap: its block (partition code, b) is returned
    to be read back record by record."""
    long = (bg["tmax"] - bg["tmin"]) > stall_ms
    blocks = sorted(set(zip(bg["tp"][long].tolist(), bg["b"][long].tolist())))
    short = ~long
    return merge_spans(bg["tmin"][short], bg["tmax"][short], bg["omax"][short], stall_ms, key=bg["tp"][short]), blocks


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
