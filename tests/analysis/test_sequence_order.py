"""The scan's groups settle the order of consumption by n without the rows (kernels.unordered_ranges): the ranges of n
they name hold every step back (a record, by n, not above the one before it), and a stream without one gets none.
Checked against a brute force over random streams; the groups are built as spark_plan.aggregate builds them."""
import random

import numpy as np
import pytest

from analysis.engine.spark_plan import covering_intervals

from analysis.engine.kernels import SEQUENCE_BUCKET, SEQUENCE_WORDS, highest_bit, lowest_bit, sorted_pairing_sum, unordered_ranges
from analysis.intervals import merged_ranges


def groups_of(streams: dict) -> dict:
    """streams: (tp, member, period) -> [(n, offset)]: the consumed groups keyed (stream, offset >> 6, bucket of n),
    with the columns aggregate() gives them (n: rows, mask, nmask: a row of words, nsum)."""
    acc: dict = {}
    for (tp, m, period), rows in streams.items():
        for n, offset in rows:
            key = (tp, m, period, offset >> 6, -1 if n is None else n // SEQUENCE_BUCKET)
            g = acc.setdefault(key, {"n": 0, "mask": 0, "nmask": 0, "nsum": 0})
            g["n"] += 1
            g["mask"] |= 1 << (offset & 63)
            if n is not None:
                g["nmask"] |= 1 << (n % SEQUENCE_BUCKET)
                g["nsum"] += (n % SEQUENCE_BUCKET) * (offset & 63)
    cols = {k: [] for k in ("tp", "m", "period", "b", "nb", "n", "mask", "nmask", "nsum")}
    for (tp, m, period, b, nb), g in acc.items():
        for k, v in {"tp": tp, "m": m, "period": period, "b": b, "nb": nb, **g}.items():
            cols[k].append(words(v, SEQUENCE_WORDS) if k == "nmask" else words(v, 1)[0] if k == "mask" else v)
    return {k: np.array(v, np.int64) for k, v in cols.items()}


def words(bits: int, count: int) -> list[int]:
    """A bit set as ``count`` signed 64-bit words, lowest first."""
    out = [(bits >> (64 * i)) & ((1 << 64) - 1) for i in range(count)]
    return [w - (1 << 64) if w >= 1 << 63 else w for w in out]


def steps_back(rows) -> set[tuple[int, int]]:
    """(n before, n after) of every step back of one stream's rows."""
    rows = sorted(rows)
    return {(a[0], b[0]) for a, b in zip(rows, rows[1:]) if b[1] <= a[1]}


def steps_in_ranges(streams: dict, ranges) -> set[tuple]:
    """The steps back found by reading only the rows inside each range, each range on its own."""
    out = set()
    for tp, m, lo, hi in ranges:
        for (tp2, m2, period), rows in streams.items():
            if (tp2, m2) == (tp, m):
                out |= {(tp, m, period, *s) for s in steps_back([r for r in rows if lo <= r[0] <= hi])}
    return out


def random_stream(rng: random.Random) -> list[tuple[int, int]]:
    """A member's records of one partition, by n: mostly rising (with gaps in both n and offset, as when the
    member reads other partitions between), sometimes with a step back or a repeated offset."""
    n, offset, rows = rng.randrange(200), rng.randrange(300), []
    for _ in range(rng.randrange(1, 150)):
        rows.append((n, offset))
        n += rng.choice((1, 1, 1, 2, 7, 70, SEQUENCE_BUCKET + 3))
        offset += rng.choice((1, 1, 1, 3, 64))
        if rng.random() < 0.01:
            offset -= rng.randrange(1, 80)
        if rng.random() < 0.005:
            offset = rows[-1][1]
    return rows


def test_the_named_ranges_hold_every_step_back_and_a_clean_stream_gets_none():
    rng = random.Random(23)
    streams = {(rng.randrange(4), rng.randrange(5), period): random_stream(rng) for period in range(60)}
    streams[(0, 9, 0)] = [(5, 100), (6, 102), (7, 101), (8, 103)]  # inside one group: offsets swapped
    streams[(0, 9, 1)] = [(200, 100), (201, 163), (270, 130), (271, 200)]  # across groups: n rising, offsets not
    streams[(0, 9, 2)] = [(360, 10), (361, 11), (364, 12), (365, 13), (366, 64)]  # rising across buckets
    streams[(1, 9, 0)] = [(0, 5), (1, 6), (2, 7), (700, 8)]  # clean: no range
    # a bucket whose groups overlap in n (130, 180 and 5 between), its last record stepping back into the next bucket,
    # whose first group chains after the overlapping bucket's last group by n: only reading the next bucket finds it
    B = SEQUENCE_BUCKET
    streams[(2, 9, 0)] = [(0, 130), (10, 5), (B - 4, 180), (B, 170)]
    for rows in streams.values():
        rng.shuffle(rows)  # the groups do not see the order of rows
    ranges, unsequenced = unordered_ranges(groups_of(streams))
    merged = [(tp, m, lo, hi) for m, tp, _, lo, hi in merged_ranges((r.m, r.tp, 0, r.lo, r.hi) for r in ranges)]
    want = {(tp, m, period, *s) for (tp, m, period), rows in streams.items() for s in steps_back(rows)}
    assert steps_in_ranges(streams, merged) == want and unsequenced == 0
    assert {(0, 9, 0, 6, 7), (0, 9, 1, 201, 270), (2, 9, 0, B - 4, B)} <= want
    named = {(r.tp, r.m) for r in ranges}
    assert named == {(tp, m) for tp, m, *_ in want} and (1, 9) not in named
    assert sum(hi - lo + 1 for *_, lo, hi in merged) < sum(max(n for n, _ in rows) + 1 for rows in streams.values()) / 2


def test_rows_without_n_are_counted_and_left_out():
    streams = {(0, 1, 0): [(0, 10), (None, 11), (2, 12)], (0, 2, 0): [(0, 10), (1, 11)],
               (1, 1, -1): [(None, 5)]}  # outside every ownership: not counted
    ranges, unsequenced = unordered_ranges(groups_of(streams))
    assert ranges == [] and unsequenced == 1


@pytest.mark.parametrize("seed", range(5))
def test_sorted_pairing_sum_pairs_the_kth_bits(seed):
    rng = np.random.default_rng(seed)
    a, b, want = [], [], []
    for _ in range(300):
        k = int(rng.integers(0, 65))
        pa, pb = sorted(rng.choice(64, k, replace=False)), sorted(rng.choice(64, k, replace=False))
        a.append(sum(1 << int(x) for x in pa))
        b.append(sum(1 << int(x) for x in pb))
        want.append(sum(int(x) * int(y) for x, y in zip(pa, pb)))
    signed = lambda v: np.array([x - (1 << 64) if x >= 1 << 63 else x for x in v], np.int64)  # noqa: E731
    assert sorted_pairing_sum(signed(a), signed(b)).tolist() == want


@pytest.mark.parametrize("seed", range(5))
def test_sorted_pairing_sum_and_the_ends_of_a_set_of_several_words(seed):
    """The sets of n are SEQUENCE_WORDS words a row: the k-th bits paired across words, the lowest and highest bit."""
    rng = np.random.default_rng(seed)
    a, b, want, ends = [], [], [], []
    for _ in range(300):
        k = int(rng.integers(1, 65))
        pa, pb = sorted(rng.choice(SEQUENCE_BUCKET, k, replace=False)), sorted(rng.choice(64, k, replace=False))
        a.append(words(sum(1 << int(x) for x in pa), SEQUENCE_WORDS))
        b.append(words(sum(1 << int(x) for x in pb), 1)[0])
        want.append(sum(int(x) * int(y) for x, y in zip(pa, pb)))
        ends.append((int(pa[0]), int(pa[-1])))
    a, b = np.array(a, np.int64), np.array(b, np.int64)
    assert sorted_pairing_sum(a, b).tolist() == want
    assert list(zip(lowest_bit(a).tolist(), highest_bit(a).tolist())) == ends


@pytest.mark.parametrize("seed", range(20))
def test_covering_intervals_cover_every_value_in_at_most_so_many(seed):
    """The filter a re-read pushes down to the reader (spark_plan.covering_intervals): every value of every interval
    is covered, by at most ``at_most`` sorted disjoint intervals, each starting and ending on a wanted value."""
    rng = random.Random(seed)
    wanted = [(lo, lo + rng.randrange(5)) for lo in (rng.randrange(500) for _ in range(rng.randrange(1, 40)))]
    at_most = rng.randrange(1, 8)
    cover = covering_intervals(wanted, at_most)
    values = {v for lo, hi in wanted for v in range(lo, hi + 1)}
    assert len(cover) <= at_most and cover == sorted(cover)
    assert all(a[1] + 1 < b[0] for a, b in zip(cover, cover[1:]))
    assert all(any(lo <= v <= hi for lo, hi in cover) for v in values)
    assert all(lo in values and hi in values for lo, hi in cover)
    if len(cover) < at_most:  # room to spare: no gap closed, so nothing outside the wanted values is covered
        assert sum(hi - lo + 1 for lo, hi in cover) == len(values)
