"""The seeded random nemesis: the same seed gives the same schedule, and a schedule file replays it."""
import json
import subprocess
import sys

import pytest
import yaml

from harness.plan import compile_plan
from harness.run import load_schedule, write_schedule
from harness.scenario import ScenarioError, parse_scenario

MENU = [{"kind": "broker_freeze", "target": "random"},
        {"kind": "member_crash", "target": "random-member"},
        {"kind": "latency", "target": "coordinator", "latency_ms": 200}]


def scenario(seed, **random_faults):
    return parse_scenario({"producer": {"records": 300_000, "rate": 5000},
                           "random_faults": {"faults": MENU, "seed": seed, **random_faults}})


def plan(s):
    return [f.model_dump(mode="json") for f in s.schedule()]


def test_the_same_seed_gives_the_same_schedule_and_another_seed_another():
    assert plan(scenario(11)) == plan(scenario(11))
    assert plan(scenario(11)) != plan(scenario(12))


def test_the_schedule_respects_its_bounds_and_names_concrete_targets():
    faults = scenario(5, start_s=4, until_s=50, interval_s=[1, 2], duration_s=[2, 3]).schedule()
    assert len(faults) >= 8 and faults[0].at_s == 4 and all(f.at_s < 50 for f in faults)
    assert all(2 <= f.duration_s <= 3 for f in faults)
    for before, after in zip(faults, faults[1:]):  # one at a time: the next starts after a gap
        assert after.at_s >= before.at_s + before.duration_s + 1 - 0.15
    assert {f.target for f in faults} <= {"kafka-1", "kafka-2", "kafka-3", "member-1", "member-2", "member-3", "coordinator"}


def test_the_seed_defaults_to_the_runs_seed():
    data = {"producer": {"records": 300_000}, "random_faults": {"faults": MENU}}
    assert plan(parse_scenario({**data, "run": {"seed": 9}})) == plan(scenario(9))


def test_a_written_schedule_replays_exactly(tmp_path):
    original = scenario(21)
    write_schedule(tmp_path / "schedule.json", compile_plan(original, offline=True))
    replayed = original.with_schedule(load_schedule(tmp_path / "schedule.json"), "schedule.json")
    assert plan(replayed) == plan(original) and replayed.random_faults is None


def test_a_replayed_schedule_is_checked_like_a_scenario(tmp_path):
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump([{"kind": "broker_freeze", "target": "kafka-9", "at_s": 1, "duration_s": 2}]))
    with pytest.raises(ScenarioError, match=r"faults\[0\].target"):
        scenario(1).with_schedule(load_schedule(tmp_path / "bad.yaml"), "bad.yaml")


def test_cli_validate_prints_the_schedule(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"producer": {"records": 300_000}, "random_faults": {"faults": MENU, "seed": 4}}))
    out = subprocess.run([sys.executable, "-m", "harness.cli", "validate", "--schedule", str(path)],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    assert yaml.safe_load(out) == plan(scenario(4))
