"""Issue 37, part 2: no query grows with its keys. Each query that once built one SQL term per key, block or window
(OR-ed conditions, CASE branches, a CASE tree over the ownership bounds) is asked about 5,000 of them on a small run,
with Spark's fallback off (a plan whose generated code does not compile raises instead of running interpreted), and
answers as a plain Python computation over the same planted rows does."""
from bisect import bisect_right
from collections import Counter, defaultdict

import pytest

from analysis.rundir import inputs

from analysis.engine import kernels, spark_plan
from analysis.engine.spark_plan import CommitAsked, DeliveryWindow, OwnershipAsked, name_hash
from analysis_runs import T0, Run

N = 5000
NO_FALLBACK = {"spark.sql.codegen.fallback": "false", "spark.sql.codegen.factoryMode": "CODEGEN_ONLY"}


def key(i: int) -> tuple[str, int]:
    """The i-th (topic, partition): 5,000 topics, so that names have 5,000 hashes to resolve too."""
    return f"t{i}", i % 7


def planted(root) -> Run:
    """Each key: offsets 60-67 acked (62 failed on odd keys), crossing a 64-offset block's edge; member a consumes
    60-65, member b 63-67, and on every 50th key member c consumes 64-66; one row in ten has no producer_id."""
    r = Run(root, "parquet")
    for i in range(N):
        t, p = key(i)
        r.produce(t, p, [o for o in range(60, 68) if not (i % 2 and o == 62)], at=10 * i)
        if i % 2:
            r.produce(t, p, [62], at=10 * i + 1, status="fail")
        r.consume("a", t, p, range(60, 66), at=10 * i)
        r.consume("b", t, p, range(63, 68), at=10 * i + 3)
        if i % 50 == 0:
            r.consume("c", t, p, range(64, 67), at=10 * i + 2)
    for n, row in enumerate(row for rows in r.consumed.values() for row in rows):
        if n % 10 == 0:
            row["producer_id"] = None
    return r


@pytest.fixture(scope="module")
def planted_run(tmp_path_factory):
    from analysis.engine.spark import get_session
    spark = get_session()
    run = planted(tmp_path_factory.mktemp("per-key") / "run")
    run.write()
    saved = {k: spark.conf.get(k, None) for k in NO_FALLBACK}
    for k, v in NO_FALLBACK.items():
        spark.conf.set(k, v)
    try:
        yield run, inputs.load(spark, run.root, "produced"), inputs.load(spark, run.root, "consumed")
    finally:
        for k, v in saved.items():
            spark.conf.unset(k) if v is None else spark.conf.set(k, v)


def consumed_rows(run: Run) -> list[dict]:
    return [{**x, "ts": x["consumed_at_ms"]} for rows in run.consumed.values() for x in rows]


def ok_acked(run: Run) -> list[dict]:
    return [x for x in run.produced if x["status"] in (None, "ok")]


@pytest.mark.slow  # make test's 30 minutes: the per-key queries at 5,000 bounds run there
def test_the_fallback_is_off_and_a_tree_of_5000_terms_does_not_compile(planted_run):
    """The test's premise: with the fallback off, the CASE tree the epoch once was raises at 5,000 bounds."""
    run, _, consumed = planted_run
    tree = lambda lo, hi: str(lo) if lo >= hi else f"CASE WHEN ts < {lo} THEN {tree(lo, (lo + hi) // 2)} ELSE {tree((lo + hi) // 2 + 1, hi)} END"  # noqa: E731
    with pytest.raises(Exception, match="64 KB|Failed to compile"):
        consumed.df.selectExpr(f"{tree(0, N)} AS e").agg({"e": "sum"}).collect()


def test_acked_in_block_for_5000_keys(planted_run):
    run, produced, _ = planted_run
    keys = {(*key(i), 58 + i % 8) for i in range(N)}  # tops 58-65: 63 asks for nothing, 64 and 65 the next block
    got = spark_plan.acked_in_block(produced, keys)
    tops = {(t, p): top for t, p, top in keys}
    want = [(x["topic"], x["partition"], x["offset"], x["acked_at_ms"]) for x in ok_acked(run)
            if tops[(x["topic"], x["partition"])] < x["offset"] <= tops[(x["topic"], x["partition"])] | 63]
    assert sorted((r["topic"], r["partition"], r["offset"], r["ts"]) for r in got) == sorted(want)
    assert len(want) > N


def test_unacked_rows_for_5000_cells(planted_run):
    run, _, consumed = planted_run
    cells = {(*key(i), 60 + i % 8) for i in range(N)}
    got = spark_plan.unacked_rows(consumed, cells)
    want = [(x["topic"], x["partition"], x["offset"], x["producer_id"], x["seq"]) for x in consumed_rows(run)
            if (x["topic"], x["partition"], x["offset"]) in cells and x["producer_id"] is not None]
    assert sorted(tuple(r.values()) for r in got) == sorted(want)
    assert len(want) > N


def windows() -> list[DeliveryWindow]:
    """One window of a and b a key, and on every 50th key one of a and c after it that overlaps it: a's records
    inside both count in the first."""
    out = [DeliveryWindow(i, *key(i), "a", "b", T0 + 10 * i + 2, T0 + 10 * i + 6) for i in range(N)]
    return out + [DeliveryWindow(N + i, *key(i), "a", "c", T0 + 10 * i, T0 + 10 * i + 4) for i in range(0, N, 50)]


def window_answer(run: Run, ws: list[DeliveryWindow]):
    """Each consumed row in the first window of the list that holds it: per (window, member) counts, and per window
    the offsets both members delivered (count, lowest, highest)."""
    by_partition = defaultdict(list)
    for w in ws:
        by_partition[(w.topic, w.partition)].append(w)
    counts, members = Counter(), defaultdict(set)
    for x in consumed_rows(run):
        w = next((w for w in by_partition[(x["topic"], x["partition"])]
                  if x["member"] in (w.member_a, w.member_b) and w.start <= x["ts"] <= w.end), None)
        if w is not None:
            counts[(w.id, x["member"])] += 1
            members[(w.id, x["offset"])].add(x["member"])
    both = defaultdict(list)
    for (w, offset), ms in members.items():
        if len(ms) == 2:
            both[w].append(offset)
    return (sorted((w, m, n) for (w, m), n in counts.items()),
            sorted((w, len(o), min(o), max(o)) for w, o in both.items()))


def test_window_deliveries_for_5000_windows(planted_run):
    run, _, consumed = planted_run
    ws = windows()
    per_member, twice = spark_plan.window_deliveries(consumed, ws)
    want_counts, want_twice = window_answer(run, ws)
    assert sorted((r["w"], r["member"], r["count"]) for r in per_member) == want_counts
    assert sorted((r["w"], r["n"], r["lo"], r["hi"]) for r in twice) == want_twice
    assert {n for w, m, n in want_counts if w >= N and m == "a"} == {2}  # a's 3 records in both are the first's


def ownerships() -> list[OwnershipAsked]:
    """a's ownership of each key from 1 ms after its first record (so 60 is missed) to 3 ms after (64 and 65 too on
    keys whose window ends there), with one commit of offsets [60, 68) logged at its second record."""
    return [OwnershipAsked(i, "a", *key(i), T0 + 10 * i + 1, T0 + 10 * i + (3 if i % 3 else 9),
                           [CommitAsked(i, 60, 68, T0 + 10 * i + 1)]) for i in range(N)]


def commit_answer(run: Run, asked: list[OwnershipAsked]) -> list[tuple]:
    acked = defaultdict(set)
    for x in ok_acked(run):
        acked[(x["topic"], x["partition"])].add(x["offset"])
    mine = defaultdict(list)
    for x in consumed_rows(run):
        mine[(x["member"], x["topic"], x["partition"])].append(x)
    out = []
    for o in asked:
        rows = [x for x in mine[(o.member, o.topic, o.partition)] if o.t0 <= x["ts"] <= o.t1]
        for c in o.commits:
            missed = sorted(a for a in acked[(o.topic, o.partition)] - {x["offset"] for x in rows} if c.lo <= a < c.hi)
            if missed:
                last = max((x["offset"] for x in rows if c.lo <= x["offset"] < c.hi and x["ts"] <= c.ts), default=None)
                out.append((c.id, len(missed), missed[0], missed[-1], last))
    return sorted(out)


def test_commits_ahead_for_5000_ownerships(planted_run):
    """missed_ranges (one term an ownership) and last_consumed (one term a commit ahead), through commits_ahead."""
    run, produced, consumed = planted_run
    asked = ownerships()
    got = spark_plan.commits_ahead(produced, consumed, asked)
    want = commit_answer(run, asked)
    assert sorted((r["id"], r["n"], r["first"], r["last"], r["last_consumed"]) for r in got) == want
    assert len(want) == N


def test_resolve_names_for_5000_hashes(planted_run):
    run, produced, consumed = planted_run
    topics, members = {key(i)[0] for i in range(N)}, set(run.consumed)
    got = spark_plan.resolve_names(produced, consumed, {name_hash(t) for t in topics}, {name_hash(m) for m in members})
    assert got == {**{("topic", name_hash(t)): t for t in topics}, **{("member", name_hash(m)): m for m in members}}


def bounds() -> list[int]:
    """5,000 ownership bounds among the consumed rows' times (every other ms of the first 10,000)."""
    return [T0 + 2 * j + 1 for j in range(N)]


def test_epochs_of_5000_bounds_in_the_scan_and_the_read_back(planted_run):
    """The epoch (how many bounds are <= ts) in the main aggregation's groups and in block_rows (5,000 blocks)."""
    run, produced, consumed = planted_run
    bs = bounds()
    groups = spark_plan.aggregate(produced.df, consumed.df, bs).where(f"side = {kernels.CONSUMED}").toArrow().to_pylist()
    want = {(name_hash(x["topic"]), x["partition"], name_hash(x["member"]), x["offset"] >> 6, bisect_right(bs, x["ts"]))
            for x in consumed_rows(run)}
    assert {(g["th"], g["partition"], g["mh"], g["b"], g["epoch"]) for g in groups} == want
    assert len({g["epoch"] for g in groups}) > 2000

    blocks = {(*key(i), 1) for i in range(N)}
    names = {**{("topic", name_hash(key(i)[0])): key(i)[0] for i in range(N)},
             **{("member", name_hash(m)): m for m in run.consumed}}
    got = spark_plan.block_rows(consumed, bs, blocks, names)
    want = [(x["topic"], x["partition"], x["offset"], x["member"], x["ts"], bisect_right(bs, x["ts"]))
            for x in consumed_rows(run) if x["offset"] >= 64]
    assert sorted((r["topic"], r["partition"], r["offset"], r["member"], r["ts"], r["epoch"]) for r in got) == sorted(want)


def test_an_epoch_counts_the_bounds_at_or_before_its_time(spark):
    """The search's edges: no bound, one, a power of two and around it, a time on a bound, before all, after all,
    and NULL (after all, as the CASE tree had it)."""
    times = [None, -5, 0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 1000]
    df = spark.createDataFrame([(t,) for t in times], "ts bigint")
    for bs in ([], [3], [1, 2], [0, 2, 8], list(range(0, 16, 2)), list(range(1, 17)), list(range(0, 34, 2))):
        got = [r["epoch"] for r in spark_plan.with_epoch(df, bs).collect()]
        assert got == [len(bs) if t is None else bisect_right(bs, t) for t in times], bs
