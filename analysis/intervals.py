"""Interval arithmetic shared by the checks, the figures and the Spark plan: the stretches of a range that no span
covers, ranges merged where they overlap or touch, and time spans merged across gaps no longer than a limit.

The Spark plan's executors run merge_spans: analysis/engine/spark_plan.py pickles this module by value, so it imports
nothing of this package (numpy only)."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np


def gaps(spans, lo: int, hi: int) -> list[tuple[int, int]]:
    """The stretches of [lo, hi) that no span covers; ``spans`` are (start, end, ...) tuples, half-open, sorted by
    start, overlapping or not (what follows end is ignored: an owner, a label)."""
    out, covered = [], lo
    for start, end, *_ in spans:
        if end <= covered:
            continue
        if start > covered:
            out.append((covered, min(start, hi)))
        covered = max(covered, end)
        if covered >= hi:
            break
    if covered < hi:
        out.append((covered, hi))
    return [(a, b) for a, b in out if b > a]


def gaps_inclusive(spans, lo: int, hi: int) -> list[tuple[int, int]]:
    """:func:`gaps` for integer ranges with both ends inclusive ([lo, hi] and each (a, z)), e.g. offsets."""
    return [(a, b - 1) for a, b in gaps([(a, z + 1) for a, z, *_ in spans], lo, hi + 1)]


def merged_ranges(ranges) -> list[tuple[int, ...]]:
    """Ranges (*key, lo, hi) of integers (inclusive), sorted, those of one key that overlap or touch merged. For the
    re-read the key is (member hash, topic hash, partition) and each merged range of n is read and stitched on its
    own; spark_plan.covering_intervals merges ranges without a key."""
    out: list[list[int]] = []
    for *key, lo, hi in sorted(ranges):
        if out and out[-1][:-2] == key and lo <= out[-1][-1] + 1:
            out[-1][-1] = max(out[-1][-1], hi)
        else:
            out.append([*key, lo, hi])
    return [tuple(r) for r in out]


def segmented_cummax(key, v) -> np.ndarray:
    """Running maximum of ``v`` restarted at each new value of ``key`` (rows sorted by key), exact for any values:
    the running maximum of (key, rank of v) pairs packed in one integer."""
    if len(v) == 0:
        return v
    u, rank = np.unique(v, return_inverse=True)
    seg = np.cumsum(np.r_[True, key[1:] != key[:-1]]) - 1
    return u[np.maximum.accumulate(seg * len(u) + rank.ravel()) - seg * len(u)]


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
    reach = segmented_cummax(k, t1)
    new = np.ones(len(t0), bool)
    new[1:] = (k[1:] != k[:-1]) | (t0[1:] - reach[:-1] > gap_ms)
    st = np.flatnonzero(new)
    spans = [Span(*s) for s in zip(t0[st].tolist(), np.maximum.reduceat(t1, st).tolist(),
                                   np.maximum.reduceat(omax, st).tolist())]
    return spans if key is None else list(zip(k[st].tolist(), spans))
