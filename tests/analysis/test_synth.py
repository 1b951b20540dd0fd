"""benchmarks/synth.py, the generator itself (no Spark): files written a row group at a time hold the same rows,
and its ground truth agrees with a plain count over the files it wrote."""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace

import pyarrow.parquet as pq
import pytest

from benchmarks.synth import Plan, generate

PLAN = Plan(records=30_000, partitions=5, seed=11)


def _tables(root):
    return {p.relative_to(root): p for p in sorted(root.rglob("*.parquet"))}


@pytest.mark.parametrize("order", ["consumption", "shuffled"])
def test_row_groups_hold_the_same_rows_as_one_table(tmp_path, order):
    small = generate(tmp_path / "small", replace(PLAN, order=order, row_group_rows=1_000))
    whole = generate(tmp_path / "whole", replace(PLAN, order=order, row_group_rows=10**9))
    assert small == whole
    small_files, whole_files = _tables(tmp_path / "small"), _tables(tmp_path / "whole")
    assert small_files.keys() == whole_files.keys() and len(small_files) == 4  # a producer, three members
    for name, path in small_files.items():
        assert pq.read_table(path).equals(pq.read_table(whole_files[name])), name
        assert pq.ParquetFile(path).metadata.num_row_groups > 1 == pq.ParquetFile(whole_files[name]).metadata.num_row_groups


def test_truth_is_a_plain_count_of_the_written_files(tmp_path):
    truth = generate(tmp_path, replace(PLAN, order="shuffled", files=3))
    produced = pq.read_table(tmp_path / "produced" / "producer-0.parquet").to_pylist()
    acked = {(r["partition"], r["offset"]) for r in produced if r["status"] == "ok"}
    deliveries = Counter((r["partition"], r["offset"]) for p in (tmp_path / "consumed").iterdir()
                         for r in pq.read_table(p, columns=["partition", "offset"]).to_pylist())
    assert truth.produced_records == len(acked) and truth.consumed_rows == sum(deliveries.values())
    assert truth.duplicated_offsets == sum(1 for n in deliveries.values() if n > 1)
    assert truth.duplicate_extra_deliveries == sum(n - 1 for n in deliveries.values())
    assert truth.lost_records == len(acked - deliveries.keys()) > 0
    assert json.loads((tmp_path / "truth.json").read_text())["lost_records"] == truth.lost_records
