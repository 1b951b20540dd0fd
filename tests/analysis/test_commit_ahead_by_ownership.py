"""commit_ahead asks Spark one question per ownership, however many commits it has (spark_plan.commits_ahead): what the
member missed in the ownership comes back as offset ranges, and each commit is placed in them on the driver, with
the same answer a question per commit gave."""
from analysis import analyze
from analysis.engine.spark_plan import inside
from analysis_runs import Run

EAGER = dict(protocol="classic", assignor="range", commit="sync")


def test_a_commit_takes_what_the_ranges_hold_inside_its_own_span():
    ranges = [(3, 5), (9, 9), (20, 29)]
    ends = [z for _, z in ranges]
    assert inside(ranges, ends, 0, 3) is None
    assert inside(ranges, ends, 0, 10) == {"n": 4, "first": 3, "last": 9}
    assert inside(ranges, ends, 4, 9) == {"n": 2, "first": 4, "last": 5}   # cut on both sides, hi excluded
    assert inside(ranges, ends, 10, 20) is None
    assert inside(ranges, ends, 25, 100) == {"n": 5, "first": 25, "last": 29}
    assert inside([], [], 0, 100) is None


def test_every_commit_of_one_ownership_gets_its_own_answer(tmp_path, spark):
    """a owns t:0 and skips 10, 30-31 and 45; it commits 20, 25, 40 and 50: three commits ahead, each with the
    records it passed and the last offset consumed by then; 25 passed nothing."""
    r = Run(tmp_path / "run", "jsonl").produce("t", 0, range(60))
    r.event("a", "started", 0, **EAGER).event("a", "assigned", 10, ["t:0"], generation=1)
    skipped = {10, 30, 31, 45}
    for i, upto in enumerate((20, 25, 40, 50)):
        lo = (0, 20, 25, 40)[i]
        r.consume("a", "t", 0, [o for o in range(lo, upto) if o not in skipped], at=100 + 100 * i, generation=1)
        r.event("a", "committed", 150 + 100 * i, offsets={"t:0": upto}, generation=1)
    r.consume("a", "t", 0, range(50, 60), at=600, generation=1)
    r.event("a", "stopped", 2000)
    s = analyze(r.write(), spark=spark)
    got = [(a["committed_offset"], a["from_offset"], a["first_skipped"], a["offsets"], a["skipped"], a["last_consumed"])
           for a in s["anomalies"] if a["type"] == "commit_ahead"]
    assert got == [(20, 0, 10, [10, 10], 1, 19), (40, 25, 30, [30, 31], 2, 39), (50, 40, 45, [45, 45], 1, 49)]
    assert s["checks"]["commit_ahead"]["ownerships_queried"] == 1


def test_what_an_ownership_missed_runs_across_blocks_and_repeated_acks(tmp_path, spark):
    """The records a commit passed, found per 64-offset block (spark_plan.missed_ranges): runs that cross a block's edge
    (60-70, 127-128) are one run each, a record acked twice (100) and consumed once is not missed, and the one acked
    twice and never consumed (190) counts once."""
    r = Run(tmp_path / "run", "parquet").produce("t", 0, range(200)).produce("t", 0, [100, 190], at=500)
    r.event("a", "started", 0, **EAGER).event("a", "assigned", 10, ["t:0"], generation=1)
    skipped = set(range(60, 71)) | {127, 128, 190}
    r.consume("a", "t", 0, [o for o in range(200) if o not in skipped], at=100, generation=1)
    r.event("a", "committed", 1000, offsets={"t:0": 200}, generation=1)
    r.event("a", "stopped", 2000)
    s = analyze(r.write(), spark=spark)
    got = [(a["committed_offset"], a["from_offset"], a["first_skipped"], a["offsets"], a["skipped"], a["last_consumed"])
           for a in s["anomalies"] if a["type"] == "commit_ahead"]
    assert got == [(200, 0, 60, [60, 190], 14, 199)]


def test_the_runs_of_a_mask_are_its_bits_joined():
    import random

    from analysis.engine.kernels import U64, bit_runs, bits_of
    from analysis.intervals import merged_ranges
    rng = random.Random(7)
    masks = [0, 1, 1 << 63, U64, U64 ^ (1 << 31), 0b1011_0111] + [rng.getrandbits(64) for _ in range(2000)]
    for m in masks:
        assert bit_runs(m) == merged_ranges((j, j) for j in bits_of(m)), bin(m)
    assert bit_runs(-1) == [(0, 63)]  # a signed long from Spark: the same 64 bits


def test_shared_runs_are_the_offsets_of_each_set_of_deliveries_joined():
    """What duplicates() judges a block by: every offset held by two masks or more, in runs of the same masks."""
    import random

    from analysis.engine.kernels import U64, bits_of, shared_runs
    rng = random.Random(11)
    cases = [[U64, U64], [1 << 63, 1 << 63, 1], [0b0110, 0b0011, 0b1100], [-1, U64 ^ (1 << 40)]]
    for _ in range(1500):
        k = rng.randint(1, 5)
        cases.append([rng.getrandbits(64) & rng.getrandbits(64) if rng.random() < 0.5 else
                      ((1 << rng.randint(1, 64)) - 1) << rng.randint(0, 8) & U64 for _ in range(k)])
    for masks in cases:
        holders = {j: tuple(i for i, m in enumerate(masks) if j in bits_of(m)) for j in range(64)}
        want: list[list] = []
        for j in range(64):
            if len(holders[j]) < 2:
                continue
            if want and want[-1][1] == j - 1 and want[-1][2] == holders[j]:
                want[-1][1] = j
            else:
                want.append([j, j, holders[j]])
        assert shared_runs(masks) == [tuple(w) for w in want], masks
