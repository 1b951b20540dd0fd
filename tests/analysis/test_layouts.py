"""Issue 23: the same run in any file layout gives the same exact answer.

One synthetic run (benchmarks/synth.py: eager rebalances, duplicates inside and over the budget, records lost at
a hand-over, a skip, a step back, a commit regression, a stall, an unhealed fault) is written in several layouts
and analysed; every summary must equal the summary of the run written one file a member in consumption order,
field by field, anomaly rows included (only timing and the description of the input may differ).

What may change with the layout, and why. ``backwards`` is defined by the member's log: a step back is a record
whose offset is not above the one before it *in the member's log* (the order of the rows of its files, the files
in the order of their first record), inside one ownership of one partition. So the invariant is: the answer
depends on a member's log only through the order of each (member, partition) stream in it. These layouts keep
every stream's order and must give the very same summary:

- ``interleaved``: the streams of a file interleaved at random (several threads of one application, each
  consuming its own partitions, writing to one log);
- ``one file``: every member's rows merged by consumption time into one file (logs merged from many hosts);
- ``many files``: the merged log cut into 40 files of consecutive rows, small row groups;
- ``mixed``: the merged log in 6 files, alternately Parquet and JSONL, streams interleaved.

A log whose rows are shuffled at random (``shuffled``) is a different log: its steps back are real steps back
of that log, so ``backwards`` must equal the steps back the generator counts in the files it wrote
(``synth.steps_back``, a plain sort), and everything else must equal the ordered summary. A position column
that restores the order was not chosen: the contract has none, and a user's log of threads writing to one
file has no such order to restore either.
"""
import json
from dataclasses import replace

import pytest

from analysis import analyze
from benchmarks.synth import Plan, generate

PLAN = Plan(records=50_000, partitions=6, members=3, generations=4, stall=True)
STALL_MS = 2_000  # below the planted stall (synth.STALL_MS), above every rebalance's pause
LAYOUTS = {
    "interleaved": {"order": "interleaved"},
    "one file": {"files": 1},
    "many files": {"files": 40, "row_group_rows": 1_000},
    "mixed": {"files": 6, "fmt": "mixed", "order": "interleaved"},
}
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
    from analysis.spark import get_session
    summary, rows, truth = _analysed(tmp_path_factory.mktemp("ordered") / "run", PLAN, get_session())
    return summary, rows, truth


def test_ordered_run_finds_every_planted_anomaly(ordered):
    summary, _, truth = ordered
    for key in ("produced_records", "consumed_rows", "duplicated_offsets", "duplicate_extra_deliveries", "lost_records"):
        assert summary[key] == truth[key], key
    assert {k: summary["anomaly_counts"][k] for k in ORDERED_TRUTH} == ORDERED_TRUTH
    assert {k: truth[k] for k in ORDERED_TRUTH} == ORDERED_TRUTH
    assert all(c["status"] == "ran" for c in summary["checks"].values()), summary["checks"]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_layout_gives_the_same_summary(layout, ordered, tmp_path, spark):
    summary, rows, truth = _analysed(tmp_path / "run", replace(PLAN, **LAYOUTS[layout]), spark)
    ref_summary, ref_rows, _ = ordered
    assert summary["input"]["consumed_files"] == {"interleaved": 3, "one file": 1, "many files": 40, "mixed": 6}[layout]
    assert truth["backwards"] == 1
    got, want = _comparable(summary), _comparable(ref_summary)
    assert got.keys() == want.keys()
    for key in want:
        assert got[key] == want[key], key
    assert rows == ref_rows


def test_shuffled_rows_change_only_backwards(ordered, tmp_path, spark):
    summary, rows, truth = _analysed(tmp_path / "run", replace(PLAN, order="shuffled", files=2), spark)
    ref_summary, ref_rows, _ = ordered
    assert truth["backwards"] > 1000  # about half of the rows step back in a shuffled log
    assert summary["anomaly_counts"]["backwards"] == summary["checks"]["backwards"]["count"] == truth["backwards"]
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


def test_interleaving_keeps_every_stream_in_order():
    import numpy as np

    from benchmarks.synth import _row_order
    stream = np.repeat(np.arange(5), 200)
    order = _row_order("interleaved", np.random.default_rng(1), stream)
    assert sorted(order.tolist()) == list(range(len(stream))) and (order != np.arange(len(stream))).any()
    for s in range(5):
        rows = order[stream[order] == s]
        assert (np.diff(rows) > 0).all(), f"stream {s} out of order"


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
    assert steps_back([("late", later), ("early", first), ("b", other)]) == 3
