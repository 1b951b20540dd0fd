"""Issue 56, item 7: KAFKA-17754's table (docs/kafka-17754.md) made again by the nightly, one run a combination of
client and transaction version (the page's 20 runs: `kafka-chaos rates`, as the page says). Each run must be analysed
with its late EndTxn really held (the rule hit); the Java client under version 2, whose epoch moves every
transaction, must keep every exactly-once promise."""
from pathlib import Path

import pytest
import yaml

from harness.zoo import rates

pytestmark = [pytest.mark.cluster, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
PROMISES = ["eos_duplicate", "eos_lost", "aborted_read", "precommitted_read", "torn_transaction", "offset_output_mismatch"]


def test_the_late_endtxn_table_one_run_a_combination(tmp_path, request):
    base = yaml.safe_load((ROOT / "scenarios" / "eos-endtxn-delay.yaml").read_text())
    varied = rates.parse_vary(["consumer_group.client=librdkafka,java-member", "cluster.transaction_version=1,2"])
    keep = request.config.getoption("keep_runs")  # the nightly keeps its runs (and counts their fault families)
    runs_root = keep / "test_kafka_17754" if keep else tmp_path / "runs"
    cells = [rates.run_cell(rates.cell_data(base, s, "eos-endtxn-delay"), s, 1, runs_root, "eos-endtxn-delay")
             for s in rates.combinations(varied)]
    rates.write(tmp_path / "table", "eos-endtxn-delay", cells, PROMISES,
                {"date": "nightly", "machine": "this", "kafka_version": "4.3.1"})
    print((tmp_path / "table" / "rates.md").read_text())
    assert all(not c.failures and c.analysed == 1 and not c.faults_missed for c in cells), [c.runs for c in cells]
    [java_v2] = [c for c in cells if c.settings == {"consumer_group.client": "java-member",
                                                     "cluster.transaction_version": 2}]
    assert not any(java_v2.shown[a] for a in PROMISES), java_v2.runs
