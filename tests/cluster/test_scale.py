"""The scale runs of issue 39 (nightly): a 500-member librdkafka group and a 200-member Java group (our own member
program), 4 partitions a member, in member hosts of 50, through a member join and a hosted member's crash, on both
protocols, each on a cluster of its own (scenarios/scale/). Each must end with every member stable, drained, valid and
nothing lost, or with a named finding (the `unsettled` check) whose run is kept for its upstream report."""
import json
from pathlib import Path

import pytest

from harness.run import run_scenario
from harness.scenario import load_scenario

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

SCALE = Path(__file__).resolve().parents[2] / "scenarios" / "scale"
# Where a client breaks on this machine (docs/benchmarks-history.md, "Member hosts, second round"): the run ends on the
# `unsettled` finding, not a harness error. Only that is expected; anything else still fails.
KNOWN_FINDINGS = {
    "librdkafka-500-classic": "librdkafka#4629 (PR 5014): after the crashed member's return the group stays in "
                              "CompletingRebalance while its leader computes the cooperative-sticky assignment",
    "librdkafka-500-consumer": "under KIP-848 one partition stayed assigned on the coordinator to a member that never "
                               "applied it, in a stable group (the unsettled anomaly's coordinator_owner names it): "
                               "librdkafka timed out the one heartbeat response that gave it the partition at an "
                               "unchanged epoch and sent no full heartbeat after it; reproduced with 3 members "
                               "(scenarios/zoo/kip848-lost-assignment.yaml), docs/upstream/librdkafka-kip848-lost-assignment.md",
}


@pytest.mark.parametrize("name", sorted(p.stem for p in SCALE.glob("*.yaml")))
def test_a_large_group_joins_takes_a_join_and_a_crash_and_settles(name, tmp_path, request):
    runs = request.config.getoption("keep_runs", None) or tmp_path
    outcome = run_scenario(load_scenario(SCALE / f"{name}.yaml"), Path(runs))
    assert outcome.errors == [], outcome.errors
    if outcome.unsettled and name in KNOWN_FINDINGS:
        pytest.xfail(f"{KNOWN_FINDINGS[name]}; kept in {outcome.run_dir}")
    assert outcome.unsettled == [], f"a finding, kept in {outcome.run_dir}: {outcome.unsettled}"
    from analysis.api import analyze
    summary = analyze(outcome.run_dir)
    assert summary["lost_records"] == 0 and summary["valid"] is True, summary["anomaly_counts"]
    crash = next(json.loads(line) for line in (outcome.run_dir / "faults.jsonl").read_text().splitlines()
                 if '"member_crash"' in line)
    assert crash["host"].startswith("host-") and crash.get("healed_at_ms"), crash
