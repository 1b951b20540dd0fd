"""Interval arithmetic shared by the checks, the figures and the Spark plan: the stretches of a range that no span
covers, and ranges merged where they overlap or touch."""
from __future__ import annotations


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
