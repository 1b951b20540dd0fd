"""Issue 23: the same run in any row order and file layout gives the same exact answer.

One synthetic run (benchmarks/synth.py: eager rebalances, duplicates inside and over the budget, records lost at
a hand-over, a skip, a step back, a commit regression, a stall, an unhealed fault) is written in several layouts
and analysed; every summary must equal the summary of the run written one file a member in consumption order,
field by field, anomaly rows and ``backwards`` included (only timing and the description of the input may differ):

- ``interleaved``: the streams of a file interleaved at random (several threads of one application, each
  consuming its own partitions, writing to one log);
- ``shuffled``: every row of 2 files at a random place (no order at all);
- ``shuffled jsonl``: the same in 3 JSONL files;
- ``one file``: every member's rows merged by consumption time into one file (logs merged from many hosts);
- ``many files``: the merged log cut into 40 files of consecutive rows, small row groups;
- ``thousands of files``: the merged log cut into 2,000 files of about 25 rows, alternately Parquet and JSONL;
- ``mixed``: the merged log in 6 files, alternately Parquet and JSONL, streams interleaved.

``backwards`` (a member's next consumed record not above the previous one inside one ownership) is the one check
that follows an order: every consumed row carries ``n``, its member's consumption sequence, and "next" is next by
``n``. A run without the column (written before it, or a user's own log) is judged by the order of each member's log
instead, and its summary says so: there a shuffled log gives the steps back of that log (``synth.steps_back``).
"""
import json
from dataclasses import replace

import pytest

from analysis import analyze
from analysis.checks import checks_needing
from benchmarks.synth import Plan, generate

PLAN = Plan(records=50_000, partitions=6, members=3, generations=4, stall=True)
STALL_MS = 2_000  # below the planted stall (synth.STALL_MS), above every rebalance's pause
LAYOUTS = {
    "interleaved": {"order": "interleaved"},
    "shuffled": {"order": "shuffled", "files": 2},
    "shuffled jsonl": {"order": "shuffled", "files": 3, "fmt": "jsonl"},
    "one file": {"files": 1},
    "many files": {"files": 40, "row_group_rows": 1_000},
    "thousands of files": {"files": 2_000, "fmt": "mixed", "order": "interleaved"},
    "mixed": {"files": 6, "fmt": "mixed", "order": "interleaved"},
}
FILES = {"interleaved": 3, "shuffled": 2, "shuffled jsonl": 3, "one file": 1, "many files": 40, "thousands of files": 2_000, "mixed": 6}
IGNORED = ("analysis_seconds", "run_dir", "input", "spark")  # timing and the description of the input
ORDERED_TRUTH = {"skip": 5, "backwards": 1, "commit_regression": 1, "duplicate_over_budget": 65, "stall": 1,
                 "unhealed_fault": 1}


def _analysed(root, plan: Plan, spark) -> tuple[dict, list[dict], dict]:
    truth = generate(root, plan)
    summary = analyze(root, spark=spark, stall_ms=STALL_MS)
    rows = [json.loads(line) for line in (root / "report" / "anomalies.jsonl").read_text().splitlines()]
    return summary, rows, truth.__dict__


def _comparable(summary: dict) -> dict:
    return {k: v for k, v in summary.items() if k not in IGNORED}


@pytest.fixture(scope="module")
def ordered(tmp_path_factory):
    from analysis.engine.spark import get_session
    summary, rows, truth = _analysed(tmp_path_factory.mktemp("ordered") / "run", PLAN, get_session())
    return summary, rows, truth


def test_ordered_run_finds_every_planted_anomaly(ordered):
    summary, _, truth = ordered
    for key in ("produced_records", "consumed_rows", "duplicated_offsets", "duplicate_extra_deliveries", "lost_records"):
        assert summary[key] == truth[key], key
    assert {k: summary["anomaly_counts"][k] for k in ORDERED_TRUTH} == ORDERED_TRUTH
    assert {k: truth[k] for k in ORDERED_TRUTH} == ORDERED_TRUTH
    assert all(c["status"] == "ran" for name, c in summary["checks"].items() if name not in STATELESS_NOT_RUN), \
        summary["checks"]
    assert summary["checks"]["backwards"]["judged_by"] == "sequence"


# 2,000 files take 12 s: the nightly's (make test's 30 minutes); "many files" and "mixed" keep both in make test
@pytest.mark.parametrize("layout", [pytest.param(name, marks=pytest.mark.slow) if name == "thousands of files" else name
                                    for name in LAYOUTS])
def test_layout_gives_the_same_summary(layout, ordered, tmp_path, spark):
    summary, rows, truth = _analysed(tmp_path / "run", replace(PLAN, **LAYOUTS[layout]), spark)
    ref_summary, ref_rows, _ = ordered
    assert summary["input"]["consumed_files"] == FILES[layout]
    assert truth["backwards"] == 1
    got, want = _comparable(summary), _comparable(ref_summary)
    assert got.keys() == want.keys()
    for key in want:
        assert got[key] == want[key], key
    assert rows == ref_rows


@pytest.mark.slow  # make test's 30 minutes: the planted layouts' summaries run there
def test_without_n_shuffled_rows_change_only_backwards(ordered, tmp_path, spark):
    """No consumption sequence: backwards follows the log, and says so."""
    summary, rows, truth = _analysed(tmp_path / "run", replace(PLAN, order="shuffled", files=2, sequence=False), spark)
    ref_summary, ref_rows, _ = ordered
    assert truth["backwards"] > 1000  # about half of the rows step back in a shuffled log
    assert summary["anomaly_counts"]["backwards"] == summary["checks"]["backwards"]["count"] == truth["backwards"]
    assert summary["checks"]["backwards"]["judged_by"] == "log order"
    assert "exact only when each member's rows are in consumption order" in summary["checks"]["backwards"]["note"]
    assert sum(1 for r in rows if r["type"] == "backwards") == truth["backwards"]
    got, want = _without_backwards(_comparable(summary)), _without_backwards(_comparable(ref_summary))
    for key in want:
        assert got[key] == want[key], key
    assert [r for r in rows if r["type"] != "backwards"] == [r for r in ref_rows if r["type"] != "backwards"]


def _without_backwards(summary: dict) -> dict:
    out = json.loads(json.dumps(summary))
    for key in ("anomaly_counts", "anomaly_ranges", "checks"):
        out[key].pop("backwards")
    out["anomalies"] = [a for a in out["anomalies"] if a["type"] != "backwards"]
    for f in out["faults"]:
        f["anomalies"].pop("backwards", None)
    return out


# a run that kept no state does not run the state checks (no state/), nor one that promised no exactly-once the
# exactly-once checks: their status is not_run
STATELESS_NOT_RUN = tuple(checks_needing("state", "eos", "verified"))  # no state/, no exactly-once promised
WIDE = Plan(records=240_000, partitions=1_200, members=500, generations=4)  # 200 records a partition: room to plant


@pytest.mark.slow  # both in the nightly: make test's 30 minutes (its 1,000-partition layouts at smaller scale run there)
@pytest.mark.parametrize("layout", ["interleaved", "shuffled"])
def test_a_thousand_partitions_and_500_members_in_any_layout(layout, tmp_path, spark):
    """Every planted anomaly at 1,200 partitions and 500 members, the members' merged log cut into 1,000 files,
    alternately Parquet and JSONL, or shuffled in 2 files."""
    plan = replace(WIDE, files=1_000, fmt="mixed", order="interleaved") if layout == "interleaved" else \
        replace(WIDE, files=2, order="shuffled")
    summary, _, truth = _analysed(tmp_path / "run", plan, spark)
    for key in ("produced_records", "consumed_rows", "duplicated_offsets", "duplicate_extra_deliveries", "lost_records"):
        assert summary[key] == truth[key], key
    want = {k: truth[k] for k in ORDERED_TRUTH}  # this plan's own truth, from its generator
    # at this shape (12 commits a generation) the below_commit owner's first commits are below the last one too, and
    # 200 records a partition leave no planted stall longer than STALL_MS: the truth differs from the small plan's
    assert (want["commit_regression"], want["stall"]) == (3, 0)
    assert {k: summary["anomaly_counts"][k] for k in want} == want
    assert truth["backwards"] == 1
    assert all(c["status"] == "ran" for name, c in summary["checks"].items() if name not in STATELESS_NOT_RUN), \
        summary["checks"]


def test_many_small_files_share_scan_tasks(tmp_path, spark):
    """Spark's default open cost (4 MiB a file) made each of 500 members' small files a scan task of its own, and
    past 32 paths it listed them with a job: the analysis's settings pack them (job._tune)."""
    from analysis import job
    from analysis.rundir import inputs
    generate(tmp_path, replace(PLAN, records=20_000, files=400))
    files = inputs.precheck(tmp_path, "produced") + inputs.precheck(tmp_path, "consumed")
    saved = job._tune(spark, sum(p.stat().st_size for p in files))
    try:
        tasks = inputs.load(spark, tmp_path, "consumed").df.rdd.getNumPartitions()
    finally:
        job._restore(spark, saved)
    assert len(files) > 400 and tasks <= 40


def test_groups_checked_in_the_driver_or_in_executors_give_the_same_results(tmp_path, spark):
    """A small input's groups are checked in the driver, a large one's in executors (spark_plan.check_partitions): the
    same check_groups, so every result row is the same either way, over many partitions, members and tasks."""
    from analysis.rundir import history
    from analysis.rundir import inputs
    from analysis.engine import spark_plan
    from analysis.job import default_stall_ms, scan_config
    generate(tmp_path, replace(PLAN, records=20_000, partitions=60, members=6, order="shuffled", files=3, fmt="mixed"))
    hist = history.build(tmp_path, "auto")
    own = history.Ownership(hist)
    produced, consumed = inputs.load(spark, tmp_path, "produced"), inputs.load(spark, tmp_path, "consumed")
    cfg, _ = scan_config(hist, own, default_stall_ms(hist), sequence=True)
    got = {where: spark_plan.check_partitions(spark_plan.aggregate(produced.df, consumed.df, own.bounds), cfg, in_driver=where)
           for where in (True, False)}
    canonical = {where: {q: sorted(rows, key=lambda r: json.dumps(r, sort_keys=True)) for q, rows in g.items()}
                 for where, g in got.items()}  # a numpy value would not dump; a tuple is not equal to a list
    kinds = {q for q, rows in got[True].items() if rows}
    assert {"stats", "periods", "groups", "dirty", "unordered", "skip", "acks"} <= kinds
    assert canonical[True].keys() == canonical[False].keys()
    for q in canonical[True]:
        if q in ("sides", "unsequenced"):  # one row a task: their sums are what counts
            continue
        assert canonical[True][q] == canonical[False][q], q
    assert spark_plan.side_totals(got[True]) == spark_plan.side_totals(got[False])
    assert sum(r["n"] for r in got[True]["unsequenced"]) == sum(r["n"] for r in got[False]["unsequenced"])


def steps_back(spark, run_dir, consumed, cfg, own, names):
    """The steps back as the analysis finds them: the scan's groups name the streams they cannot clear, the log pass
    reads those (or, without n, every member's log)."""
    from analysis.rundir import inputs
    from analysis.engine import spark_plan
    got = spark_plan.check_partitions(spark_plan.aggregate(inputs.load(spark, run_dir, "produced").df, consumed.df, own.bounds), cfg)
    return spark_plan.log_pass(consumed, cfg, own.bounds, set(), names, True, got.get("unordered", []),
                            sum(r["n"] for r in got.get("unsequenced", [])))[1]


@pytest.mark.parametrize("order,sequence", [pytest.param("shuffled", False, marks=pytest.mark.slow),  # 30 minutes
                                            ("shuffled", True), ("consumption", True)])
def test_a_log_cut_across_many_tasks_keeps_every_step_back(order, sequence, tmp_path, spark):
    """The log pass's pieces: files cut into many input splits (a few KB each), Parquet row groups and JSONL byte
    ranges alike; the steps back across every cut are stitched exactly: by log order without n (a shuffled log: its
    own steps back), by n with it (rows in consumption order: stitched without a shuffle; shuffled: re-sequenced)."""
    from analysis.rundir import history
    from analysis.rundir import inputs
    from analysis.job import default_stall_ms, scan_config
    plan = replace(PLAN, records=20_000, order=order, files=4, fmt="mixed", row_group_rows=300, sequence=sequence)
    truth = generate(tmp_path, plan)
    hist = history.build(tmp_path, "auto")
    own = history.Ownership(hist)
    consumed = inputs.load(spark, tmp_path, "consumed")
    cfg, names = scan_config(hist, own, default_stall_ms(hist), sequence="n" in consumed.in_every_file)
    saved = spark.conf.get("spark.sql.files.maxPartitionBytes")
    spark.conf.set("spark.sql.files.maxPartitionBytes", str(16 << 10))
    try:
        assert consumed.df.rdd.getNumPartitions() > 20
        steps = steps_back(spark, tmp_path, consumed, cfg, own, names)
    finally:
        spark.conf.set("spark.sql.files.maxPartitionBytes", saved)
    assert steps.by_sequence is sequence and steps.unsequenced == 0
    assert len(steps) == truth.backwards == (1 if sequence else truth.backwards) and truth.backwards >= 1
    if not sequence:
        assert truth.backwards > 1000


@pytest.mark.slow  # make test's 30 minutes: a log cut across tasks runs there
def test_a_stream_resequenced_in_many_buckets_keeps_every_step_back(tmp_path, spark, monkeypatch):
    """The re-sequencing shuffle cuts each stream into buckets of n (n >> SEQUENCE_SHIFT), and a task may hold
    buckets of one stream that are not next to each other. Found at 100M records (a member's 33M rows in 32 buckets
    of 2^20): a task's segment ran from its lowest bucket to its highest, over another task's, and the run was
    refused as if an n were repeated. Buckets of 16 n give the same shape at 20,000 records."""
    from analysis.rundir import history
    from analysis.rundir import inputs
    from analysis.engine import kernels, spark_plan
    from analysis.job import default_stall_ms, scan_config
    monkeypatch.setattr(kernels, "SEQUENCE_SHIFT", 4)  # the executors' buckets and the plan's shuffle
    monkeypatch.setattr(spark_plan, "SEQUENCE_ROWS_IN_DRIVER", 0)  # the executors' re-sequencing, which has the buckets
    truth = generate(tmp_path, replace(PLAN, records=20_000, order="shuffled", row_group_rows=300))
    hist = history.build(tmp_path, "auto")
    own = history.Ownership(hist)
    cfg, names = scan_config(hist, own, default_stall_ms(hist), sequence=True)
    wanted = {"spark.sql.adaptive.coalescePartitions.enabled": "false",  # small data: else one task holds every bucket
              "spark.sql.shuffle.partitions": "8",
              "spark.sql.files.maxPartitionBytes": str(16 << 10)}  # a member's file in many splits: they overlap in n
    saved = {k: spark.conf.get(k) for k in wanted}
    for k, v in wanted.items():
        spark.conf.set(k, v)
    try:
        steps = steps_back(spark, tmp_path, inputs.load(spark, tmp_path, "consumed"), cfg, own, names)
    finally:
        for k, v in saved.items():
            spark.conf.set(k, v)
    assert steps.by_sequence and len(steps) == truth.backwards == 1


@pytest.mark.slow  # make test's 30 minutes: the groups' driver/executor twin below stays there
def test_ranges_resequenced_in_the_driver_or_in_executors_give_the_same_rows_and_steps(tmp_path, spark, monkeypatch):
    """Ranges of n holding few rows are re-sequenced in the driver, in the same read as the blocks' rows
    (spark_plan._blocks_and_ranges); larger ones in executors, after a read of their own: the same rows and steps."""
    from analysis.rundir import history
    from analysis.rundir import inputs
    from analysis.engine import spark_plan
    from analysis.job import default_stall_ms, scan_config
    generate(tmp_path, replace(PLAN, records=20_000, order="shuffled", files=3, fmt="mixed", row_group_rows=300))
    hist = history.build(tmp_path, "auto")
    own = history.Ownership(hist)
    produced, consumed = inputs.load(spark, tmp_path, "produced"), inputs.load(spark, tmp_path, "consumed")
    cfg, names = scan_config(hist, own, default_stall_ms(hist), sequence=True)
    got = spark_plan.check_partitions(spark_plan.aggregate(produced.df, consumed.df, own.bounds), cfg)
    assert got.get("unordered"), "the planted step back leaves a range to re-sequence"
    topic = next(name for (column, _), name in names.items() if column == "topic")
    blocks = {(topic, p, b) for p in range(3) for b in (0, 7, 40)}
    both = {}
    for bound in (spark_plan.SEQUENCE_ROWS_IN_DRIVER, 0):
        monkeypatch.setattr(spark_plan, "SEQUENCE_ROWS_IN_DRIVER", bound)
        rows, steps = spark_plan.log_pass(consumed, cfg, own.bounds, blocks, names, True, got["unordered"])
        both[bound] = (sorted(rows, key=lambda r: json.dumps(r, sort_keys=True)), list(steps), steps.by_sequence)
    driver, executors = both.values()
    assert driver == executors
    assert len(driver[0]) >= 9 * 64 and len(driver[1]) == 1 and driver[2]  # every record of the blocks


def test_stitching_segments_by_sequence():
    """Segments of streams by n, as tasks return them: stream 1 in two disjoint segments (n 0-9, then 10-19: the
    step 40 -> 35 between them), stream 2 in two overlapping ones (n 0-9 and 5-12: unsettled, left out)."""
    import numpy as np

    from analysis.engine.spark_plan import stitch_by_sequence

    def cols(rows):
        keys = ("mh", "th", "partition", "period", "pos", "offset", "ts", "pos2", "offset2", "ts2")
        return {k: np.array([r[i] for r in rows], np.int64).reshape(-1) for i, k in enumerate(keys)}
    segments = cols([(1, 9, 0, 1, 10, 35, 60, 19, 50, 70),
                     (1, 9, 0, 1, 0, 20, 40, 9, 40, 50),
                     (2, 9, 1, 1, 0, 0, 40, 9, 9, 50),
                     (2, 9, 1, 1, 5, 5, 45, 12, 12, 52)])
    inner = cols([(2, 9, 1, 1, -1, 7, 44, -1, 6, 45)])
    steps, unsettled = stitch_by_sequence(segments, inner)
    assert steps == [(1, 9, 0, 1, (40, 50), (35, 60))]
    assert unsettled == {(2, 9, 1)}


def test_a_negative_n_is_bad_input(tmp_path, spark):
    from analysis import InputError, analyze
    from analysis.engine.synthetic import write_run
    write_run(tmp_path, jsonl_members=("a",))
    path = tmp_path / "consumed" / "a.jsonl"
    lines = path.read_text().splitlines()
    lines[5] = lines[5].replace('"n": 5', '"n": -5')
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=r"consumed/a.jsonl:6: column 'n' has -5"):
        analyze(tmp_path, spark=spark)


def test_stitching_pieces_of_one_stream():
    """Pieces of one stream (member a, partition 0, period 1) as tasks return them, out of order: two files, the
    later one's first record at t=50, the earlier one cut in two pieces (positions 0-1 and 2-3)."""
    import numpy as np

    from analysis.engine.spark_plan import stitch_steps

    def cols(rows):
        keys = ("mh", "th", "partition", "period", "fh", "blk", "pos", "offset", "ts", "pos2", "offset2", "ts2", "tmin")
        return {k: np.array([r[i] for r in rows], np.int64).reshape(-1) for i, k in enumerate(keys)}
    segments = cols([(1, 9, 0, 1, 77, -1, 0, 5, 50, 1, 6, 51, 50),   # later file: 5, 6
                     (1, 9, 0, 1, 88, -1, 2, 3, 12, 3, 4, 13, 12),   # earlier file, second piece: 3, 4
                     (1, 9, 0, 1, 88, -1, 0, 1, 10, 1, 4, 11, 10),   # earlier file, first piece: 1, 4
                     (1, 9, 0, 2, 88, -1, 4, 0, 20, 4, 0, 20, 20)])  # another period: nothing to stitch
    inner = cols([])
    steps = stitch_steps(segments, inner)
    assert steps == [(1, 9, 0, 1, (4, 11), (3, 12))]  # 4 -> 3 across the pieces; 4 -> 5 across the files is no step


def test_codes_of_tuples_equal_a_plain_unique():
    """kernels.codes codes runs of equal tuples once: the codes must be those of np.unique over the rows."""
    import numpy as np

    from analysis.engine.kernels import codes
    rng = np.random.default_rng(3)
    for n in (0, 1, 7, 5_000):
        cols = [np.repeat(rng.integers(0, 3, n), 2)[:n], np.repeat(rng.integers(0, 2, n), 3)[:n],
                rng.integers(-2**62, 2**62, n) % 5 - 2**62]
        code, first = codes(*cols)
        rows = np.stack(cols, axis=1) if n else np.zeros((0, 3), np.int64)
        uniq, inv = np.unique(rows, axis=0, return_inverse=True)
        assert code.tolist() == inv.ravel().tolist() and rows[first].tolist() == uniq.tolist()


def test_interleaving_keeps_every_stream_in_order():
    import numpy as np

    from benchmarks.synth import _row_order
    stream = np.repeat(np.arange(5), 200)
    order = _row_order("interleaved", np.random.default_rng(1), stream)
    assert sorted(order.tolist()) == list(range(len(stream))) and (order != np.arange(len(stream))).any()
    for s in range(5):
        rows = order[stream[order] == s]
        assert (np.diff(rows) > 0).all(), f"stream {s} out of order"


def test_steps_back_by_sequence_of_a_hand_made_log():
    """In the order of n, whatever the order of the rows: 0, 2, 1 by n is one step back (2 -> 1)."""
    import numpy as np

    from benchmarks.synth import steps_back
    log = {"member": np.array(["a"] * 3), "partition": np.zeros(3, np.int32), "offset": np.array([1, 0, 2]),
           "t": np.array([1, 1, 1]), "generation": np.ones(3, np.int32), "n": np.array([2, 0, 1])}
    assert steps_back([("a", log)]) == 1
    assert steps_back([("a", log)], by_sequence=False) == 1  # 1 -> 0


def test_steps_back_of_a_hand_made_log():
    """Files in the order of their first record, rows in file order, streams of (member, partition, generation)."""
    import numpy as np

    from benchmarks.synth import steps_back

    def log(member, partition, offsets, t, generation=1):
        n = len(offsets)
        return {"member": np.array([member] * n), "partition": np.full(n, partition, np.int32),
                "offset": np.array(offsets), "t": np.array(t), "generation": np.full(n, generation, np.int32)}
    later = log("a", 0, [3, 2], [50, 51])                 # 3 -> 2: one step back
    first = log("a", 0, [0, 1, 2, 1], [10, 11, 12, 13])   # 2 -> 1: one; then 1 -> 3 across the files: none
    other = log("b", 0, [9, 0], [1, 2], generation=2)     # another member: one
    assert steps_back([("late", later), ("early", first), ("b", other)], by_sequence=False) == 3
