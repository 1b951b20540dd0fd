"""Interval arithmetic shared by the checks and the figures: the stretches of a range that no span covers."""
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
