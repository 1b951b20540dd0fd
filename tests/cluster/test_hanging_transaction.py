"""Issue 56's acceptance: a hanging transaction (docs/hanging-transaction.md), made again by the nightly, one run a
setting of the brokers' partition verification. Verification off: the late EndTxn's early commit leaves member-2's
next records in a transaction no coordinator knows, and member-2's leave leaves it open for good: a `stall` on the
stable offset with cause hanging_transaction and member-2's producer id, the records behind it unseen (held), never
lost. Verification on (the brokers' default): the leaders refuse those records, and no stall on the stable offset."""
from pathlib import Path

import pytest
import yaml

from harness.zoo import rates

pytestmark = [pytest.mark.cluster, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
VERIFICATION = "cluster.broker_config[transaction.partition.verification.enable]"


def test_a_hanging_transaction_with_verification_off_and_none_with_it_on(tmp_path, request):
    base = yaml.safe_load((ROOT / "scenarios" / "eos-hanging-transaction.yaml").read_text())
    keep = request.config.getoption("keep_runs")  # the nightly keeps its runs (and counts their fault families)
    runs_root = keep / "test_hanging_transaction" if keep else tmp_path / "runs"
    cells = {s[VERIFICATION]: rates.run_cell(rates.cell_data(base, s, "eos-hanging-transaction"), s, 1, runs_root,
                                             "eos-hanging-transaction")
             for s in rates.combinations(rates.parse_vary([f"{VERIFICATION}=false,true"]))}
    assert all(not c.failures and c.analysed == 1 and not c.faults_missed for c in cells.values()), \
        {k: c.runs for k, c in cells.items()}
    off, on = cells[False].runs[0]["anomaly_counts"], cells[True].runs[0]["anomaly_counts"]
    assert off.get("stall:hanging_transaction", 0) >= 1 and not off.get("eos_lost") and not off.get("lost"), off
    assert not on.get("stall:hanging_transaction") and not on.get("stall:open_transaction"), on
    import json
    summary = json.loads((Path(cells[False].runs[0]["run_dir"]) / "report" / "summary.json").read_text())
    stalls = [a for a in summary["anomalies"] if a.get("cause") == "hanging_transaction"]
    assert stalls and all(a["producer_id"] is not None and a["transaction"].startswith("member-2#") for a in stalls)
